"""The dedupe rules: one record per provider call, whatever copies the logs hold.

Claude Code repeats a response's usage on each content block's line, resumed and forked
sessions replay earlier records, side questions re-log a parent response, Codex repeats its
last count, a catty fork copies its parent's events: `collapse` keeps one record per key
(used by each worker on its own files, then across files), `dedupe` adds the cross-file rules.
"""
from __future__ import annotations

from operator import attrgetter

from ..formats.calls import OPENCODE_MESSAGE, OPENCODE_STEP

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from .records import Record


def collapse(records: Iterable[Record]) -> list[Record]:
    """Keep one record per dedupe key, in the order keys first appear.

    Of the copies the main conversation's wins over a sidechain's, then the largest usage,
    then the first seen. A record whose uuid was seen in the same session, or with the same
    message id, is a replay of that record even when its other ids were rewritten (see `_collapse`). Workers collapse each file (a response's content-block lines repeat
    its usage, see `collapse_file`), the ledger collapses again across files: the rule is the
    same both times.
    """
    return _collapse(records, {}, {}, {})


Alias = tuple[str, str, "str | None", int]  # ("k", key, None, i), ("s", session, uuid, i) or ("m", uuid, message id, i)


def collapse_file(records: Iterable[Record], aliases: Iterable[Alias] = ()) -> tuple[list[Record], list[Alias]]:
    """`collapse` for one log read in parts: (the records, the aliases to resume with).

    The aliases are the keys, and the (session, uuid) and (uuid, message id) pairs, of the copies
    that were dropped, with the index of the record they collapsed into: a later part of the log
    (bytes appended since) may hold a replay of a dropped copy, which must meet the same record
    as when the whole log is read at once. RECORDS starts with the records of the earlier parts.
    """
    where: dict[str, int] = {}
    by_session: dict[tuple[str, str], int] = {}
    by_message: dict[tuple[str, str | None], int] = {}
    for kind, a, b, i in aliases:
        if kind == "k":
            where[a] = i
        elif kind == "s":
            by_session[(a, b)] = i  # type: ignore[index]
        else:
            by_message[(a, b)] = i
    out = _collapse(records, where, by_session, by_message)
    # (a name is an alias when the record it leads to is not the one it was made from)
    dropped: list[Alias] = [("k", k, None, i) for k, i in where.items() if out[i].key != k]
    dropped += [("s", s, u, i) for (s, u), i in by_session.items() if (r := out[i]).uuid != u or r.session != s]
    dropped += [("m", u, m, i) for (u, m), i in by_message.items() if (r := out[i]).uuid != u or r.msg_id != m]
    return out, dropped


def _collapse(records: Iterable[Record], where: dict[str, int], by_session: dict[tuple[str, str], int],
              by_message: dict[tuple[str, str | None], int]) -> list[Record]:
    """The loop of `collapse`: WHERE maps dedupe keys, BY_SESSION (session, uuid) and BY_MESSAGE
    (uuid, message id) to the index of the record kept for them. Those pairs are what make a record
    the same as another whose ids were rewritten; a uuid alone is not: two sessions can share
    record uuids (a copied project, a session forked by another tool) and hold different calls."""
    out: list[Record] = []
    append, at_key, at_session, at_message = out.append, where.get, by_session.get, by_message.get  # (bound once: this runs per call)
    for rec in records:
        key = rec.key
        if key is None:
            append(rec)
            continue
        uid = rec.uuid
        i = at_key(key)
        if uid is None:
            if i is None:
                where[key] = len(out)
                append(rec)
                continue
        else:
            in_session, with_id = (rec.session, uid), (uid, rec.msg_id)
            if i is None:
                i = at_session(in_session)
                if i is None:
                    i = at_message(with_id)
                    if i is None:
                        where[key] = by_session[in_session] = by_message[with_id] = len(out)
                        append(rec)
                        continue
            by_session.setdefault(in_session, i)
            by_message.setdefault(with_id, i)
        where.setdefault(key, i)
        cur = out[i]
        if cur.sidechain != rec.sidechain:
            if cur.sidechain:
                out[i] = rec
        elif rec.input + rec.output + rec.cache_read + rec.cache_write > cur.input + cur.output + cur.cache_read + cur.cache_write:
            out[i] = rec
    return out


def _trace_forks(records: Iterable[Record]) -> list[Record]:
    """Key (and attribute) a catty event a fork copied (seq <= forked_from_seq) by the session it came from.

    Followed up the chain of forks as far as the scanned sessions tell it; a parent not
    scanned still keys its copies alike in every child.
    """
    records = list(records)
    forks: dict[str, tuple[str, int]] = {}
    for r in records:
        k = r.key
        if k is not None and k[:2] == "e\0":
            _e, session, _seq, parent, forked_at = k.split("\0")
            if parent and forked_at:
                forks[session] = (parent, int(forked_at))
    if not forks:
        return records
    from msgspec.structs import replace

    out = []
    for r in records:
        k = r.key
        if k is not None and k[:2] == "e\0":
            _e, session, seq_text, _p, _f = k.split("\0")
            seq = int(seq_text)
            hops = 0
            while session in forks and seq <= forks[session][1] and hops < 1000:  # hops: a cycle in bad data ends
                session = forks[session][0]
                hops += 1
            # The call was made in the session it came from: count it there.
            r = replace(r, key=f"e\0{session}\0{seq}", session=session)
        out.append(r)
    return out


_OPENCODE = "r\0opencode:"
_SEP = "\x1e"  # (between the keys searched in `dedupe`)
_STEP = "r\0" + OPENCODE_STEP
_MESSAGE = "r\0" + OPENCODE_MESSAGE


def _opencode_steps(records: list[Record]) -> list[Record]:
    """An opencode message counts by its steps when any of them is known (its own tokens are only
    the last step's); each step takes its message's model, time and folder (see `opencode`)."""
    messages: dict[str | None, Record] = {}
    message_at: list[int] = []
    steps: list[int] = []
    for i, r in enumerate(records):  # (one pass: most records are other agents')
        k = r.key
        if k is not None and k[:11] == _OPENCODE:  # (an import's copy too: its request id is the same name)
            if k.startswith(_STEP):
                steps.append(i)
            elif k.startswith(_MESSAGE):
                messages[k[len(_MESSAGE):]] = r
                message_at.append(i)
    if not steps:
        return records
    from msgspec.structs import replace

    out = list(records)
    stepped = set()
    for i in steps:
        r = out[i]
        key = r.key or ""
        mid = key[len(_STEP):key.rfind("/")]  # (the step's name holds its message's id)
        stepped.add(mid)
        m = messages.get(mid)
        if m is not None and m.msg_id is not None:  # (an import's copy holds its message's model, time and folder already)
            out[i] = replace(r, ts=m.ts, model=m.model, project=m.project, session=r.session or m.session)
    gone = {i for i in message_at if (out[i].key or "")[len(_MESSAGE):] in stepped}
    return [r for i, r in enumerate(out) if i not in gone] if gone else out


def dedupe(records: Iterable[Record]) -> list[Record]:
    """One record per provider call, sorted by time.

    Copies share a key (Claude: message id + request id; Codex: time and cumulative totals;
    catty: request id, else time, seq and counts) and are collapsed. A sidechain record whose
    message id the main conversation of the same session already has is a replay (a side
    question re-logging its parent under a new request id) and is dropped.
    """
    records = list(records)
    # Most trees hold no catty fork and no opencode call: one search of the keys joined (C speed) says
    # so and spares both passes over the records. (A key holding the separator can only make it look.)
    keys = _SEP + _SEP.join(filter(None, map(attrgetter("key"), records)))
    if _SEP + "e\0" in keys:
        records = _trace_forks(records)
    kept = collapse(records)
    if _SEP + _OPENCODE in keys:
        kept = _opencode_steps(kept)
    side_ids = {r.msg_id for r in kept if r.sidechain and r.msg_id is not None}
    if side_ids:  # (few: only the sidechains' ids are looked up among the main conversation's)
        main_ids = {(r.session, r.msg_id) for r in kept if not r.sidechain and r.msg_id in side_ids}
        if main_ids:
            kept = [r for r in kept if not (r.sidechain and r.msg_id is not None and (r.session, r.msg_id) in main_ids)]
    kept.sort(key=attrgetter("ts"))
    return kept

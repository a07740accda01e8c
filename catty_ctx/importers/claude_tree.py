"""Claude Code files → their conversation: the records by uuid, the file's own session, and
the order they are imported in (the live branch, parallel calls' siblings, unlinked groups
by file order; abandoned branches set aside). See `claude` for the format."""
from __future__ import annotations

import heapq
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .common import ImportReport, Warn
from .reading import iter_jsonl

WHAT = "a Claude Code session"
MESSAGE_TYPES = ("user", "assistant", "system")


# -- reading a file into its conversation -----------------------------------------------------


class Tree:
    """The records of one file by uuid (first copy wins), in file order."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self.lines: dict[str, int] = {}
        self.position: dict[str, int] = {}
        self.sidechain: list[str] = []
        self.recognised = 0
        # Older versions logged a subagent's responses inside the parent, as `progress`
        # records of the Task call: (agent id, the response's record) for their usage.
        self.nested: list[tuple[str, dict[str, Any]]] = []
        # `last-prompt` records name the record the user is on (its `leafUuid`): Claude Code
        # writes one on exit and when the user rewinds. (records read before it, leafUuid,
        # sessionId, line number), file order.
        self.tip_marks: list[tuple[int, str, Any, int]] = []

    def add(self, rec: dict[str, Any], lineno: int, report: ImportReport, *, sidechain_ok: bool) -> None:
        uid = rec.get("uuid")
        rtype = rec.get("type")
        if rtype in MESSAGE_TYPES or rtype in ("summary", "file-history-snapshot"):
            self.recognised += 1
        if rtype == "progress":
            self._nested(rec)
        elif rtype == "last-prompt":
            leaf = rec.get("leafUuid")
            if isinstance(leaf, str) and leaf:
                self.tip_marks.append((len(self.position), leaf, rec.get("sessionId"), lineno))
        if not isinstance(uid, str):
            report.skipped[str(rtype)] += 1
            return
        if uid in self.records:
            report.skipped["replayed"] += 1  # a resumed session replays earlier records
            return
        rec.pop("toolUseResult", None)  # the UI's copy of a result: never needed, often large
        self.records[uid] = rec
        self.lines[uid] = lineno
        self.position[uid] = len(self.position)
        if rec.get("isSidechain") and not sidechain_ok:
            self.sidechain.append(uid)

    def _nested(self, rec: dict[str, Any]) -> None:
        data = rec.get("data")
        inner = data.get("message") if isinstance(data, dict) else None
        if isinstance(data, dict) and isinstance(inner, dict) and inner.get("type") == "assistant" and isinstance(inner.get("message"), dict):
            agent = inner.get("agentId") or data.get("agentId") or "subagent"
            self.nested.append((str(agent), dict(inner, sessionId=rec.get("sessionId"))))

    def parent(self, uid: str, within: Any) -> str | None:
        """The record this one follows: `parentUuid`, else (a compaction's new root, or a
        parent cut out of the file) `logicalParentUuid`, when that record is `within`."""
        rec = self.records[uid]
        for key in ("parentUuid", "logicalParentUuid"):
            p = rec.get(key)
            if isinstance(p, str) and p in within and p != uid:
                return p
        return None


def read_tree(path: Path, report: ImportReport, *, lenient: bool, warn: Warn | None, sidechain_ok: bool) -> Tree:
    tree = Tree()
    for line in iter_jsonl(path, report=report, lenient=lenient, warn=warn, what=WHAT):
        tree.add(line.record, line.lineno, report, sidechain_ok=sidechain_ok)
    return tree


def session_of(rec: dict[str, Any]) -> str | None:
    sid = rec.get("sessionId")
    return sid if isinstance(sid, str) and sid else None


def own_session(tree: Tree, path: Path, requested: str | None) -> str:
    """The session a file is imported as: the one asked for, else the one the file is named
    after, else the one most of its conversation records belong to."""
    counts: Counter[str] = Counter()
    for rec in tree.records.values():
        sid = session_of(rec)
        if sid and rec.get("type") in ("user", "assistant") and not rec.get("isSidechain"):
            counts[sid] += 1
    if requested is not None and requested in counts:
        return requested
    if requested and path.stem != requested:
        held = ", ".join(sorted(counts)) or "none"
        raise UsageError(f"{path}: holds no conversation of session {requested} (sessions in it: {held})")
    if path.stem in counts:
        return path.stem
    if counts:
        return counts.most_common(1)[0][0]  # ties: the first seen
    return next((s for s in map(session_of, tree.records.values()) if s), path.stem)


def select(tree: Tree, own: str) -> tuple[dict[str, None], Counter[str]]:
    """The main-loop records of session `own` (file order): its own records, those without a
    session id, the records of another session its records descend from (a resumed
    session's file starts with a copy of the earlier session's history), and those of
    another session that continue its conversation (linked below its records: the file's
    own, whatever id they were stamped with). The rest is counted by session."""
    everything = tree.records
    side = set(tree.sidechain)
    chosen: set[str] = set()
    for uid, rec in everything.items():
        sid = rec.get("sessionId")
        if sid == own or session_of(rec) is None:
            chosen.add(uid)
        elif uid not in side:
            p = tree.parent(uid, everything)  # file order: a parent is (almost always) met first
            if p is not None and p in chosen:
                chosen.add(uid)
    if len(chosen) == len(everything):  # the common case: one session
        return {u: None for u in everything if u not in side}, Counter()
    for uid in list(chosen):
        cur = tree.parent(uid, everything)
        while cur is not None and cur not in chosen:
            chosen.add(cur)
            cur = tree.parent(cur, everything)
    others: Counter[str] = Counter(str(session_of(r)) for u, r in everything.items() if u not in chosen and u not in side)
    return {u: None for u in everything if u in chosen and u not in side}, others


def marked_tip(tree: Tree, uids: dict[str, None], own: str) -> tuple[str | None, str | None]:
    """The record the file's newest `last-prompt` of session `own` names as the user's tip,
    when no message was written after it (else the conversation went on, and its newest
    message is the tip); a record not in `uids` gives a warning instead."""
    mark = next((m for m in reversed(tree.tip_marks) if m[2] in (own, None)), None)
    if mark is None:
        return None, None
    read_before, leaf, _, lineno = mark
    pos, records = tree.position, tree.records
    newest = next((u for u in reversed(uids) if is_message(records[u])), None)  # uids: file order
    if newest is None or pos[newest] >= read_before:
        return None, None
    if leaf not in uids:
        return None, (f"line {lineno}: last-prompt names record {leaf}, which is not in this conversation: "
                      "branch of the newest message imported")
    return leaf, None


class Layout:
    """A file's records in the order they are imported.

    Each group of linked records (a root and everything under it) contributes the chain to
    its newest message (in the group of `tip`, the record the file names as the user's: to
    `tip`), plus the parallel tool calls' siblings the single-parent chain misses (one line
    per tool_use, each result linked to its own line). Messages off that chain are an
    abandoned branch (a rewind, an edited prompt): left out of the view, their usage kept.
    The group holding `tip`, else the newest message, is the live conversation; other
    groups (no `parentUuid` link reaches them: old or hand-made files, cut files) are
    merged in by file order.
    """

    def __init__(self, tree: Tree, uids: dict[str, None], tip: str | None = None) -> None:
        self.tree = tree
        self.sequence: list[dict[str, Any]] = []
        self.off_branch: list[dict[str, Any]] = []  # messages on abandoned branches, file order
        self.unlinked = 0  # messages imported by file order
        self.side_records: Counter[str] = Counter()  # non-message records off every chain
        if not uids:
            return
        pos = tree.position
        records = tree.records
        parent: dict[str, str | None] = {}
        for u in uids:
            p = records[u].get("parentUuid")
            parent[u] = p if type(p) is str and p in uids and p != u else tree.parent(u, uids)
        root: dict[str, str] = {}
        for uid in uids:  # file order: a parent is (almost always) met before its children
            p = parent[uid]
            if p is None:
                root[uid] = uid
                continue
            top = root.get(p)
            if top is not None:
                root[uid] = top
                continue
            path = [uid]
            cur = p
            while cur not in root:
                if cur in path:  # a cycle in bad data: cut it here
                    root[cur] = cur
                    break
                path.append(cur)
                nxt = parent[cur]
                if nxt is None:
                    root[cur] = cur
                    break
                cur = nxt
            top = root[cur]
            for node in path:
                root[node] = top
        groups: dict[str, list[str]] = {}
        for uid in uids:  # file order inside each group
            groups.setdefault(root[uid], []).append(uid)
        if tip not in uids:
            tip = None
        newest = tip or next((u for u in reversed(uids) if is_message(records[u])), None)  # uids: file order
        live = root[newest] if newest is not None else None
        chains: list[list[str]] = []
        for top, members in groups.items():
            chain = self._chain(members, parent, tip if top == live else None)
            on = set(chain)
            for u in members:
                if u not in on:
                    if is_message(records[u]):
                        self.off_branch.append(records[u])
                    else:
                        self.side_records[str(records[u].get("type"))] += 1
            if top != live:  # (records that carry no conversation are no news)
                self.unlinked += sum(1 for u in chain if is_message(records[u]))
            chains.append(chain)
        self.off_branch.sort(key=lambda r: pos[r["uuid"]])
        self.sequence = [records[u] for u in heapq.merge(*chains, key=pos.__getitem__)]

    def _chain(self, members: list[str], parent: dict[str, str | None], tip: str | None = None) -> list[str]:
        records, pos = self.tree.records, self.tree.position
        if tip is None:
            tip = next((u for u in reversed(members) if is_message(records[u])), members[-1])
        chain: list[str] = []
        on: set[str] = set()
        cur: str | None = tip
        while cur is not None and cur not in on:  # (a cycle in bad data ends the walk)
            chain.append(cur)
            on.add(cur)
            cur = parent[cur]
        chain.reverse()
        if len(on) == len(members):
            return chain
        # Parallel tool calls: the lines of one response share message.id; each result links
        # to the line of its own call, so all but one call hang beside the chain.
        off_lines: dict[Any, list[str]] = {}
        results_of: dict[str, list[str]] = {}
        for u in members:
            if u in on:
                continue
            rec = records[u]
            if rec.get("type") == "assistant":
                mid = message_id(rec)
                if mid is not None:
                    off_lines.setdefault(mid, []).append(u)
            elif carries_result(rec):
                p = parent[u]
                if p is not None:
                    results_of.setdefault(p, []).append(u)
        if not off_lines and not results_of:
            return chain
        anchor: dict[Any, str] = {}
        lines_of: dict[Any, list[str]] = {}
        for u in chain:
            if records[u].get("type") == "assistant":
                mid = message_id(records[u])
                if mid is not None:
                    anchor[mid] = u
                    lines_of.setdefault(mid, []).append(u)
        extra: dict[str, list[str]] = {}
        for mid, last in anchor.items():
            found = list(off_lines.get(mid, ()))
            found += [r for line in lines_of[mid] + found for r in results_of.get(line, ()) if r not in on]
            if found:
                found.sort(key=pos.__getitem__)
                on.update(found)
                extra[last] = found
        if not extra:
            return chain
        out: list[str] = []
        for u in chain:
            out.append(u)
            out.extend(extra.get(u, ()))
        return out


def queued_prompt(rec: dict[str, Any]) -> dict[str, Any] | None:
    """A prompt typed while Claude Code was busy: it reaches the model as an attachment record
    (`queued_command`), never as a user line."""
    att = rec.get("attachment")
    if rec.get("type") == "attachment" and isinstance(att, dict) and att.get("type") == "queued_command" and att.get("prompt"):
        return att
    return None


def is_message(rec: dict[str, Any]) -> bool:
    return rec.get("type") in ("user", "assistant") or queued_prompt(rec) is not None


def message_id(rec: dict[str, Any]) -> Any:
    msg = rec.get("message")
    mid = msg.get("id") if isinstance(msg, dict) else None
    return mid if isinstance(mid, str) and mid else None


def carries_result(rec: dict[str, Any]) -> bool:
    if rec.get("type") != "user":
        return False
    msg = rec.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


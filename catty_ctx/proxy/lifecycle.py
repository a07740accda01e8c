"""The context lifecycle on the copy of each request (docs/proxy.md#what-it-changes-in-a-request).

In order, each step switchable (`steps`): repair at the request boundary (pairing.py's rules;
each fix recorded once as a `repair` event), the compaction that already covers this
request's prefix (looked up by the fingerprint of the native messages it replaced, so every
later request carries the same bytes), prune (cache-aware batches on the copy: prune/), then,
when the copy still reaches the threshold, a new compaction of the recorded session
(compact/, segments mode, two-pass with the pass 1 prefired `lead` points earlier) whose head
replaces the span before the live tail. The client's request itself is never changed; the
log keeps what the client sent.
"""
from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from .. import defaults
from ..compact.ladder import SummarizerError, WindowTooSmall
from ..compact.pipeline import CompactOptions, compact_session
from ..prune.options import PruneOptions, PruneStats
from ..prune.pipeline import prune_item_stream
from ..view.fold import view
from ..view.pairing import ANSWER_TEXT, PairRepair
from ..view.tokens import item_tokens
from .families import Item, Loc, Parsed, native_prefix_fp
from .recorder import Conversation, PendingRecord, common_prefix
from .summarize import UPSTREAM, UpstreamSummarizer

STEPS = ("repair", "prune", "compact", "prefire")
# Context windows by model: the first entry whose marker the model name (or the 1M beta) holds.
WINDOWS: tuple[tuple[str, int], ...] = (
    ("[1m]", 1_000_000), ("context-1m", 1_000_000), ("claude-", 200_000), ("gpt-5", 400_000), ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000), ("o3", 200_000), ("o4-mini", 200_000), ("grok-code", 256_000), ("grok-4", 256_000),
)
DEFAULT_WINDOW = 200_000
HEAD_KINDS = ("instructions", "compaction_summary", "continuation_state")


def model_window(model: str | None, beta: str = "") -> int:
    name = f"{model or ''} {beta}".lower()
    for marker, window in WINDOWS:
        if marker in name:
            return window
    return DEFAULT_WINDOW


@dataclass(frozen=True)
class LifecycleOptions:
    steps: frozenset[str] = frozenset(s.strip() for s in defaults.PROXY_STEPS.split(",") if s.strip())
    window: int | None = None  # every conversation's window (default: the model's)
    threshold: float = defaults.DEFAULT_THRESHOLD
    lead: float = defaults.PROXY_PREFIRE_LEAD
    prefire_wait: float = defaults.PROXY_PREFIRE_WAIT
    tail_percent: float = defaults.PROXY_TAIL_PERCENT
    summarizer: str = defaults.PROXY_SUMMARIZER  # `upstream`: the client's upstream, credentials and model
    prune: PruneOptions = field(default_factory=lambda: PruneOptions(high_percent=defaults.PROXY_PRUNE_HIGH_PERCENT,
                                                                     low_percent=defaults.PROXY_PRUNE_LOW_PERCENT))


def repair_plan(parsed: Parsed) -> tuple[set[Loc], dict[int, list[str]], list[tuple[str, str]]]:
    """What the request needs to pair every call with one result: results to drop, calls to
    answer (by the native index of their assistant), and (reason, call id) of each fix."""
    fix: PairRepair[tuple[Item, Loc | None]] = PairRepair(lambda x: x[0], lambda it: (it, None))
    out = list(fix(zip(parsed.items, parsed.locs)))
    kept = {loc for it, loc in out if it.get("role") == "tool" and loc is not None}
    kept_ids = {it["call_id"] for it, loc in out if it.get("role") == "tool" and loc is not None}
    drops: set[Loc] = set()
    fixes: list[tuple[str, str]] = []
    for it, orig in zip(parsed.items, parsed.locs):
        if it.get("role") == "tool" and orig not in kept:
            drops.add(orig)
            fixes.append(("duplicate_result" if it["call_id"] in kept_ids else "orphan_result", it["call_id"]))
    answers: dict[int, list[str]] = {}
    head: Loc | None = None
    for it, at in out:
        if it.get("role") != "tool":
            head = at if it.get("tool_calls") else None
        elif at is None and head is not None:
            answers.setdefault(head.msg, []).append(it["call_id"])
            fixes.append(("dangling_call", it["call_id"]))
    return drops, answers, fixes


class Lifecycle:
    """The steps, with the conversation's state kept in the Recorder's Conversation."""

    def __init__(self, opts: LifecycleOptions, log: Any) -> None:
        self.opts = opts
        self.log = log

    def window(self, model: str | None, beta: str = "") -> int:
        return self.opts.window or model_window(model, beta)

    async def apply(self, conv: Conversation, fam: Any, doc: dict[str, Any], parsed: Parsed, pending: PendingRecord,
                    body: bytes, beta: str = "", call: tuple[str, dict[str, str]] | None = None) -> tuple[bytes, dict[str, Any]]:
        """The bytes to forward for DOC (BODY when nothing changed) and what was done. The
        request's items are recorded by PENDING: now if a compaction needs them, else later.
        CALL (the upstream URL and the client's headers) is where a summary is asked for when
        the summariser is the upstream's."""
        opts = self.opts
        notes: dict[str, Any] = {}
        changed = repaired = False
        if "repair" in opts.steps:
            drops, answers, fixes = repair_plan(_unchecked(conv, parsed, pending))
            if fixes:
                fam.fix(doc, drops, answers, ANSWER_TEXT)
                pending.fixes = fixes
                parsed = fam.parse(doc)
                changed = repaired = True
                notes["repaired"] = [f"{r} {c}" for r, c in fixes]
            else:  # sound up to here: the next request checks only what follows
                conv.runtime["sound"] = (len(parsed.items), pending.digests[-1] if pending.digests else b"")
        client = list(fam.messages(doc))  # the repaired client history: what compactions are keyed by
        window = self.window(doc.get("model"), beta)
        rep = self._lookup(conv, client)
        if rep is not None:
            fam.replace_span(doc, rep["lead"], rep["k"], rep["text"])
            changed = True
        out = orjson.dumps(doc) if changed else body
        if "prune" in opts.steps and len(out) // 4 * 100 >= opts.prune.min_percent * window \
                and self._prune(conv, fam, doc, parsed, pending, rep, window, repaired):
            out = orjson.dumps(doc)
        tokens = len(out) // 4
        if "compact" in opts.steps and window > 0:
            if tokens * 100 >= opts.threshold * window:
                await pending.written()  # the compaction summarises the log: this request's items in it
                new = await self._compact(conv, fam, client, parsed.lead, rep, tokens, self.summarizer(conv, fam, doc, call))
                if new is not None:
                    doc[fam.list_key] = client
                    fam.replace_span(doc, new["lead"], new["k"], new["text"])
                    if "prune" in opts.steps:
                        self._prune(conv, fam, doc, parsed, pending, new, window, True)
                    out = orjson.dumps(doc)
                    notes["compacted"] = new["compaction"]
            elif "prefire" in opts.steps and tokens * 100 >= (opts.threshold - opts.lead) * window:
                self._prefire(conv, pending, self.summarizer(conv, fam, doc, call))
        return out, notes

    def preview(self, conv: Conversation, fam: Any, doc: dict[str, Any], parsed: Parsed, body: bytes) -> bytes:
        """DOC as the conversation's next request would go out, read-only (a token count):
        repaired, with the compaction its prefix has, and the last prune batch's rewrites."""
        changed = False
        if "repair" in self.opts.steps:
            drops, answers, fixes = repair_plan(parsed)
            if fixes:
                fam.fix(doc, drops, answers, ANSWER_TEXT)
                parsed, changed = fam.parse(doc), True
        rep = self._lookup(conv, list(fam.messages(doc))) if "compact" in self.opts.steps else None
        cache = conv.runtime.get("prune") if "prune" in self.opts.steps else None
        if rep is not None:
            fam.replace_span(doc, rep["lead"], rep["k"], rep["text"])
            changed = True
        if cache and cache["texts"] and cache["rep"] == (rep["compaction"] if rep is not None else None):
            changed = _reapply(fam, doc, parsed, rep, cache["texts"]) or changed
        return orjson.dumps(doc) if changed else body

    # -- compaction: lookup, new, prefire ----------------------------------------------------------

    def summarizer(self, conv: Conversation, fam: Any, doc: dict[str, Any], call: tuple[str, dict[str, str]] | None) -> str | UpstreamSummarizer:
        """Who summarises this conversation: `--summarizer` when named, else its own upstream
        (the offline extractive one when the request names no model or the upstream refused)."""
        if self.opts.summarizer != UPSTREAM:
            return self.opts.summarizer
        model = doc.get("model")
        if call is None or not isinstance(model, str) or not model or conv.runtime.get("upstream_refused"):
            return "extractive"
        return UpstreamSummarizer(fam.name, call[0], call[1], model)

    @staticmethod
    def _lookup(conv: Conversation, client: list[Any]) -> dict[str, Any] | None:
        """The latest compaction whose replaced prefix this request repeats exactly. The
        messages of the last request it matched are kept: a request that repeats them (one
        comparison in C) matches without fingerprinting the span again."""
        seen = conv.runtime.get("matched")
        for rep in reversed(conv.replacements):
            k = rep["k"]
            if k > len(client):
                continue
            if seen is not None and seen[0] is rep and client[:k] == seen[1]:
                return rep
            if native_prefix_fp(client, k) == rep["fp"]:
                conv.runtime["matched"] = (rep, client[:k])
                return rep
        return None

    def _split(self, fam: Any, client: list[Any], lead: int, floor: int) -> int | None:
        """Where the live tail starts: about `tail_percent` of the conversation's bytes, at a
        message that opens no orphan result, after the previous compaction's span."""
        sizes = [len(orjson.dumps(m)) for m in client]
        total = sum(sizes[lead:])
        tail, k = 0, len(client)
        while k > lead + 1 and (tail + sizes[k - 1]) * 100 <= self.opts.tail_percent * total:
            k -= 1
            tail += sizes[k]
        k = min(k, len(client) - 1)
        for cand in (*range(k, floor, -1), *range(k + 1, len(client))):
            if cand > max(lead, floor) and fam.tail_ok(client, cand):
                return cand
        return None

    async def _compact(self, conv: Conversation, fam: Any, client: list[Any], lead: int, prev: dict[str, Any] | None,
                       tokens: int, summarizer: str | UpstreamSummarizer) -> dict[str, Any] | None:
        k = self._split(fam, client, lead, prev["k"] if prev is not None else lead)
        if k is None:
            self.log(f"{conv.folder.name}: over the threshold ({tokens:,} tokens) but no live tail to keep; not compacted")
            return None
        pending = conv.runtime.get("prefire")
        wait = self.opts.prefire_wait
        if pending is not None and not pending.done():
            # A pass 1 started whose process may not have left its marker yet (its interpreter's
            # start): the compaction would not see it and run in one pass, its work wasted.
            began = time.monotonic()
            await asyncio.wait({pending}, timeout=wait)
            wait = max(0.0, wait - (time.monotonic() - began))
        opts = CompactOptions(force=True, mode="segments", summarizer=summarizer, two_pass="prefire" in self.opts.steps,
                              prefire_wait=wait)
        try:
            result = await asyncio.to_thread(compact_session, conv.session, opts)
        except SummarizerError as exc:
            if not isinstance(summarizer, UpstreamSummarizer) or isinstance(exc, WindowTooSmall):
                raise
            # The upstream would not summarise (a credential scoped to its client's own prompts,
            # a model that refuses): this conversation is summarised offline from now on.
            conv.runtime["upstream_refused"] = True
            self.log(f"{conv.folder.name}: the upstream's summary failed ({exc}); summarised offline instead")
            result = await asyncio.to_thread(compact_session, conv.session, replace(opts, summarizer="extractive"))
        if pending is not None and not pending.done():
            self.log(f"{conv.folder.name}: pass 1 still running at the threshold")
        if result.event is None:
            self.log(f"{conv.folder.name}: compaction did not commit ({result.status})")
            return None
        comp = result.event
        text = await asyncio.to_thread(_head_text, conv, comp["through_seq"])
        rep = {"k": k, "lead": lead, "fp": native_prefix_fp(client, k), "text": text, "compaction": comp["id"], "seq": comp["seq"]}
        conv.replacements.append(rep)
        conv.prefired_at = -1
        await asyncio.to_thread(conv.save)
        self.log(f"{conv.folder.name}: compacted ({tokens:,} tokens; messages {lead}..{k - 1} replaced; compaction {comp['id']})")
        return rep

    def _prefire(self, conv: Conversation, pending: PendingRecord, summarizer: str | UpstreamSummarizer) -> None:
        """Pass 1 of a two-pass compaction, in a process of its own (`proxy.pass1`, which runs
        `compact --prefire`): its work never holds this loop's interpreter while requests go
        through. The job, the client's headers with it, goes through the child's stdin alone."""
        running = conv.runtime.get("prefire")
        if (running is not None and not running.done()) or conv.prefired_at >= 0:
            return
        conv.prefired_at = len(conv.digests)
        spec = summarizer.spec() if isinstance(summarizer, UpstreamSummarizer) else summarizer
        job = orjson.dumps({"folder": str(conv.folder), "summarizer": spec})

        async def run() -> None:
            try:
                await pending.written(now=False)  # pass 1 reads the log: this request's items in it
                proc = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "catty_ctx.proxy.pass1", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
                    stderr=asyncio.subprocess.PIPE)
                _, err = await proc.communicate(job)
                if proc.returncode:
                    self.log(f"{conv.folder.name}: pass 1 failed (exit {proc.returncode}: {err.decode(errors='replace').strip()[-300:]})")
            except Exception as exc:
                self.log(f"{conv.folder.name}: pass 1 failed ({type(exc).__name__}: {exc})")

        conv.runtime["prefire"] = asyncio.ensure_future(run())

    # -- prune -----------------------------------------------------------------------------------

    def _prune(self, conv: Conversation, fam: Any, doc: dict[str, Any], client: Parsed, pending: PendingRecord,
               rep: dict[str, Any] | None, window: int, repaired: bool) -> bool:
        """Cache-aware prune of the outgoing copy; True when a result was rewritten.

        The strategy is a pure function of the request's items, and between two batches a
        request is the previous one plus new items: while the new items do not bring the copy
        to the high mark, the previous request's rewrites are applied again as they were (no
        replay of the whole history on every request)."""
        cache = conv.runtime.get("prune")
        rep_id = rep["compaction"] if rep is not None else None
        n = cache["n"] if cache else 0
        if cache and not repaired and cache["rep"] == rep_id and 0 < n <= len(pending.digests) and pending.digests[n - 1] == cache["digest"]:
            new = sum(item_tokens(it) for it in client.items[n:])
            if (cache["tokens"] + new) * 100 < window * self.opts.prune.high_percent:
                _reapply(fam, doc, client, rep, cache["texts"])
                return bool(cache["texts"])
        parsed = fam.parse(doc)
        items: list[Item] = []
        where: dict[str, Loc] = {}
        recorded, seqs = list(conv.digests), list(conv.seqs)  # (a recording thread may be extending them)
        known = common_prefix(recorded, pending.digests)
        seq_of = {it["call_id"]: s for it, s in zip(pending.items[:known], seqs[:known]) if it.get("role") == "tool"}
        overhead = {k: v for k, v in doc.items() if k in ("tools", "functions")}
        if overhead:  # the tool schemas count toward the window as much as the items do
            items.append({"role": "system", "text": orjson.dumps(overhead).decode(), "synthetic": "tool_schemas"})
        for it, loc in zip(parsed.items, parsed.locs):
            if it.get("role") == "tool":
                where[it["call_id"]] = loc
                seq = seq_of.get(it["call_id"])
                items.append({**it, "seq": seq} if seq is not None else it)
            else:
                items.append(it)
        opts = replace(self.opts.prune, session_ref=str(conv.folder))
        stats = PruneStats()
        texts: dict[str, str] = {}
        for vi in prune_item_stream(items, opts, window, stats):
            it = vi.item
            if it.get("role") == "tool" and it.get("pruned") and it["call_id"] in where:
                fam.set_output(doc, where[it["call_id"]], it["output"])
                texts[it["call_id"]] = it["output"]
        conv.runtime["prune"] = {"rep": rep_id, "n": len(client.items), "digest": pending.digests[-1] if pending.digests else b"",
                                 "tokens": stats.item_tokens_after, "texts": texts}
        return bool(texts)


def _unchecked(conv: Conversation, parsed: Parsed, pending: PendingRecord) -> Parsed:
    """The part of a request repair has to look at: all of it, or, when it extends a request
    found sound, from the last item before the new ones that is not a tool result (a run of
    results belongs to the assistant before it, so the check starts there)."""
    n, digest = conv.runtime.get("sound") or (0, b"")
    if not (0 < n <= len(pending.digests) and pending.digests[n - 1] == digest):
        return parsed
    s = n - 1
    while s > 0 and parsed.items[s].get("role") == "tool":
        s -= 1
    return Parsed(parsed.items[s:], parsed.locs[s:], parsed.lead, parsed.call_kinds)


def _reapply(fam: Any, doc: dict[str, Any], parsed: Parsed, rep: dict[str, Any] | None, texts: dict[str, str]) -> bool:
    """Set a prune batch's rewritten outputs TEXTS (by call id) in DOC again, where PARSED's
    results sit once REP's compaction replaced its span; True when one was set."""
    changed = False
    for it, loc in zip(parsed.items, parsed.locs):
        text = texts.get(it["call_id"]) if it.get("role") == "tool" else None
        at = _moved(loc, rep) if text is not None else None
        if at is not None:
            fam.set_output(doc, at, text)
            changed = True
    return changed


def _moved(loc: Loc | None, rep: dict[str, Any] | None) -> Loc | None:
    """Where a client message's item sits once a compaction replaced messages lead..k-1 by one."""
    if loc is None or rep is None or loc.msg < rep["lead"]:
        return loc
    if loc.msg < rep["k"]:
        return None
    return Loc(loc.msg - rep["k"] + rep["lead"] + 1, loc.block)


def _head_text(conv: Conversation, through_seq: int) -> str:
    """The summary carrier and the continuation reminder the compaction's head holds, as one text."""
    parts = []
    for it in view(conv.session):
        if isinstance(it.get("seq"), int) and it["seq"] > through_seq:
            break
        if it.get("synthetic") in HEAD_KINDS:
            parts.append(it["text"])
    return "\n\n".join(parts)

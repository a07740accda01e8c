"""Claude Code sessions (`projects/<cwd>/<sessionId>.jsonl`) → catty-ctx events.

Claude Code keeps a tree of records linked by `uuid`/`parentUuid`, writes one line per
content block of a response (each repeating the response's usage; the results of parallel
calls link to their own call's line), replays earlier records when a session is resumed,
and marks compaction with a `compact_boundary` record followed by an `isCompactSummary`
user record. Files in the wild also hold records no link joins (older versions wrote
`parentUuid: null`, files get cut) and records of other sessions.

The importer takes the file's own session (`_own_session`, `_select`), keeps the live
branch and puts what no link reaches in file order (`_Layout`), drops replayed copies by
uuid, merges the lines of one response, counts each response's usage once (keyed by
message id + request id, the largest copy kept; an abandoned branch's calls are kept as
usage marked `off_branch`), and
imports subagent files as events with `agent`. (The usage ledger reads Claude files with
its own faster reader, the usage package, under the same dedupe rules.)
"""
from __future__ import annotations

import heapq
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from ..errors import UsageError
from .common import SHAPE_ERRORS, EventBuilder, ImportReport, Warn, iter_jsonl, not_recognised, shape_error, text_of

FORMAT = "claude"
WHAT = "a Claude Code session"
SYNTHETIC_MODEL = "<synthetic>"
_MESSAGE_TYPES = ("user", "assistant", "system")
_INTERRUPT_PREFIX = "[Request interrupted by user"
# Output of local slash / shell commands, written as user text by the harness: not a prompt.
_COMMAND_OUTPUT_PREFIXES = ("<local-command-stdout>", "<local-command-stderr>", "<bash-stdout>", "<bash-stderr>")
_OFF_BRANCH_USAGE = "catty:usage-only"  # an item of the import sequence (a call with no message), never a record type


# -- usage (shared with the usage ledger) ------------------------------------------------------


def _count(usage: dict[str, Any], key: str) -> int:
    v = usage.get(key)
    return v if type(v) is int and v > 0 else 0  # a bool is not a count


def usage_fields(usage: Any) -> dict[str, int] | None:
    """Anthropic usage → catty-ctx fields (input is uncached input already)."""
    if not isinstance(usage, dict):
        return None
    return {
        "input": _count(usage, "input_tokens"),
        "output": _count(usage, "output_tokens"),
        "cache_read": _count(usage, "cache_read_input_tokens"),
        "cache_write": _count(usage, "cache_creation_input_tokens"),
    }


def _bigger(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Is usage a larger snapshot than b? (partial copies of one response happen)."""
    def size(u: dict[str, Any]) -> tuple[int, int]:
        return (u["input"] + u["output"] + u["cache_read"] + u["cache_write"], u["output"])

    return size(a) > size(b)


# -- reading a file into its conversation -----------------------------------------------------


class _Tree:
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

    def add(self, rec: dict[str, Any], lineno: int, report: ImportReport, *, sidechain_ok: bool) -> None:
        uid = rec.get("uuid")
        rtype = rec.get("type")
        if rtype in _MESSAGE_TYPES or rtype in ("summary", "file-history-snapshot"):
            self.recognised += 1
        if rtype == "progress":
            self._nested(rec)
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
        if isinstance(inner, dict) and inner.get("type") == "assistant" and isinstance(inner.get("message"), dict):
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


def _read_tree(path: Path, report: ImportReport, *, lenient: bool, warn: Warn | None, sidechain_ok: bool) -> _Tree:
    tree = _Tree()
    for line in iter_jsonl(path, report=report, lenient=lenient, warn=warn, what=WHAT):
        tree.add(line.record, line.lineno, report, sidechain_ok=sidechain_ok)
    return tree


def _session_of(rec: dict[str, Any]) -> str | None:
    sid = rec.get("sessionId")
    return sid if isinstance(sid, str) and sid else None


def _own_session(tree: _Tree, path: Path, requested: str | None) -> str:
    """The session a file is imported as: the one asked for, else the one the file is named
    after, else the one most of its conversation records belong to."""
    counts: Counter[str] = Counter()
    for rec in tree.records.values():
        sid = _session_of(rec)
        if sid and rec.get("type") in ("user", "assistant") and not rec.get("isSidechain"):
            counts[sid] += 1
    if requested in counts:
        return requested
    if requested and path.stem != requested:
        held = ", ".join(sorted(counts)) or "none"
        raise UsageError(f"{path}: holds no conversation of session {requested} (sessions in it: {held})")
    if path.stem in counts:
        return path.stem
    if counts:
        return counts.most_common(1)[0][0]  # ties: the first seen
    return next((s for s in map(_session_of, tree.records.values()) if s), path.stem)


def _select(tree: _Tree, own: str) -> tuple[dict[str, None], Counter[str]]:
    """The main-loop records of session `own` (file order): its own records, those without a
    session id, and the records of another session its records descend from (a resumed
    session's file starts with a copy of the earlier session's history). The rest is
    counted by session."""
    everything = tree.records
    side = set(tree.sidechain)
    chosen: set[str] = set()
    for uid, rec in everything.items():
        sid = rec.get("sessionId")
        if sid == own or _session_of(rec) is None:
            chosen.add(uid)
    if len(chosen) == len(everything):  # the common case: one session
        return {u: None for u in everything if u not in side}, Counter()
    for uid in list(chosen):
        cur = tree.parent(uid, everything)
        while cur is not None and cur not in chosen:
            chosen.add(cur)
            cur = tree.parent(cur, everything)
    others: Counter[str] = Counter(str(_session_of(r)) for u, r in everything.items() if u not in chosen and u not in side)
    return {u: None for u in everything if u in chosen and u not in side}, others


class _Layout:
    """A file's records in the order they are imported.

    Each group of linked records (a root and everything under it) contributes the chain to
    its newest message, plus the parallel tool calls' siblings the single-parent chain
    misses (one line per tool_use, each result linked to its own line). Messages off that
    chain are an abandoned branch (a rewind, an edited prompt): left out of the view, their
    usage kept. The group holding the newest message is the live conversation; other
    groups (no `parentUuid` link reaches them: old or hand-made files, cut files) are
    merged in by file order.
    """

    def __init__(self, tree: _Tree, uids: dict[str, None]) -> None:
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
        newest = next((u for u in reversed(uids) if _is_message(records[u])), None)  # uids: file order
        live = root[newest] if newest is not None else None
        chains: list[list[str]] = []
        for top, members in groups.items():
            chain = self._chain(members, parent)
            on = set(chain)
            for u in members:
                if u not in on:
                    if _is_message(records[u]):
                        self.off_branch.append(records[u])
                    else:
                        self.side_records[str(records[u].get("type"))] += 1
            if top != live:  # (records that carry no conversation are no news)
                self.unlinked += sum(1 for u in chain if _is_message(records[u]))
            chains.append(chain)
        self.off_branch.sort(key=lambda r: pos[r["uuid"]])
        self.sequence = [records[u] for u in heapq.merge(*chains, key=pos.__getitem__)]

    def _chain(self, members: list[str], parent: dict[str, str | None]) -> list[str]:
        records, pos = self.tree.records, self.tree.position
        tip = next((u for u in reversed(members) if _is_message(records[u])), members[-1])
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
                mid = _message_id(rec)
                if mid is not None:
                    off_lines.setdefault(mid, []).append(u)
            elif _carries_result(rec):
                p = parent[u]
                if p is not None:
                    results_of.setdefault(p, []).append(u)
        if not off_lines and not results_of:
            return chain
        anchor: dict[Any, str] = {}
        lines_of: dict[Any, list[str]] = {}
        for u in chain:
            if records[u].get("type") == "assistant":
                mid = _message_id(records[u])
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


def _queued_prompt(rec: dict[str, Any]) -> dict[str, Any] | None:
    """A prompt typed while Claude Code was busy: it reaches the model as an attachment record
    (`queued_command`), never as a user line."""
    att = rec.get("attachment")
    if rec.get("type") == "attachment" and isinstance(att, dict) and att.get("type") == "queued_command" and att.get("prompt"):
        return att
    return None


def _is_message(rec: dict[str, Any]) -> bool:
    return rec.get("type") in ("user", "assistant") or _queued_prompt(rec) is not None


def _message_id(rec: dict[str, Any]) -> Any:
    msg = rec.get("message")
    mid = msg.get("id") if isinstance(msg, dict) else None
    return mid if isinstance(mid, str) and mid else None


def _carries_result(rec: dict[str, Any]) -> bool:
    if rec.get("type") != "user":
        return False
    msg = rec.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


# -- turning a chain into events ---------------------------------------------------------------


class _Response:
    """The lines of one assistant response (same message.id), merged."""

    __slots__ = ("mid", "uid", "ts", "last_ts", "model", "request_id", "texts", "images", "thinking", "calls", "results", "usage",
                 "raw_usage", "api_error")

    def __init__(self, rec: dict[str, Any], msg: dict[str, Any]) -> None:
        self.mid = msg.get("id")
        self.uid = rec["uuid"]
        self.ts = rec.get("timestamp")
        self.last_ts = self.ts
        self.model = msg.get("model")
        self.request_id = rec.get("requestId")
        self.texts: list[str] = []
        self.images: list[dict[str, Any]] = []
        self.thinking: list[tuple[str, Any]] = []
        self.calls: list[tuple[str, str, Any, Any]] = []
        self.results: list[tuple[dict[str, Any], Any]] = []
        self.usage: dict[str, int] | None = None
        self.raw_usage: Any = None
        self.api_error = rec.get("isApiErrorMessage") is True  # Claude Code's text for a failed request


class _Converter:
    def __init__(self, b: EventBuilder, agent: str | None, seen_usage: set[tuple[Any, Any]], *, path: Path, tree: _Tree,
                 lenient: bool, warn: Warn | None) -> None:
        self.b = b
        self.agent = agent
        self.open: _Response | None = None
        self.boundary: dict[str, Any] | None = None
        self.seen_usage = seen_usage
        self.path = str(path)
        self.tree = tree
        self.lenient = lenient
        self.warn = warn

    def run(self, chain: list[dict[str, Any]]) -> None:
        for rec in chain:
            try:
                rtype = rec.get("type")
                if rtype == "assistant":
                    self.assistant(rec)
                elif rtype == "user":
                    self.user(rec)
                elif rtype == "system":
                    self.system(rec)
                elif rtype == _OFF_BRANCH_USAGE:
                    self.off_branch_usage(rec)
                elif rtype == "attachment":
                    self.attachment(rec)
                else:
                    self.b.skip(str(rtype))
            except SHAPE_ERRORS as exc:
                self.open = None
                self.failed(exc, rec.get("uuid"))
        open_uid = self.open.uid if self.open else None
        try:
            self.flush()
        except SHAPE_ERRORS as exc:
            self.failed(exc, open_uid)

    def failed(self, exc: Exception, uid: Any) -> None:
        line = self.tree.lines.get(uid) if isinstance(uid, str) else None
        shape_error(exc, path=self.path, line=line, report=self.b.report, lenient=self.lenient, warn=self.warn)

    # assistant lines: merge by message.id
    def assistant(self, rec: dict[str, Any]) -> None:
        msg = rec.get("message")
        if not isinstance(msg, dict):
            self.b.skip("assistant:no message")
            return
        r = self.open
        if r is None or r.mid is None or r.mid != msg.get("id"):
            self.flush()
            r = self.open = _Response(rec, msg)
        r.last_ts = rec.get("timestamp") or r.last_ts
        if r.request_id is None:
            r.request_id = rec.get("requestId")
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                r.texts.append(block.get("text") or "")
            elif btype in ("tool_use", "server_tool_use"):
                r.calls.append((str(block.get("id")), str(block.get("name") or ""), block.get("input"), rec.get("timestamp")))
            elif btype == "thinking":
                r.thinking.append((block.get("thinking") or "", rec.get("timestamp")))
            elif btype == "redacted_thinking":
                r.thinking.append(("[redacted thinking]", rec.get("timestamp")))
            elif btype == "image":
                img = self.image(block)
                if img:
                    r.images.append(img)
            elif isinstance(btype, str) and btype.endswith("_tool_result"):
                r.results.append((block, rec.get("timestamp")))
            else:
                self.b.skip(f"block:{btype}")
        raw = msg.get("usage")
        if raw != r.raw_usage and r.model != SYNTHETIC_MODEL:  # the lines of a response mostly repeat it
            r.raw_usage = raw
            fields = usage_fields(raw)
            if fields is not None and (r.usage is None or _bigger(fields, r.usage)):
                r.usage = fields

    def flush(self) -> None:
        r, self.open = self.open, None
        if r is None:
            return
        b, agent = self.b, self.agent
        b.message("assistant", "\n\n".join(t for t in r.texts if t) if len(r.texts) > 1 else (r.texts[0] if r.texts else ""),
                  id=r.uid, ts=r.ts, agent=agent, images=r.images or None, synthetic="api_error" if r.api_error else None)
        for text, ts in r.thinking:
            b.reasoning(text, ts=ts, agent=agent)
        for call_id, name, args, ts in r.calls:
            b.tool_call(call_id, name, args, ts=ts, agent=agent)
        # The usage measures the request that produced this response: it goes before the
        # results, which the next request's context holds on top of it.
        if r.usage is not None:
            key = (r.mid or r.uid, r.request_id)
            if key not in self.seen_usage:
                self.seen_usage.add(key)
                b.usage(r.model, **r.usage, ts=r.last_ts, agent=agent, request_id=r.request_id)
        for block, ts in r.results:
            self.result(block, ts)

    def off_branch_usage(self, item: dict[str, Any]) -> None:
        """A call made on an abandoned branch (or logged only as a progress record): paid for,
        so counted; an abandoned branch's call is marked, out of the view."""
        key = item["key"]
        if key in self.seen_usage:
            return
        self.seen_usage.add(key)
        self.b.usage(item["model"], **item["usage"], ts=item["timestamp"], agent=self.agent, request_id=item["requestId"],
                     off_branch=item.get("off_branch", True))

    # user lines: prompts, tool results, injected text, compaction summaries
    def user(self, rec: dict[str, Any]) -> None:
        msg = rec.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        ts = rec.get("timestamp")
        if rec.get("isCompactSummary"):
            self.flush()
            boundary, self.boundary = self.boundary or {}, None
            meta = boundary.get("compactMetadata") if isinstance(boundary.get("compactMetadata"), dict) else {}
            self.b.compaction(
                text_of(content),
                id=str(boundary.get("uuid") or rec["uuid"]),
                ts=ts,
                agent=self.agent,
                summarizer="claude-code",
                trigger=meta.get("trigger"),
                tokens_before=meta.get("preTokens"),
            )
            return
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            self.b.skip("user:no content")
            return
        texts: list[str] = []
        images: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for block in blocks:
            if isinstance(block, str):
                texts.append(block)
                continue
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "tool_result":
                results.append(block)
            elif btype == "text":
                texts.append(block.get("text") or "")
            elif btype == "image":
                img = self.image(block)
                if img:
                    images.append(img)
            else:
                self.b.skip(f"block:{btype}")
        if results and not texts and not images and self.open is not None:
            self.open.results.extend((blk, ts) for blk in results)  # more lines of this response may follow
            return
        self.flush()
        for blk in results:
            self.result(blk, ts)
        if texts or images:
            text = "\n".join(texts)
            synthetic = None
            if rec.get("isMeta"):
                synthetic = "meta"
            elif text.startswith(_INTERRUPT_PREFIX):
                synthetic = "interrupted"
            elif text.startswith(_COMMAND_OUTPUT_PREFIXES):
                synthetic = "command_output"
            self.b.message("user", text, id=rec["uuid"], ts=ts, agent=self.agent, images=images or None, synthetic=synthetic)

    def attachment(self, rec: dict[str, Any]) -> None:
        queued = _queued_prompt(rec)
        if queued is None:
            att = rec.get("attachment")
            self.b.skip(f"attachment:{att.get('type') if isinstance(att, dict) else None}")
            return
        self.flush()
        origin = queued.get("origin")
        human = queued.get("commandMode") in (None, "prompt") and (not isinstance(origin, dict) or origin.get("kind") in (None, "human"))
        mode = queued.get("commandMode")
        synthetic = None if human else (mode.replace("-", "_") if isinstance(mode, str) and mode else "queued_command")
        self.b.message("user", text_of(queued["prompt"]), id=rec["uuid"], ts=rec.get("timestamp"), agent=self.agent,
                       synthetic=synthetic)

    def system(self, rec: dict[str, Any]) -> None:
        subtype = rec.get("subtype")
        if subtype == "compact_boundary":
            self.flush()
            self.boundary = rec
            return
        self.b.skip(f"system:{subtype}")

    def result(self, block: dict[str, Any], ts: Any) -> None:
        content = block.get("content")
        images: list[dict[str, Any]] = []
        if isinstance(content, list):
            texts = []
            for part in content:
                if isinstance(part, dict) and part.get("type") == "image":
                    img = self.image(part)
                    if img:
                        images.append(img)
                elif isinstance(part, dict) and isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif isinstance(part, str):
                    texts.append(part)
                else:
                    texts.append(orjson.dumps(part).decode())
            output = "\n".join(texts)
        else:
            output = text_of(content)
        self.b.tool_result(str(block.get("tool_use_id")), output, is_error=block.get("is_error") is True,
                           ts=ts, agent=self.agent, images=images or None)

    def image(self, block: dict[str, Any]) -> dict[str, Any] | None:
        src = block.get("source")
        if isinstance(src, dict) and src.get("type") == "base64" and isinstance(src.get("data"), str):
            return self.b.image(src.get("media_type"), src["data"])
        self.b.skip("image:not inline")
        return None


# -- locating files ----------------------------------------------------------------------------


def find_session_file(source: Path, session_id: str | None) -> Path:
    """SOURCE is a session file, or a projects tree (or one project's folder) + a session id."""
    if source.is_file():
        return source
    if not source.is_dir():
        raise UsageError(f"{source}: no such file or directory")
    if session_id:
        hits = sorted(p for p in source.rglob(f"{session_id}.jsonl") if "subagents" not in p.parts)
        if hits:
            return hits[0]
        # Its records may sit in another session's file (a resumed session kept writing there).
        mark = orjson.dumps({"sessionId": session_id})[1:-1]
        for p in sorted(source.rglob("*.jsonl")):
            if "subagents" not in p.parts and _holds(p, mark):
                return p
        raise UsageError(f"{source}: no Claude Code session {session_id} in this tree")
    files = sorted(p for p in source.rglob("*.jsonl") if "subagents" not in p.parts and not p.name.startswith("agent-"))
    if len(files) == 1:
        return files[0]
    if not files:
        raise not_recognised(str(source), WHAT)
    raise UsageError(f"{source}: holds {len(files)} sessions; name one with --session ID")


def _holds(path: Path, mark: bytes) -> bool:
    """Does the file hold these bytes? (read in blocks, overlapping by the mark's length)"""
    tail = b""
    try:
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                if mark in tail + block[: len(mark)] or mark in block:
                    return True
                tail = block[-len(mark):]
    except OSError:
        return False
    return False


def subagent_files(main: Path, session_id: str) -> list[tuple[str, Path]]:
    """(agent id, file) of the session's subagents, new layout and old."""
    found: list[tuple[str, Path]] = []
    sub = main.with_suffix("") / "subagents"
    if sub.is_dir():
        for p in sorted(sub.glob("*.jsonl")):
            found.append((p.stem.removeprefix("agent-"), p))
    for p in sorted(main.parent.glob("agent-*.jsonl")):
        try:
            with open(p, "rb") as f:
                first = orjson.loads(f.readline() or b"{}")
        except (OSError, orjson.JSONDecodeError):
            continue
        if isinstance(first, dict) and first.get("sessionId") == session_id:
            found.append((str(first.get("agentId") or p.stem.removeprefix("agent-")), p))
    return found


def _prompt_context(chain: list[dict[str, Any]], cwd: str | None, model: str | None) -> dict[str, Any]:
    """What a Claude Code file says of the prompt's context: the rest is marked unknown."""
    from ..snapshot import snapshot_value

    version = next((r["version"] for r in chain if isinstance(r.get("version"), str) and r["version"]), None)
    branch = next((r["gitBranch"] for r in chain if isinstance(r.get("gitBranch"), str) and r["gitBranch"]), None)
    parts = {
        "audience": "main",
        "model": model,
        "agent_version": f"claude-code {version}" if version else None,
        "environment.cwd": cwd,
        "environment.git_branch": branch,
    }
    sources = {
        "audience": "claude: the session's main file (subagents live in their own files)",
        "model": "claude: message.model of the first assistant record",
        "agent_version": "claude: `version` of the session's records",
        "environment.cwd": "claude: `cwd` of the session's records",
        "environment.git_branch": "claude: `gitBranch` of the session's records",
    }
    return snapshot_value(parts, {k: v for k, v in sources.items() if parts.get(k) is not None})


def _off_branch_usage(layout: _Layout, tree: _Tree) -> list[dict[str, Any]]:
    """One item per response made on an abandoned branch (its lines merged, the largest usage
    kept), placed at its first line; none for a response the imported branch also holds."""
    on_branch = {_message_id(r) for r in layout.sequence if r.get("type") == "assistant"}
    items: dict[Any, dict[str, Any]] = {}
    for rec in layout.off_branch:
        msg = rec.get("message")
        if rec.get("type") != "assistant" or not isinstance(msg, dict) or msg.get("model") == SYNTHETIC_MODEL:
            continue
        fields = usage_fields(msg.get("usage"))
        mid = _message_id(rec)
        if fields is None or (mid is not None and mid in on_branch):
            continue
        rid = rec.get("requestId") if isinstance(rec.get("requestId"), str) else None
        key = (mid or rec["uuid"], rid)
        item = items.get(key)
        if item is None:
            items[key] = {"type": _OFF_BRANCH_USAGE, "uuid": rec["uuid"], "key": key, "model": msg.get("model"),
                          "usage": fields, "timestamp": rec.get("timestamp"), "requestId": rid}
            continue
        item["timestamp"] = rec.get("timestamp") or item["timestamp"]
        if _bigger(fields, item["usage"]):
            item["usage"] = fields
    return list(items.values())


def _tell(layout: _Layout, path: Path, report: ImportReport, warn: Warn | None) -> None:
    """Count what the layout left out or put in file order; say the latter once per file."""
    if layout.unlinked:
        report.unlinked += layout.unlinked
        if warn:
            warn(f"{path}: {layout.unlinked} messages are not linked to the conversation's last record "
                 "(parentUuid missing or broken): imported in file order")
    if layout.off_branch:
        report.skipped["off_branch"] += len(layout.off_branch)
    for rtype, n in layout.side_records.items():
        report.skipped[rtype] += n


def _nested_responses(tree: _Tree, sid: str) -> dict[str, list[dict[str, Any]]]:
    """The usage of subagent responses logged as progress records, one item per response."""
    out: dict[str, list[dict[str, Any]]] = {}
    seen: dict[Any, dict[str, Any]] = {}
    for agent, rec in tree.nested:
        msg = rec["message"]
        if _session_of(rec) not in (None, sid) or msg.get("model") == SYNTHETIC_MODEL:
            continue
        fields = usage_fields(msg.get("usage"))
        if fields is None:
            continue
        rid = rec.get("requestId") if isinstance(rec.get("requestId"), str) else None
        key = (_message_id(rec) or rec.get("uuid"), rid)
        item = seen.get(key)
        if item is None:
            item = seen[key] = {"type": _OFF_BRANCH_USAGE, "key": key, "model": msg.get("model"), "usage": fields,
                                "timestamp": rec.get("timestamp"), "requestId": rid, "off_branch": False}
            out.setdefault(agent, []).append(item)
        elif _bigger(fields, item["usage"]):
            item["usage"] = fields
    return out


def _with_paid_calls(layout: _Layout, tree: _Tree) -> list[dict[str, Any]]:
    """The import sequence with the abandoned branches' calls merged in by file order."""
    paid = _off_branch_usage(layout, tree)
    if not paid:
        return layout.sequence
    pos = tree.position
    return list(heapq.merge(layout.sequence, paid, key=lambda r: pos[r["uuid"]]))


def convert(
    source: Path,
    start: Any,
    *,
    lenient: bool = False,
    warn: Warn | None = None,
    session_id: str | None = None,
) -> EventBuilder:
    """Import one Claude Code session; `start(session fields)` writes the session event and gives the builder."""
    path = find_session_file(source, session_id)
    report: ImportReport = start.report
    tree = _read_tree(path, report, lenient=lenient, warn=warn, sidechain_ok=False)
    if tree.recognised == 0:
        raise not_recognised(str(path), WHAT)
    sid = _own_session(tree, path, session_id)
    uids, others = _select(tree, sid)
    if others:
        report.skipped["other_session"] += sum(others.values())
        if warn:
            held = ", ".join(f"{k} ({n} records)" for k, n in sorted(others.items()))
            warn(f"{path}: also holds records of session {held}: not imported; import one with --session ID")
    layout = _Layout(tree, uids)
    chain = layout.sequence
    _tell(layout, path, report, warn)
    first = next((r for r in chain if _session_of(r)), None) or next(iter(tree.records.values()), {})
    cwd = next((r["cwd"] for r in chain if isinstance(r.get("cwd"), str)), None)
    model = next(
        (r["message"]["model"] for r in chain if r.get("type") == "assistant" and isinstance(r.get("message"), dict)
         and isinstance(r["message"].get("model"), str) and r["message"]["model"] != SYNTHETIC_MODEL),
        None,
    )
    b: EventBuilder = start(session_id=sid, ts=first.get("timestamp"), cwd=cwd, model=model, source_path=path)
    b.state("prompt_context", _prompt_context(chain, cwd, model), ts=first.get("timestamp"))
    seen_usage: set[tuple[Any, Any]] = set()
    _Converter(b, None, seen_usage, path=path, tree=tree, lenient=lenient, warn=warn).run(_with_paid_calls(layout, tree))
    # Old layout: sidechain records inside the main file, one agent per agentId.
    if tree.sidechain:
        by_agent: dict[str, list[dict[str, Any]]] = {}
        for uid in tree.sidechain:
            rec = tree.records[uid]
            if _session_of(rec) not in (None, sid):
                continue  # another session's subagent
            by_agent.setdefault(str(rec.get("agentId") or "sidechain"), []).append(rec)
        for agent, recs in sorted(by_agent.items()):
            _Converter(b, agent, seen_usage, path=path, tree=tree, lenient=lenient, warn=warn).run(recs)
    for agent, recs in _nested_responses(tree, sid).items():
        _Converter(b, agent, seen_usage, path=path, tree=tree, lenient=lenient, warn=warn).run(recs)
    for agent, sub in subagent_files(path, sid):
        sub_tree = _read_tree(sub, report, lenient=lenient, warn=warn, sidechain_ok=True)
        sub_layout = _Layout(sub_tree, {u: None for u in sub_tree.records})
        _tell(sub_layout, sub, report, warn)
        _Converter(b, agent, seen_usage, path=sub, tree=sub_tree, lenient=lenient, warn=warn).run(_with_paid_calls(sub_layout, sub_tree))
    del tree
    return b

"""Claude Code sessions (`projects/<cwd>/<sessionId>.jsonl`) → catty-ctx events.

Claude Code keeps a tree of records linked by `uuid`/`parentUuid`, writes one line per
content block of a response (each repeating the response's usage), replays earlier records
when a session is resumed, and marks compaction with a `compact_boundary` record followed by
an `isCompactSummary` user record. The importer keeps the live branch (the chain ending at
the newest leaf), drops replayed copies by uuid, merges the lines of one response, counts
each response's usage once (keyed by message id + request id, the largest copy kept), and
imports subagent files as events with `agent`. (The usage ledger reads Claude files with
its own faster reader, usage.py, under the same dedupe rules.)
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

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


# -- reading a file into its live branch -------------------------------------------------------


class _Tree:
    """The records of one file by uuid (first copy wins), and the chain to the newest leaf."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self.lines: dict[str, int] = {}
        self.position: dict[str, int] = {}
        self.parents: set[str] = set()
        self.sidechain: list[str] = []
        self.recognised = 0

    def add(self, rec: dict[str, Any], lineno: int, report: ImportReport, *, sidechain_ok: bool) -> None:
        uid = rec.get("uuid")
        rtype = rec.get("type")
        if rtype in _MESSAGE_TYPES or rtype in ("summary", "file-history-snapshot"):
            self.recognised += 1
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
        parent = rec.get("parentUuid") or rec.get("logicalParentUuid")
        if isinstance(parent, str):
            self.parents.add(parent)
        if rec.get("isSidechain") and not sidechain_ok:
            self.sidechain.append(uid)

    def live_chain(self, *, exclude: set[str]) -> list[dict[str, Any]]:
        leaves = [u for u in self.records if u not in self.parents and u not in exclude]
        if not leaves:
            return []
        cur: str | None = max(leaves, key=self.position.__getitem__)
        chain: list[dict[str, Any]] = []
        seen: set[str] = set()
        while cur is not None and cur in self.records and cur not in seen:
            seen.add(cur)
            rec = self.records[cur]
            chain.append(rec)
            nxt = rec.get("parentUuid")
            if not nxt and rec.get("subtype") == "compact_boundary":
                nxt = rec.get("logicalParentUuid")  # compaction starts a new root; history goes on
            cur = nxt if isinstance(nxt, str) else None
        chain.reverse()
        return chain


def _read_tree(path: Path, report: ImportReport, *, lenient: bool, warn: Warn | None, sidechain_ok: bool) -> _Tree:
    tree = _Tree()
    for line in iter_jsonl(path, report=report, lenient=lenient, warn=warn, what=WHAT):
        tree.add(line.record, line.lineno, report, sidechain_ok=sidechain_ok)
    return tree


# -- turning a chain into events ---------------------------------------------------------------


class _Response:
    """The lines of one assistant response (same message.id), merged."""

    __slots__ = ("mid", "uid", "ts", "last_ts", "model", "request_id", "texts", "images", "thinking", "calls", "results", "usage",
                 "raw_usage")

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
                  id=r.uid, ts=r.ts, agent=agent, images=r.images or None)
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
        if not hits:
            raise UsageError(f"{source}: no Claude Code session {session_id} in this tree")
        return hits[0]
    files = sorted(p for p in source.rglob("*.jsonl") if "subagents" not in p.parts and not p.name.startswith("agent-"))
    if len(files) == 1:
        return files[0]
    if not files:
        raise not_recognised(str(source), WHAT)
    raise UsageError(f"{source}: holds {len(files)} sessions; name one with --session ID")


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
    chain = tree.live_chain(exclude=set(tree.sidechain))
    first = next((r for r in chain if r.get("sessionId")), None) or next(iter(tree.records.values()), {})
    sid = str(first.get("sessionId") or path.stem)
    cwd = next((r["cwd"] for r in chain if isinstance(r.get("cwd"), str)), None)
    model = next(
        (r["message"]["model"] for r in chain if r.get("type") == "assistant" and isinstance(r.get("message"), dict)
         and isinstance(r["message"].get("model"), str) and r["message"]["model"] != SYNTHETIC_MODEL),
        None,
    )
    b: EventBuilder = start(session_id=sid, ts=first.get("timestamp"), cwd=cwd, model=model, source_path=path)
    b.state("prompt_context", _prompt_context(chain, cwd, model), ts=first.get("timestamp"))
    on_chain = {r["uuid"] for r in chain}
    off_branch = sum(1 for u in tree.records if u not in on_chain and u not in tree.sidechain)
    if off_branch:
        report.skipped["off_branch"] += off_branch
    seen_usage: set[tuple[Any, Any]] = set()
    _Converter(b, None, seen_usage, path=path, tree=tree, lenient=lenient, warn=warn).run(chain)
    # Old layout: sidechain records inside the main file, one agent per agentId.
    if tree.sidechain:
        by_agent: dict[str, list[dict[str, Any]]] = {}
        for uid in tree.sidechain:
            rec = tree.records[uid]
            by_agent.setdefault(str(rec.get("agentId") or "sidechain"), []).append(rec)
        for agent, recs in sorted(by_agent.items()):
            _Converter(b, agent, seen_usage, path=path, tree=tree, lenient=lenient, warn=warn).run(recs)
    for agent, sub in subagent_files(path, sid):
        sub_tree = _read_tree(sub, report, lenient=lenient, warn=warn, sidechain_ok=True)
        _Converter(b, agent, seen_usage, path=sub, tree=sub_tree, lenient=lenient, warn=warn).run(sub_tree.live_chain(exclude=set()))
    del tree
    return b


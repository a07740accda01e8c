"""Claude Code sessions (`projects/<cwd>/<sessionId>.jsonl`) → catty-ctx events.

Claude Code keeps a tree of records linked by `uuid`/`parentUuid`, writes one line per
content block of a response (each repeating the response's usage; the results of parallel
calls link to their own call's line), replays earlier records when a session is resumed,
and marks compaction with a `compact_boundary` record followed by an `isCompactSummary`
user record. Files in the wild also hold records no link joins (older versions wrote
`parentUuid: null`, files get cut) and records of other sessions.

The importer takes the file's own session (`claude_tree.own_session`, `select`), keeps the
live branch (the one the file's newest `last-prompt` record names, when no message follows
it: `claude_tree.marked_tip`; else the newest message's) and puts what no link reaches in
file order (`claude_tree.Layout`), drops
replayed copies by uuid; `claude_events` merges the lines of one response and counts each
response's usage once (keyed by message id + request id, the largest copy kept; an
abandoned branch's calls are kept as usage marked `off_branch`); this module finds the
files, imports subagent files as events with `agent`, and puts the pieces together. (The
usage ledger reads Claude files with its own faster reader, the usage package, under the
same dedupe rules.)
"""
from __future__ import annotations

import heapq
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from ..errors import UsageError
from ..view.snapshot import snapshot_value
from .claude_events import OFF_BRANCH_USAGE, SYNTHETIC_MODEL, Converter, bigger, usage_fields
from .claude_tree import WHAT, Layout, Tree, is_message, marked_tip, message_id, own_session, read_tree, select, session_of
from .common import EventBuilder, ImportReport, Warn, not_recognised, several_sessions

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
    raise several_sessions(source, [(p.stem, _day(p), _first_prompt(p)) for p in files])


def _day(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).strftime("%Y-%m-%d")


def _first_prompt(path: Path, lines: int = 64) -> str:
    """The first user prompt among a transcript's first LINES records ("" when none is there)."""
    try:
        with open(path, "rb") as f:
            for _ in range(lines):
                line = f.readline(1 << 20)
                if not line:
                    break
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                msg = rec.get("message") if isinstance(rec, dict) and rec.get("type") == "user" else None
                content = msg.get("content") if isinstance(msg, dict) else None
                if isinstance(content, str) and content.strip():
                    return content
                if isinstance(content, list):
                    texts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
                    if texts:
                        return " ".join(texts)
    except OSError:
        pass
    return ""


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
        # A workflow's agents sit one level deeper, a folder per run (beside each transcript
        # a `.meta.json` and the run's own journal files, which are no transcript).
        for p in sorted(sub.glob("workflows/*/agent-*.jsonl")):
            found.append((p.stem.removeprefix("agent-"), p))
    for p in sorted(main.parent.glob("agent-*.jsonl")):
        if p == main:
            continue
        try:
            with open(p, "rb") as f:
                first = orjson.loads(f.readline() or b"{}")
        except (OSError, orjson.JSONDecodeError):
            continue
        if isinstance(first, dict) and first.get("sessionId") == session_id:
            found.append((str(first.get("agentId") or p.stem.removeprefix("agent-")), p))
    return found


def _alone_subagent(tree: Tree, uids: dict[str, None]) -> str | None:
    """The parent session of a subagent transcript given on its own (every message of the file
    a sidechain record, none of a main loop), or None for a main session's file."""
    records = tree.records
    if not tree.sidechain or any(is_message(records[u]) for u in uids):
        return None
    return next((s for s in (session_of(records[u]) for u in tree.sidechain) if s), None) or ""


def _prompt_context(chain: list[dict[str, Any]], cwd: str | None, model: str | None, *, subagent: bool = False) -> dict[str, Any]:
    """What a Claude Code file says of the prompt's context: the rest is marked unknown."""

    version = next((r["version"] for r in chain if isinstance(r.get("version"), str) and r["version"]), None)
    branch = next((r["gitBranch"] for r in chain if isinstance(r.get("gitBranch"), str) and r["gitBranch"]), None)
    parts = {
        "audience": "subagent" if subagent else "main",
        "model": model,
        "agent_version": f"claude-code {version}" if version else None,
        "environment.cwd": cwd,
        "environment.git_branch": branch,
    }
    sources = {
        "audience": ("claude: a subagent's own file (its records are sidechain records)" if subagent
                     else "claude: the session's main file (subagents live in their own files)"),
        "model": "claude: message.model of the first assistant record",
        "agent_version": "claude: `version` of the session's records",
        "environment.cwd": "claude: `cwd` of the session's records",
        "environment.git_branch": "claude: `gitBranch` of the session's records",
    }
    return snapshot_value(parts, {k: v for k, v in sources.items() if parts.get(k) is not None})


def _off_branch_usage(layout: Layout, tree: Tree) -> list[dict[str, Any]]:
    """One item per response made on an abandoned branch (its lines merged, the largest usage
    kept), placed at its first line; none for a response the imported branch also holds."""
    on_branch = {message_id(r) for r in layout.sequence if r.get("type") == "assistant"}
    items: dict[Any, dict[str, Any]] = {}
    for rec in layout.off_branch:
        msg = rec.get("message")
        if rec.get("type") != "assistant" or not isinstance(msg, dict) or msg.get("model") == SYNTHETIC_MODEL:
            continue
        fields = usage_fields(msg.get("usage"))
        mid = message_id(rec)
        if fields is None or (mid is not None and mid in on_branch):
            continue
        rid = rec.get("requestId") if isinstance(rec.get("requestId"), str) else None
        key = (mid or rec["uuid"], rid)
        item = items.get(key)
        if item is None:
            items[key] = {"type": OFF_BRANCH_USAGE, "uuid": rec["uuid"], "key": key, "model": msg.get("model"),
                          "usage": fields, "timestamp": rec.get("timestamp"), "requestId": rid}
            continue
        item["timestamp"] = rec.get("timestamp") or item["timestamp"]
        if bigger(fields, item["usage"]):
            item["usage"] = fields
    return list(items.values())


def _tell(layout: Layout, path: Path, report: ImportReport, warn: Warn | None) -> None:
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


def _nested_responses(tree: Tree, sid: str) -> dict[str, list[dict[str, Any]]]:
    """The usage of subagent responses logged as progress records, one item per response."""
    out: dict[str, list[dict[str, Any]]] = {}
    seen: dict[Any, dict[str, Any]] = {}
    for agent, rec in tree.nested:
        msg = rec["message"]
        if session_of(rec) not in (None, sid) or msg.get("model") == SYNTHETIC_MODEL:
            continue
        fields = usage_fields(msg.get("usage"))
        if fields is None:
            continue
        rid = rec.get("requestId") if isinstance(rec.get("requestId"), str) else None
        key = (message_id(rec) or rec.get("uuid"), rid)
        item = seen.get(key)
        if item is None:
            item = seen[key] = {"type": OFF_BRANCH_USAGE, "key": key, "model": msg.get("model"), "usage": fields,
                                "timestamp": rec.get("timestamp"), "requestId": rid, "off_branch": False}
            out.setdefault(agent, []).append(item)
        elif bigger(fields, item["usage"]):
            item["usage"] = fields
    return out


def _with_paid_calls(layout: Layout, tree: Tree) -> list[dict[str, Any]]:
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
    tree = read_tree(path, report, lenient=lenient, warn=warn, sidechain_ok=False)
    if tree.recognised == 0:
        raise not_recognised(str(path), WHAT)
    sid = own_session(tree, path, session_id)
    uids, others = select(tree, sid)
    parent = _alone_subagent(tree, uids) if session_id is None else None
    if parent is not None:
        # A subagent's transcript without its parent's file: its conversation is the main
        # view of a session of its own (named after the file), the parent's id kept.
        sid, uids, others = path.stem, dict.fromkeys(tree.sidechain), Counter()
        tree.sidechain = []
    if others:
        report.skipped["other_session"] += sum(others.values())
        if warn:
            held = ", ".join(f"{k} ({n} records)" for k, n in sorted(others.items()))
            warn(f"{path}: also holds records of session {held}: not imported; import one with --session ID")
    tip, unknown = marked_tip(tree, uids, sid)
    if unknown and warn:
        warn(f"{path}: {unknown}")
    layout = Layout(tree, uids, tip)
    chain = layout.sequence
    _tell(layout, path, report, warn)
    first = next((r for r in chain if session_of(r)), None) or next(iter(tree.records.values()), {})
    cwd = next((r["cwd"] for r in chain if isinstance(r.get("cwd"), str)), None)
    model = next(
        (r["message"]["model"] for r in chain if r.get("type") == "assistant" and isinstance(r.get("message"), dict)
         and isinstance(r["message"].get("model"), str) and r["message"]["model"] != SYNTHETIC_MODEL),
        None,
    )
    b: EventBuilder = start(session_id=sid, ts=first.get("timestamp"), cwd=cwd, model=model, source_path=path,
                            parent_session_id=parent or None)
    b.state("prompt_context", _prompt_context(chain, cwd, model, subagent=parent is not None), ts=first.get("timestamp"))
    seen_usage: set[tuple[Any, Any]] = set()
    Converter(b, None, seen_usage, path=path, tree=tree, lenient=lenient, warn=warn).run(_with_paid_calls(layout, tree))
    # Old layout: sidechain records inside the main file, one agent per agentId.
    if tree.sidechain:
        by_agent: dict[str, list[dict[str, Any]]] = {}
        for uid in tree.sidechain:
            rec = tree.records[uid]
            if session_of(rec) not in (None, sid):
                continue  # another session's subagent
            by_agent.setdefault(str(rec.get("agentId") or "sidechain"), []).append(rec)
        for agent, recs in sorted(by_agent.items()):
            Converter(b, agent, seen_usage, path=path, tree=tree, lenient=lenient, warn=warn).run(recs)
    for agent, recs in _nested_responses(tree, sid).items():
        Converter(b, agent, seen_usage, path=path, tree=tree, lenient=lenient, warn=warn).run(recs)
    for agent, sub in subagent_files(path, sid):
        sub_tree = read_tree(sub, report, lenient=lenient, warn=warn, sidechain_ok=True)
        sub_layout = Layout(sub_tree, dict.fromkeys(sub_tree.records))
        _tell(sub_layout, sub, report, warn)
        Converter(b, agent, seen_usage, path=sub, tree=sub_tree, lenient=lenient, warn=warn).run(_with_paid_calls(sub_layout, sub_tree))
    del tree
    return b

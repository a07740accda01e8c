"""Subagents as sessions (docs/design.md#m12): a subagent's own conversation, read from its
parent's log, and the list of a session's subagents.

A subagent's events sit in its parent's log with `agent` set (a runtime appends them so, and
the importers put Claude Code's `subagents/` files and sidechains there). `subagent_session`
gives one subagent's events as a session of their own — its session event first (the
parent's id as `parent_session_id`, the subagent's model), then its prompt, its calls, its
usage, renumbered, with the seqs its compactions and repairs name mapped to the new ones —
in a private spool, read-only, so every reading command (`inspect`, `resume`, `prune`,
`report`, `compact --check`) shows the subagent's view as it shows a session's, and `fork
--agent` makes it a session on disk. `agent_rows` lists the subagents: status, turns,
tokens and cost (the usage ledger's, so they sum to `usage --by agent`), the parent's call.
"""
from __future__ import annotations

import bisect
import tempfile
from pathlib import Path
from typing import Any

import orjson

from .errors import UsageError
from .session.events import is_real_user
from .session.jsonl import raw_lines
from .session.layout import LOG_NAME
from .session.store import Session, session_window
from .sources import open_session
from .view.head import instructions_item

_SEQ_FIELDS = ("through_seq", "from_seq", "target_seq")


def agent_ids(session: Session) -> list[str]:
    """The subagents of SESSION's log, in the order they first appear."""
    seen: dict[str, None] = {}
    for ev in session.events(warn=None):
        agent = ev.get("agent")
        if isinstance(agent, str) and agent not in seen:
            seen[agent] = None
    return list(seen)


def _refusal(agent: str, parent: str) -> str:
    return f"the view of subagent {agent} is read from its parent's log; nothing was changed ('fork {parent} DEST --agent {agent}' makes it a session)"


def subagent_session(session: Session, agent: str) -> Session:
    """AGENT's own conversation as a read-only Session (its events, renumbered, in a spool)."""
    first: dict[str, Any] = {}
    model = None
    mine: list[dict[str, Any]] = []
    project: Any = None  # the main loop's instruction files (the subagent gets them too)
    for ev in session.events(warn=None):
        if ev["seq"] == 0 and ev["kind"] == "session":
            first = ev
        if ev["kind"] == "state" and ev.get("facet") == "instructions" and ev.get("agent") is None:
            project = ev.get("value")
        if ev.get("agent") != agent:
            continue
        mine.append(ev)
        if ev["kind"] == "usage" and isinstance(ev.get("model"), str):
            model = ev["model"]
    if not mine:
        known = agent_ids(session)
        listed = ", ".join(known[:10]) + (", …" if len(known) > 10 else "") if known else "none"
        raise UsageError(f"{session.display}: no subagent {agent!r} (its subagents: {listed}; 'inspect --agents' lists them)")
    old = [ev["seq"] for ev in mine]
    spool = tempfile.TemporaryDirectory(prefix="catty-ctx-agent-")
    log = Path(spool.name) / LOG_NAME
    parent_id = first.get("session_id")
    head: dict[str, Any] = {"v": 1, "seq": 0, "ts": mine[0]["ts"], "kind": "session", "session_id": agent,
                            "parent_session_id": parent_id, "window": session_window(session, first or None)}
    for key, value in (("cwd", first.get("cwd")), ("model", model or first.get("model"))):
        if value is not None:
            head[key] = value
    head["subagent"] = {"agent": agent, "parent": str(session.directory or session.display)}
    given = _project_instructions(project, mine, mine[0]["ts"])
    try:
        with open(log, "wb", buffering=1 << 20) as out:
            out.write(orjson.dumps(head) + b"\n")
            for i, ev in enumerate([*given, *mine], 1):
                ev = {k: v for k, v in ev.items() if k != "agent"}
                ev["seq"] = i
                for key in _SEQ_FIELDS:
                    if type(ev.get(key)) is int:  # the last of its events at or before that seq
                        ev[key] = bisect.bisect_right(old, ev[key]) + len(given)
                out.write(orjson.dumps(ev) + b"\n")
    except BaseException:
        spool.cleanup()
        raise
    parent = str(session.directory or session.display)
    origin = {"format": "subagent", "agent": agent, "label": f"subagent {agent}", "path": parent, "session_id": agent,
              "parent_session_id": parent_id, "cwd": first.get("cwd"), "title": "", "model": head.get("model"),
              "directory": str(session.directory) if session.directory is not None else None,
              "seqs": [old[0]] * len(given) + old}  # the parent's seq of each of its events (new seq i is seqs[i - 1])
    # The parent's folder stays the subagent's for what the log names there (blobs, segments):
    # read only, since the lock refuses a Session with an origin.
    return Session(log_path=log, directory=session.directory, display=f"{session.display} (agent {agent})", _spool=spool,
                   origin=origin, refusal=_refusal(agent, parent))


def _project_instructions(project: Any, mine: list[dict[str, Any]], ts: str) -> list[dict[str, Any]]:
    """The project's instruction files as a subagent's view starts with them (the seed: a
    subagent gets the full AGENTS.md): their facet, so that a head after the subagent's own
    compaction keeps them, and the item, so that its view before one holds them. Nothing when
    the subagent records instructions of its own, or its messages already carry the text."""
    if any(ev["kind"] == "state" and ev.get("facet") == "instructions" for ev in mine):
        return []
    item = instructions_item(project, [str(ev.get("text") or "") for ev in mine if ev["kind"] == "message"])
    if item is None:
        return []
    return [{"v": 1, "ts": ts, "kind": "state", "facet": "instructions", "value": project},
            {"v": 1, "ts": ts, "kind": "message", "id": "project-instructions", **item}]


def _status(facet: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for entry in facet if isinstance(facet, list) else ():
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            out[entry["id"]] = entry
    return out


def agent_rows(session: Session, *, prices_file: Any = None) -> list[dict[str, Any]]:
    """One row per subagent: status, type, description, turns, items, model, tokens, cost and
    the parent's call (the `subagents` facet's `call_id`, else the main loop's call whose
    result or arguments name the subagent)."""
    rows: dict[str, dict[str, Any]] = {}
    facet: Any = None
    calls: dict[str, str] = {}  # main-loop call_id -> its text (args and result), to find the spawner
    for ev in session.events(warn=None):
        agent = ev.get("agent")
        kind = ev["kind"]
        if agent is None:
            if kind == "state" and ev.get("facet") == "subagents":
                facet = ev.get("value")
            elif kind == "tool_call":
                calls[ev["call_id"]] = orjson.dumps(ev.get("args")).decode()
            elif kind == "tool_result" and ev["call_id"] in calls:
                calls[ev["call_id"]] += "\n" + str(ev.get("output") or "")
            continue
        if not isinstance(agent, str):
            continue
        row = rows.get(agent)
        if row is None:
            row = rows[agent] = {"agent": agent, "status": None, "type": None, "description": None, "turns": 0, "events": 0,
                                 "calls": 0, "model": None, "first_ts": ev["ts"], "last_ts": ev["ts"], "parent_call": None}
        row["events"] += 1
        row["last_ts"] = ev["ts"]
        if kind == "message" and ev.get("role") == "user" and not ev.get("synthetic"):
            row["turns"] += 1
        elif kind == "tool_call":
            row["calls"] += 1
        elif kind == "usage" and isinstance(ev.get("model"), str):
            row["model"] = ev["model"]
    status = _status(facet)
    for agent, row in rows.items():
        entry = status.get(agent, {})
        row["status"] = entry.get("status") or "unknown"
        row["type"] = entry.get("type")
        row["description"] = entry.get("description")
        if isinstance(entry.get("call_id"), str):
            row["parent_call"] = entry["call_id"]
        else:
            row["parent_call"] = next((cid for cid, text in calls.items() if agent in text), None)
    _add_usage(session, rows, prices_file)
    return list(rows.values()) + [_thread_row(t, calls, prices_file) for t in codex_threads(session)]


def _thread_row(thread: dict[str, Any], calls: dict[str, str], prices_file: Any) -> dict[str, Any]:
    """A Codex subagent thread's row: its own rollout's turns, calls, model and usage."""
    row: dict[str, Any] = {"agent": thread["agent"], "status": "unknown", "type": thread["type"], "description": thread["description"],
                           "turns": 0, "events": 0, "calls": 0, "model": None, "first_ts": None, "last_ts": None, "parent_call": None,
                           "path": str(thread["path"])}
    prompts: list[str] = []  # its user messages (a thread spawned with the parent's context holds the parent's too)
    with open_session(thread["path"], warn=None) as child:
        for ev in child.events(warn=None):
            if ev.get("agent") is not None:
                continue
            row["events"] += 1
            row["first_ts"] = row["first_ts"] or ev["ts"]
            row["last_ts"] = ev["ts"]
            if is_real_user(ev):
                row["turns"] += 1
                if isinstance(ev.get("text"), str) and ev["text"].strip():
                    prompts.append(ev["text"])
            elif ev["kind"] == "tool_call":
                row["calls"] += 1
            elif ev["kind"] == "usage" and isinstance(ev.get("model"), str):
                row["model"] = ev["model"]
    # The spawning call: the parent's call whose arguments or result name the thread or carry its prompt.
    row["parent_call"] = next((cid for cid, text in calls.items()
                               if thread["agent"] in text or any(orjson.dumps(p).decode()[1:-1] in text for p in prompts)), None)

    _fill_usage(row, _agent_ledger(thread["path"], prices_file).totals)
    return row


def _fill_usage(row: dict[str, Any], figures: dict[str, Any]) -> None:
    """A subagent's ROW given the tokens and cost of a ledger row (or its totals)."""
    for key in ("input", "output", "cache_read", "cache_write", "reasoning"):
        row[key] = figures.get(key, 0)
    row["tokens"] = sum(figures.get(k, 0) for k in ("input", "output", "cache_read", "cache_write"))
    row["requests"] = figures.get("calls", 0)
    row["cost_usd"] = figures.get("cost_usd")
    row["partial"] = figures.get("partial", False)


def _add_usage(session: Session, rows: dict[str, dict[str, Any]], prices_file: Any) -> None:
    """Tokens and cost of each subagent, from the usage ledger by agent (the same numbers as
    `usage --by agent`)."""
    by = {r["agent"]: r for r in _agent_ledger(session.log_path, prices_file).rows}
    for agent, row in rows.items():
        _fill_usage(row, by.get(agent, {}))


def _agent_ledger(path: Any, prices_file: Any) -> Any:
    """The usage ledger of the log at PATH by agent (the numbers of `usage --by agent`)."""
    from .usage.pipeline import usage

    return usage([str(path)], by="agent", use_cache=False, prices_file=prices_file)[0]


def open_agent(target: Any, agent: str | None, *, warn: Any = None) -> Session:
    """TARGET opened for reading (`sources.open_session`), or with AGENT its subagent's own view:
    a Codex subagent thread is a rollout of its own (`codex_threads`), read as its import."""
    session = open_session(target, warn=warn)
    if agent is None:
        return session
    with session:
        thread = next((t for t in codex_threads(session) if agent in (t["agent"], t["description"])), None)
        if thread is not None:
            return open_session(thread["path"], warn=warn)
        return subagent_session(session, agent)


def codex_threads(session: Session) -> list[dict[str, Any]]:
    """The subagent threads of a Codex session read in memory: the rollouts under its `sessions`
    folder whose `session_meta` names it as the spawner (`source.subagent.thread_spawn`), each
    with its thread id (`agent`), role (`type`), nickname (`description`) and file (`path`)."""
    origin = session.origin or {}
    parent = origin.get("session_id")
    if origin.get("format") != "codex" or not isinstance(parent, str) or not origin.get("path"):
        return []

    source = Path(origin["path"])
    root = next((p for p in source.parents if p.name == "sessions"), source.parent)
    found: list[dict[str, Any]] = []
    for path in sorted(root.rglob("rollout-*.jsonl")):
        if path == source or path.is_symlink():
            continue
        first = next(iter(raw_lines(path, str(path), warn=None)), None)  # the session_meta line
        try:
            meta = orjson.loads(first.data).get("payload") if first is not None else None
        except (orjson.JSONDecodeError, AttributeError):
            continue
        if not isinstance(meta, dict):
            continue
        src = meta.get("source")
        spawn = src.get("subagent", {}).get("thread_spawn") if isinstance(src, dict) and isinstance(src.get("subagent"), dict) else None
        if isinstance(spawn, dict) and spawn.get("parent_thread_id") == parent and isinstance(meta.get("id"), str):
            found.append({"agent": meta["id"], "type": meta.get("agent_role") or spawn.get("agent_role"),
                          "description": meta.get("agent_nickname") or spawn.get("agent_nickname"), "path": path})
    return found


"""Which Codex session a working folder is in: the newest rollout under `CODEX_HOME/sessions`
whose first record (`session_meta`) names that folder as its `cwd` (docs/agents.md#codex).

Codex starts an MCP server in the session's folder, with an environment cut down to HOME, PATH
and a few more (not CODEX_HOME), so the recall server is told the home when it is installed
and looks the session up again at every call: a new session in the folder is found at once.
"""
from __future__ import annotations

import os
from pathlib import Path

import orjson

from ..errors import DataError
from ..session.jsonl import first_line


def rollout_cwd(path: str) -> str | None:
    """The `cwd` of a rollout's `session_meta` record (its first line), or None."""
    first = first_line(path)  # (bounded by the reader's line limit)
    if first is None or b'"session_meta"' not in first:
        return None
    try:
        record = orjson.loads(first)
    except orjson.JSONDecodeError:
        return None
    payload = record.get("payload") if isinstance(record, dict) else None
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    return cwd if isinstance(cwd, str) else None


def _rollouts(sessions: Path) -> list[tuple[int, str]]:
    """(mtime, path) of every rollout under SESSIONS (its YYYY/MM/DD folders)."""
    found: list[tuple[int, str]] = []
    for root, _dirs, files in os.walk(sessions):
        for name in files:
            if name.startswith("rollout-") and name.endswith(".jsonl"):
                path = os.path.join(root, name)
                try:
                    found.append((os.stat(path).st_mtime_ns, path))
                except OSError:
                    continue
    return found


def newest_rollout(cwd: Path, home: Path) -> Path:
    """The most recently written rollout of HOME whose session ran in CWD."""
    want = os.path.realpath(cwd)
    sessions = home / "sessions"
    for _mtime, path in sorted(_rollouts(sessions), reverse=True):
        found = rollout_cwd(path)
        if found is not None and (found == str(cwd) or os.path.realpath(found) == want):
            return Path(path)
    raise DataError(f"no Codex session of {cwd} (looked in {sessions}); start the server with --session PATH to name one")

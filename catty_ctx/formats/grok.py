"""Grok Build's session folders, as the released `grok` lays them out (docs/import.md#grok-build).

A session is a folder `$GROK_HOME/sessions/<bucket>/<id>/` (GROK_HOME else `~/.grok`): its
`updates.jsonl` is the log of record (one `session/update` or `_x.ai/session/update` envelope
a line), `chat_history.jsonl` the model's view grok resumes from, `summary.json` the
metadata (`info.id`, `info.cwd`), `compaction/segment_NNN.md` and `INDEX.md` the segments
archive, `compaction_checkpoints/` the compacted histories, `subagents/<id>/meta.json` the
children it spawned. A child is a session folder of its own, marked `session_kind: subagent`
(hidden from grok's own listing): it belongs to its parent, whose turns already count its
usage. A bucket is the url-encoded cwd, or `<slug>-<hash16>` with the cwd in `.cwd`.

The log shares its name with catty-ctx's own (`updates.jsonl`): the content tells them apart
(a grok line carries `sessionUpdate`; a catty event `v`, `seq`, `kind`). Start-up: stdlib
only (the usage walk and a writer's ownership check reach here).
"""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

GROK = "grok"  # the format's name in the registry
LOG = "updates.jsonl"
CHAT = "chat_history.jsonl"
SUMMARY = "summary.json"
SEGMENTS_DIR = "compaction"
MARK = b'"sessionUpdate"'
METHODS = ("session/update", "_x.ai/session/update")
_PROBE_BYTES = 1 << 16
_FIRST_BYTES = 512
_CATTY_HEAD = b'{"v":'  # how every catty-ctx event line begins (its envelope's first key)


def is_update(record: Any) -> bool:
    """Whether RECORD (one parsed line) is a grok envelope: `{method, params: {sessionId,
    update: {sessionUpdate, ...}}}`, or the legacy bare notification (no `method`)."""
    if not isinstance(record, dict):
        return False
    params = record.get("params") if "method" in record else record
    update = params.get("update") if isinstance(params, dict) else None
    return isinstance(update, dict) and isinstance(update.get("sessionUpdate"), str)


def log_is_grok(log: str | os.PathLike[str]) -> bool:
    """Whether the file LOG is a grok log: its first line that is a JSON object is an envelope."""
    try:
        with open(log, "rb") as f:
            head = f.read(_FIRST_BYTES)
            if head.startswith(_CATTY_HEAD):
                return False  # (a ROOT walk meets thousands of catty logs: one small read each)
            head += f.read(_PROBE_BYTES - len(head))
    except OSError:
        return False
    if MARK not in head:
        return False
    for line in head.splitlines():
        if line.strip():
            doc = _loads(line)
            if doc is not None:
                return is_update(doc)
    return False


def _loads(data: bytes) -> Any:
    """DATA as JSON, None when it is not (the standard library's reader: a probe of one line and
    a summary need no faster one, and the usage walk's start-up loads no JSON library of its own)."""
    import json  # (a walk that meets no grok session loads none)

    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def is_session_dir(folder: str | os.PathLike[str]) -> bool:
    """Whether FOLDER is a grok session: its updates.jsonl is grok's (the content decides)."""
    return log_is_grok(os.path.join(folder, LOG))


def summary(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The session's summary.json ({} when missing or unreadable: the log still stands)."""
    try:
        with open(os.path.join(folder, SUMMARY), "rb") as f:
            doc = _loads(f.read())
    except OSError:
        return {}
    return doc if isinstance(doc, dict) else {}


def is_child(meta: dict[str, Any]) -> bool:
    """A subagent child (hidden in grok's listing; its parent's turns hold its usage)."""
    kind = meta.get("session_kind")
    return (isinstance(kind, str) and kind.startswith("subagent")) or meta.get("hidden") is True


def bucket_cwd(bucket: str | os.PathLike[str]) -> str | None:
    """The working directory a bucket folder stands for: its url-decoded name when absolute,
    else the `.cwd` file of a hashed bucket."""
    from urllib.parse import unquote

    name = os.path.basename(os.fspath(bucket).rstrip(os.sep))
    decoded = unquote(name)
    if decoded.startswith("/") or (len(decoded) > 1 and decoded[1] == ":"):
        return decoded
    try:
        with open(os.path.join(bucket, ".cwd"), encoding="utf-8") as f:
            return f.read().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def sessions_under(root: str | os.PathLike[str], *, children: bool = False) -> list[Path]:
    """The grok session folders under ROOT (a home, its sessions/, a bucket or a session), in
    name order; subagent children only when CHILDREN."""
    from pathlib import Path

    root = Path(root)
    if is_session_dir(root):
        return [root]
    base = root / "sessions" if (root / "sessions").is_dir() else root
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if LOG in filenames and is_session_dir(dirpath):
            dirnames[:] = []
            if children or not is_child(summary(dirpath)):
                found.append(Path(dirpath))
    return found

"""Whose log is this? Every writer asks before it changes anything.

`repair`, `compact`, `append` and the rest append to a log, quarantine its lines and
rewrite its summary. Pointed at another agent's file (a Claude Code transcript, a Codex
rollout, a Gemini or opencode session, a messages document) they would move every line of it
into quarantine and leave the user's session empty. So a writer first reads the log's first
records: when the first one that is a JSON object carries another format's marks, the
writer stops with a data error that names the format and the `import` command that reads
it. Reading a few lines costs nothing next to the write it guards.

Each writer calls `require_ours` before its first write (and before it takes the lock, whose
file would otherwise appear beside the foreign file). The store itself does not: it sits
below the importers, whose marks this module reads.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ..errors import DataError
from ..session.compressed import ZSTD_MAGIC
from ..session.jsonl import STDIN_NAME
from .registry import FORMATS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..session.store import Session


def native_refusal(origin: dict[str, Any], display: str) -> str:
    """What a writer says of another agent's session: whose it is, and the import that reads it."""
    return (f"another agent's session ({origin.get('label') or origin.get('format')}), not a catty-ctx log; nothing was changed "
            f"(import it first: {import_hint(str(origin.get('format')), display)})")


PROBE_LINES = 64  # records looked at before the log is taken to be ours
PROBE_LINE_BYTES = 1 << 20  # a longer first line is read in part (and so is no record)
DOCUMENT_LIMIT = 64 << 20  # a pretty-printed JSON document larger than this is not parsed
_SQLITE = b"SQLite format 3\x00"

LABELS = {name: fmt.label for name, fmt in FORMATS.items()}  # the format registry's labels


def _ours(record: dict[str, Any]) -> bool:
    """A catty-ctx event, even a damaged one: `kind` with a `seq` (other formats have neither)."""
    return isinstance(record.get("kind"), str) and "seq" in record


def _detected(value: Any, *, record: bool = False) -> str | None:
    """The importer format of VALUE: a line's RECORD, or a whole document."""
    from ..importers.detect import document_format, is_gemini_prompt_log, record_format

    if isinstance(value, list) and not any(isinstance(m, dict) and "role" in m for m in value) and not is_gemini_prompt_log(value):
        return None  # a list of anything is not yet a messages array

    return record_format(value) if record else document_format(value)


def foreign_format(path: Path) -> str | None:
    """The importer format of the file at PATH when it is another agent's session; None when it
    is a catty-ctx log, empty, unreadable (the writer's own open reports that) or undecided."""
    try:
        f = open(path, "rb")
    except OSError:
        return None
    with f:
        head = f.read(len(_SQLITE))
        if head == _SQLITE:
            return "opencode"
        if head[:4] == ZSTD_MAGIC:
            return "codex"  # a compressed rollout: Codex is the agent that writes them (never a catty log)
        f.seek(0)
        first: bytes | None = None
        first_parsed = False
        for n in range(PROBE_LINES):
            line = f.readline(PROBE_LINE_BYTES)
            if not line:
                break
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                if n == 0:
                    first = line
                continue
            if n == 0:
                first_parsed = True
                if not isinstance(record, dict):
                    return _detected(record)
            if not isinstance(record, dict):
                continue
            if _ours(record):
                return None
            fmt = _detected(record, record=True)
            if fmt is not None:
                return fmt
    # A pretty-printed JSON document (a Gemini or opencode file, a messages array): its first
    # line is only its opening bracket.
    if first is not None and not first_parsed and first.lstrip()[:1] in (b"{", b"["):
        try:
            if path.stat().st_size > DOCUMENT_LIMIT:
                return None
            return _detected(orjson.loads(path.read_bytes()))
        except (OSError, orjson.JSONDecodeError):
            return None
    return None


def import_hint(fmt: str, display: str) -> str:
    return f"catty-ctx import {fmt} {'FILE' if display == STDIN_NAME else display} --out DIR"


def require_ours(session: Session) -> None:
    """Raise a DataError (exit 65) when SESSION's log is another agent's session."""
    display = session.display
    if session.origin is not None:  # imported in memory from another agent's file (`sources`)
        raise DataError(native_refusal(session.origin, display), path=display)
    fmt = foreign_format(session.log_path)
    if fmt is not None:
        raise DataError(native_refusal({"format": fmt, "label": LABELS.get(fmt, fmt)}, display if display != STDIN_NAME else "FILE"),
                        path=display)

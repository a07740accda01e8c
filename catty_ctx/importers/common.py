"""The normalisation layer every importer shares (docs/spec.md#import, docs/spec.md#events).

An importer reads its agent's records and calls an `EventBuilder`; the builder owns what
must be the same for every format: seq from 0 with the `session` event first, ids and
timestamps taken from the source (never the clock, so importing twice is byte-identical),
an assistant message before tool calls that no assistant message carries, images moved
into content-addressed blobs, validation of every event, and the counts an import reports.
Reading source files (line by line, torn tail, invalid lines, --lenient) lives here too.
"""
from __future__ import annotations

import base64
import binascii
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import orjson

from ..errors import DataError, UsageError
from ..session.events import SCHEMA_VERSION, Event, check_event
from ..session.layout import blob_handle

EPOCH_TS = "1970-01-01T00:00:00.000Z"

Sink = Callable[[Event], object]
BlobSink = Callable[[str, bytes], None]
Warn = Callable[[str], None]


# Skips every ordinary source has: bookkeeping records and copies of what was imported
# (a resumed session's replayed records, the UI's echo of a response). The report names them
# in a note; any other skip is a warning.
ROUTINE_SKIPS = frozenset({"replayed", "file-history-snapshot", "summary", "session_meta:again"})
ROUTINE_SKIP_PREFIXES = ("event_msg:",)


def is_routine_skip(label: str) -> bool:
    return label in ROUTINE_SKIPS or label.startswith(ROUTINE_SKIP_PREFIXES)


def _skip_label(label: str) -> str:
    if label == "None":
        return "(no type)"
    return label[:-4] + "(missing)" if label.endswith(":None") else label


class Skips(Counter[str]):
    """Skipped records by label. A record whose type (or subtype) is missing is labelled
    `(no type)` (or `kind:(missing)`), never with Python's `None` that `str()` made of it."""

    def __getitem__(self, label: str) -> int:
        return super().__getitem__(_skip_label(label))

    def __setitem__(self, label: str, count: int) -> None:
        super().__setitem__(_skip_label(label), count)


@dataclass
class ImportReport:
    """What an import did: counts for the summary line and for tests."""

    format: str = ""
    source: str = ""
    events: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    user_turns: int = 0
    skipped: Skips = field(default_factory=Skips)  # record types not imported
    invalid: list[str] = field(default_factory=list)  # file:line of lines skipped by --lenient
    torn: list[str] = field(default_factory=list)
    implicit_assistants: int = 0
    unlinked: int = 0  # messages no source link reaches, imported by file order
    surrogates: int = 0  # lone surrogate escapes kept as U+FFFD

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "source": self.source,
            "events": self.events,
            "kinds": dict(sorted(self.kinds.items())),
            "user_turns": self.user_turns,
            "implicit_assistants": self.implicit_assistants,
            "unlinked": self.unlinked,
            "skipped": dict(sorted(self.skipped.items())),
            "invalid": list(self.invalid),
            "torn": list(self.torn),
            **({"surrogates_replaced": self.surrogates} if self.surrogates else {}),
        }


def to_ts(value: Any, default: str | None = None) -> str | None:
    """RFC 3339 UTC with milliseconds and a Z from an ISO string or epoch seconds/ms."""
    if value is None or isinstance(value, bool):
        return default
    if isinstance(value, (int, float)):
        seconds = value / 1000.0 if value > 1e11 else float(value)  # ms since 1973 vs seconds
        try:
            dt = datetime.fromtimestamp(seconds, timezone.utc)
        except (OverflowError, OSError, ValueError):
            return default
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
    if not isinstance(value, str) or not value:
        return default
    # The common case (Claude Code, Codex): already UTC with milliseconds and a Z.
    if len(value) == 24 and value[-1] == "Z" and value[10] == "T" and value[19] == ".":
        return value
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        return default
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def parse_args(raw: Any) -> dict[str, Any] | str:
    """Tool arguments as an object; a string that is not a JSON object is kept verbatim."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
        return parsed if isinstance(parsed, dict) else raw
    if raw is None:
        return {}
    return orjson.dumps(raw).decode()


def text_of(value: Any) -> str:
    """Text of a content value: a string, or a list of parts holding text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(t for block in content_blocks(value) if isinstance(t := block.get("text"), str))
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return value["text"]
    return orjson.dumps(value).decode()


def content_blocks(value: Any) -> Iterator[dict[str, Any]]:
    """The blocks of a content value (a block, or a list of blocks and strings): a string is a text block."""
    for part in value if isinstance(value, list) else [value]:
        if isinstance(part, str):
            yield {"type": "text", "text": part}
        elif isinstance(part, dict):
            yield part


def split_data_url(url: str) -> tuple[str, str] | None:
    """(media_type, base64 data) of a `data:` URL, or None."""
    if not url.startswith("data:") or "," not in url:
        return None
    head, data = url[5:].split(",", 1)
    if not head.endswith(";base64"):
        return None
    return head[: -len(";base64")] or "application/octet-stream", data


# Membership tests below use tuples, not sets: a field of the wrong type (a list where a
# string belongs) must compare unequal, not raise "unhashable".
# Agents' todo-list tools, whose argument is the whole new list: → the `todos` state facet.
TODO_TOOLS = frozenset({"TodoWrite", "todowrite", "update_plan", "write_todos"})
_TODO_STATUS = {"pending": "pending", "in_progress": "in_progress", "completed": "completed", "cancelled": "cancelled",
                "canceled": "cancelled", "done": "completed", "todo": "pending"}


def todos_from(name: str, args: Any) -> list[dict[str, str]] | None:
    """The contract's todos shape (docs/spec.md#events) ({text, status}) from a todo tool's arguments, or None."""
    if name not in TODO_TOOLS or not isinstance(args, dict):
        return None
    items = args.get("todos") if isinstance(args.get("todos"), list) else args.get("plan")
    if not isinstance(items, list):
        return None
    todos = []
    for item in items:
        if not isinstance(item, dict):
            continue
        text = next((item[k] for k in ("content", "text", "step", "description") if isinstance(item.get(k), str)), "")
        todos.append({"text": text, "status": _TODO_STATUS.get(str(item.get("status")).lower(), "pending")})
    return todos


# Agents' file-editing tools → the `edited_files` state facet (the continuation state that a
# compaction re-injects lists them).
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "edit", "write", "multiedit", "replace", "write_file",
                        "apply_patch", "patch"})
_PATH_KEYS = ("file_path", "filePath", "notebook_path", "absolute_path", "path")
_PATCH_HEADERS = ("*** Update File: ", "*** Add File: ", "*** Delete File: ", "*** Move to: ")


def edited_paths(name: str, args: Any) -> list[str]:
    """Paths a file-editing tool call writes (Codex's apply_patch: the patch's file headers)."""
    if name not in EDIT_TOOLS:
        return []
    if isinstance(args, dict):
        for key in _PATH_KEYS:
            if isinstance(args.get(key), str) and args[key]:
                return [args[key]]
        patch = args.get("input") or args.get("patch") or args.get("patchText")
    else:
        patch = args
    if not isinstance(patch, str):
        return []
    return [line[len(h):].strip() for line in patch.splitlines() for h in _PATCH_HEADERS if line.startswith(h)]


class EventBuilder:
    """Turns normalised calls into valid, seq-numbered events, handed to `sink` as they are made."""

    def __init__(self, sink: Sink, *, report: ImportReport, blob_sink: BlobSink | None = None, strict: bool = False) -> None:
        self._sink = sink
        # The kind methods coerce every field to its type, so the output is valid by
        # construction; `strict` re-checks each event with events.check_event (tests do).
        self.strict = strict
        self._blob_sink = blob_sink
        self.report = report
        self.seq = 0
        self.last_ts = EPOCH_TS
        self._assistant_open: dict[str | None, bool] = {}
        self._edited: dict[str | None, dict[str, None]] = {}  # per agent, in first-edit order
        self.title = ""
        self.model: str | None = None
        self.window: int | None = None  # a context window the source reports after the session event
        self.first_ts: str | None = None
        self.session_event: Event | None = None
        # seq of the message that starts each main-loop turn, and the seq of every event
        # (for rewinds that cut inside a turn)
        self.turn_starts: list[int] = []

    # -- the envelope --------------------------------------------------------------------
    def emit(self, kind: str, fields: dict[str, Any], *, ts: Any = None, agent: str | None = None) -> Event:
        if self.seq == 0 and kind != "session":
            raise AssertionError("the session event must come first")
        stamp = to_ts(ts, None) or self.last_ts
        self.last_ts = stamp
        if self.first_ts is None:
            self.first_ts = stamp
        ev: Event = {"v": SCHEMA_VERSION, "seq": self.seq, "ts": stamp, "kind": kind}
        if agent:
            ev["agent"] = agent
        ev.update(fields)
        if self.strict:
            problem = check_event(ev)
            if problem is not None:  # a bug in an importer, never the user's data
                raise AssertionError(f"importer made an invalid event: {problem}: {ev!r}")
        self.seq += 1
        self.report.events += 1
        self.report.kinds[kind] += 1
        self._sink(ev)
        return ev

    # -- kinds ---------------------------------------------------------------------------
    def session(self, session_id: str, *, ts: Any = None, **fields: Any) -> Event:
        clean = {k: v for k, v in fields.items() if v is not None}
        for key in ("cwd", "model", "parent_session_id"):
            if key in clean and not isinstance(clean[key], str):
                del clean[key]
        ev = self.emit("session", {"session_id": str(session_id), **clean}, ts=ts)
        self.session_event = ev
        return ev

    def message(
        self,
        role: str,
        text: str,
        *,
        id: str,
        ts: Any = None,
        agent: str | None = None,
        images: list[dict[str, Any]] | None = None,
        synthetic: str | None = None,
    ) -> Event:
        if not isinstance(text, str):
            text = text_of(text)
        fields: dict[str, Any] = {"id": str(id), "role": role, "text": text}
        if images:
            fields["images"] = images
        if synthetic:
            fields["synthetic"] = synthetic
        ev = self.emit("message", fields, ts=ts, agent=agent)
        self._assistant_open[agent] = role == "assistant"
        if role == "user" and not synthetic and not agent:
            self.report.user_turns += 1
            self.turn_starts.append(ev["seq"])
            if not self.title:
                line = " ".join(text.split())
                self.title = line[:80] + ("…" if len(line) > 80 else "")
        return ev

    def tool_call(self, call_id: str, name: str, args: Any, *, ts: Any = None, agent: str | None = None) -> Event:
        if not self._assistant_open.get(agent):
            # docs/spec.md#events: a tool call belongs to the assistant message before it; write one.
            self.report.implicit_assistants += 1
            self.message("assistant", "", id=f"{call_id}:assistant", ts=ts, agent=agent)
        name = name if isinstance(name, str) and name else "unknown"
        ev = self.emit("tool_call", {"call_id": str(call_id), "name": name, "args": parse_args(args)}, ts=ts, agent=agent)
        todos = todos_from(ev["name"], ev["args"])
        if todos is not None:
            self.state("todos", todos, ts=ts, agent=agent)
        edited = self._edited.setdefault(agent, {})
        before = len(edited)
        for path in edited_paths(ev["name"], ev["args"]):
            edited.setdefault(path, None)
        if len(edited) > before:
            self.state("edited_files", list(edited), ts=ts, agent=agent)
        return ev

    def tool_result(
        self,
        call_id: str,
        output: str,
        *,
        is_error: bool = False,
        ts: Any = None,
        agent: str | None = None,
        images: list[dict[str, Any]] | None = None,
    ) -> Event:
        if not isinstance(output, str):
            output = text_of(output)
        fields: dict[str, Any] = {"call_id": str(call_id), "output": output, "is_error": bool(is_error)}
        if images:
            fields["images"] = images
        return self.emit("tool_result", fields, ts=ts, agent=agent)

    def usage(
        self,
        model: str | None,
        *,
        input: int,
        output: int,
        cache_read: int = 0,
        cache_write: int = 0,
        reasoning: int = 0,
        ts: Any = None,
        agent: str | None = None,
        request_id: str | None = None,
        cost_usd: float | None = None,
        off_branch: bool = False,
        cache_write_1h: int = 0,
    ) -> Event:
        model = model if isinstance(model, str) and model else None
        fields: dict[str, Any] = {
            "model": model or "unknown",
            "input": max(int(input), 0),
            "output": max(int(output), 0),
            "cache_read": max(int(cache_read), 0),
            "cache_write": max(int(cache_write), 0),
            "reasoning": max(int(reasoning), 0),
        }
        if cache_write_1h > 0:  # (of cache_write: the one-hour writes a provider bills apart, docs/format.md)
            fields["cache_write_1h"] = min(int(cache_write_1h), fields["cache_write"])
        if isinstance(cost_usd, (int, float)) and not isinstance(cost_usd, bool):
            fields["cost_usd"] = cost_usd
        if isinstance(request_id, str) and request_id:
            fields["request_id"] = request_id
        if off_branch:  # a call on an abandoned branch: counted by the ledger, never in the view
            fields["off_branch"] = True
        elif model and not agent:
            self.model = model
        return self.emit("usage", fields, ts=ts, agent=agent)

    def reasoning(self, text: str, *, ts: Any = None, agent: str | None = None, **extra: Any) -> Event:
        """Thinking is kept for inspection as an unknown kind, so no view carries it."""
        return self.emit("reasoning", {"text": text if isinstance(text, str) else text_of(text), **extra}, ts=ts, agent=agent)

    def compaction(
        self,
        summary: str,
        *,
        id: str,
        ts: Any = None,
        agent: str | None = None,
        summarizer: str,
        trigger: str | None = None,
        tokens_before: int | None = None,
        through_seq: int | None = None,
    ) -> Event:
        """`through_seq`: the last event the summary replaces (default: every event so far;
        earlier when the agent kept the newest messages verbatim after its summary)."""
        fields: dict[str, Any] = {
            "id": str(id),
            "mode": "summary",
            "through_seq": self.seq - 1 if through_seq is None else through_seq,
            "summary": summary if isinstance(summary, str) else text_of(summary),
            "summarizer": summarizer,
        }
        if isinstance(trigger, str) and trigger:
            fields["trigger"] = trigger
        if isinstance(tokens_before, int) and not isinstance(tokens_before, bool) and tokens_before >= 0:
            fields["tokens_before"] = tokens_before
        ev = self.emit("compaction", fields, ts=ts, agent=agent)
        self._assistant_open[agent] = False
        return ev

    def end_assistant(self, agent: str | None = None) -> None:
        """The next tool call starts a new assistant message (a call made after a result)."""
        self._assistant_open[agent] = False

    def rewind(self, to_turn: int, *, ts: Any = None) -> Event:
        self._assistant_open[None] = False
        return self.emit("rewind", {"to_turn": max(to_turn, 0)}, ts=ts)

    def drop(self, target_seq: int, reason: str, *, ts: Any = None) -> Event:
        return self.emit("repair", {"action": "drop", "target_seq": target_seq, "reason": reason}, ts=ts)

    def state(self, facet: str, value: Any, *, ts: Any = None, agent: str | None = None) -> Event:
        return self.emit("state", {"facet": facet, "value": value}, ts=ts, agent=agent)

    # -- payloads ------------------------------------------------------------------------
    def image(self, media_type: str | None, data_b64: str) -> dict[str, Any] | None:
        """An image entry: the bytes go to a blob (--out) or stay inline (a stream has no folder)."""
        if not isinstance(data_b64, str):
            return None
        try:
            data = base64.b64decode(data_b64, validate=False)
        except (binascii.Error, ValueError):
            return None
        media_type = media_type if isinstance(media_type, str) else None
        handle = blob_handle(data)
        entry: dict[str, Any] = {"blob": handle, "media_type": media_type or "application/octet-stream"}
        if self._blob_sink is not None:
            self._blob_sink(handle, data)
        else:
            entry["data"] = data_b64
        return entry

    def skip(self, what: str) -> None:
        self.report.skipped[what] += 1


# -- reading sources ---------------------------------------------------------------------------


# What a record of an unexpected shape raises while being converted (a list where an object
# belongs, a number where a list belongs): bad input data, never a crash.
SHAPE_ERRORS = (TypeError, AttributeError, ValueError, KeyError, IndexError)


def shape_error(exc: Exception, *, path: str, line: int | None, report: ImportReport, lenient: bool, warn: Warn | None) -> None:
    """A record that could not be converted: a DataError naming it, or with --lenient a skip."""
    what = f"record of an unexpected shape ({type(exc).__name__}: {exc})"
    if not lenient:
        raise DataError(what + "; --lenient skips such records", path=path, line=line) from None
    report.invalid.append(f"{path}:{line}" if line is not None else path)
    if warn:
        warn(f"{path}:{line}: {what}, skipped" if line is not None else f"{path}: {what}, skipped")


LISTED = 10  # sessions a "name one with --session" error lists


def several_sessions(source: object, sessions: list[tuple[str, str, str]]) -> UsageError:
    """SOURCE holds several sessions: the error (one line) names them: id (date, "first prompt")."""
    shown = []
    for sid, day, prompt in sessions[:LISTED]:
        flat = " ".join(prompt.split())
        quoted = f', "{flat[:60] + "…" if len(flat) > 60 else flat}"' if flat else ""
        shown.append(f"{sid} ({day}{quoted})")
    more = f"; … and {len(sessions) - LISTED} more" if len(sessions) > LISTED else ""
    return UsageError(f"{source}: holds {len(sessions)} sessions; name one with --session ID: {'; '.join(shown)}{more}")


def not_recognised(path: str, what: str) -> DataError:
    return DataError(f"not {what} (no record of that format recognised)", path=path)


def one_session(found: list[Any], source: object, what: str, *, session_id: str | None, named: Callable[[Any], bool], missing: str) -> Any:
    """The session SOURCE is imported from: among FOUND, the one SESSION_ID names (NAMED tells
    which; none is MISSING, a usage error), else the only one. None is `not WHAT`; several ask
    for --session."""
    if session_id:
        found = [f for f in found if named(f)]
        if not found:
            raise UsageError(f"{source}: {missing}")
    if not found:
        raise not_recognised(str(source), what)
    if len(found) > 1:
        raise UsageError(f"{source}: holds {len(found)} sessions; name one with --session ID")
    return found[0]

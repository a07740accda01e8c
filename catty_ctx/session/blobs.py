"""Externalised payloads: a large user message or tool output moves to `blobs/<xxh3-128 hex>`.

The seed's lesson: large inputs leave the prompt as handles instead of being cut off. The
blob is written durably before the event that names it, and a head and a tail of it stay
inline as a preview.
"""
from __future__ import annotations

import base64
import os
import re
import shlex
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import orjson
import xxhash

from ..defaults import ASSISTANT_LIMIT, SHELL_LIMIT, SHELL_TOOLS, TOOL_LIMIT, USER_LIMIT
from ..errors import DataError, UsageError, WriteError
from .files import filled, replace_file
from .jsonl import scan_marked
from .layout import blob_handle
from .store import Session, session_folder

Warn = Callable[[str], None]


BLOBS_DIR = "blobs"
PREVIEW_SHARE = 0.8  # the inline preview takes this share of the limit
_HANDLE = re.compile(r"[0-9a-f]{32}")


def is_handle(text: str) -> bool:
    return bool(_HANDLE.fullmatch(text))


def write_blob(session_dir: Path, data: bytes) -> str:
    """Store a payload under its content address; identical payloads are stored once.

    temp + fsync + rename, then the folder is fsynced: once this returns, an event may name
    the handle. A file already under the handle is reused only when its bytes hash to it
    (read without following a link); any other is replaced. Raises OSError when it cannot
    write (WriteError when blobs/ is a link).
    """

    handle = blob_handle(data)
    folder = session_folder(session_dir / BLOBS_DIR)  # never a link out of the session
    target = folder / handle
    if _holds(target, handle, len(data)):
        return handle
    replace_file(target, data)
    return handle


def _holds(path: Path, handle: str, size: int) -> bool:
    """Whether PATH is a regular file of SIZE bytes whose content hashes to HANDLE."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != size:
            return False
        h = xxhash.xxh3_128()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return h.hexdigest() == handle
    except OSError:
        return False
    finally:
        os.close(fd)


def cut_head(data: bytes, n: int) -> bytes:
    """The first ≤ n bytes, never splitting a UTF-8 character."""
    if n >= len(data):
        return data
    while n > 0 and (data[n] & 0xC0) == 0x80:
        n -= 1
    return data[:n]


def cut_tail(data: bytes, n: int) -> bytes:
    """The last ≤ n bytes, never splitting a UTF-8 character."""
    if n >= len(data):
        return data
    start = len(data) - n
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:]


def preview(data: bytes, limit: int, *, keep_end: bool) -> tuple[str, str, int]:
    """Head and tail of a payload for an inline budget of `limit` bytes, and the bytes left out.

    A user message keeps more of its end (where the question usually is): a fifth of the
    preview for the head, the rest for the tail. A tool output keeps both halves alike.
    """
    budget = max(2, int(limit * PREVIEW_SHARE))
    head_n = budget // 5 if keep_end else budget // 2
    head = cut_head(data, head_n)
    tail = cut_tail(data, budget - len(head))
    omitted = len(data) - len(head) - len(tail)
    return head.decode("utf-8", "replace"), tail.decode("utf-8", "replace"), omitted


_SHELLS = frozenset(SHELL_TOOLS)


def is_shell(name: Any) -> bool:
    """Whether a tool of this name is a terminal (`defaults.SHELL_TOOLS`, any case)."""
    return isinstance(name, str) and name.lower() in _SHELLS


class ShellCalls:
    """The call ids of shell tools in an event stream (a call comes before its result)."""

    def __init__(self) -> None:
        self.ids: set[str] = set()

    def see(self, ev: dict[str, Any]) -> bool:
        """Note EV if it is a shell call; whether EV is a shell's result."""
        cid = ev.get("call_id")
        if ev.get("kind") == "tool_call":
            if is_shell(ev.get("name")) and isinstance(cid, str):
                self.ids.add(cid)
            return False
        return ev.get("kind") == "tool_result" and cid in self.ids


def shell_results(log_path: Path | None, pending: list[dict[str, Any]], shell_limit: int = SHELL_LIMIT) -> set[int]:
    """The indexes of PENDING's tool results over SHELL_LIMIT characters that answer a shell
    call (of the batch, or of the log: looked up only for such a result)."""
    calls = ShellCalls()
    out: set[int] = set()
    look: dict[str, list[int]] = {}
    for i, ev in enumerate(pending):
        if calls.see(ev) and _over(ev, shell_limit):
            out.add(i)
        elif ev.get("kind") == "tool_result" and isinstance(ev.get("call_id"), str) and _over(ev, shell_limit):
            look.setdefault(ev["call_id"], []).append(i)
    if look and log_path is not None and log_path.is_file():
        marker = re.compile(b"|".join(re.escape(orjson.dumps(cid)) for cid in look))
        for _, line in scan_marked(log_path, marker):
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(ev, dict) and ev.get("kind") == "tool_call" and is_shell(ev.get("name")) and ev.get("call_id") in look:
                out.update(look[ev["call_id"]])
    return out


def _over(ev: dict[str, Any], limit: int) -> bool:
    output = ev.get("output")
    return limit > 0 and isinstance(output, str) and len(output) > limit


def blob_command(display: str, handle: str) -> str:
    """The command that prints a blob whole, as the model is told to run it."""
    return f"catty-ctx blob {shlex.quote(display)} {handle}"


def externalize(
    event: dict[str, Any],
    session_dir: Path | None,
    *,
    user_limit: int = USER_LIMIT,
    tool_limit: int = TOOL_LIMIT,
    assistant_limit: int = ASSISTANT_LIMIT,
    warn: Warn | None = None,
    shell: bool = False,
    shell_limit: int = SHELL_LIMIT,
    display: str | None = None,
) -> dict[str, Any]:
    """Move a large user or assistant message or tool output into `blobs/` and keep a preview inline.

    Returns the event to append (a new dict; the input is not changed). A limit of 0 turns
    that kind off; an event that already names a blob, or a session without a directory,
    is returned as it is. A blob that cannot be written is a WriteError (exit 73): the
    payload is never dropped for a preview.

    A SHELL's output (a terminal's: `shell_results`) is kept inline within SHELL_LIMIT
    characters, head and tail, beside the general byte limit. DISPLAY is the session as the
    note names it (default: SESSION_DIR).
    """
    kind = event.get("kind")
    if session_dir is None or "blob" in event:
        return event
    where = display if display is not None else str(session_dir)
    if shell and tool_limit > 0 and kind == "tool_result" and _over(event, shell_limit):  # (a limit of 0: outputs stay whole)
        return _shell_blob(event, session_dir, shell_limit, where)
    if kind == "message" and event.get("role") == "user" and user_limit > 0:
        field_name, limit, keep_end, what = "text", user_limit, True, "message"
    elif kind == "message" and event.get("role") == "assistant" and assistant_limit > 0:
        field_name, limit, keep_end, what = "text", assistant_limit, False, "message"
    elif kind == "tool_result" and tool_limit > 0:
        field_name, limit, keep_end, what = "output", tool_limit, False, "output"
    else:
        return event
    payload = event.get(field_name)
    if not isinstance(payload, str) or len(payload) <= limit // 4:  # ≥ 1 byte a char: cheap no
        return event
    data = payload.encode("utf-8")
    if len(data) <= limit:
        return event
    def note_for(omitted: int) -> str:
        return (f"[… {omitted:,} bytes of this {what} are not shown; the whole {what} "
                f"({len(data):,} bytes) is blob {handle}: {blob_command(where, handle)} …]")

    handle = blob_handle(data)
    head, tail, omitted = preview(data, limit, keep_end=keep_end)
    over = len(head.encode()) + len(tail.encode()) + len(note_for(omitted).encode()) + 4 - limit
    if over > 0:  # a long session path in the note: the preview gives way, the whole stays within the limit
        head, tail, omitted = preview(data, max(2, limit - int(over / PREVIEW_SHARE) - 1), keep_end=keep_end)
    out = dict(event)
    out["bytes"] = len(data)
    try:
        handle = write_blob(session_dir, data)
    except (OSError, WriteError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise WriteError(
            f"{session_dir / BLOBS_DIR}: cannot store a {len(data):,}-byte {what} ({reason}); nothing appended"
        ) from None
    note = note_for(omitted)
    out["blob"] = handle
    out[field_name] = f"{head}\n\n{note}\n\n{tail}"
    return out


def _shell_blob(event: dict[str, Any], session_dir: Path, limit: int, where: str) -> dict[str, Any]:
    """A terminal's output over LIMIT characters: whole in a blob, its head and tail inline,
    the note included, within LIMIT characters."""
    text: str = event["output"]
    data = text.encode("utf-8", "surrogatepass")
    try:
        handle = write_blob(session_dir, data)
    except (OSError, WriteError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise WriteError(f"{session_dir / BLOBS_DIR}: cannot store a {len(data):,}-byte output ({reason}); nothing appended") from None
    note = (f"[… {{}} characters of this terminal output are not shown; the whole output ({len(text):,} characters) "
            f"is blob {handle}: {blob_command(where, handle)} …]")
    room = max(2, limit - len(note.format(f"{len(text):,}")) - 4)
    head, tail = text[: room // 2], text[len(text) - (room - room // 2):]
    out = dict(event)
    out.update(blob=handle, bytes=len(data), output=f"{head}\n\n{note.format(f'{len(text) - len(head) - len(tail):,}')}\n\n{tail}")
    return out


def blob_path(session_dir: Path, handle: str) -> Path:
    """The file of a handle in this session's blobs/, refusing anything else.

    Only a 32-hex-digit name of a regular file directly inside blobs/ is accepted: no
    paths, no symbolic links, nothing outside the session.
    """
    if not is_handle(handle):
        raise UsageError(f"{handle!r} is not a blob handle (32 lowercase hex digits)")
    folder = session_dir / BLOBS_DIR
    path = folder / handle
    try:
        folder_st = os.lstat(folder)
        if not stat.S_ISDIR(folder_st.st_mode):  # before its entry: a file there has none
            raise DataError(f"{folder} is not a directory (a symbolic link is refused)")
        st = os.lstat(path)
    except FileNotFoundError:
        raise UsageError(f"{session_dir}: no blob {handle}") from None
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror})", path=str(path)) from None
    if not stat.S_ISREG(st.st_mode):
        raise DataError(f"{path} is not a regular file (a symbolic link is refused)")
    return path


def open_blob(session_dir: Path, handle: str) -> IO[bytes]:
    """The payload of a handle, opened for reading after checking it hashes to its name.

    The file is opened without following links and checked through the same descriptor it
    is read from, so it cannot be swapped in between. A mismatch is a data error (corrupt).
    """

    path = blob_path(session_dir, handle)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror})", path=str(path)) from None

    def check(f: IO[bytes]) -> None:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise DataError("not a regular file", path=str(path))
        h = xxhash.xxh3_128()
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
        if h.hexdigest() != handle:
            raise DataError("content does not match its handle (corrupt blob)", path=str(path))

    return filled(os.fdopen(fd, "rb"), check)


def session_directory(target: str) -> Path:
    """The directory of SESSION (a directory or its updates.jsonl); blobs need one."""

    if target == "-":
        raise UsageError("blobs live in a session directory; SESSION cannot be -")
    session = Session.open(target)
    return session.require_directory("blob")


def inline_images(items: list[dict[str, Any]], session_dir: Path | None) -> tuple[list[dict[str, Any]], int]:
    """Items whose images kept as blobs carry their bytes (base64 `data`), as a provider
    request must; and how many could not be read (they stay handles, sent as a note).

    Each blob is checked against its handle as it is read; items without blob images are
    handed on as they are."""

    out: list[dict[str, Any]] = []
    missing = 0
    for item in items:
        imgs = item.get("images")
        if not imgs or session_dir is None or not any(isinstance(i, dict) and "blob" in i and "data" not in i for i in imgs):
            out.append(item)
            continue
        new_imgs = []
        for img in imgs:
            if isinstance(img, dict) and isinstance(img.get("blob"), str) and "data" not in img:
                try:
                    with open_blob(session_dir, img["blob"]) as f:
                        img = {**img, "data": base64.b64encode(f.read()).decode("ascii")}
                except (UsageError, DataError):
                    missing += 1
            new_imgs.append(img)
        out.append({**item, "images": new_imgs})
    return out, missing

"""JSON Lines: the one reader of logs and line streams (docs/spec.md#the-session-directory, docs/spec.md#events).

The rules every reader of a log, an item stream or another agent's JSONL shares:

- a line is complete when it ends with its newline; lines count from 1, offsets are bytes
  from where reading started (the file's start unless told otherwise);
- a line longer than MAX_LINE_BYTES is refused (DataError, exit 65) without being read whole;
- a last line without its newline is a torn tail (a write cut short): reported to `on_torn`
  (by default a warning on stderr) and skipped, never an error. That is the rule of our own
  logs (`final="torn"`), whose writer commits line by line. For files another program writes
  (`final="parses"`) a last line that lacks only its newline is taken as it is: only one that
  does not parse (and is not blank) is torn. A stream whose every line must be valid (append's
  stdin) takes it whatever it holds (`final="kept"`), so a bad one is an error, not a warning;
- a problem is one line naming `file:line` (`DataError(message, path=, line=)`).

A source is a path or any binary file object with `readline` (a file, a pipe, a remote
file object); a file object is read from where it stands and left open for its owner.

The ways in:
- `numbered_lines(source)`: (line number, line with its newline), the general loop;
- `raw_lines(source)`: `RawLine(lineno, offset, data)` for tools that rewrite or quarantine;
- `records(source)`: the parsed values of an event log, one per line in order (a blank line is
  invalid there), the hot path of every command: one readline and one parse per line;
- `marked_lines(buf, start, end, marker)`: the byte-marker prefilter. Over a buffer with
  `find` and `rfind` (bytes, bytearray, an mmap) it yields `(offset, line)` for each line
  of [start, end) that contains MARKER (bytes, found by the buffer's C `find`, or a compiled
  bytes regex, found by its `search`): the line without its newline, `offset` its start in
  the buffer. Lines without the marker are never copied nor parsed, so a scan for a few rare
  lines (compactions, usage records) runs at the speed of the search. A line running past
  `end` is cut there: put `end` at a line's end (after its newline, or on it);
- `scan_marked(path, marker)`: `marked_lines` over a file read in chunks (whole lines only;
  a torn tail is left out), with offsets in the file.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, NamedTuple, Union

from ..errors import DataError
from ..visible import say

if TYPE_CHECKING:
    from pathlib import Path

    import orjson

# A line longer than this is refused without being read whole (docs/spec.md#the-command-line: bad input never costs
# unbounded memory).
MAX_LINE_BYTES = 64 * 1024 * 1024
LIMIT = MAX_LINE_BYTES + 1  # what one readline asks for: one byte more tells "too long"
TOO_LONG = f"line longer than {MAX_LINE_BYTES} bytes"
BUFFER = 1 << 20
SCAN_CHUNK = 4 << 20
PROGRESS_STEP = 4 << 20

Source = Union[str, "os.PathLike[str]", IO[bytes]]
Warn = Callable[[str], None]
OnTorn = Callable[[int, int], None]  # (line number, bytes) of a torn final line


def stderr_warning(message: str) -> None:
    say(f"catty-ctx: warning: {message}")


class RawLine(NamedTuple):  # (not a dataclass: the usage scan imports this module, and dataclasses costs it ~7 ms)
    lineno: int  # 1-based
    offset: int  # byte offset of the line's start
    data: bytes  # the line without its trailing newline


def json_problem(exc: orjson.JSONDecodeError) -> str:
    """orjson's message without its own 'line 1' position (the caller names file:line)."""
    return f"invalid JSON: {exc.msg} (column {exc.colno})"


def torn_warning(display: str, lineno: int, size: int) -> str:
    return f"{display}:{lineno}: torn final line ({size} bytes, no newline) ignored; 'catty-ctx repair' quarantines it"


def warn_torn(display: str, warn: Warn | None) -> OnTorn | None:
    """The log's torn-tail report: one warning line through WARN (None: say nothing)."""
    if warn is None:
        return None
    return lambda lineno, size: warn(torn_warning(display, lineno, size))


def open_log(path: str | os.PathLike[str], display: str) -> IO[bytes]:
    """A log file opened for reading; what keeps it from being read is a DataError naming it."""
    try:
        return open(path, "rb", buffering=BUFFER)
    except IsADirectoryError:
        raise DataError("is a directory, not a log file", path=display) from None
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror})", path=display) from None


def open_fd(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of a log, for the scans that read it by offset; what keeps it
    from being read (permissions, a folder in its place) is a DataError naming it, as with
    `open_log`."""
    try:
        return os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror})", path=os.fspath(path)) from None


STDIN_NAME = "<stdin>"  # how every command names standard input in its messages (Python's own name for it)


def display_of(source: Source) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else "<stream>"


@contextmanager
def opened(source: Source, display: str | None = None) -> Iterator[IO[bytes]]:
    """SOURCE as a binary file: a path is opened (and closed after), a file object is lent."""
    if isinstance(source, (str, os.PathLike)):
        with open_log(source, display or os.fspath(source)) as f:
            yield f
    else:
        yield source


def _decoder() -> tuple[Callable[[bytes], Any], type[orjson.JSONDecodeError]]:
    """orjson's `loads` and its error, for the readers that decode lines (a usage scan reads
    them with msgspec, and never pays for orjson)."""
    import orjson

    return orjson.loads, orjson.JSONDecodeError


def _parses(line: bytes) -> bool:
    loads, error = _decoder()
    try:
        loads(line)
    except error:
        return False
    return True


def unterminated(line: bytes, display: str, lineno: int, on_torn: OnTorn | None, final: str = "torn") -> bool:
    """A line without its newline: over the size limit (DataError), or the last line. True:
    take it (see `final` in the module's rules); False: it is a torn tail, reported."""
    if len(line) >= LIMIT:
        raise DataError(TOO_LONG, path=display, line=lineno)
    if final == "kept" or (final == "parses" and (not line.strip() or _parses(line))):
        return True
    if on_torn is not None:
        on_torn(lineno, len(line))
    return False


def numbered_lines(
    source: Source,
    display: str | None = None,
    *,
    on_torn: OnTorn | None = None,
    final: str = "torn",
    first_line: int = 1,
) -> Iterator[tuple[int, bytes]]:
    """(line number, line with its newline) of every complete line; see the module's rules."""
    name = display or display_of(source)
    with opened(source, name) as f:
        readline = f.readline
        limit = LIMIT
        lineno = first_line - 1
        while True:
            line = readline(limit)
            if not line:
                return
            lineno += 1
            if line[-1] != 10:  # no newline: the last line, or one longer than the limit
                if unterminated(line, name, lineno, on_torn, final):
                    yield lineno, line
                return
            yield lineno, line


def raw_lines(
    source: Source, display: str | None = None, *, warn: Warn | None = stderr_warning, offset: int = 0
) -> Iterator[RawLine]:
    """Complete lines with their numbers and byte offsets (a torn tail is warned about through WARN)."""
    name = display or display_of(source)
    for lineno, line in numbered_lines(source, name, on_torn=warn_torn(name, warn)):
        yield RawLine(lineno, offset, line[:-1])
        offset += len(line)


def json_lines(f: IO[bytes], display: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of F, an unterminated last line kept; a line
    that is not JSON is a DataError naming DISPLAY:line."""
    loads, error = _decoder()
    for lineno, line in numbered_lines(f, display, final="kept"):
        if not line.strip():
            continue
        try:
            yield lineno, loads(line)
        except error as exc:
            raise DataError(json_problem(exc), path=display, line=lineno) from None


def records(
    source: Source,
    display: str | None = None,
    *,
    warn: Warn | None = stderr_warning,
    progress: Callable[[int], None] | None = None,
) -> Iterator[Any]:
    """The parsed value of every complete line of an event log, in order: the n-th value is
    line n. A line that is not JSON is a DataError naming file:line (a blank one too).

    `progress`, when given, is called with the bytes read so far every few MiB.
    """
    name = display or display_of(source)
    loads, decode_error = _decoder()
    limit = LIMIT
    lineno = 0
    with opened(source, name) as f:
        readline = f.readline
        next_report = f.tell() + PROGRESS_STEP if progress else -1
        # The loop of `numbered_lines`, inlined: this is the hot path of every command.
        while True:
            line = readline(limit)
            if not line:
                return
            lineno += 1
            if line[-1] != 10:
                unterminated(line, name, lineno, warn_torn(name, warn))
                return
            if next_report >= 0 and f.tell() >= next_report:
                progress(f.tell())  # type: ignore[misc]  # next_report >= 0 only with a progress
                next_report = f.tell() + PROGRESS_STEP
            try:
                value = loads(line)  # the newline is JSON whitespace
            except decode_error as exc:
                raise DataError(json_problem(exc), path=name, line=lineno) from None
            yield value


_SURROGATE = None


def loads_replacing_surrogates(line: bytes) -> tuple[Any, int]:
    """LINE parsed with its lone surrogate escapes (`\\ud83d` without its pair: what JavaScript
    writes for a cut emoji) kept as U+FFFD, and how many there were; what still does not
    parse raises orjson's error. Only for a line orjson refused for that reason."""
    global _SURROGATE
    if _SURROGATE is None:
        _SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
    count = 0

    def fix(m: Any) -> bytes:
        nonlocal count
        at = m.start()
        slashes = 0
        while at - slashes - 1 >= 0 and line[at - slashes - 1] == 0x5C:
            slashes += 1
        if slashes % 2 or len(m.group(0)) == 12:  # an escaped backslash, or a whole pair: as it is
            return m.group(0)
        count += 1
        return b"\\ufffd"

    return _decoder()[0](_SURROGATE.sub(fix, line)), count


def surrogate_tolerant_loads(report: Any, warn: Warn | None, display: str) -> Callable[[bytes], Any]:
    """orjson.loads, except that a line refused for a lone surrogate escape is read with it as
    U+FFFD (`loads_replacing_surrogates`), counted in REPORT.surrogates and warned about."""
    loads, error = _decoder()

    def tolerant(line: bytes) -> Any:
        try:
            return loads(line)
        except error as exc:
            if "surrogate" not in str(exc):
                raise
            value, n = loads_replacing_surrogates(line)
            report.surrogates += n
            if warn:
                warn(f"{display}: {n} lone surrogate escape{'s' if n != 1 else ''} kept as U+FFFD")
            return value

    return tolerant


# -- the byte-marker prefilter -----------------------------------------------------------------

Marker = bytes | Any  # bytes, or a compiled bytes regex


def marked_lines(buf: Any, start: int, end: int, marker: Marker) -> Iterator[tuple[int, bytes]]:
    """(offset, line without its newline) of each line of BUF[start:end] holding MARKER, in
    order, each line once however many times it holds the marker (see the module's docstring)."""
    find = buf.find
    rfind = buf.rfind
    search = None if isinstance(marker, (bytes, bytearray)) else marker.search
    pos = start
    while pos < end:
        if search is None:
            i = find(marker, pos, end)
            if i < 0:
                return
        else:
            m = search(buf, pos, end)
            if m is None:
                return
            i = m.start()
        ls = rfind(b"\n", start, i) + 1 or start
        le = find(b"\n", i, end)
        if le < 0:
            le = end
        pos = le + 1
        yield ls, buf[ls:le]


def scan_marked(
    path: str | os.PathLike[str], marker: Marker, *, start: int = 0, stop: int | None = None
) -> Iterator[tuple[int, bytes]]:
    """(file offset, line) of the complete lines holding MARKER, in file order, read by chunks
    (a torn tail is left out). `start` and `stop`, line starts, bound the scan."""
    fd = open_fd(path)
    try:
        offset = start
        while True:
            size = SCAN_CHUNK if stop is None else min(SCAN_CHUNK, stop - offset)
            if size <= 0:
                return
            data = os.pread(fd, size, offset)
            end = data.rfind(b"\n") + 1  # whole lines only; the rest is read again next time
            if end == 0:
                if len(data) < SCAN_CHUNK:
                    return  # nothing, or only a torn tail, is left
                data = read_line_at(fd, offset, os.fspath(path))  # one line longer than a chunk
                end = len(data)
                if not data.endswith(b"\n"):
                    return
            for at, line in marked_lines(data, 0, end - 1, marker):
                yield offset + at, line
            offset += end
    finally:
        os.close(fd)


def first_line(path: str) -> bytes | None:
    """The first line of the file at PATH (with its newline, if it has one); None when the file
    cannot be opened or read, or the line is past the reader's limit."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return read_line_at(fd, 0, path)
    except (OSError, DataError):
        return None
    finally:
        os.close(fd)


def read_line_at(fd: int, offset: int, display: str | None = None, lineno: int | None = None) -> bytes:
    """The line (with its newline, if it has one) that starts at OFFSET of an open file.

    A line longer than MAX_LINE_BYTES is refused (DataError naming DISPLAY) as soon as the
    limit is passed: never more than the limit and one chunk are held."""
    parts: list[bytes] = []
    held = 0
    while True:
        data = os.pread(fd, SCAN_CHUNK, offset)
        if not data:
            return b"".join(parts)
        nl = data.find(b"\n")
        if nl != -1:
            if held + nl >= LIMIT:
                raise DataError(TOO_LONG, path=display or "<log>", line=lineno)
            parts.append(data[: nl + 1])
            return b"".join(parts)
        held += len(data)
        if held >= LIMIT:
            raise DataError(TOO_LONG, path=display or "<log>", line=lineno)
        parts.append(data)
        offset += len(data)


def line_end(fd: int, offset: int) -> int:
    """Offset just past the newline of the line holding byte OFFSET (the file's size if it
    has none), found chunk by chunk without holding the line."""
    while True:
        data = os.pread(fd, SCAN_CHUNK, offset)
        if not data:
            return offset
        nl = data.find(b"\n")
        if nl != -1:
            return offset + nl + 1
        offset += len(data)


def line_start(path: str | os.PathLike[str], at: int) -> int:
    """Offset of the first line that starts at or after byte `at` (the file's size if none)."""
    if at <= 0:
        return 0
    fd = open_fd(path)
    try:
        return line_end(fd, at - 1)  # past the end of the line holding byte at-1
    finally:
        os.close(fd)


def last_newline_end(path: Path) -> int:
    """Offset just past the last newline: the size of the file's complete lines."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    with os.fdopen(open_fd(path), "rb") as f:
        pos = size
        while pos > 0:
            step = min(BUFFER // 16, pos)
            pos -= step
            f.seek(pos)
            chunk = f.read(step)
            nl = chunk.rfind(b"\n")
            if nl != -1:
                return pos + nl + 1
    return 0


def read_last_line(path: Path) -> bytes | None:
    """The last complete line (without newline), found by a backward scan: linear in the
    line's length, and a line longer than MAX_LINE_BYTES is refused (DataError) once the scan
    has passed the limit, never held."""
    end = last_newline_end(path)
    if end == 0:
        return None
    stop = end - 1  # the final newline
    fd = open_fd(path)
    try:
        pos = stop
        start = 0
        step = BUFFER // 16
        while pos > 0:
            n = min(step, pos)
            pos -= n
            nl = os.pread(fd, n, pos).rfind(b"\n")
            if nl != -1:
                start = pos + nl + 1
                break
            if stop - pos >= LIMIT:
                raise DataError(TOO_LONG + " (the last line)", path=os.fspath(path))
            step = min(step * 2, SCAN_CHUNK)  # a long line takes few reads
        if stop - start >= LIMIT:
            raise DataError(TOO_LONG + " (the last line)", path=os.fspath(path))
        return os.pread(fd, stop - start, start)
    finally:
        os.close(fd)

"""Session text made safe to show: nothing in it may drive the terminal or reorder a line.

A session's text, a path or a file name is data. Shown as it is, an escape sequence would
move the cursor, set the title or write the clipboard, a carriage return would overwrite what
came before, and a bidirectional override would show a line in another order than it is
stored. This is the one sanitiser: every table cell, message and warning goes through
`visible` or `one_line`, and stdout bytes headed for a terminal (`segment show`, `blob`, JSON)
through `stdout_binary`.

C0 controls (but tab and newline) are shown as U+2400's control pictures (ESC as U+241B); DEL,
the C1 controls (U+0080-U+009F) and the bidirectional embeddings, overrides, isolates and
marks as the visible text `\\u009b`, `\\u202e`. JSON encoders already escape C0, so in a JSON
document shown on a terminal these escapes are JSON's own: it still reads back the same.
"""
from __future__ import annotations

import codecs
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

_ESCAPED = (0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
CONTROLS: dict[int, int | str] = {c: 0x2400 + c for c in range(32) if c not in (9, 10)}
CONTROLS.update({c: f"\\u{c:04x}" for c in _ESCAPED})
# A message is one line: a newline in a path would forge another (and so would the line and
# paragraph separators, U+2028 and U+2029, where a reader takes them as line breaks).
ONE_LINE: dict[int, int | str] = {**CONTROLS, 10: 0x240A, 0x2028: "\\u2028", 0x2029: "\\u2029"}


def visible(text: str) -> str:
    """TEXT with every control and bidirectional-control character shown, not obeyed."""
    return text.translate(CONTROLS)


def one_line(text: str) -> str:
    """TEXT as one line of a message: `visible`, a newline shown as U+240A too."""
    return text.translate(ONE_LINE)


def say(line: str) -> None:
    """LINE on stderr, sanitised: how every message and warning is written."""
    sys.stderr.write(one_line(line) + "\n")


def is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class TerminalWriter:
    """A binary stream over RAW for a terminal: bytes decoded as UTF-8 (a byte that is not UTF-8
    shown as `\\xNN`), made `visible`, written back as UTF-8. `end` writes a character cut at the end."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.decoder = codecs.getincrementaldecoder("utf-8")("backslashreplace")

    def write(self, data: bytes) -> int:
        text = self.decoder.decode(data)
        if text:
            self.raw.write(visible(text).encode())
        return len(data)

    def flush(self) -> None:
        self.raw.flush()

    def end(self) -> None:
        rest = self.decoder.decode(b"", final=True)
        if rest:
            self.raw.write(visible(rest).encode())
        self.raw.flush()


def stdout_binary(*, raw: bool = False) -> Any:
    """Where a command writes its bytes: stdout itself in a pipe (or with RAW), else a
    `TerminalWriter` over it."""
    out = sys.stdout.buffer
    return out if raw or not is_terminal(sys.stdout) else TerminalWriter(out)


def end(stream: Any) -> None:
    """Flush STREAM (a `TerminalWriter` writes what it still holds)."""
    (stream.end if isinstance(stream, TerminalWriter) else stream.flush)()

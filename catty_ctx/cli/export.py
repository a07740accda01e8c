"""`catty-ctx export`: a session as a readable transcript (Markdown, HTML or plain text)."""
from __future__ import annotations

import sys

from ..defaults import EXPORT_FORMATS
from ..errors import WriteError
from ..export import export
from ..session.files import write_file
from ..sources import open_session
from .fastpath import declare as declare_command
from .fastpath import flag, parse_one, value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PARAMS = (
    value("fmt", "--format", "-f", metavar="md|html|txt", help="md (Markdown, every text in a code fence), html (one page that runs no script) or txt (plain text).", choices=EXPORT_FORMATS),
    value("out", "--out", "-o", metavar="FILE", help="Write the transcript to FILE (replaced whole, never half-written) instead of stdout."),
    flag("redact", "--redact", help="Replace keys, tokens and passwords with [REDACTED:kind], as compaction artifacts do."),
)
EXPORT_DOC = """Print SESSION as a transcript to read or share: messages, tool calls with their
    arguments, results with their size (long ones cut to a head and a tail, naming the seq that
    `catty-ctx inspect SESSION --seq N` prints in full), images as placeholders, each compaction
    marked where it ran with its summary, subagents labelled.

    Session text is shown as text in every format: control characters as visible pictures,
    Markdown and HTML in it never read as such.
    """
EPILOG = """Examples:
catty-ctx export S -o transcript.md
catty-ctx export S --format html --redact -o transcript.html
catty-ctx export S --format txt | less"""


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`)."""
    return parse_one(args, PARAMS, "session")


def declare() -> None:
    """Register `export` on the typer application (help, completion, docs, unusual spellings), from PARAMS."""
    declare_command("export", run, PARAMS, EXPORT_DOC, EPILOG,
                    {"session": ("SESSION", "A session directory, an updates.jsonl, an agent's session file (Claude Code, Codex, Gemini CLI, opencode), or - for an event stream on stdin.")})


def run(session: str, fmt: str = "md", out: str | None = None, redact: bool = False) -> None:
    """Write SESSION's transcript in FMT to stdout, or to OUT."""
    with open_session(session, stdin=sys.stdin.buffer) as s:
        pieces = export(s, fmt, redact=redact)
        if out is None:
            stdout = sys.stdout.buffer  # (flushed once at exit: a full disk is exit 73 there)
            for piece in pieces:
                stdout.write(piece.encode())
            return

        def fill(f: Any) -> None:
            for piece in pieces:
                f.write(piece.encode())

        try:
            write_file(out, fill)
        except OSError as exc:
            raise WriteError(f"{out}: cannot write ({exc.strerror})") from None

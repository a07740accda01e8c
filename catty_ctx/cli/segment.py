"""`catty-ctx segment list|show|grep`: read a session's compaction archive."""
from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import ExitCode
from . import app
from .errors import handle_errors
from .options import JsonOpt
from .output import Column, rows_out

segment_app = typer.Typer(
    help="Read the segments archive: the verbatim record of compacted conversation.",
    epilog=(
        "Examples: catty-ctx segment list S; catty-ctx segment show S 0 | less; "
        "catty-ctx segment grep S 'AssertionError' | jq .seq"
    ),
    no_args_is_help=True,
)
app.add_typer(segment_app, name="segment")

SegSessionArg = Annotated[str, typer.Argument(metavar="SESSION", help="A session directory.")]


def _session_dir(session: str):  # type: ignore[no-untyped-def]
    # start-up: the library loads when the command runs, not for --help or another command
    from ..store import Session

    return Session.open(session).require_directory("segment")


@segment_app.command("list", epilog="Examples: catty-ctx segment list S; catty-ctx segment list S --json | jq '.segments[].keywords'")
@handle_errors
def list_cmd(session: SegSessionArg, as_json: JsonOpt = False) -> None:
    """List the segments with their seq range, turns, size and keywords."""
    # start-up: the library loads when the command runs, not for --help or another command
    from ..compact.segments import list_segments

    rows = list_segments(_session_dir(session))
    cols = [Column("segment", "num"), Column("file", "path"), *(Column(k, "num") for k in ("seq_from", "seq_to", "turns", "bytes")), Column("keywords", "text")]
    rows_out(iter(rows), cols, as_json=as_json, key="segments")


@segment_app.command("show", epilog="Example: catty-ctx segment show S 0 | less")
@handle_errors
def show_cmd(
    session: SegSessionArg,
    number: Annotated[str, typer.Argument(metavar="N", help="The segment's number (from its file name, counted from 0).")],
) -> None:
    """Print segment N in full."""

    # start-up: the library loads when the command runs, not for --help or another command
    from ..compact.segments import open_segment, segment_path

    path = segment_path(_session_dir(session), number)
    with open_segment(path, binary=True) as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            sys.stdout.buffer.write(chunk)
    sys.stdout.flush()


@segment_app.command("grep", epilog="Examples: catty-ctx segment grep S 'AssertionError'; catty-ctx segment grep S -E 'def (parse|load)' -i --json")
@handle_errors
def grep_cmd(
    session: SegSessionArg,
    pattern: Annotated[str, typer.Argument(metavar="TEXT", help="A fixed string to look for (a regular expression with -E).")],
    ignore_case: Annotated[bool, typer.Option("-i", "--ignore-case", help="Ignore case.")] = False,
    regex: Annotated[bool, typer.Option("-E", "--regex", help="TEXT is a regular expression.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Find TEXT in every segment; each match with its segment, seq, role and line.

    Exits 1 when nothing matches, as grep does.
    """
    # start-up: the library loads when the command runs, not for --help or another command
    from ..compact.segments import grep_segments

    matches = (m.as_dict() for m in grep_segments(_session_dir(session), pattern, ignore_case=ignore_case, regex=regex))
    cols = [Column("segment", "num"), Column("seq", "num"), "role", Column("line", "text")]
    n = rows_out(matches, cols, as_json=as_json, key="matches")
    if n == 0:
        raise typer.Exit(ExitCode.CHECK_FAILED)

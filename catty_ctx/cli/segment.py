"""`catty-ctx segment list|show|grep`: read a session's compaction archive."""
from __future__ import annotations

from typing import Annotated

import typer

from . import app
from .errors import handle_errors
from .options import JsonOpt

segment_app = typer.Typer(
    help="Read the segments archive that `compact --mode segments` writes (segments/segment_NNN.md).",
    epilog="Example: catty-ctx segment list S; catty-ctx segment grep S TimeoutError -i; catty-ctx segment show S 0",
    no_args_is_help=True,
)
app.add_typer(segment_app, name="segment")

SessionDirArg = Annotated[str, typer.Argument(metavar="SESSION", help="A session directory.")]


def _session_dir(session: str) -> tuple["object", "object"]:
    from ..store import Session

    s = Session.open(session)
    return s.require_directory("segment"), s.log_path


@segment_app.command("list", epilog="Example: catty-ctx segment list S --json | jq '.segments[].keywords'")
@handle_errors
def segment_list(session: SessionDirArg, as_json: JsonOpt = False) -> None:
    """List the segments: number, file, seq range, turns, bytes and keywords."""
    from ..compact.segments import list_segments
    from .output import rows_out

    directory, log = _session_dir(session)
    rows = list_segments(directory, log)  # type: ignore[arg-type]
    rows_out(iter(rows), ["segment", "file", "seq_from", "seq_to", "turns", "bytes", "keywords"], as_json=as_json, key="segments", right=["segment", "seq_from", "seq_to", "turns", "bytes"])


@segment_app.command("show", epilog="Example: catty-ctx segment show S 0 | less")
@handle_errors
def segment_show(
    session: SessionDirArg,
    number: Annotated[str, typer.Argument(metavar="N", help="The segment's number (the one in its file name, from 0) or its file name.")],
) -> None:
    """Print one segment in full."""
    import shutil
    import sys

    from ..compact.segments import resolve_segment

    directory, _ = _session_dir(session)
    path = resolve_segment(directory, number)  # type: ignore[arg-type]
    with open(path, "rb") as f:
        shutil.copyfileobj(f, sys.stdout.buffer)
    sys.stdout.flush()


@segment_app.command("grep", epilog="Example: catty-ctx segment grep S 'AssertionError' -i; catty-ctx segment grep S -E 'def \\w+_item'")
@handle_errors
def segment_grep(
    session: SessionDirArg,
    pattern: Annotated[str, typer.Argument(metavar="TEXT", help="A fixed string (a regular expression with -E).")],
    regex: Annotated[bool, typer.Option("-E", "--regexp", help="TEXT is a regular expression.")] = False,
    ignore_case: Annotated[bool, typer.Option("-i", "--ignore-case", help="Ignore case.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Search every segment; each match with its segment, seq, role and line. Exit 1 when nothing matched."""
    from ..compact.segments import grep_segments
    from .output import rows_out

    directory, log = _session_dir(session)
    n = rows_out(
        grep_segments(directory, log, pattern, regex=regex, ignore_case=ignore_case),  # type: ignore[arg-type]
        ["segment", "seq", "role", "line"], as_json=as_json, key="matches", right=["segment", "seq"],
    )
    if n == 0:
        raise typer.Exit(1)

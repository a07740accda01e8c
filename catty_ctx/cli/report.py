"""`catty-ctx report`: one self-contained offline HTML page per session; a ROOT gets an index."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..errors import DataError, UsageError, WriteError
from ..html import build_report, write_root
from ..html.index import write_file
from ..html.page import render
from ..sources import resolve, root_sessions
from ..subagents import open_agent
from .app import app
from .errors import handle_errors, note, warn
from .options import AgentOpt, TargetArg
from .output import form, progress_iter


@app.command(
    "report",
    epilog=(
        "Examples: catty-ctx report fixtures/sessions/demo -o demo.html; "
        "catty-ctx report ~/sessions -o site/ (then open site/index.html); "
        "catty-ctx import claude F | catty-ctx report - > claude.html"
    ),
)
@handle_errors
def report_cmd(
    target: TargetArg,
    output: Annotated[
        str | None,
        typer.Option("-o", "--output", metavar="FILE|DIR", help="Write the page to FILE (default: stdout); for a ROOT, the folder DIR that gets a page per session and index.html."),
    ] = None,
    agent: AgentOpt = None,
) -> None:
    """A session's context lifecycle as one HTML page that works offline, from a file.

    On a terminal without -o the page is written to <session-id>.html in the current folder
    (its path is printed); in a pipe it goes to stdout.

    Sections: #summary (ids, model, window, tokens now, fingerprint, repair --check
    problems), #timeline (context tokens per provider request with the window, the
    threshold, compactions, prune batches, two-pass prefires and the cached share),
    #view (the current view as a conversation, every item with its seq and tokens),
    #compactions (each compaction and the segments index) and #usage (tokens and cost by
    model and by agent).

    A ROOT needs -o DIR. An unreadable session still gets a page (or an index row) saying
    what is wrong, and the command exits 65; a folder or file that cannot be written, 73. A ROOT
    goes on past a failed session and exits with the most severe code its sessions met.
    """

    if resolve(target).is_root:
        if agent is not None:
            raise UsageError(f"{target}: --agent needs one session, not a ROOT")
        if output is None:
            raise UsageError(f"{target}: a ROOT needs -o DIR (a page per session and index.html)")

        found = root_sessions(target)
        site = write_root(target, output, sessions=found, progress=lambda it: progress_iter(it, label="pages", total=len(found)),
                          on_error=lambda _path, exc: warn(str(exc)))
        note(f"{len(site.rows):,} pages and {Path(output) / 'index.html'} written")
        if site.exit_code:  # the most severe of the sessions' (docs/spec.md#a-root-of-sessions)
            raise SystemExit(site.exit_code)
        return

    with open_agent(target, agent, warn=warn) as session:
        rep = build_report(session)
    ref = target if target != "-" else "SESSION"
    data = render(rep, ref=ref).encode("utf-8", "surrogateescape")
    if output is None and form(False) == "table":
        # A page is no reading for a terminal: it goes to a file of its own, named by the session.
        output = str(_page_name(rep.session_id))
        note(f"report written to {output}")
    if output is None or output == "-":
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        except BrokenPipeError:
            raise  # the reader went away (`| head`): the single error path stops quietly
        except OSError as exc:  # a full disk on stdout too: exit 73
            raise WriteError(f"stdout: cannot write ({exc.strerror or exc})") from None
    else:
        dest = Path(output)
        if dest.is_dir():
            raise WriteError(f"{dest}: is a folder; -o names the page's file for one session")
        write_file(dest, data)
    if rep.errors:  # the page says what is wrong; so does one error line, and the exit status
        raise DataError(rep.errors[0])


def _page_name(session_id: object) -> Path:
    """`<session-id>.html` in the current folder (the id's safe characters only; it is data),
    with -2, -3 … added rather than replacing a file that is there."""

    stem = re.sub(r"[^A-Za-z0-9._-]", "_", str(session_id or "session")).lstrip(".")[:80] or "session"
    path, n = Path(f"{stem}.html"), 1
    while path.exists():
        n += 1
        path = Path(f"{stem}-{n}.html")
    return path

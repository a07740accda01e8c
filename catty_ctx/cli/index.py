"""`catty-ctx index`: build or bring up to date the search index of some ROOTs (docs/search.md#the-index)."""
from __future__ import annotations

import sys

from ..errors import UsageError
from ..index import Index
from .fastpath import declare as declare_command
from .fastpath import flag, parse, shared
from .output import write_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PARAMS = (
    flag("drop", "--drop", help="Delete the index (every ROOT's) and build nothing; `search` then reads every file again."),
    shared("as_json"),
)
DOC = """Index the sessions under the ROOTs for `search`: catty sessions with their segments
    archives, hook mirrors, and the agents' own files, in one SQLite FTS5 database under the
    cache folder ($XDG_CACHE_HOME/catty-ctx/index, or CATTY_CTX_INDEX).

    Each session's texts are kept too, so that a query that finds something reads no session.
    A second run reads only what changed (of a file that grew, its new lines). Once a ROOT is
    indexed, `search` over it asks the index which sessions may hold the pattern, brings it up
    to date first, and ranks them; deleting the index changes no match, only the time.
    """
EPILOG = """Examples:
catty-ctx index ~/.claude ~/.codex ~/.local/share/catty-ctx/mirrors sessions/
catty-ctx search ~/.claude 'TimeoutError'          # through the index from now on
catty-ctx index --drop"""


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`)."""
    got = parse(args, PARAMS)
    if got is None:
        return None
    opts, positional = got
    return {"roots": positional, **opts}


def declare() -> None:
    """Register `index` on the typer application (help, completion, docs, unusual spellings), from PARAMS."""
    declare_command("index", run, PARAMS, DOC, EPILOG, {"roots": ("ROOT...", "Folders of sessions (catty or an agent's home) to index.")})


def run(roots: list[str] | None = None, drop: bool = False, as_json: bool = False) -> None:
    """Index ROOTS (or, with --drop, delete the index)."""
    with Index() as idx:
        where = idx.path
        if drop:
            idx.drop()
            report = None
        else:
            if not roots:
                raise UsageError("ROOT: name at least one folder of sessions to index")
            report = idx.update(roots)
            report.sessions_read = idx.keep_all(roots)
    doc = {"index": str(where), "dropped": drop, "roots": [] if report is None else report.walked,
           "files": 0 if report is None else report.files, "files_read": [] if report is None else report.files_read,
           "files_grown": [] if report is None else report.files_grown, "bytes_read": 0 if report is None else report.bytes_read,
           "sessions_read": 0 if report is None else report.sessions_read}
    if as_json:
        write_json(doc)
    elif report is None:
        sys.stdout.write(f"{where}: deleted\n")
    else:
        sys.stdout.write(f"{where}: {report.files:,} files, {len(report.files_read):,} read whole, {len(report.files_grown):,} grown, "
                         f"{report.bytes_read:,} bytes read, {report.sessions_read:,} sessions' texts kept\n")

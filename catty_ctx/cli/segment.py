"""`catty-ctx segment list|show|grep`: read a session's compaction archive.

These subcommands start without the CLI framework (see `fastpath`): an agent calls
`segment grep` as a tool mid-session, and typer's import would be much of such a run. Each
subcommand has its own table, `PARAMS[name]`; typer's commands go on the `segment` sub-application.
"""
from __future__ import annotations

from ..errors import ExitCode
from ..formats.grok_segments import grok_segments
from ..session.segments import grep_segments, list_segments, native_segments, open_segment, segment_path
from ..subagents import open_agent
from ..visible import end, stdout_binary
from .app import get_app
from .errors import warn
from .fastpath import declare as declare_command
from .fastpath import declare_group, flag, parse_one, shared
from .output import Column, rows_out

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

# The options of each subcommand, declared once (see `fastpath`); the shared ones bring their own help (None here).
PARAMS = {
    "list": (shared("as_json"), shared("agent")),
    "show": (shared("agent"),),
    "grep": (
        flag("ignore_case", "-i", "--ignore-case", help="Ignore case."),
        flag("regex", "-E", "--regex", help="TEXT is a regular expression."),
        shared("as_json"),
        shared("agent"),
    ),
}
# Each subcommand's positional arguments (all required), in order.
POSITIONAL = {"list": ("session",), "show": ("session", "number"), "grep": ("session", "pattern")}
SEGMENT_HELP = "Read the segments archive: the verbatim record of compacted conversation."
SEGMENT_EPILOG = "Examples: catty-ctx segment list S; catty-ctx segment show S 0 | less; catty-ctx segment grep S 'AssertionError' | jq .seq"
EPILOGS = {
    "list": "Examples: catty-ctx segment list S; catty-ctx segment list S --json | jq '.segments[].keywords'",
    "show": "Example: catty-ctx segment show S 0 | less",
    "grep": "Examples: catty-ctx segment grep S 'AssertionError'; catty-ctx segment grep S -E 'def (parse|load)' -i --json",
}
DOCS = {
    "list": "List the segments with their seq range, turns, size and keywords.",
    "show": "Print segment N in full.",
    "grep": """Find TEXT in every segment; each match with its segment, seq, role and line.

    Exits 1 when nothing matches, as grep does.
    """,
}


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS (the subcommand first), or None when typer should
    parse them (see `fastpath.parse`)."""
    name = args[0] if args else None
    if name not in PARAMS:
        return None
    got = parse_one(args[1:], PARAMS[name], *POSITIONAL[name])
    return None if got is None else {"subcommand": name, **got}


def declare() -> None:
    """Register the `segment` sub-application and its subcommands on the typer application (help,
    completion, docs, unusual spellings), from PARAMS."""
    if any(group.name == "segment" for group in get_app().registered_groups):
        return
    segment_app = declare_group("segment", SEGMENT_HELP, SEGMENT_EPILOG)
    arguments = {"session": ("SESSION", "A session directory."), "number": ("N", "The segment's number (from its file name, counted from 0)."),
                 "pattern": ("TEXT", "A fixed string to look for (a regular expression with -E).")}
    for name, params in PARAMS.items():
        declare_command(name, RUNS[name], params, DOCS[name], EPILOGS[name], {p: arguments[p] for p in POSITIONAL[name]}, on=segment_app)


def run(subcommand: str, **kwargs: Any) -> None:
    """Run SUBCOMMAND (list, show or grep) with its keyword arguments (from `parse_args`)."""
    RUNS[subcommand](**kwargs)


def _session_dir(session: str, agent: str | None = None) -> Path:
    opened = open_agent(session, agent, warn=warn)
    # Another agent's session, or a subagent's view: its own compactions' spans, derived in its spool.
    if opened.origin is not None:
        _OPENED.append(opened)  # its spool stays until the command ends
        if opened.origin.get("format") == "grok":  # Grok Build keeps its own archive: read it as it lies
            own = grok_segments(opened.origin["path"], opened.log_path.parent / "grok")
            if own is not None:
                return own
        return native_segments(opened)
    return opened.require_directory("segment")


_OPENED: list[Any] = []


def list_cmd(session: str, as_json: bool = False, agent: str | None = None) -> None:
    """List SESSION's segments; the rows go to stdout."""
    rows = list_segments(_session_dir(session, agent))
    cols = [Column("segment", "num"), Column("file", "path"), *(Column(k, "num") for k in ("seq_from", "seq_to", "turns", "bytes")), Column("keywords", "text")]
    rows_out(iter(rows), cols, as_json=as_json, key="segments")


def show_cmd(session: str, number: str, agent: str | None = None) -> None:
    """Copy segment NUMBER of SESSION to stdout, byte for byte (on a terminal, controls shown, not obeyed)."""
    path = segment_path(_session_dir(session, agent), number)
    out = stdout_binary()
    with open_segment(path, binary=True) as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            out.write(chunk)
    end(out)


def grep_cmd(session: str, pattern: str, ignore_case: bool = False, regex: bool = False, as_json: bool = False, agent: str | None = None) -> None:
    """Print the matches of PATTERN in SESSION's segments; exit 1 when there is none."""
    matches = (m.as_dict() for m in grep_segments(_session_dir(session, agent), pattern, ignore_case=ignore_case, regex=regex))
    cols: list[str | Column] = [Column("segment", "num"), Column("seq", "num"), "role", Column("line", "text")]
    n = rows_out(matches, cols, as_json=as_json, key="matches")
    if n == 0:
        raise SystemExit(int(ExitCode.CHECK_FAILED))


RUNS: dict[str, Callable[..., None]] = {"list": list_cmd, "show": show_cmd, "grep": grep_cmd}

"""`catty-ctx search`: a pattern across every session under some ROOTs, catty and native."""
from __future__ import annotations

from ..errors import CattyError, ExitCode
from ..fleet.runner import most_severe
from ..search import Query, search
from .errors import warn
from .fastpath import declare as declare_command
from .fastpath import flag, parse, shared, value
from .output import Column, rows_out

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PARAMS = (
    flag("regex", "--regexp", "-E", help="PATTERN is a regular expression (Python's syntax), not a fixed string."),
    flag("ignore_case", "--ignore-case", "-i", help="Match regardless of case."),
    value("since", "--since", metavar="DATE", help="Only what was said on or after this day (YYYY-MM-DD, UTC); older sessions are not read."),
    value("until", "--until", metavar="DATE", help="Only what was said on or before this day (YYYY-MM-DD, UTC)."),
    value("project", "--project", metavar="TEXT", help="Only sessions whose working folder holds TEXT."),
    value("agent", "--agent", metavar="NAME", help="Only sessions of this agent: catty, claude, codex, gemini or opencode.", choices=("catty", "claude", "codex", "gemini", "opencode")),
    value("limit", "--limit", "-n", kind=int, metavar="N", help="Stop after N matches.", min=1),
    shared("as_json"),
)
SEARCH_DOC = """Find PATTERN in every session under the ROOTs: catty sessions with their segments
    archives, and the agents' own files (Claude Code, Codex, Gemini CLI, opencode) as they lie.

    Each match names its session, agent, project folder, date, seq (what `catty-ctx inspect
    PATH --seq N` prints in full), role or tool, and its line. A table on a terminal, JSON
    Lines in a pipe, one document with --json. Files are searched as bytes first: only those
    holding the pattern are read as sessions. Exit 1 when nothing matches.
    """
EPILOG = """Examples:
catty-ctx search ~/.claude ~/.codex sessions/ 'TimeoutError'
catty-ctx search ~/.claude -E 'KeyError: .?user_id' --since 2026-11-01
catty-ctx search sessions/ -i 'never push' --project shop --json | jq '.matches[].path'"""
_COLUMNS = [Column("session", "id"), Column("agent"), Column("date"), Column("seq", "num"), Column("role"), Column("line", "text"),
            Column("cwd", "path"), Column("path", "path")]


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`)."""
    got = parse(args, PARAMS)
    if got is None or len(got[1]) < 2:
        return None
    opts, positional = got
    return {"roots": positional[:-1], "pattern": positional[-1], **opts}


def declare() -> None:
    """Register `search` on the typer application (help, completion, docs, unusual spellings), from PARAMS."""
    declare_command("search", run, PARAMS, SEARCH_DOC, EPILOG, {
        "roots": ("ROOT...", "Folders of sessions (catty or an agent's home), or single sessions."),
        "pattern": ("PATTERN", "What to look for: a fixed string (a regular expression with -E)."),
    })


def run(roots: list[str], pattern: str, regex: bool = False, ignore_case: bool = False, since: str | None = None, until: str | None = None,
        project: str | None = None, agent: str | None = None, limit: int | None = None, as_json: bool = False) -> None:
    """Print the matches of PATTERN under ROOTS; exit 1 when there is none."""
    query = Query(pattern, regex=regex, ignore_case=ignore_case, since=since, until=until, project=project, agent=agent, limit=limit)
    failed: list[int] = []

    def unreadable(_unit: object, exc: CattyError) -> None:
        warn(str(exc))
        failed.append(int(exc.exit_code))

    count = rows_out((m.row() for m in search(roots, query, warn=warn, on_error=unreadable)), _COLUMNS, as_json=as_json, key="matches")
    if failed:  # (every other session searched, the output whole; then the most severe)
        raise SystemExit(most_severe(failed))
    if not count:
        raise SystemExit(int(ExitCode.CHECK_FAILED))

"""`catty-ctx statusline`: Claude Code's status line (its `statusLine` command).

Claude Code runs it after each update with its status JSON on stdin and shows what it prints,
so it starts without the CLI framework (see `fastpath`) and never fails: stdin that is not the
status JSON still gives exit 0 and one short line on stdout (docs/agents.md#status-line).
"""
from __future__ import annotations

import json
import sys

from ..agents.statusline import DEFAULT_FORMAT, FIELDS, check_format, read_payload, render, status
from ..errors import UsageError
from ..visible import one_line
from .fastpath import declare as declare_command
from .fastpath import parse_one, shared, value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PARAMS = (
    value("fmt", "--format", "-f", metavar="TEMPLATE", help="The line, with {field} for each field shown (see the fields below); {{ and }} are braces."),
    shared("as_json"),
    value("mirrors", "--mirrors", metavar="DIR", help="The hook mirrors' folder, for the archived segments (default: as `hook claude` keeps them)."),
)
DOC = """Print Claude Code's status line: model, context used, costs, cache share, compactions.

    Reads Claude Code's status JSON on stdin and prints one line: the model, the last request's
    context (tokens, percent of the window and of the auto-compact point), the session's and
    today's cost (every call counted once, from the usage ledger), the last request's cached
    share, the compactions so far and the segments the hook mirror archived. The transcript is
    read incrementally (state in $XDG_CACHE_HOME/catty-ctx/statusline); when it is missing the
    fields come from the JSON. Always exits 0.
    """
EPILOG = ("Fields: " + ", ".join(FIELDS) + ".\n\nExamples:\ncatty-ctx hook install claude --statusline\ncatty-ctx statusline < status.json\n"
          "catty-ctx statusline --format '{model} {percent} ({compact_percent} of compact) {session_cost}' < status.json")


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`)."""
    return parse_one(args, PARAMS)


def declare() -> None:
    """Register `statusline` on the typer application (help, completion, docs), from PARAMS."""
    declare_command("statusline", run, PARAMS, DOC, EPILOG, {})


def run(fmt: str | None = None, as_json: bool = False, mirrors: str | None = None) -> None:
    """Read the status JSON on stdin, print the line (or its fields with --json)."""
    template = DEFAULT_FORMAT if fmt is None else fmt
    try:
        check_format(template)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    payload, problem = read_payload(sys.stdin.buffer.read())
    fields: dict[str, Any] = dict.fromkeys(FIELDS)
    if problem is None:
        try:
            fields = status(payload, mirrors=mirrors, today_inline=False)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
    if as_json:
        sys.stdout.write(json.dumps({**fields, "problem": problem}) + "\n")
    elif problem is not None:
        sys.stdout.write(f"catty-ctx: no status ({one_line(problem)})\n")
    else:
        sys.stdout.write(render(fields, template) + "\n")

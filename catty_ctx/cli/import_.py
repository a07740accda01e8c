"""`catty-ctx import`: another agent's session → an event stream or a new session directory.

This command starts without the CLI framework (see `fastpath`): it heads pipes
(`catty-ctx import claude F | catty-ctx repair - | catty-ctx inspect -`), and typer's import
would be much of such a run.
"""
from __future__ import annotations

import orjson

from ..defaults import TOOL_LIMIT, USER_LIMIT
from ..formats.registry import NAMES, names_text
from ..importers.common import is_routine_skip
from ..importers.pipeline import import_events, import_to_dir
from ..visible import end, stdout_binary
from .errors import note, warn
from .fastpath import declare as declare_command
from .fastpath import flag, parse_one, shared, value
from .output import write_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..importers.common import ImportReport

# The options of `import`, declared once (see `fastpath`); the shared ones bring their own help (None here).
PARAMS = (
    value("out", "--out", metavar="DIR", help="Write a new session directory instead of events on stdout."),
    flag("lenient", "--lenient", help="Skip source lines or records that cannot be read (each is reported) instead of stopping with exit 65."),
    value("session", "--session", metavar="ID", help="The session to import when SOURCE holds several."),
    shared("dry_run"),
    shared("max_user_bytes"),
    shared("max_tool_bytes"),
)
EPILOG = (
    "Examples: catty-ctx import claude ~/.claude/projects/P/ID.jsonl | catty-ctx inspect -; "
    "catty-ctx import auto rollout.jsonl --out sessions/imported"
)
IMPORT_DOC = """Import a Claude Code, Codex CLI, opencode or Gemini CLI session, or an OpenAI /
    Anthropic messages array.

    Without --out the events go to stdout as JSON Lines (a valid updates.jsonl, so
    `import ... | catty-ctx inspect -` works); with --out a session directory is made,
    whole or not at all (large payloads go to its blobs/, as with append). Ids and timestamps come from the source: importing twice gives
    the same bytes. What was skipped is reported on stderr.
    """


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`)."""
    return parse_one(args, PARAMS, "fmt", "source")


def declare() -> None:
    """Register `import` on the typer application (help, completion, docs, unusual spellings), from PARAMS."""
    declare_command("import", run, PARAMS, IMPORT_DOC, EPILOG, {
        "fmt": ("FORMAT", f"{names_text()}, or auto (detect from the content).", (*NAMES, "auto")),
        "source": ("SOURCE", "A session file, or a tree / storage folder / opencode.db holding sessions (pick one with --session)."),
    })


def run(fmt: str, source: str, out: str | None = None, lenient: bool = False, session: str | None = None, dry_run: bool = False,
        max_user_bytes: int = USER_LIMIT, max_tool_bytes: int = TOOL_LIMIT) -> None:
    """Import SOURCE as events on stdout, or (with OUT) as a new session directory; what was skipped goes to stderr."""
    if out is not None:
        report = import_to_dir(fmt, source, out, lenient=lenient, warn=warn, session_id=session, dry_run=dry_run,
                               user_limit=max_user_bytes, tool_limit=max_tool_bytes)

        doc = report.as_dict()
        doc["out"] = out
        doc["dry_run"] = dry_run
        write_json(doc)
    else:
        # (a terminal sees session text with its controls made visible; a pipe gets the bytes)
        stream = stdout_binary()
        dumps = orjson.dumps
        if dry_run:  # nothing to stream: the report is the output
            report, _ = import_events(fmt, source, lambda ev: None, lenient=lenient, warn=warn, session_id=session)

            write_json({**report.as_dict(), "dry_run": True})
        else:
            report, _ = import_events(fmt, source, lambda ev: stream.write(dumps(ev) + b"\n"), lenient=lenient, warn=warn, session_id=session)
        end(stream)
    _skip_report(report, source)


def _skip_report(report: ImportReport, source: str) -> None:
    """What was left out: routine skips in a note, anything else (and invalid lines) in a warning."""
    routine = [f"{k} {v}" for k, v in sorted(report.skipped.items()) if is_routine_skip(k)]
    other = [f"{k} {v}" for k, v in sorted(report.skipped.items()) if not is_routine_skip(k)]
    if report.invalid:
        other.insert(0, f"invalid lines {len(report.invalid)}")
    head = f"{report.format} import of {source}: {report.events} events"
    if other:
        warn(f"{head}; skipped: " + ", ".join(other) + (f" (and, as usual, {', '.join(routine)})" if routine else ""))
    elif routine:
        note(f"{head}; left out as usual: " + ", ".join(routine))

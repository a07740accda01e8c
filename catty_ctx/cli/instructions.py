"""`catty-ctx instructions`: discover AGENTS.md and rule files, optionally record them.

This command starts without the CLI framework (see `fastpath`): an agent or its hook runs it
at the start of a session or turn (with --append, to record what changed), and typer's import
would be much of such a run.
"""
from __future__ import annotations

from typing import Any

from ..defaults import DEFAULT_LOCK_TIMEOUT
from ..instructions import discover_instructions, record_instructions
from ..session.store import Session
from .errors import note, warn
from .fastpath import declare as declare_command
from .fastpath import flag, parse_one, shared, value
from .output import Column, emit, show_table

# The options of `instructions`, declared once (see `fastpath`); the shared ones bring their own help (None here).
PARAMS = (
    value("append", "--append", metavar="SESSION", help="Record them as the session's instructions state (nothing is appended when unchanged)."),
    flag("no_global", "--no-global", help="Leave out the user-level files."),
    shared("as_json"),
    shared("lock_timeout"),
)
EPILOG = "Examples: catty-ctx instructions; catty-ctx instructions src/app --append S; catty-ctx instructions --json | jq -r '.instructions[].path'"
INSTRUCTIONS_DOC = """Find instruction files (AGENTS.md and rules) for DIR, in prompt order, with sources.

    Order: global, then the repository root, then each folder down to DIR (deeper files
    later, so they win).
    Looks for AGENTS.md, CLAUDE.md, .claude/rules/* and .cursor/rules/* (.md, .mdc) in each
    folder; user-level files are $CODEX_HOME/AGENTS.md, ~/.claude/CLAUDE.md and
    $XDG_CONFIG_HOME/catty-ctx/AGENTS.md (+ rules/). Files git ignores are skipped, a file
    reached twice counts once, rule front matter is stripped.
    """


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`).
    DIR may be left out (here)."""
    return parse_one(args, PARAMS, "directory", required=0)


def declare() -> None:
    """Register `instructions` on the typer application (help, completion, docs, unusual spellings), from PARAMS."""
    declare_command("instructions", run, PARAMS, INSTRUCTIONS_DOC, EPILOG,
                    {"directory": ("DIR", "The working directory the agent runs in (default: here).")})


def run(directory: str = ".", append: str | None = None, no_global: bool = False, as_json: bool = False,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
    """List DIRECTORY's instruction files (with --append, record them in that session); the rows go to stdout."""
    found = discover_instructions(directory, include_global=not no_global)
    for s in found.skipped:
        if s["reason"].startswith("ignore rules not applied"):
            warn(f"{s['path']}: {s['reason']}")
    appended = None
    if append is not None:
        with Session.open(append) as session:
            ev = record_instructions(session, found, lock_timeout=lock_timeout)
        appended = ev["seq"] if ev else None
        if not as_json:
            note(f"instructions state appended at seq {appended}" if ev else "instructions unchanged: nothing appended")
    rows = [{"order": p.order, "scope": p.scope, "path": p.path, "bytes": p.bytes, "text": p.text} for p in found.parts]
    cols: list[str | Column] = [Column("order", "num"), "scope", Column("path", "path"), Column("bytes", "num")]
    doc = {"directory": found.directory, "root": found.root, "instructions": rows, "skipped": found.skipped, "appended_seq": appended}
    emit(doc, as_json=as_json, lines=rows, show=lambda d: show_table(d["instructions"], cols))

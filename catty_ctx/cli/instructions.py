"""`catty-ctx instructions`: discover AGENTS.md and rule files, optionally record them."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..defaults import DEFAULT_LOCK_TIMEOUT
from . import app
from .errors import handle_errors, note, warn
from .options import JsonOpt, LockTimeoutOpt
from .output import Column, emit, show_table


@app.command(
    "instructions",
    epilog="Examples: catty-ctx instructions; catty-ctx instructions src/app --append S; catty-ctx instructions --json | jq -r '.instructions[].path'",
)
@handle_errors
def instructions_cmd(
    directory: Annotated[str, typer.Argument(metavar="DIR", help="The working directory the agent runs in (default: here).")] = ".",
    append: Annotated[Optional[str], typer.Option("--append", metavar="SESSION", help="Record them as the session's instructions state (nothing is appended when unchanged).")] = None,
    no_global: Annotated[bool, typer.Option("--no-global", help="Leave out the user-level files.")] = False,
    as_json: JsonOpt = False,
    lock_timeout: LockTimeoutOpt = DEFAULT_LOCK_TIMEOUT,
) -> None:
    """Find instruction files (AGENTS.md and rules) for DIR, in prompt order, with sources.

    Order: global, then the repository root, then each folder down to DIR (deeper files
    later, so they win).
    Looks for AGENTS.md, CLAUDE.md, .claude/rules/* and .cursor/rules/* (.md, .mdc) in each
    folder; user-level files are $CODEX_HOME/AGENTS.md, ~/.claude/CLAUDE.md and
    $XDG_CONFIG_HOME/catty-ctx/AGENTS.md (+ rules/). Files git ignores are skipped, a file
    reached twice counts once, rule front matter is stripped.
    """
    # start-up: the library loads when the command runs, not for --help or another command
    from ..instructions import discover_instructions, record_instructions
    from ..store import Session

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
    cols = [Column("order", "num"), "scope", Column("path", "path"), Column("bytes", "num")]
    doc = {"directory": found.directory, "root": found.root, "instructions": rows, "skipped": found.skipped, "appended_seq": appended}
    emit(doc, as_json=as_json, lines=rows, show=lambda d: show_table(d["instructions"], cols))

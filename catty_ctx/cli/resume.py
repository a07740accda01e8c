"""`catty-ctx resume`: the repaired view, ready to send to a provider."""
from __future__ import annotations

from typing import Annotated

import typer

from ..defaults import RESUME_FORMAT
from . import app
from .errors import handle_errors, note
from .options import SessionArg
from .output import write_json, write_lines


@app.command(
    "resume",
    epilog="Examples: catty-ctx resume S --format openai | jq '.messages | length'; catty-ctx resume S | catty-ctx inspect -",
)
@handle_errors
def resume_cmd(
    session: SessionArg,
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="items|openai|anthropic", help="items (JSON Lines), openai ({\"messages\": [...]}) or anthropic ({\"system\", \"messages\"}).")] = RESUME_FORMAT,
) -> None:
    """Print the repaired view, ready to send: items, an OpenAI or an Anthropic request.

    Every repair is applied in memory (the log is not touched) and the result is checked
    against the provider's rules before printing: every call answered exactly once right
    after its assistant, no orphans, no empty messages.

    A session directory is resumable only when it holds summary.json (`catty-ctx repair`
    rebuilds a missing one). What was repaired on the way is said on stderr.
    """
    # start-up: the library loads when the command runs, not for --help or another command
    from ..fork import resume
    from ..store import Session

    with Session.open(session) as s:
        out, notes = resume(s, fmt)
    if notes:
        note("repaired for this request (the log is unchanged): " + ", ".join(notes))
    if fmt == "items":
        write_lines(out)
    else:
        write_json(out)

"""`catty-ctx resume`: the repaired view, ready to send to a provider.

This command starts without the CLI framework (see `fastpath`): an agent may build each
request with it, and typer's import would be most of that run.
"""
from __future__ import annotations

from ..defaults import RESUME_FORMAT, RESUME_FORMATS
from ..fork import resume
from ..subagents import open_agent
from .errors import note, warn
from .fastpath import SESSION_ARG, parse_one, shared, value
from .fastpath import declare as declare_command
from .output import write_json, write_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PARAMS = (
    value("fmt", "--format", "-f", metavar="items|openai|anthropic", help="items (JSON Lines), openai ({\"messages\": [...]}) or anthropic ({\"system\", \"messages\"}).", choices=RESUME_FORMATS),
    shared("agent"),
)
RESUME_DOC = """Print the repaired view, ready to send: items, an OpenAI or an Anthropic request.

    Every repair is applied in memory (the log is not touched) and the result is checked
    against the provider's rules before printing: every call answered exactly once right
    after its assistant, no orphans, no empty messages.

    A session directory is resumable only when it holds summary.json (`catty-ctx repair`
    rebuilds a missing one). What was repaired on the way is said on stderr.
    """


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`)."""
    return parse_one(args, PARAMS, "session")


def declare() -> None:
    """Register `resume` on the typer application (help, completion, docs, unusual spellings), from PARAMS."""
    epilog = "Examples: catty-ctx resume S --format openai | jq '.messages | length'; catty-ctx resume S | catty-ctx inspect -"
    declare_command("resume", run, PARAMS, RESUME_DOC, epilog, {"session": SESSION_ARG})


def run(session: str, fmt: str = RESUME_FORMAT, agent: str | None = None) -> None:
    """Print SESSION's repaired view in FMT; what was repaired goes to stderr."""
    with open_agent(session, agent, warn=warn) as s:
        out, notes = resume(s, fmt)
    if notes:
        note("repaired for this request (the log is unchanged): " + ", ".join(notes))
    if fmt == "items":
        write_lines(out)
    else:
        write_json(out)

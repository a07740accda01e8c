"""`catty-ctx mcp`: the read-only recall server over stdio (docs/agents.md#the-recall-server).

Starts without the CLI framework (see `fastpath`); the MCP SDK (the extra `catty-ctx[mcp]`)
loads only here, when the server runs, and while it answers the handshake (`agents.mcp_start`).
"""
from __future__ import annotations

from ..agents.mcp_start import RunSdk, serve
from ..agents.recall import Recall
from .fastpath import Option, parse_one
from .fastpath import declare as declare_command

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PARAMS = (
    Option("session", ("--session",), str, "PATH",
           "The session to answer about: a catty session or an agent's own file (default: the newest Claude Code "
           "transcript or Codex rollout of the working folder, looked up at every call)."),
    Option("codex_home", ("--codex-home",), str, "DIR",
           "Answer about the newest Codex session of the working folder in this Codex home, looked up at every call "
           "(what `hook install codex --mcp` registers: Codex hands its MCP servers no CODEX_HOME)."),
)
MCP_DOC = """A stdio MCP server for the agent to recall its own session: recall_search, recall_show,
    context_status and session_usage. Read-only.

    recall_search finds a pattern in what the compactions took out of the context (every event up
    to the last compaction, and the segments archive), each match with its seq; recall_show gives
    the exact text of events by seq, bounded, with a cursor to continue; context_status is what
    `inspect` reports, with the tokens left before the compaction threshold; session_usage is the
    session's tokens and cost. Needs the extra catty-ctx[mcp].
    """
EPILOG = ("Examples: claude mcp add catty-recall -- catty-ctx mcp; "
          "catty-ctx hook install claude --mcp; catty-ctx mcp --session ~/.claude/projects/-home-me-shop/SESSION_ID.jsonl")


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`)."""
    return parse_one(args, PARAMS)


def declare() -> None:
    """Register `mcp` on the typer application (help, completion, docs), from PARAMS."""
    declare_command("mcp", run, PARAMS, MCP_DOC, EPILOG, {})


def run(session: str | None = None, codex_home: str | None = None) -> None:
    """Serve the recall tools on stdin and stdout until stdin ends."""
    serve(Recall(given=session, codex_home=codex_home), _load_sdk)


def _load_sdk() -> RunSdk:
    from ..agents.mcp_server import run_sdk

    return run_sdk

"""The commands of `catty-ctx`, one record each: the top-level help, the fast dispatcher, the
man pages and the shells' completions are all made from this list (docs/architecture.md).

Adding a command is its module under `catty_ctx/cli/` plus one record here. The module
registers the command on the typer application when imported (a plain typer command), or
when its `declare()` is called (a command with a PARAMS table, `fastpath`); a command marked
`fast` also has `parse_args(args)` and `run(**opts)`, which answer its plain spellings
without loading typer at all.
"""
from typing import NamedTuple


class Command(NamedTuple):
    """One command of the program."""

    name: str  # as typed: `catty-ctx NAME`
    module: str  # its module under catty_ctx.cli.app
    summary: str  # one line: the top-level help, the main man page and the completions show it
    fast: bool = False  # parses its plain spellings itself, without typer (`fastpath`)


COMMANDS: tuple[Command, ...] = (
    Command("append", "append", "Append events read from stdin (JSON Lines: kind + fields, or full envelopes).", fast=True),
    Command("blob", "blob", "Print the payload a large message or tool output was moved to, byte for byte.", fast=True),
    Command("compact", "compact", "Compact a session: summarise its view and append a `compaction` event.", fast=True),
    Command("completion", "completion", "Print the completion script for a shell (bash, zsh or fish)."),
    Command("config", "config", "Show every tunable constant, its value and where it came from.", fast=True),
    Command("eval", "eval", "Score compaction strategies: does the successor keep the state, the instructions, the details?"),
    Command("export", "export", "Print a session as a transcript to read or share (Markdown, HTML or text).", fast=True),
    Command("fork", "fork", "Start a new session DEST from turns 1..N of SESSION; the parent is untouched.", fast=True),
    Command("hook", "hook", "The agents' hook commands (claude, codex) and their installer.", fast=True),
    Command("import", "import_", "Import a Claude Code, Codex CLI, opencode or Gemini CLI session, or a messages array.", fast=True),
    Command("index", "index", "Index the sessions under the ROOTs for search (SQLite FTS5, incremental).", fast=True),
    Command("inspect", "inspect", "Counts, turns, tokens against the window, largest items, compactions and integrity of a session.", fast=True),
    Command("instructions", "instructions", "Find the instruction files (AGENTS.md and rules) for DIR, in prompt order, with sources.", fast=True),
    Command("mcp", "mcp", "A stdio MCP server for the agent to recall its own session: search and show what compactions dropped.", fast=True),
    Command("proxy", "proxy", "Run a local proxy that repairs, prunes, compacts and records an agent's requests on their way out.", fast=True),
    Command("prune", "prune", "Print the pruned request view, one item a line; the log is untouched.", fast=True),
    Command("repair", "repair", "Find and fix what makes a session unloadable or unsendable; nothing is ever deleted.", fast=True),
    Command("report", "report", "A session's context lifecycle as one HTML page that works offline."),
    Command("resume", "resume", "Print the repaired view, ready to send: items, an OpenAI or an Anthropic request.", fast=True),
    Command("search", "search", "Find PATTERN in every session under the ROOTs: catty sessions and the agents' own files.", fast=True),
    Command("segment", "segment", "Read the segments archive: the verbatim record of compacted conversation.", fast=True),
    Command("statusline", "statusline", "Print Claude Code's status line: model, context used, costs, cache share, compactions.", fast=True),
    Command("usage", "usage", "Tokens, calls and cost of Claude Code, Codex, Gemini CLI, opencode and catty sessions.", fast=True),
)

BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}

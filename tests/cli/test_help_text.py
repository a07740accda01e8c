"""`--help` shows each option's help as its table writes it, word for word: brackets and all
(typer's rich help reads `[...]` as markup and drops it: "Needs the extra catty-ctx." for
`catty-ctx[mcp]`)."""
from __future__ import annotations

import importlib
import re

import pytest
from support import cli

from catty_ctx.cli.registry import COMMANDS

_BOX = re.compile(r"[│╭╮╰╯─]")


def _words(text: str) -> str:
    return " ".join(_BOX.sub(" ", text).split())


def _tables() -> list[tuple[list[str], object]]:
    out: list[tuple[list[str], object]] = []
    for c in COMMANDS:
        table = getattr(importlib.import_module(f"catty_ctx.cli.{c.module}"), "PARAMS", None)
        if isinstance(table, dict):
            out += [([c.name, *sub.split()], t) for sub, t in table.items()]
        elif table is not None:
            out.append(([c.name], table))
    return out


@pytest.mark.parametrize(("command", "table"), _tables(), ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_help_shows_every_options_text_whole(command: list[str], table: object) -> None:
    shown = cli(*command, "--help")
    assert shown.returncode == 0, shown.stderr
    page = _words(shown.stdout.decode())
    for option in table:  # type: ignore[attr-defined]
        if option.help:
            assert _words(option.help) in page, (command, option.names, option.help)


def test_the_mcp_extra_is_named_in_full() -> None:
    assert "Needs the extra catty-ctx[mcp]." in _words(cli("mcp", "--help").stdout.decode())


@pytest.mark.parametrize("command", ["inspect", "report", "resume", "prune", "repair"])
def test_the_session_help_says_what_a_reading_command_accepts(command: str) -> None:
    """Each reads another agent's file as it lies (through its import), not only catty sessions."""
    page = _words(cli(command, "--help").stdout.decode())
    assert "another agent's session file (Claude Code, Codex, Gemini CLI, opencode: read as its import" in page
    assert "updates.jsonl" in page and "- for an event stream on stdin" in page

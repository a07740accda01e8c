"""`--help` shows every option's text as written: a bracketed part (`[mcp]`,
`[mcp_servers.catty-recall]`, `[1m]`) is no style tag for the help's renderer."""
from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys

import pytest
from support import ROOT

from catty_ctx.cli.fastpath import Option, shown
from catty_ctx.cli.registry import COMMANDS


def _tables() -> list[tuple[list[str], Option]]:
    """(the command's words, an option whose help holds a bracketed part), over every option table."""
    out = []
    for command in COMMANDS:
        module = importlib.import_module(f"catty_ctx.cli.{command.module}")
        params = getattr(module, "PARAMS", None)
        tables = params.items() if isinstance(params, dict) else [("", params)] if params else []
        for sub, table in tables:
            words = [command.name, *sub.split()]
            out += [(words, o) for o in table if isinstance(o, Option) and re.search(r"\[[a-z#/@]", o.help)]
    return out


CASES = _tables()


def test_some_options_hold_brackets() -> None:
    assert any(o.dest == "mcp" for _w, o in CASES)


@pytest.mark.parametrize(("words", "option"), CASES, ids=[f"{' '.join(w)} {o.names[0]}" for w, o in CASES])
def test_the_help_shows_the_bracketed_parts(words: list[str], option: Option) -> None:
    if words[:2] == ["hook", "install"] or words[:2] == ["hook", "uninstall"]:
        words = [*words, "claude"][:2]
    env = dict(os.environ, COLUMNS="1000", PYTHONPATH=str(ROOT), NO_COLOR="1")
    proc = subprocess.run([sys.executable, "-m", "catty_ctx", *words, "--help"], capture_output=True, text=True, env=env, timeout=60)
    flat = " ".join(proc.stdout.replace("│", " ").split())
    for part in re.findall(r"\[[^\]]*\]", option.help):
        assert part in flat, (part, words)


def test_shown_escapes_only_what_rich_reads_as_a_tag() -> None:
    assert shown("pip install 'catty-ctx[mcp]'") == "pip install 'catty-ctx\\[mcp]'"
    assert shown("[1m] and [X] and a [ alone") == "[1m] and [X] and a [ alone"

"""`--help` on an 80-column terminal: every text wraps between words."""
from __future__ import annotations

import re
from functools import cache

import pytest

from catty_ctx.cli.docgen import _all, command_tree
from test_terminal import on_a_terminal

TREE = {c.name: c for c in _all(command_tree()) if c.path}
COMMANDS = [[]] + [name.split() for name in sorted(TREE)]


@cache
def _help(args: tuple[str, ...], columns: int) -> tuple[int, str]:
    """`--help` as a terminal of that width shows it (one pty run per command and width)."""
    return on_a_terminal(*args, "--help", columns=columns)


def _words(screen: str) -> list[str]:
    return re.sub(r"[│╭╮╰╯─]", " ", screen).split()


@pytest.mark.parametrize("command", [" ".join(c) or "catty-ctx" for c in COMMANDS])
def test_help_wraps_between_words_at_80_columns(command: str) -> None:
    args = [] if command == "catty-ctx" else command.split()
    code, narrow = _help(tuple(args), 80)
    assert code == 0, narrow
    _, wide = _help(tuple(args), 1000)
    whole = set(_words(wide))
    assert [w for w in _words(narrow) if w not in whole] == [], narrow  # no word cut in two or shortened
    # The description wraps only where the next word would not fit (78 = 80 less the margins).
    lines = narrow.split("\n")
    usage_line = next(i for i, line in enumerate(lines) if line.strip().startswith("Usage:"))
    body = []
    for line in lines[usage_line + 1:]:
        if line.startswith("╭"):
            break
        body.append(line[1:] if line.startswith(" ") else line)
    for line, following in zip(body, body[1:]):
        if line.strip() and following.strip():
            assert len(line) + 1 + len(following.split()[0]) > 78, (line, following)


@pytest.mark.parametrize("command", sorted(TREE))
def test_help_shows_the_commands_own_examples(command: str) -> None:
    """Every command's --help, a group's (`segment`) included, shows its examples."""
    examples = TREE[command].examples
    code, wide = _help(tuple(command.split()), 1000)
    assert code == 0, wide
    assert re.search(r"Examples?:", wide), wide
    assert examples and all(e in wide for e in examples), (examples, wide)


def _json_help() -> str:
    from typing import get_args

    from catty_ctx.cli.options import JsonOpt

    return get_args(JsonOpt)[1].help


def test_every_json_option_is_the_shared_declaration() -> None:
    """One `--json` for every command that prints data: the same declaration (options.JsonOpt),
    so the same help, the same flag, the same meaning."""
    import typer

    from catty_ctx.cli.app import app, load_commands

    load_commands()
    found = {}

    def walk(cmd: object, path: str) -> None:
        for p in getattr(cmd, "params", []):
            if "--json" in getattr(p, "opts", ()):
                found[path] = (p.help, p.is_flag, tuple(p.opts) + tuple(p.secondary_opts))
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{path} {name}".strip())

    walk(typer.main.get_command(app), "")
    assert {"inspect", "compact", "repair", "fork", "eval", "instructions", "usage", "segment list", "segment grep"} <= found.keys()
    assert {path: spec for path, spec in found.items() if spec != (_json_help(), True, ("--json",))} == {}


def test_only_the_shared_options_declare_json() -> None:
    """--json is spelt once, in fastpath.SHARED: the tables and options.py take it from there."""
    import ast

    from support import ROOT

    declared = []
    for path in sorted((ROOT / "catty_ctx" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and any(isinstance(a, ast.Constant) and a.value == "--json" for a in node.args):
                declared.append(path.name)
    assert declared == ["fastpath.py"]


def test_only_the_output_layer_decides_table_lines_or_json() -> None:
    """Whether stdout is a terminal (table) or a pipe (JSON Lines), beside --json, is decided
    in cli/output.py alone (`form`, used by `emit` and `rows_out`)."""
    import ast

    from support import ROOT

    def asks_the_terminal(node: ast.AST) -> bool:
        f = getattr(node, "func", None)
        return isinstance(f, ast.Name) and f.id == "stdout_tty" or isinstance(f, ast.Attribute) and f.attr in ("stdout_tty", "isatty")

    deciders = sorted(p.name for p in (ROOT / "catty_ctx" / "cli").glob("*.py") if any(map(asks_the_terminal, ast.walk(ast.parse(p.read_text())))))
    assert deciders == ["output.py"]

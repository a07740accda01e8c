"""`--help` on an 80-column terminal: every text wraps between words."""
from __future__ import annotations

import re

import pytest

from catty_ctx.cli.docgen import _all, command_tree
from test_terminal import on_a_terminal

COMMANDS = [[], ["append"], ["blob"], ["compact"], ["completion"], ["fork"], ["import"], ["inspect"], ["instructions"],
            ["prune"], ["repair"], ["resume"], ["segment"], ["segment", "list"], ["segment", "show"], ["segment", "grep"], ["usage"]]


def _words(screen: str) -> list[str]:
    return re.sub(r"[│╭╮╰╯─]", " ", screen).split()


@pytest.mark.parametrize("command", [" ".join(c) or "catty-ctx" for c in COMMANDS])
def test_help_wraps_between_words_at_80_columns(command: str) -> None:
    args = [] if command == "catty-ctx" else command.split()
    code, narrow = on_a_terminal(*args, "--help", columns=80)
    assert code == 0, narrow
    _, wide = on_a_terminal(*args, "--help", columns=1000)
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


TREE = {c.name: c for c in _all(command_tree()) if c.path}


@pytest.mark.parametrize("command", sorted(TREE))
def test_help_shows_the_commands_own_examples(command: str) -> None:
    """Every command's --help, a group's (`segment`) included, shows its examples."""
    examples = TREE[command].examples
    code, wide = on_a_terminal(*command.split(), "--help", columns=1000)
    assert code == 0, wide
    assert re.search(r"Examples?:", wide), wide
    assert examples and all(e in wide for e in examples), (examples, wide)

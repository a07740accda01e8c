"""Help examples one per line, to copy one at a time (issue 32 item 7): every command's and
subcommand's `--help`, as a user reads it, and the man pages made from the same epilogs."""
from __future__ import annotations

import re

import pytest
from support import ROOT, cli

from catty_ctx.cli.registry import COMMANDS

SUBCOMMANDS = {"segment": ["list", "show", "grep"], "hook": ["install", "uninstall", "claude pre-compact", "claude session-start"]}
HELPS = [[c.name] for c in COMMANDS] + [[name, *sub.split()] for name, subs in SUBCOMMANDS.items() for sub in subs]


def _examples(help_text: str) -> list[str]:
    after = help_text.split("Example", 1)
    assert len(after) == 2, "no examples"
    lines = [re.sub(r"[│╭╮╰╯─]", "", line).strip() for line in re.sub(r"^s?:", "", after[1]).splitlines()]
    return [line for line in lines if line]


@pytest.mark.parametrize("args", HELPS, ids=" ".join)
def test_every_help_shows_its_examples_one_per_line(args: list[str]) -> None:
    proc = cli(*args, "--help")
    assert proc.returncode == 0, proc.stderr
    examples = _examples(proc.stdout.decode())
    assert examples
    # two examples run together, on a line or across a wrap
    assert not re.search(r";\s+catty-ctx ", " ".join(examples)), examples


def test_the_man_pages_give_examples_one_per_line() -> None:
    for page in sorted((ROOT / "man").glob("*.1")):
        text = page.read_text()
        assert not re.search(r";\s+catty-ctx ", text.split(".SH EXAMPLES", 1)[-1] if ".SH EXAMPLES" in text else ""), page.name

"""One registry of commands (catty_ctx/cli/registry.py): the top-level help, the man pages and the
shells' completions list exactly its commands, and the top-level help imports none of their modules."""
import os
import re
import subprocess
import sys
from pathlib import Path

from catty_ctx.cli.app import COMMAND_MODULES, FAST_COMMANDS
from catty_ctx.cli.registry import BY_NAME, COMMANDS

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted(c.name for c in COMMANDS)


def test_the_registry_has_one_record_per_command_and_a_one_line_summary() -> None:
    assert len(BY_NAME) == len(COMMANDS)
    for c in COMMANDS:
        assert (ROOT / "catty_ctx" / "cli" / f"{c.module}.py").is_file(), c
        assert c.summary and "\n" not in c.summary and c.summary.endswith((".", "?")), c
    assert COMMAND_MODULES == {c.name: c.module for c in COMMANDS}
    assert set(FAST_COMMANDS) == {c.name for c in COMMANDS if c.fast}


def _help_commands(text: str) -> list[str]:
    panel = text.split("Commands")[1]
    return [m.group(1) for m in re.finditer(r"^│ ([a-z][a-z-]*)\s{2,}\S", panel, re.M)]


def test_the_top_level_help_lists_the_registry_from_it_alone() -> None:
    # A fresh interpreter: which command modules did `--help` import?
    code = ("import sys\nfrom catty_ctx.cli.app import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write(' '.join(m for m in sys.modules if m.startswith('catty_ctx.cli.')))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200", TERM="dumb"))
    assert proc.returncode == 0, proc.stderr
    assert _help_commands(proc.stdout) == NAMES
    for c in COMMANDS:
        assert c.summary in proc.stdout, c.name
    loaded = set(proc.stderr.split())
    assert not loaded & {f"catty_ctx.cli.{c.module}" for c in COMMANDS}, loaded


def test_the_man_pages_list_the_registry() -> None:
    main_page = (ROOT / "man" / "catty-ctx.1").read_text()
    section = main_page.split(".SH COMMANDS\n")[1].split("\n.SH ")[0]
    assert re.findall(r"^\\fB([a-z-]+)\\fR$", section, re.M) == NAMES
    pages = {p.name for p in (ROOT / "man").glob("catty-ctx-*.1")}
    assert {f"catty-ctx-{n}.1" for n in NAMES} <= pages
    # Every other page is a subcommand's, under a registered command.
    assert all(any(p.startswith(f"catty-ctx-{n}-") for n in NAMES) for p in pages - {f"catty-ctx-{n}.1" for n in NAMES}), pages


def test_the_completions_list_the_registry() -> None:
    bash = (ROOT / "completions" / "catty-ctx.bash").read_text()
    root_words = re.search(r'"__root__"\) opts="([^"]*)"', bash).group(1).split()
    assert [w for w in root_words if not w.startswith("-")] == NAMES
    zsh = (ROOT / "completions" / "_catty-ctx").read_text()
    first = re.search(r"subcmds=\((.*)\)", zsh).group(1)
    assert re.findall(r"'([a-z-]+):", first) == NAMES
    fish = (ROOT / "completions" / "catty-ctx.fish").read_text()
    assert re.findall(r"^complete -c catty-ctx -n 'not __fish_seen_subcommand_from [^']*' -a ([a-z-]+) ", fish, re.M) == NAMES

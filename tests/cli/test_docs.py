"""Man pages and completions are generated from the CLI and committed fresh; every command
has a description and an example; the generated files load in their programs."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from catty_ctx.cli.docgen import _all, command_tree, generated_files
from support import ROOT, cli


def test_committed_man_pages_and_completions_are_fresh() -> None:
    stale = [rel for rel, text in generated_files().items() if not (ROOT / rel).is_file() or (ROOT / rel).read_text() != text]
    assert not stale, f"regenerate with: python -m catty_ctx.cli.docgen  ({stale})"
    pages = {p.name for p in (ROOT / "man").glob("*.1")}
    assert pages == {rel.split("/")[1] for rel in generated_files() if rel.startswith("man/")}


def test_every_command_has_a_description_and_an_example() -> None:
    """Groups (`segment`) too: their own --help shows examples. (The top-level page lists the
    commands; its man page gathers each command's first example.)"""
    for cmd in _all(command_tree()):
        if not cmd.path:
            continue
        assert cmd.help.strip(), f"{cmd.name} has no description"
        assert cmd.examples, f"{cmd.name} has no example in its epilog"
        assert all("catty-ctx" in e for e in cmd.examples), cmd.examples


def test_help_shows_the_example() -> None:
    out = cli("inspect", "--help", check=True).stdout.decode()
    assert "Example" in out


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_man_pages_render_without_warnings() -> None:
    for page in sorted((ROOT / "man").glob("*.1")):
        proc = subprocess.run(["groff", "-man", "-Tutf8", "-ww", str(page)], capture_output=True)
        assert proc.returncode == 0 and proc.stderr == b"", (page.name, proc.stderr)


def test_bash_completion_registers_and_completes() -> None:
    script = f"source {ROOT / 'completions/catty-ctx.bash'}; complete -p catty-ctx; COMP_WORDS=(catty-ctx insp); COMP_CWORD=1; _catty_ctx; echo \"${{COMPREPLY[@]}}\""
    out = subprocess.run(["bash", "-c", script], capture_output=True, check=True).stdout.decode()
    assert "complete -o filenames -F _catty_ctx catty-ctx" in out and out.strip().endswith("inspect")


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completion_loads() -> None:
    script = f"autoload -U compinit && compinit -u && source {ROOT / 'completions/_catty-ctx'} && whence -w _catty_ctx"
    proc = subprocess.run(["zsh", "-c", script], capture_output=True)
    assert proc.returncode == 0 and b"function" in proc.stdout, proc.stderr


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completion_loads() -> None:
    script = f"source {ROOT / 'completions/catty-ctx.fish'}; complete -C 'catty-ctx ins'"
    proc = subprocess.run(["fish", "-c", script], capture_output=True)
    assert proc.returncode == 0 and b"inspect" in proc.stdout, proc.stderr


def test_completion_command_prints_the_committed_script() -> None:
    for shell, rel in (("bash", "catty-ctx.bash"), ("zsh", "_catty-ctx"), ("fish", "catty-ctx.fish")):
        assert cli("completion", shell, check=True).stdout.decode() == (ROOT / "completions" / rel).read_text()
    assert cli("completion", "tcsh").returncode == 2


def test_each_command_runs_with_only_its_own_module_loaded() -> None:
    """The CLI imports just the invoked command's module; every command still resolves."""
    from catty_ctx.cli.app import COMMAND_MODULES

    for name in COMMAND_MODULES:
        proc = cli(name, "--help")
        assert proc.returncode == 0 and b"Usage: catty-ctx " + name.encode() in proc.stdout, name
    assert cli("--help", check=True).stdout.count(b"\n") > 10
    assert cli("--version", check=True).stdout.startswith(b"catty-ctx ")


def test_docgen_refuses_options_and_writes_nothing(tmp_path) -> None:
    for args in (["--help"], ["-x"], ["a", "b"]):
        proc = subprocess.run([sys.executable, "-m", "catty_ctx.cli.docgen", *args], cwd=tmp_path,
                              capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        assert proc.returncode in (0, 2) and b"usage:" in proc.stderr, (args, proc)
        assert list(tmp_path.iterdir()) == [], args


def test_docgen_refuses_a_folder_that_is_not_the_project(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-m", "catty_ctx.cli.docgen", str(tmp_path)],
                          capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 2 and list(tmp_path.iterdir()) == []


def test_no_generated_page_or_completion_outside_its_folder() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not tracked:  # not a git checkout (an unpacked sdist): look at the files themselves
        tracked = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and ".ci" not in p.parts]
    names = {rel.rsplit("/", 1)[-1] for rel in generated_files()}
    stray = [rel for rel in tracked if rel.rsplit("/", 1)[-1] in names and rel not in generated_files()]
    assert not stray, f"generated files outside man/ and completions/: {stray}"


def test_every_exit_code_is_documented_in_help_and_the_man_page() -> None:
    from catty_ctx.errors import EXIT_MEANINGS, ExitCode

    assert set(EXIT_MEANINGS) == set(ExitCode)
    help_text = " ".join(cli("--help", check=True).stdout.decode().split())
    page = (ROOT / "man" / "catty-ctx.1").read_text()
    for code in ExitCode:
        assert f"{int(code)} {EXIT_MEANINGS[code].split(' (')[0]}" in help_text, code
        assert f"{int(code)}" in page, code
    assert ExitCode.INTERNAL == 70

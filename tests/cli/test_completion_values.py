"""The shells complete the allowed values of choice options and arguments, each through its
own completion engine: bash's COMP_WORDS protocol, zsh's compsys (on a pseudo-terminal) and
fish's `complete -C`."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support import ROOT

from catty_ctx.defaults import RESUME_FORMATS, USAGE_BY
from catty_ctx.importers.pipeline import FORMATS

COMPLETIONS = ROOT / "completions"
# (the words before the cursor, what the word at the cursor may be)
CASES = [
    (["usage", "--by"], set(USAGE_BY)),
    (["resume", "S", "--format"], set(RESUME_FORMATS)),
    (["resume", "-f"], set(RESUME_FORMATS)),
    (["import"], {*FORMATS, "auto"}),
    (["import", "--out", "DIR"], {*FORMATS, "auto"}),  # an option's value is no positional argument
    (["completion"], {"bash", "zsh", "fish"}),
]


def _bash(words: list[str]) -> set[str]:
    line = " ".join(f"'{w}'" for w in ["catty-ctx", *words, ""])
    script = f"source {COMPLETIONS / 'catty-ctx.bash'}; COMP_WORDS=({line}); COMP_CWORD={len(words) + 1}; _catty_ctx; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True, timeout=30)
    return set(proc.stdout.split())


@pytest.mark.parametrize(("words", "expected"), CASES)
def test_bash_offers_exactly_the_allowed_values(words: list[str], expected: set[str]) -> None:
    assert _bash(words) == expected


def test_bash_still_completes_files_where_a_path_goes(tmp_path) -> None:
    assert _bash(["import", "claude"]) != {*FORMATS, "auto"}  # SOURCE: files, not formats again
    assert _bash(["inspect", "--json"]) and "model" not in _bash(["inspect", "--json"])


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
@pytest.mark.parametrize(("words", "expected"), [CASES[0], CASES[1], CASES[3]])
def test_zsh_offers_exactly_the_allowed_values(words: list[str], expected: set[str]) -> None:
    line = " ".join(["catty-ctx", *words, ""])
    proc = subprocess.run(["zsh", "-f", str(ROOT / "tests" / "support" / "zsh_complete.zsh"), str(COMPLETIONS), line],
                          capture_output=True, text=True, timeout=60)
    assert set(proc.stdout.split()) == expected, proc.stderr


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
@pytest.mark.parametrize(("words", "expected"), CASES)
def test_fish_offers_exactly_the_allowed_values(words: list[str], expected: set[str]) -> None:
    line = " ".join(["catty-ctx", *words, ""])
    proc = subprocess.run(["fish", "-c", f"source {COMPLETIONS / 'catty-ctx.fish'}; complete -C '{line}'"],
                          capture_output=True, text=True, timeout=30)
    offered = {row.split("\t")[0] for row in proc.stdout.splitlines()}
    assert offered == expected, proc.stdout


def test_descriptions_are_cut_between_words() -> None:
    from catty_ctx.cli.docgen import _short

    assert _short("Rows by KEY: model, day, week", 18) == "Rows by KEY…"
    assert _short("short", 18) == "short"
    zsh = (COMPLETIONS / "_catty-ctx").read_text()
    fish = (COMPLETIONS / "catty-ctx.fish").read_text()
    assert "…" in zsh and "…" in fish


def test_an_installed_catty_ctx_has_its_man_pages_where_man_looks() -> None:
    """`pip install` puts man/*.1 in PREFIX/share/man/man1, which man finds from PATH's bin."""
    import os
    import sys
    import sysconfig
    from importlib.metadata import distributions

    # The installed distribution, not the build's egg-info a source tree may hold beside tests/.
    site = sysconfig.get_paths()["purelib"]
    dist = next((d for d in distributions(path=[site]) if d.metadata["Name"] == "catty-ctx"), None)
    if dist is None:
        if os.environ.get("CI"):
            pytest.fail(f"catty-ctx is not installed in {site} (CI installs it)")
        pytest.skip("catty-ctx is not installed here (CI installs it)")
    files = {str(f) for f in dist.files or ()}
    pages = sorted(p.name for p in (ROOT / "man").glob("*.1"))
    assert all(any(f.endswith(f"share/man/man1/{p}") for f in files) for p in pages)
    assert (Path(sys.prefix) / "share" / "man" / "man1" / "catty-ctx.1").is_file()
    if shutil.which("man"):
        env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
        env.pop("MANPATH", None)
        found = subprocess.run(["man", "-w", "catty-ctx"], capture_output=True, text=True, env=env)
        assert found.returncode == 0 and found.stdout.strip().endswith("catty-ctx.1"), found.stderr

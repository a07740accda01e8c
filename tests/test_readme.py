"""The README opens with exactly two commands, and CI runs the second one verbatim."""
from __future__ import annotations

import subprocess

from support import ROOT


def _first_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    start = text.index("```")
    body = text[text.index("\n", start) + 1 : text.index("```", start + 3)]
    return [line for line in body.splitlines() if line.strip()]


def test_readme_opens_with_two_commands() -> None:
    lines = _first_block()
    assert len(lines) == 2
    assert lines[0].startswith("pip install . && catty-ctx ")
    assert "[test]" in lines[1] and "pytest" in lines[1]


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    first, second = _first_block()
    assert second in ci.splitlines()
    assert "exit 1" in ci[ci.index('"$rc" -eq 5') :]


def _block_after(heading: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("```", text.index(heading))
    return text[text.index("\n", start) + 1 : text.index("```", start + 3)]


def _run_shell(script: str, tmp_path) -> subprocess.CompletedProcess[bytes]:  # type: ignore[no-untyped-def]
    """Run README lines with a `catty-ctx` on PATH that is this checkout."""
    import os
    import stat
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "catty-ctx"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m catty_ctx "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path))
    # The lines name fixtures/ as the source folder does; what they write lands here, not in the checkout.
    work = tmp_path / "work"
    work.mkdir()
    (work / "fixtures").symlink_to(ROOT / "fixtures")
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=work, env=env, capture_output=True, timeout=300)


def test_the_tour_runs_as_written(tmp_path) -> None:  # type: ignore[no-untyped-def]
    proc = _run_shell(_block_after("## A tour"), tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode()
    assert "AssertionError" in out and '"messages"' in out and "demo-model-1" in out
    page = (tmp_path / "work" / "demo.html").read_text()
    assert all(f'id="{section}"' in page for section in ("summary", "timeline", "view", "compactions", "usage"))


def test_the_pipes_run_as_written(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import shutil

    if shutil.which("jq") is None:
        import pytest

        pytest.skip("jq is not installed")
    proc = _run_shell(_block_after("## Pipes"), tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    assert '"stream":"items"' in proc.stdout.decode()


def test_the_exit_table_lists_every_exit_code() -> None:
    from catty_ctx.errors import ExitCode

    text = (ROOT / "README.md").read_text()
    table = text[text.index("## Exit status"):].split("\n\n")[1]
    codes = [int(row.split("|")[1]) for row in table.splitlines()[2:]]
    assert codes == sorted(int(c) for c in ExitCode)

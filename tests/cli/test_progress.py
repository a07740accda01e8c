"""Progress bars appear on a terminal's stderr and never in a pipe (or under cron)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from support import FIXTURES, ROOT, cli_on_a_terminal


def _root(tmp_path: Path, n: int = 40) -> Path:
    for i in range(n):
        shutil.copytree(FIXTURES / "sessions" / "demo", tmp_path / "root" / f"s{i:02d}")
    return tmp_path / "root"


def test_a_bar_on_a_terminal(tmp_path: Path) -> None:
    root = _root(tmp_path)
    code, out, err = cli_on_a_terminal("inspect", str(root), "--json")
    assert code == 0
    assert b"sessions" in err and b"40" in err  # the bar: label and count
    assert b'"sessions"' in out  # data still goes to stdout


def test_no_bar_in_a_pipe(tmp_path: Path) -> None:
    root = _root(tmp_path, 5)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "catty_ctx", "inspect", str(root), "--json"], capture_output=True, env=env)
    assert proc.returncode == 0 and proc.stderr == b""

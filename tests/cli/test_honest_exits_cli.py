"""Honest exits: a command that did nothing useful never says 0.

A ROOT with no session under it, stdout on a full disk or closed, a resume of an empty view,
an import that yields no conversation: each gets its documented exit code and one line.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from conftest import FIXTURES, cli

ROOT_COMMANDS = [
    ["inspect", "{R}"],
    ["inspect", "{R}", "--json"],
    ["repair", "{R}"],
    ["repair", "{R}", "--check"],
    ["repair", "{R}", "--dry-run"],
    ["compact", "{R}"],
    ["compact", "{R}", "--check"],
]


@pytest.mark.parametrize("args", ROOT_COMMANDS, ids=" ".join)
def test_a_root_holding_no_session_is_a_usage_error_unless_allowed(args: list[str], tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / "not-a-session").mkdir(parents=True)
    (root / "not-a-session" / "notes.txt").write_text("hello\n")
    argv = [a.replace("{R}", str(root)) for a in args]
    proc = cli(*argv)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.splitlines() == [f"catty-ctx: error: no catty-ctx session under {root} (--allow-empty accepts an empty ROOT)"], err
    assert proc.stdout == b""
    allowed = cli(*argv, "--allow-empty")
    assert allowed.returncode == 0, allowed.stderr.decode()


def test_allow_empty_changes_nothing_for_a_root_with_sessions(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    shutil.copytree(FIXTURES / "sessions" / "demo", root / "demo")
    proc = cli("inspect", str(root), "--json", "--allow-empty")
    assert proc.returncode == 0 and len(orjson.loads(proc.stdout)["sessions"]) == 1

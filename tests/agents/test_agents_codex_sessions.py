"""Which Codex session a folder is in: the newest rollout whose session_meta names it."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from catty_ctx.agents.codex_sessions import newest_rollout
from catty_ctx.errors import DataError


def _rollout(home: Path, name: str, cwd: str, mtime: int, *, meta: bool = True) -> Path:
    path = home / "sessions" / "2026" / "12" / "02" / f"rollout-2026-12-02T00-00-0{name}-{name * 8}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    first = {"type": "session_meta", "payload": {"id": name, "cwd": cwd, "base_instructions": {"text": "x" * 50_000}}}
    lines = [first] if meta else []
    lines.append({"type": "response_item", "payload": {"type": "message", "role": "user", "content": []}})
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    os.utime(path, ns=(mtime, mtime))
    return path


def test_the_newest_rollout_of_the_folder_is_found(tmp_path: Path) -> None:
    home, here, there = tmp_path / ".codex", tmp_path / "here", tmp_path / "there"
    here.mkdir()
    older = _rollout(home, "1", str(here), 1_000)
    newer = _rollout(home, "2", str(here), 3_000)
    _rollout(home, "3", str(there), 5_000)  # newest of all, another folder
    _rollout(home, "4", str(here), 9_000, meta=False)  # no session_meta: not a session of anything
    assert newest_rollout(here, home) == newer
    os.utime(older, ns=(10_000, 10_000))  # resumed: written last
    assert newest_rollout(here, home) == older


def test_a_folder_named_through_a_link_is_the_same_folder(tmp_path: Path) -> None:
    home, real = tmp_path / ".codex", tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    found = _rollout(home, "1", str(real), 1_000)
    assert newest_rollout(tmp_path / "link", home) == found


def test_no_session_of_the_folder_is_a_data_error_naming_where_it_looked(tmp_path: Path) -> None:
    home = tmp_path / ".codex"
    _rollout(home, "1", "/elsewhere", 1_000)
    with pytest.raises(DataError, match=r"no Codex session of .*looked in .*sessions"):
        newest_rollout(tmp_path, home)
    with pytest.raises(DataError):
        newest_rollout(tmp_path, tmp_path / "no-home")

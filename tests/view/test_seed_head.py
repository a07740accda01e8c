"""The rebuilt head's user-info item (docs/compact.md "The compacted view"): the environment the
user works in, right after the system items."""
from __future__ import annotations

from pathlib import Path

from catty_ctx.view.fold import view
from support import msg, session_event, write_log


def _compacted(tmp_path: Path, extra: list[dict]) -> Path:
    return write_log(tmp_path / "s", [session_event(cwd="/home/u/repo"), msg("system", "be helpful"), *extra,
                                      msg("user", "fix the bug"), msg("assistant", "done"),
                                      {"kind": "compaction", "id": "k1", "mode": "summary", "through_seq": 4 + len(extra), "summary": "the bug was fixed"}])


def test_the_rebuilt_head_carries_the_user_info_after_the_system_items(tmp_path: Path) -> None:
    env = {"os": "linux", "shell": "zsh", "cwd": "/home/u/repo", "date": "2026-11-30", "git_branch": "main", "non_interactive": False}
    items = view(_compacted(tmp_path, [{"kind": "state", "facet": "prompt_context", "value": {"schema": 1, "environment": env}},
                                       {"kind": "state", "facet": "instructions", "value": [{"path": "/home/u/repo/AGENTS.md", "text": "be terse"}]}]))
    assert [i.get("synthetic") or i["role"] for i in items] == ["system", "user_info", "instructions", "user", "compaction_summary", "continuation_state"]
    info = items[1]["text"]
    assert info.startswith("<user_info>") and "Operating system: linux" in info and "Shell: zsh" in info
    assert "Working directory: /home/u/repo" in info and "Git branch: main" in info and "Date: 2026-11-30" in info
    assert "Non-interactive" not in info


def test_without_a_snapshot_the_session_events_cwd_is_the_user_info(tmp_path: Path) -> None:
    items = view(_compacted(tmp_path, []))
    assert items[1] == {"role": "user", "text": "<user_info>\nWorking directory: /home/u/repo\n</user_info>", "synthetic": "user_info"}

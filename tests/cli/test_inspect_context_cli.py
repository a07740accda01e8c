"""`catty-ctx inspect --context`: the prompt-context snapshot with provenance, unknown parts marked.

The sessions here hold the `prompt_context` state the Claude Code and Codex importers write:
what each source records, with where it came from.
"""
from __future__ import annotations

from pathlib import Path

import orjson

from catty_ctx.view.snapshot import snapshot_event
from support import cli, msg, session_event, write_log


def test_a_claude_import_shows_its_known_parts_with_sources(tmp_path: Path) -> None:
    snap = snapshot_event(
        {"audience": "main", "agent_version": "2.0.14", "environment": {"cwd": "/home/u/proj", "git_branch": "main"}},
        {"agent_version": "claude: version of the records", "environment.cwd": "claude: cwd of the records",
         "environment.git_branch": "claude: gitBranch of the records", "audience": "claude: isSidechain false"},
    )
    s = write_log(tmp_path / "claude", [session_event(source={"format": "claude"}), snap, msg("user", "hi")])
    rep = orjson.loads(cli("inspect", str(s), "--context", "--json", check=True).stdout)
    parts = rep["parts"]
    assert parts["agent_version"]["value"] == "2.0.14" and parts["agent_version"]["source"].startswith("claude:")
    assert parts["environment.git_branch"] == {"value": "main", "known": True, "source": "claude: gitBranch of the records", "seq": 1}
    assert set(rep["unknown"]) >= {"prompt_mode", "persona", "environment.os", "environment.shell", "environment.date"}
    assert all(not parts[n]["known"] and parts[n]["source"] is None for n in rep["unknown"])


def test_a_codex_import_shows_turn_context_environment_and_user_instructions(tmp_path: Path) -> None:
    snap = snapshot_event(
        {
            "model": "gpt-5-codex",
            "instructions": [{"path": "<user_instructions>", "order": 1}],
            "environment": {"cwd": "/r", "shell": "zsh", "approval_policy": "on-request", "sandbox_mode": "workspace-write"},
            "effort": "medium",
        },
        {"model": "codex: turn_context", "effort": "codex: turn_context", "environment": "codex: environment_context",
         "environment.cwd": "codex: turn_context", "instructions": "codex: user_instructions"},
    )
    s = write_log(tmp_path / "codex", [session_event(cwd="/r"), snap])
    rep = orjson.loads(cli("inspect", str(s), "--context", "--json", check=True).stdout)
    p = rep["parts"]
    assert p["environment.shell"]["source"] == "codex: environment_context"
    assert p["environment.cwd"]["source"] == "codex: turn_context"
    assert p["environment.sandbox_mode"]["value"] == "workspace-write"
    assert p["instructions"]["source"] == "codex: user_instructions" and p["effort"]["value"] == "medium"
    assert "persona" in rep["unknown"] and "model" not in rep["unknown"]


def test_context_reads_a_piped_stream_and_rejects_bad_lines(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", [session_event(cwd="/x")])
    proc = cli("inspect", "-", "--context", input=(s / "updates.jsonl").read_bytes(), check=True)
    assert orjson.loads(proc.stdout)["parts"]["environment.cwd"]["value"] == "/x"
    bad = write_log(tmp_path / "b", [session_event()], raw_tail=b'{"v":1}\n')
    proc = cli("inspect", str(bad), "--context")
    assert proc.returncode == 65 and b"updates.jsonl:2" in proc.stderr

"""`hook codex pre-compact|session-start` over a Codex rollout (lines shaped as Codex 0.171
writes them): the mirror built from the rollout, the reminder printed as hook JSON after a
compaction or a resume, nothing for startup, never a failure of the agent."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import cli

from catty_ctx.importers.codex_events import failed_output

SID = "01a2342b-9577-7802-943e-29c066ed9b25"
ERROR = "FAIL test_parse: expected 3, got 4"


def _line(kind: str, payload: dict[str, Any], n: int) -> str:
    return json.dumps({"timestamp": f"2026-12-02T00:33:{n:02d}.000Z", "ordinal": n, "type": kind, "payload": payload})


def rollout(path: Path) -> Path:
    items = [
        ("session_meta", {"session_id": SID, "id": SID, "timestamp": "2026-12-02T00:33:00.000Z", "cwd": "/home/user/project",
                          "originator": "codex_exec", "cli_version": "0.171.0", "source": "exec", "model_provider": "fake"}),
        ("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Run the tests, write parse.py."}]}),
        ("response_item", {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": "pytest"}), "call_id": "c1"}),
        ("response_item", {"type": "function_call_output", "call_id": "c1",
                           "output": f"Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 1\nOutput:\n{ERROR}\n"}),
        ("response_item", {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c2", "status": "completed",
                           "input": "*** Begin Patch\n*** Add File: parse.py\n+def parse():\n+    return 3\n*** End Patch\n"}),
        ("response_item", {"type": "custom_tool_call_output", "call_id": "c2",
                           "output": "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA parse.py\n"}),
        ("response_item", {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c3", "status": "completed",
                           "input": "*** Begin Patch\n*** Update File: missing.py\n@@\n-old\n+new\n*** End Patch\n"}),
        ("response_item", {"type": "custom_tool_call_output", "call_id": "c3",
                           "output": "apply_patch verification failed: Failed to read file to update /home/user/project/missing.py"}),
        ("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "parse.py written."}]}),
    ]
    path.write_text("".join(_line(k, p, n) + "\n" for n, (k, p) in enumerate(items)))
    return path


def _hook(hook: str, payload: dict[str, Any] | str, mirrors: Path) -> Any:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return cli("hook", "codex", hook, "--mirrors", str(mirrors), input=data.encode())


def _payload(tmp_path: Path, event: str, **more: Any) -> dict[str, Any]:
    return {"session_id": SID, "transcript_path": str(rollout(tmp_path / f"rollout-2026-12-02T00-33-00-{SID}.jsonl")),
            "cwd": "/home/user/project", "hook_event_name": event, "model": "gpt-5.5", **more}


def test_pre_compact_mirrors_the_rollout_and_session_start_prints_the_reminder(tmp_path: Path) -> None:
    mirrors = tmp_path / "mirrors"
    proc = _hook("pre-compact", _payload(tmp_path, "PreCompact", trigger="auto", turn_id="t1"), mirrors)
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b"", proc.stderr
    log = mirrors / "codex" / SID / "updates.jsonl"
    assert ERROR in log.read_text()
    proc = _hook("session-start", _payload(tmp_path, "SessionStart", source="compact", permission_mode="bypassPermissions"), mirrors)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "Files edited in this session: parse.py\n" in context and len(context) <= 10_000  # not the failed patch's file
    assert "recall_search (namespace mcp__catty_recall)" in context and str(log.parent) in context
    # the rollout gone: the mirror still answers
    Path(_payload(tmp_path, "x")["transcript_path"]).unlink()
    again = _hook("session-start", {"session_id": SID, "source": "resume", "transcript_path": "/nonexistent"}, mirrors)
    assert json.loads(again.stdout)["hookSpecificOutput"]["additionalContext"] == context


@pytest.mark.parametrize("source", ["startup", "clear"])
def test_session_start_prints_nothing_for_a_fresh_session(tmp_path: Path, source: str) -> None:
    proc = _hook("session-start", _payload(tmp_path, "SessionStart", source=source), tmp_path / "mirrors")
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""


@pytest.mark.parametrize("payload", ["not json", "[]", '{"session_id": "../x", "transcript_path": "/t"}', '{"session_id": "s"}'])
def test_bad_input_is_one_line_and_exit_0(tmp_path: Path, payload: str) -> None:
    mirrors = tmp_path / "mirrors"
    proc = _hook("pre-compact", payload, mirrors)
    assert proc.returncode == 0 and proc.stdout == b""
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith(b"catty-ctx: warning: hook codex pre-compact: ")
    assert (mirrors / "hooks.log").read_text().count("hook codex pre-compact") == 1


def test_codexs_failure_texts_make_failed_results() -> None:
    assert failed_output("apply_patch verification failed: Failed to read file to update /p/missing.py")
    assert failed_output("Chunk ID: 1\nWall time: 0 seconds\nProcess exited with code 2\nOutput:\nboom\n")
    assert failed_output("Exit code: 1\nWall time: 0 seconds\nOutput:\nerror\n")
    assert not failed_output("Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess.\n")
    assert not failed_output("Chunk ID: 1\nProcess exited with code 0\nOutput:\nProcess exited with code 1\n")  # the command's own text
    assert not failed_output("Process exited with code 1")  # no header: not Codex's framing

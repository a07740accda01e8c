"""The harness with hooks: both CLIs run hook commands inside the namespace, hand them their
JSON, and take a SessionStart answer into the next request — what the hooks end-to-end tests
of the integrations build on."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from agents.anthropic_fake import text, tool_use
from agents.hooks import context_reply, recorded, recording_hooks
from agents.openai_fake import exec_command, message

PLANTED = "PLANTED-CONTEXT-7f3a"


@pytest.mark.agents("claude")
def test_claude_hooks_fire_through_an_automatic_compaction(claude, tmp_path: Path) -> None:
    log = tmp_path / "hooks.jsonl"
    claude.write_settings(recording_hooks(log, replies={"SessionStart": context_reply("SessionStart", PLANTED)}))
    claude.server.push(tool_use("Bash", {"command": "echo hooked", "description": "echo"}, input_tokens=985_000),
                       text("<summary>echoed</summary>"), text("Done."))
    ran = claude.prompt("echo with hooks")
    seen = recorded(log)
    events = [(h["event"], h["input"].get("source") or h["input"].get("trigger")) for h in seen]
    for want in [("SessionStart", "startup"), ("UserPromptSubmit", None), ("PreToolUse", None), ("PostToolUse", None),
                 ("PreCompact", "auto"), ("SessionStart", "compact"), ("PostCompact", "auto"), ("Stop", None), ("SessionEnd", None)]:
        assert want in events, (want, events)
    assert all(h["input"]["session_id"] == ran.session_id for h in seen)
    assert all(Path(h["input"]["transcript_path"]) == claude.transcript(ran.session_id) for h in seen if "transcript_path" in h["input"])
    first, *_, last = claude.server.bodies()
    assert PLANTED in orjson.dumps(first).decode() and PLANTED in orjson.dumps(last).decode()


@pytest.mark.agents("codex")
def test_codex_hooks_fire_through_an_automatic_compaction(codex, tmp_path: Path) -> None:
    log = tmp_path / "hooks.jsonl"
    codex.codex_home.mkdir(parents=True, exist_ok=True)
    (codex.codex_home / "hooks.json").write_bytes(orjson.dumps(recording_hooks(
        log, events=("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "PostCompact", "Stop"),
        replies={"SessionStart": context_reply("SessionStart", PLANTED)})))
    codex.config["model_auto_compact_token_limit"] = 50_000
    codex.server.push(exec_command("echo hooked", input_tokens=60_000), message("SUMMARY: echoed"), message("Done."))
    ran = codex.exec("echo with hooks", "--dangerously-bypass-hook-trust")
    events = [(h["event"], h["input"].get("source") or h["input"].get("trigger")) for h in recorded(log)]
    for want in [("SessionStart", "startup"), ("UserPromptSubmit", None), ("PreToolUse", None), ("PostToolUse", None),
                 ("PreCompact", "auto"), ("SessionStart", "compact"), ("Stop", None)]:
        assert want in events, (want, events)
    assert ran.session_id and PLANTED in orjson.dumps(codex.server.bodies()[-1]).decode()

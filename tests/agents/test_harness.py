"""The harness itself: the fake servers speak well enough for the real CLIs to run a tool
call, every request is recorded, and the marker's rule holds (skip locally, fail in CI)."""
from __future__ import annotations

import stat
import uuid
from pathlib import Path

import orjson
import pytest

from agents import fixtures, runner
from agents.anthropic_fake import text, tool_use
from agents.openai_fake import exec_command, message


@pytest.mark.agents("claude")
def test_claude_runs_a_scripted_bash_call(claude) -> None:
    claude.server.push(tool_use("Bash", {"command": "echo harness-$((6*7))", "description": "echo"}), text("Done: 42."))
    ran = claude.prompt("say 42 with bash")
    assert ran.json["result"] == "Done: 42." and ran.session_id
    first, second = claude.server.bodies()
    assert first["stream"] is True and claude.server.messages[0].query == {"beta": ["true"]}
    result = second["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and "harness-42" in str(result["content"])
    records = claude.records(ran.session_id)
    assert any(r.get("type") == "assistant" and any(b.get("type") == "tool_use" for b in r["message"]["content"]) for r in records)
    assert claude.server.errors == [] and claude.server.unscripted == 0


@pytest.mark.agents("codex")
def test_codex_runs_a_scripted_exec_command(codex) -> None:
    codex.server.push(exec_command("echo harness-$((6*7))"), message("Done: 42."))
    ran = codex.exec("say 42 with a shell")
    assert "Done: 42." in ran.stdout and ran.session_id
    first, second = codex.server.bodies()
    assert first["stream"] is True
    output = [i for i in second["input"] if i.get("type") == "function_call_output"]
    assert len(output) == 1 and "harness-42" in str(output[0]["output"])
    kinds = {r["type"] for r in codex.records(ran.session_id)}
    assert {"session_meta", "response_item"} <= kinds
    assert codex.server.errors == [] and codex.server.unscripted == 0


def test_a_missing_cli_skips_locally_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(runner, "CI_BIN", tmp_path / "none")
    monkeypatch.setenv(runner.BIN_ENV, str(tmp_path))
    runner.locate.cache_clear()
    try:
        monkeypatch.delenv("CI", raising=False)
        monkeypatch.delenv(fixtures.REQUIRE_ENV, raising=False)
        with pytest.raises(pytest.skip.Exception, match="claude 2.1.332 not found"):
            fixtures.require("claude")
        monkeypatch.setenv("CI", "true")
        with pytest.raises(pytest.fail.Exception, match="CI runs the tests marked `agents`"):
            fixtures.require("claude")
    finally:
        runner.locate.cache_clear()


def test_a_cli_of_another_version_is_not_taken(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "codex"
    fake.write_text("#!/bin/sh\necho 'codex-cli 0.1.0'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(runner, "CI_BIN", tmp_path / "none")
    monkeypatch.setenv(runner.BIN_ENV, str(tmp_path))
    runner.locate.cache_clear()
    try:
        exe, why = runner.locate("codex")
        assert exe is None and "codex-cli 0.1.0" in why and runner.pinned_version("codex") in why
    finally:
        runner.locate.cache_clear()


def _stored(agent: str) -> tuple[Path, str]:
    manifest = min((runner.ROOT / "fixtures" / "agents").glob(f"{agent}-*/*/scenario.json"))
    doc = orjson.loads(manifest.read_bytes())
    return manifest.parent / doc["file"], doc["session_id"]


@pytest.mark.agents("claude")
def test_claude_resumes_a_copy_a_test_wrote_under_a_new_id(claude) -> None:
    source, old = _stored("claude")
    new = str(uuid.uuid4())
    claude.project_dir.mkdir(parents=True)
    (claude.project_dir / f"{new}.jsonl").write_text(source.read_text().replace(old, new).replace("/home/user/project", str(claude.cwd)))
    claude.server.push(text("resumed"))
    ran = claude.prompt("go on", resume=new)
    assert ran.session_id == new
    sent = orjson.dumps(claude.server.bodies()[-1]["messages"]).decode()
    assert "All green now." in sent and "go on" in sent  # the copy's history, then the new turn


@pytest.mark.agents("codex")
def test_codex_resumes_a_copy_a_test_wrote_under_a_new_id(codex) -> None:
    source, old = _stored("codex")
    new = old[:9] + str(uuid.uuid4())[9:]  # Codex's ids are UUIDv7: keep the time part
    path = codex.rollout_path(new)
    path.parent.mkdir(parents=True)
    path.write_text(source.read_text().replace(old, new).replace("/home/user/.codex", str(codex.codex_home))
                    .replace("/home/user/project", str(codex.cwd)))
    codex.server.push(message("resumed"))
    ran = codex.exec("go on", resume=new)
    assert ran.session_id == new
    sent = orjson.dumps(codex.server.bodies()[-1]["input"]).decode()
    assert "Fixed parse.py." in sent and "go on" in sent

"""`fork --to`: the real Claude Code and Codex CLIs resume the copy, and the request they send
carries the repaired conversation (every call answered by our repair, the assistant message of
the unanswered call kept with its text, the source's user turns, large outputs as placeholders)."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from agents.anthropic_fake import text
from agents.openai_fake import message
from support import cli
from support.writeback_sessions import BIG, USER_TURNS, claude_session, codex_session

from catty_ctx.repair.plan import DANGLING_TEXT
from catty_ctx.writeback.claude import project_folder_name

MAX = 200_000
UNANSWERED_TEXT = "I will run the tests to see the failure."


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else [b for b in content if isinstance(b, dict)]


def _tool_text(block: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in _blocks(block.get("content") or ""))


def _fork(src: Path, agent: str, *args: str) -> dict[str, Any]:
    return orjson.loads(cli("fork", str(src), "--to", agent, "--max-bytes", str(MAX), *args, "--json", check=True).stdout)


@pytest.mark.agents("claude")
def test_claude_resumes_the_copy_and_sends_the_repaired_conversation(claude, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = claude_session(tmp_path / "src", cwd=str(claude.cwd))
    before = src.read_bytes()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude.config_dir))  # the default DEST: Claude Code's own folder
    doc = _fork(src, "claude")
    assert Path(doc["path"]) == claude.transcript(doc["session_id"]) and doc["resume"] == f"claude --resume {doc['session_id']}"
    claude.server.push(text("Resumed."))
    ran = claude.prompt("Anything left?", resume=doc["session_id"])
    assert ran.json["result"] == "Resumed." and src.read_bytes() == before
    body = claude.server.bodies()[-1]
    msgs = body["messages"]
    # Every tool_use answered in the next message; the unanswered one by our repair's text.
    for i, m in enumerate(msgs):
        uses = [b["id"] for b in _blocks(m["content"]) if b.get("type") == "tool_use"]
        if uses:
            results = {b["tool_use_id"]: b for b in _blocks(msgs[i + 1]["content"]) if b.get("type") == "tool_result"}
            assert set(uses) <= set(results), (uses, results)
    answers = {b["tool_use_id"]: _tool_text(b) for m in msgs for b in _blocks(m["content"]) if b.get("type") == "tool_result"}
    assert answers["toolu_02"] == DANGLING_TEXT
    assistant_texts = [b["text"] for m in msgs if m["role"] == "assistant" for b in _blocks(m["content"]) if b.get("type") == "text"]
    assert UNANSWERED_TEXT in assistant_texts  # Claude Code's own resume of the source drops it
    said = [b["text"] for m in msgs if m["role"] == "user" for b in _blocks(m["content"]) if b.get("type") == "text"]
    assert [t for t in said if t in USER_TURNS] == USER_TURNS and said[-1].endswith("Anything left?")
    big = answers["toolu_04"]
    assert "not in this copy" in big and big.endswith("THE-END") and len(big) < MAX
    assert len(orjson.dumps(body)) < 1_000_000 < BIG
    assert claude.server.errors == []


@pytest.mark.agents("claude")
def test_claude_code_itself_drops_the_unanswered_calls_message_on_resume_of_the_source(claude, tmp_path: Path) -> None:
    """Why the copy exists: the same history resumed as it is loses the assistant's text."""
    src = claude_session(tmp_path / "src", cwd=str(claude.cwd))
    own = claude.config_dir / "projects" / project_folder_name(str(claude.cwd))
    own.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, own / src.name)
    claude.server.push(text("Resumed."))
    claude.prompt("Anything left?", resume=src.stem)
    msgs = claude.server.bodies()[-1]["messages"]
    assistant_texts = [b["text"] for m in msgs if m["role"] == "assistant" for b in _blocks(m["content"]) if b.get("type") == "text"]
    assert UNANSWERED_TEXT not in assistant_texts


@pytest.mark.agents("codex")
def test_codex_resumes_the_copy_and_sends_our_answer_not_its_own(codex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = codex_session(tmp_path / "src", cwd=str(codex.cwd))
    before = src.read_bytes()
    monkeypatch.setenv("CODEX_HOME", str(codex.codex_home))  # the default DEST: Codex's own sessions folder
    doc = _fork(src, "codex")
    assert Path(doc["path"]).parent.parent.parent.parent == codex.codex_home / "sessions"
    assert doc["resume"] == f"codex resume {doc['session_id']}"
    codex.server.push(message("Resumed."))
    codex.exec("Anything left?", resume=doc["session_id"])
    assert src.read_bytes() == before
    items = codex.server.bodies()[-1]["input"]
    outputs = {it["call_id"]: it.get("output") for it in items if it.get("type") == "function_call_output"}
    calls = [it["call_id"] for it in items if it.get("type") == "function_call"]
    assert calls and set(calls) <= set(outputs)
    out = outputs["call_02"]
    assert DANGLING_TEXT in (out if isinstance(out, str) else orjson.dumps(out).decode()) and "aborted" not in str(out)
    texts = [c.get("text") for it in items if it.get("type") == "message" for c in it.get("content") or () if isinstance(c, dict)]
    assert UNANSWERED_TEXT in texts
    assert [t for t in texts if t in USER_TURNS] == USER_TURNS and "Anything left?" in texts
    big = outputs["call_04"]
    assert "not in this copy" in str(big) and len(str(big)) < MAX
    assert codex.server.errors == []


@pytest.mark.agents("claude")
def test_claude_resumes_a_compacted_copy_with_its_summary(claude, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = claude_session(tmp_path / "src", cwd=str(claude.cwd))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude.config_dir))
    doc = _fork(src, "claude", "--compact")
    claude.server.push(text("Resumed."))
    claude.prompt("Anything left?", resume=doc["session_id"])
    said = [b["text"] for m in claude.server.bodies()[-1]["messages"] if m["role"] == "user" for b in _blocks(m["content"])
            if b.get("type") == "text"]
    # The summary (written as a meta user record) reaches the model, with the last real request.
    assert any("<summary>" in t and USER_TURNS[0] in t for t in said) and any(t.startswith(USER_TURNS[-1]) for t in said)

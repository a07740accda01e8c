"""The recall server inside the real agents: Claude Code starts it from `--mcp-config` with the
entry `hook install claude --mcp` writes, Codex from the `[mcp_servers]` table `hook install
codex --mcp` writes; either way it finds the session by the working folder alone and hands the
model the exact error an automatic compaction took out of its context."""
from __future__ import annotations

import orjson
import pytest
from support import ROOT

from agents.anthropic_fake import text, tool_results, tool_use
from agents.http_fake import Until
from agents.openai_fake import exec_command, function_call, message
from agents.runner import catty_ctx_command, toml_value
from agents.scenarios import CLAUDE_WINDOW_NEAR, ERROR, codex_session
from catty_ctx.agents.codex_install import server_table
from catty_ctx.agents.recall import CODEX_NAMESPACE, RECALL_SEARCH_TOOL
from catty_ctx.agents.settings import RECALL_SERVER, mcp_entry


@pytest.mark.long
@pytest.mark.agents("claude")
def test_claude_recalls_the_exact_error_an_automatic_compaction_dropped(claude, tmp_path) -> None:
    s = claude.server
    s.push(tool_use("Bash", {"command": f"echo '{ERROR}'", "description": "run the tests"}), text("The tests fail."))
    sid = claude.prompt("Run the tests").session_id
    s.push(tool_use("Bash", {"command": "echo fixing", "description": "fix"}, input_tokens=CLAUDE_WINDOW_NEAR),
           text("<summary>The user ran the tests; one failed; a fix is under way.</summary>"), text("Fixed."))
    claude.prompt("Fix it", resume=sid)
    assert any(r.get("subtype") == "compact_boundary" for r in claude.records(sid)), "no automatic compaction"

    config = tmp_path / "mcp.json"
    config.write_bytes(orjson.dumps({"mcpServers": {RECALL_SERVER: mcp_entry(catty_ctx_command())}}))
    before = len(s.bodies())
    s.push(tool_use(RECALL_SEARCH_TOOL, {"pattern": "expected 3, got 4"}), text("The exact error was found."))
    claude.prompt("What exactly did the test print?", "--mcp-config", str(config), resume=sid, env={"ENABLE_TOOL_SEARCH": "false"})
    assert s.unscripted == 0 and s.errors == [], (s.unscripted, s.errors)

    asked, answered = s.bodies()[before:]
    assert RECALL_SEARCH_TOOL in [t["name"] for t in asked["tools"]]
    assert ERROR not in orjson.dumps(asked["messages"]).decode()  # out of the context after the compaction
    (result,) = tool_results(answered)
    words = "".join(b["text"] for b in result["content"] if b.get("type") == "text") if isinstance(result["content"], list) else result["content"]
    assert not result.get("is_error"), words
    found = orjson.loads(words)
    assert found["session"]["session_id"] == sid
    hit = next(m for m in found["matches"] if m["role"] == "tool_result Bash")
    assert hit["line"] == ERROR and hit["seq"] <= found["compacted_through_seq"]


def _lists_recall(body: dict) -> bool:
    spaces = [t for t in body.get("tools") or [] if t.get("type") == "namespace" and t.get("name") == CODEX_NAMESPACE]
    return bool(spaces) and "recall_search" in [t["name"] for t in spaces[0]["tools"]]


def _outputs(body: dict) -> list[dict]:
    return [i for i in body["input"] if i.get("type") == "function_call_output"]


@pytest.mark.long
@pytest.mark.agents("codex")
def test_codex_recalls_the_exact_error_its_automatic_compaction_dropped(codex) -> None:
    written = codex_session(codex)
    table, _ = server_table(catty_ctx_command(), codex.codex_home)
    # Codex hands an MCP server only a few variables of its own: the installed program needs none,
    # this checkout needs its path; a loaded machine may take longer than Codex's 10 s to start it.
    codex.extra_toml = f"\n{table}startup_timeout_sec = 120\n\n[mcp_servers.{RECALL_SERVER}.env]\nPYTHONPATH = {toml_value(str(ROOT))}\n"

    s = codex.server
    before = len(s.bodies())
    # Codex sends its first request without waiting long for MCP servers to start (the SDK's
    # server takes about a second, more on a loaded machine): short commands until its requests
    # list the recall tool, then the call.
    s.push(Until(lambda req: _lists_recall(req.json), lambda: exec_command("sleep 0.3")),
           function_call("recall_search", {"pattern": "expected 3, got 4"}, namespace=CODEX_NAMESPACE),
           message("The exact error was found."))
    codex.exec("What exactly did the test print?", resume=written.session_id)
    assert s.unscripted == 0 and s.errors == [], (s.unscripted, s.errors)

    *_waits, asked, answered = s.bodies()[before:]
    assert _lists_recall(asked)
    assert ERROR not in orjson.dumps(asked["input"]).decode()  # out of the context after the compaction
    output = _outputs(answered)[-1]["output"]
    blocks = [output] if isinstance(output, str) else [b["text"] for b in output if isinstance(b, dict) and "text" in b]
    found = orjson.loads(next(b for b in blocks if b.startswith("{")))
    assert found["session"]["session_id"] == written.session_id  # the rollout found by its working folder alone
    hit = next(m for m in found["matches"] if m["role"] == "tool_result exec_command")
    assert hit["line"] == ERROR and hit["seq"] <= found["compacted_through_seq"]

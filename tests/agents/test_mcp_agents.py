"""The recall server inside the real Claude Code CLI: started from `--mcp-config` with the entry
`hook install claude --mcp` writes, it finds the session's transcript by the project folder
alone and hands the model the exact error an automatic compaction took out of its context."""
from __future__ import annotations

import orjson
import pytest

from agents.anthropic_fake import text, tool_use
from agents.runner import catty_ctx_command
from agents.scenarios import CLAUDE_WINDOW_NEAR, ERROR
from catty_ctx.agents.recall import RECALL_SEARCH_TOOL
from catty_ctx.agents.settings import RECALL_SERVER, mcp_entry


def _tool_results(body: dict) -> list[dict]:
    last = body["messages"][-1]
    return [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"] if isinstance(last["content"], list) else []


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
    (result,) = _tool_results(answered)
    words = "".join(b["text"] for b in result["content"] if b.get("type") == "text") if isinstance(result["content"], list) else result["content"]
    assert not result.get("is_error"), words
    found = orjson.loads(words)
    assert found["session"]["session_id"] == sid
    hit = next(m for m in found["matches"] if m["role"] == "tool_result Bash")
    assert hit["line"] == ERROR and hit["seq"] <= found["compacted_through_seq"]

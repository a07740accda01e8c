"""recall_search with `scope: "all"` inside the real Claude Code: the model asks the recall server
for what an earlier session of the same project printed, and gets it back from that session's
transcript (through the search index, kept texts and all), never from a session of another
folder (docs/agents.md#the-recall-server)."""
from __future__ import annotations

import orjson
import pytest

from agents.anthropic_fake import text, tool_results, tool_use
from agents.runner import catty_ctx_command
from catty_ctx.agents.recall import RECALL_SEARCH_TOOL
from catty_ctx.agents.settings import RECALL_SERVER, mcp_entry
from catty_ctx.index import Index

MARK = "E-4417 disk quota exceeded on /srv/cache"


@pytest.mark.agents("claude")
def test_claude_gets_an_earlier_session_of_its_project_from_recall_search_scope_all(claude, tmp_path, monkeypatch) -> None:
    s = claude.server
    s.push(tool_use("Bash", {"command": f"echo '{MARK}'", "description": "clean the cache"}), text("The quota is exceeded."))
    earlier = claude.prompt("Clean the cache").session_id
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    s.push(tool_use("Bash", {"command": f"echo '{MARK}'", "description": "clean the cache"}), text("The quota is exceeded."))
    foreign = claude.prompt("Clean the cache", cwd=elsewhere).session_id

    index = tmp_path / "index.sqlite"
    monkeypatch.setenv("CATTY_CTX_INDEX", str(index))
    with Index() as idx:  # the agent's home indexed, each session's texts kept: scope "all" answers from them
        projects = str(claude.config_dir / "projects")
        idx.update([projects])
        assert idx.keep_all([projects]) == 2

    config = tmp_path / "mcp.json"
    config.write_bytes(orjson.dumps({"mcpServers": {RECALL_SERVER: mcp_entry(catty_ctx_command())}}))
    before = len(s.bodies())
    s.push(tool_use(RECALL_SEARCH_TOOL, {"pattern": "disk quota exceeded", "scope": "all"}), text("An earlier session hit it."))
    now = claude.prompt("What did the cache cleanup print last time?", "--mcp-config", str(config),
                        env={"ENABLE_TOOL_SEARCH": "false", "CATTY_CTX_INDEX": str(index)}).session_id
    assert s.unscripted == 0 and s.errors == [], (s.unscripted, s.errors)

    asked, answered = s.bodies()[before:]
    assert MARK not in orjson.dumps(asked["messages"]).decode()  # not in this session's context: only the server can tell
    (result,) = tool_results(answered)
    words = "".join(b["text"] for b in result["content"] if b.get("type") == "text") if isinstance(result["content"], list) else result["content"]
    assert not result.get("is_error"), words
    found = orjson.loads(words)
    assert found["scope"] == "all" and now != earlier
    hits = [m for m in found["matches"] if m["session"] == earlier]
    assert hits and any(m["line"] == MARK and m["agent"] == "claude" for m in hits), found
    assert foreign not in {m["session"] for m in found["matches"]}  # another folder's session is not this project's
    # (whether the server's index update saw this session's own transcript depends on when Claude
    # Code flushes it, before or after the tool call: not asserted; the index's own tests cover it)
    with Index() as idx:
        assert idx.db.execute("select count(*) from files where path like ?", (f"%{earlier}.jsonl",)).fetchone() == (1,)

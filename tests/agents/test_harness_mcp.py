"""The harness with an MCP server: both CLIs start a stdio server inside the namespace, list
its tool in the request and hand a scripted call's result back to the model."""
from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from agents.anthropic_fake import text, tool_use
from agents.openai_fake import function_call, message
from agents.runner import toml_value

PROBE = Path(__file__).with_name("mcp_probe.py")


@pytest.mark.agents("claude")
def test_claude_calls_a_stdio_mcp_tool(claude, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_bytes(orjson.dumps({"mcpServers": {"probe": {"command": sys.executable, "args": [str(PROBE)]}}}))
    claude.server.push(tool_use("mcp__probe__probe", {"word": "ultramarine"}), text("Done."))
    claude.prompt("probe it", "--mcp-config", str(config), env={"ENABLE_TOOL_SEARCH": "false"})
    first, second = claude.server.bodies()
    assert "mcp__probe__probe" in [t["name"] for t in first["tools"]]
    result = second["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and "probe saw ultramarine" in orjson.dumps(result).decode()


@pytest.mark.agents("codex")
def test_codex_calls_a_stdio_mcp_tool(codex) -> None:
    codex.extra_toml = f"\n[mcp_servers.probe]\ncommand = {toml_value(sys.executable)}\nargs = [{toml_value(str(PROBE))}]\n"
    codex.server.push(function_call("probe", {"word": "ultramarine"}, namespace="mcp__probe"), message("Done."))
    codex.exec("probe it")
    first, second = codex.server.bodies()
    spaces = [t for t in first["tools"] if t.get("type") == "namespace" and t.get("name") == "mcp__probe"]
    assert spaces and "probe" in [t["name"] for t in spaces[0]["tools"]]
    outputs = [i for i in second["input"] if i.get("type") == "function_call_output"]
    assert outputs and "probe saw ultramarine" in orjson.dumps(outputs[-1]).decode()

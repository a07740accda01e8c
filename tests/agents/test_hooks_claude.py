"""The Claude Code hooks end to end: the real CLI, `hook install claude` done in its temp home by
our installer, a scripted session with planted facts and an automatic compaction. PreCompact
reaches our hook (the mirror and its segment), and the first request after the compaction
carries our reminder with the planted todos, files and constraint."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from agents.anthropic_fake import text, tool_use
from agents.runner import ROOT, base_env, catty_ctx_command
from agents.scenarios import CLAUDE_WINDOW_NEAR

CONSTRAINT = "Never use the word banana in any file name."
ERROR = "FAIL test_parse: expected 3, got 4 (E-4711 in parse.py:12)"
TODOS = ["Fix the parser edge case", "Add a test for empty input", "Update the changelog"]


def _install(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`catty-ctx hook install claude` (user scope) as a user runs it, with HOME the agent's."""
    argv = [sys.executable, "-m", "catty_ctx", "hook", "install", "claude", "--command", catty_ctx_command(), *args]
    return subprocess.run(argv, env=base_env(home), cwd=home, capture_output=True, text=True, timeout=120, check=True)


def _sent(body: dict) -> str:
    return orjson.dumps(body).decode().replace("\\n", "\n")


@pytest.mark.agents("claude")
def test_an_automatic_compaction_gets_our_reminder_back(claude, tmp_path: Path) -> None:
    mirrors = tmp_path / "mirrors"
    claude.env["CATTY_CTX_MIRRORS"] = str(mirrors)
    settings = claude.config_dir / "settings.json"
    claude.write_settings({"env": {"KEEP": "1"}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}})
    installed = _install(claude.home)
    assert str(settings) in installed.stdout
    doc = json.loads(settings.read_text())
    assert doc["env"] == {"KEEP": "1"} and doc["hooks"]["Stop"] and {"PreCompact", "SessionStart"} <= set(doc["hooks"])
    parse = claude.cwd / "parse.py"
    s = claude.server
    s.push(
        tool_use("TodoWrite", {"todos": [{"content": TODOS[0], "status": "in_progress", "activeForm": "Fixing the parser"},
                                         {"content": TODOS[1], "status": "pending", "activeForm": "Adding a test"},
                                         {"content": TODOS[2], "status": "pending", "activeForm": "Updating the changelog"}]}),
        tool_use("Write", {"file_path": str(parse), "content": "def parse(s):\n    return 4\n"}),
        tool_use("Edit", {"file_path": str(claude.cwd / "missing.py"), "old_string": "a", "new_string": "b"}),
        tool_use("Edit", {"file_path": str(parse), "old_string": "return 4", "new_string": "return 3"}),
        # near the window: Claude Code compacts before its next request
        tool_use("Bash", {"command": f"echo '{ERROR}'; exit 1", "description": "run the tests"}, input_tokens=CLAUDE_WINDOW_NEAR),
        text("<summary>The parser is being fixed.</summary>"),
        text("Continuing with the parser."),
    )
    sid = claude.prompt(f"Make the parser robust. {CONSTRAINT} Keep the public API as it is.").session_id
    assert sid
    assert s.unscripted == 0 and s.errors == [], (s.unscripted, s.errors)
    # PreCompact reached our hook: the mirror holds the span before the compaction as a segment
    mirror = mirrors / "claude" / sid
    log = mirrors / "hooks.log"
    assert not log.exists(), log.read_text()
    segment = (mirror / "segments" / "segment_000.md").read_text()
    assert ERROR in segment
    # the request after the compaction carries our reminder
    bodies = s.bodies()
    marker = "catty-ctx kept the continuation state"
    assert [marker in _sent(b) for b in bodies] == [False] * 6 + [True]  # startup printed nothing; compact did
    after = _sent(bodies[-1])
    assert "catty-ctx kept the continuation state" in after, after[-3000:]
    for todo in TODOS:
        assert todo in after
    assert str(parse) in after and "missing.py" not in after.split("catty-ctx kept the continuation state", 1)[1]
    assert CONSTRAINT in after and ERROR in after
    assert f"segment grep {mirror}" in after and "mcp__catty-recall__recall_search" in after
    # the transcript cut back to its first lines: the mirror still finds the exact error
    transcript = claude.transcript(sid)
    transcript.write_bytes(b"".join(transcript.read_bytes().splitlines(keepends=True)[:3]))
    found = subprocess.run([sys.executable, "-m", "catty_ctx", "segment", "grep", str(mirror), ERROR], capture_output=True,
                           text=True, env=base_env(claude.home), cwd=ROOT, timeout=60, check=False)
    assert found.returncode == 0 and ERROR in found.stdout

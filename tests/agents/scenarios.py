"""Scripted sessions the real CLIs write, shared by the tests and by the fixture recorder
(record_fixtures.py): tool calls, a resume, and compactions (Claude: `/compact` and automatic;
Codex: automatic), with a planted error text the summaries leave out."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .anthropic_fake import text, tool_use
from .openai_fake import exec_command, message
from .runner import Claude, Codex

ERROR = "FAIL test_parse: expected 3, got 4"  # only the span before the first compaction holds it
CLAUDE_WINDOW_NEAR = 985_000  # near the 1M window of this release's default model: auto-compaction
CODEX_COMPACT_LIMIT = 50_000


@dataclass
class Written:
    """What a scenario left: the session's file, its id, the prompts typed, and the bodies of
    the requests the server received (in order)."""

    path: Path
    session_id: str
    prompts: list[str]
    bodies: list[dict[str, Any]] = field(default_factory=list)


def claude_session(claude: Claude) -> Written:
    s = claude.server
    s.push(tool_use("Bash", {"command": f"echo '{ERROR}'", "description": "run the tests"}),
           text("The test fails: expected 3, got 4."))
    sid = claude.prompt("Run the tests").session_id
    assert sid
    s.push(tool_use("Bash", {"command": "printf 'def parse():\\n    return 3\\n' > parse.py", "description": "fix parse"}),
           text("Fixed parse.py."))
    claude.prompt("Fix it", resume=sid)
    s.push(text("<summary>The user ran the tests; test_parse failed; parse.py was fixed to return 3.</summary>"))
    claude.prompt("/compact", resume=sid)
    s.push(tool_use("Bash", {"command": "cat parse.py", "description": "show parse.py"}, input_tokens=CLAUDE_WINDOW_NEAR),
           text("<summary>parse.py returns 3; the tests were failing before the fix.</summary>"),
           text("All green now."))
    claude.prompt("Check the file", resume=sid)
    assert s.unscripted == 0 and s.errors == [], (s.unscripted, s.errors)
    return Written(claude.transcript(sid), sid, ["Run the tests", "Fix it", "/compact", "Check the file"], s.bodies())


def codex_session(codex: Codex) -> Written:
    s = codex.server
    codex.config["model_auto_compact_token_limit"] = CODEX_COMPACT_LIMIT
    s.push(exec_command(f"echo '{ERROR}'"), message("The test fails: expected 3, got 4."))
    sid = codex.exec("Run the tests").session_id
    assert sid
    s.push(exec_command("printf 'def parse():\\n    return 3\\n' > parse.py", input_tokens=CODEX_COMPACT_LIMIT + 10_000),
           message("SUMMARY: the tests failed (test_parse); parse.py is being fixed to return 3."),
           message("Fixed parse.py."))
    codex.exec("Fix it", resume=sid)
    assert s.unscripted == 0 and s.errors == [], (s.unscripted, s.errors)
    return Written(codex.rollout(sid), sid, ["Run the tests", "Fix it"], s.bodies())

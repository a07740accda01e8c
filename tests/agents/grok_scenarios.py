"""Scripted Grok Build sessions the real `grok` writes, shared by the tests and the fixture
recorder (record_fixtures.py): tool calls, resumes, an automatic compaction in segments
mode, a foreground subagent, a fork (`--resume --fork-session`) and a cancelled turn.

What headless grok does not allow: a rewind (`/rewind` is the TUI's; `-p "/rewind"` is sent to
the model as text), so no fixture holds a `rewind_marker` line — the importer's rewind rule is
tested on a line written after grok's own shape (docs/import.md)."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from .openai_fake import message
from .runner import Grok
from .scenarios import ERROR
from .xai_fake import run, spawn, write

WINDOW = 40_000  # the fake catalogue's context window: 85% of it crossed compacts
CROSS = 36_000  # an input_tokens reported above the threshold: grok compacts before its next call
SEGMENT_ONLY = ERROR  # the tool output of the first turn: after the compaction only segment_000.md holds it verbatim
CHILD_TEXT = "The helper child found parse.py."


@dataclass
class GrokWritten:
    """What the grok scenario left: the main session's id, the fork's and the subagent
    child's ids, the prompts typed per session, and the main-loop request bodies."""

    session_id: str
    fork_id: str
    child_id: str
    cancelled_id: str
    prompts: dict[str, list[str]] = field(default_factory=dict)
    bodies: list[dict[str, Any]] = field(default_factory=list)


def grok_session(grok: Grok) -> GrokWritten:
    s = grok.server
    s.window = WINDOW
    grok.env["GROK_COMPACTION_MODE"] = "segments"
    s.push(run(f"echo '{ERROR}'", "run the tests"), message("The test fails: expected 3, got 4."))
    sid = grok.prompt("Run the tests").session_id
    assert sid
    s.push(write("parse.py", "def parse():\n    return 3\n"), message("Fixed parse.py."))
    grok.prompt("Fix it", resume=sid)
    s.push(run("cat parse.py", "show parse.py", input_tokens=CROSS), message("All green now."))
    grok.prompt("Check the file", resume=sid)
    assert len(s.compactions()) >= 1, "no compaction"
    s.push(spawn("List the python files here", "find python files"), message(CHILD_TEXT), message("The helper found parse.py."))
    grok.prompt("Use a helper to look around", resume=sid)
    s.push(message("On the branch now."))
    fork = grok.prompt("Continue on a branch", resume=sid, fork=True).session_id
    assert fork and fork != sid
    cancelled = cancel_turn(grok)
    assert s.unscripted == 0 and s.errors == [], (s.unscripted, s.errors)
    children = [d.name for d in (grok.session_dir(sid) / "subagents").iterdir()]
    assert len(children) == 1, children
    main = ["Run the tests", "Fix it", "Check the file", "Use a helper to look around"]
    return GrokWritten(sid, fork, children[0], cancelled,
                       {sid: main, fork: [*main, "Continue on a branch"], children[0]: ["List the python files here"],
                        cancelled: ["Wait for it"]},
                       s.bodies())


def cancel_turn(grok: Grok, timeout: float = 60) -> str:
    """A new session whose turn is interrupted (SIGINT) while its shell command runs. Headless
    1.0.41 has no graceful cancel: the process dies (no `turn_completed`, no usage.json), its
    call left without a result, as a crash leaves it. Returns its id."""
    s = grok.server
    s.push(run("sleep 30", "wait"))
    before = len(s.calls)
    argv = grok.ns.wrap([str(grok.exe), "-p", "Wait for it", "--always-approve", "--output-format", "json"])
    p = subprocess.Popen(argv, env=grok.environment(), cwd=grok.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True)
    try:
        end = time.monotonic() + timeout
        while len(s.calls) <= before or not list((grok.grok_home / "sessions").glob("*/*/terminal/*")):
            if time.monotonic() > end or p.poll() is not None:
                raise AssertionError(f"grok did not start the command: {p.communicate(timeout=5)}")
            time.sleep(0.05)
        time.sleep(0.3)
        os.kill(p.pid, signal.SIGINT)
        p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode != 0, "grok finished a turn it was told to stop"
    found = [d.name for d in grok.session_dirs() if (d / "updates.jsonl").is_file() and b'"Wait for it"' in (d / "updates.jsonl").read_bytes()]
    assert len(found) == 1, found
    return found[0]

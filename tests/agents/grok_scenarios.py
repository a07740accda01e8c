"""Scripted Grok Build sessions the real `grok` writes, shared by the tests and the fixture
recorder (record_fixtures.py): tool calls, resumes, an automatic compaction in segments
mode (two-pass, grok's default, and single-pass, which keeps `compaction_requests/`), a
foreground subagent, a fork (`--resume --fork-session`), a `-p` run killed mid-call, and over
ACP (`grok agent stdio`, `grok_acp`) what headless `-p` cannot do: a turn cancelled
(`session/cancel`) and a rewind (`_x.ai/rewind/execute`, which needs `force: true` to act)."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from .openai_fake import message
from .grok_acp import GrokAcp
from .runner import Grok
from .scenarios import ERROR
from .xai_fake import run, spawn, write

WINDOW = 40_000  # the fake catalogue's context window: 85% of it crossed compacts
CROSS = 36_000  # an input_tokens reported above the threshold: grok compacts before its next call
SEGMENT_ONLY = ERROR  # the tool output of the first turn: after the compaction only segment_000.md holds it verbatim
CHILD_TEXT = "The helper child found parse.py."
SINGLE_RULE = "You must never touch setup.cfg."


@dataclass
class GrokWritten:
    """What the grok scenario left: the main session's id, the fork's and the subagent
    child's ids, the prompts typed per session, and the main-loop request bodies."""

    session_id: str
    fork_id: str
    child_id: str
    cancelled_id: str
    single_id: str
    acp_id: str
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
    single = single_pass_compaction(grok)
    acp = cancel_and_rewind(grok)
    assert s.unscripted == 0 and s.errors == [], (s.unscripted, s.errors)
    children = [d.name for d in (grok.session_dir(sid) / "subagents").iterdir()]
    assert len(children) == 1, children
    main = ["Run the tests", "Fix it", "Check the file", "Use a helper to look around"]
    return GrokWritten(sid, fork, children[0], cancelled, single, acp,
                       {sid: main, fork: [*main, "Continue on a branch"], children[0]: ["List the python files here"],
                        cancelled: ["Wait for it"], single: [f"Write the notes. {SINGLE_RULE}", "/compact"], acp: ACP_PROMPTS},
                       s.bodies())


def single_pass_compaction(grok: Grok) -> str:
    """A session compacted by hand (`grok -p /compact --resume ID`), in one summariser call
    (GROK_TWO_PASS_COMPACTION=false): grok keeps the whole history it sent in
    `compaction_requests/<id>.json`. Its span holds facts `eval` derives (the user's rule, a file
    edited), which the fake's summary leaves out."""
    s = grok.server
    env = {"GROK_TWO_PASS_COMPACTION": "false"}
    # a window with room for the whole span (grok fits the request into window - 32,768 - the
    # tools); grok keeps the model list it read first, so it is asked again
    s.window = 200_000
    (grok.grok_home / "models_cache.json").unlink(missing_ok=True)
    s.push(write("notes.txt", "single pass\n"), message("Noted."))
    sid = grok.prompt(f"Write the notes. {SINGLE_RULE}", env=env).session_id
    assert sid
    grok.prompt("/compact", resume=sid, env=env)
    assert list((grok.session_dir(sid) / "compaction_requests").glob("*.json")), "no compaction request kept"
    return sid


ACP_PROMPTS = ["First prompt", "Second prompt", "Third prompt", "After the rewind"]


def cancel_and_rewind(grok: Grok) -> str:
    """Over ACP: two turns, a third cancelled while its command runs (`turn_completed` with
    `stop_reason: cancelled` and its usage), a rewind to prompt 1 (the second prompt and what
    followed leave the model's view; `rewind_marker` in the log), then a new prompt."""
    s = grok.server
    with GrokAcp(grok) as acp:
        sid = acp.new_session()
        s.push(message("First answer."))
        acp.prompt(sid, ACP_PROMPTS[0])
        s.push(message("Second answer."))
        acp.prompt(sid, ACP_PROMPTS[1])
        s.push(run("sleep 30", "wait"))
        pending = acp.start("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": ACP_PROMPTS[2]}]})
        acp.until(lambda: any((u.get("params") or {}).get("update", {}).get("sessionUpdate") == "tool_call" for u in acp.updates),
                  "the command's start")
        time.sleep(0.3)
        acp.notify("session/cancel", {"sessionId": sid})
        assert acp.wait(pending)["stopReason"] == "cancelled"
        done = acp.request("_x.ai/rewind/execute", {"sessionId": sid, "targetPromptIndex": 1, "force": True})
        assert done["success"] is True, done
        s.push(message("After the rewind, fresh."))
        acp.prompt(sid, ACP_PROMPTS[3])
    return sid


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

"""A real agent killed while its tool runs, then resumed, through `catty-ctx proxy`: the only
real way a history with a call and no result comes about. The transcript (the rollout) on
disk does end with the call unanswered, but each agent answers it itself before it sends the
history again (Claude Code 2.1.332: an error result "[Tool call interrupted: …]"; Codex
0.171.0: the output "aborted"), so the proxy's repair step has nothing to do: the upstream
copy is valid as the agent sent it and no `repair` event is recorded (docs/proxy.md)."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.proxy_checks import anthropic_problems, responses_problems
from support.proxy_run import events, running_proxy, session_dirs

from agents.anthropic_fake import FakeAnthropic, text, tool_use
from agents.openai_fake import FakeResponses, exec_command, message
from agents.runner import Claude, Codex
from catty_ctx.view.pairing import ANSWER_TEXT

pytest.importorskip("aiohttp")

SLOW = 'python3 -c "import time; time.sleep(60)"'  # Claude Code's Bash refuses a plain `sleep`


@dataclass
class Front:
    base_url: str


def kill_mid_tool(argv: list[str], env: dict[str, str], cwd: Path, started: Callable[[], bool]) -> None:
    """Run ARGV until STARTED() (the call is in the transcript), let the tool run, then SIGKILL the whole group."""
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        end = time.monotonic() + 90
        while not started():
            if time.monotonic() > end or p.poll() is not None:
                raise AssertionError(f"the agent never started its tool: {p.communicate(timeout=5)}")
            time.sleep(0.1)
        time.sleep(1.0)
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def no_repair(root: Path) -> None:
    for folder in session_dirs(root):
        assert [e for e in events(folder) if e["kind"] == "repair"] == []
    log = root / "proxy.log"
    assert not log.exists() or "forwarded unchanged" not in log.read_text()


@pytest.mark.agents("claude")
def test_claude_code_killed_mid_tool_answers_the_call_itself_on_resume(claude: Claude, loopback: Any, tmp_path: Path) -> None:
    root = tmp_path / "root"
    up = FakeAnthropic(loopback.listen())
    with up, running_proxy(root, up.origin, wrap=loopback.wrap) as (url, _):
        c = Claude(loopback, Front(url), claude.exe, claude.home, claude.cwd)  # type: ignore[arg-type]
        up.push(tool_use("Bash", {"command": SLOW, "description": "wait"}, id="toolu_interrupted_01"))
        argv = loopback.wrap([str(c.exe), "-p", "Wait for it", "--output-format", "json", "--dangerously-skip-permissions"])
        kill_mid_tool(argv, c.environment(), c.cwd, lambda: any(b"toolu_interrupted_01" in p.read_bytes() for p in c.transcripts()))
        [transcript] = c.transcripts()
        last = [orjson.loads(x) for x in transcript.read_bytes().splitlines() if b'"message"' in x][-1]
        assert last["type"] == "assistant" and last["message"]["content"][-1]["id"] == "toolu_interrupted_01"  # dangling on disk
        up.push(text("Picking up."))
        c.prompt("go on", resume=transcript.stem).check()
        time.sleep(0.5)
    resumed = up.bodies()[-1]
    assert anthropic_problems(resumed) == []
    answer = [b for m in resumed["messages"] if m["role"] == "user" and isinstance(m["content"], list) for b in m["content"]
              if b.get("type") == "tool_result" and b.get("tool_use_id") == "toolu_interrupted_01"]
    assert len(answer) == 1 and "Tool call interrupted" in orjson.dumps(answer[0]).decode()  # Claude Code's own answer
    assert all(ANSWER_TEXT not in orjson.dumps(b).decode() for b in up.bodies())
    no_repair(root)


@pytest.mark.agents("codex")
def test_codex_killed_mid_tool_answers_the_call_itself_on_resume(codex: Codex, loopback: Any, tmp_path: Path) -> None:
    root = tmp_path / "root"
    up = FakeResponses(loopback.listen())
    with up, running_proxy(root, up.origin, wrap=loopback.wrap) as (url, _):
        c = Codex(loopback, Front(url + "/v1"), codex.exe, codex.home, codex.cwd, model="gpt-5.5")  # type: ignore[arg-type]
        up.push(exec_command("sleep 60"))
        c.codex_home.mkdir(parents=True, exist_ok=True)
        c.config_path.write_text(c.config_text())
        argv = loopback.wrap([str(c.exe), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "Wait for it"])
        kill_mid_tool(argv, c.environment(), c.cwd, lambda: any(b'"function_call"' in p.read_bytes() for p in c.rollouts()))
        [rollout] = c.rollouts()
        items = [r["payload"] for r in map(orjson.loads, rollout.read_bytes().splitlines()) if r.get("type") == "response_item"]
        [call] = [i for i in items if i["type"] == "function_call"]
        assert not [i for i in items if i.get("call_id") == call["call_id"] and i["type"] == "function_call_output"]  # dangling on disk
        sid = orjson.loads(rollout.read_bytes().splitlines()[0])["payload"]["id"]
        up.push(message("Picking up."))
        c.exec("go on", resume=sid).check()
        time.sleep(0.5)
    resumed = up.bodies()[-1]
    assert responses_problems(resumed) == []
    outputs = [x for x in resumed["input"] if x.get("type") == "function_call_output" and x.get("call_id") == call["call_id"]]
    assert [x["output"] for x in outputs] == ["aborted"]  # Codex's own answer
    assert all(ANSWER_TEXT not in orjson.dumps(b).decode() for b in up.bodies())
    no_repair(root)

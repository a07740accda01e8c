"""The real Claude Code and Codex through `catty-ctx proxy` to fake upstreams, offline in the
loopback namespace (docs/proxy.md): the agent never compacts itself while the proxy compacts
the upstream copies (the planted facts in the reminder), every upstream request is valid, the
agent gets the upstream's bytes, and the proxy's session is read by the ordinary commands."""
from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.proxy_checks import anthropic_problems, cached_units, prefix_reuse, responses_problems
from support.proxy_run import Relay, proxy_env, running_proxy, session_dirs

from agents.anthropic_fake import FakeAnthropic, text, tool_use
from agents.hooks import recorded, recording_hooks
from agents.http_fake import Request, Response
from agents.openai_fake import FakeResponses, Turn, exec_command, function_call, message
from agents.runner import Claude, Codex
from catty_ctx.agents.mirror import sync
from catty_ctx.usage.pipeline import usage

pytest.importorskip("aiohttp")

ERROR = "E_PLANTED_7731: no such device or address"
FORBIDDEN = "PAMPLEMOUSSE"
FIRST = f"Fix the build. Rule: never write the word {FORBIDDEN} in any file."


@dataclass
class Front:
    """What a runner takes for its server: the relay in front of the proxy."""

    base_url: str


class SentAnthropic(FakeAnthropic):
    """The fake upstream, keeping the bytes of every answer it sent."""

    def __init__(self, sock: Any) -> None:
        self.sent: list[bytes] = []
        super().__init__(sock)

    def _messages(self, req: Request) -> Response:
        resp = super()._messages(req)
        self.sent.append(b"".join(resp.chunks))
        return resp


class SentResponses(FakeResponses):
    def __init__(self, sock: Any) -> None:
        self.sent: list[bytes] = []
        super().__init__(sock)

    def _responses(self, req: Request) -> Response:
        resp = super()._responses(req)
        self.sent.append(b"".join(resp.chunks))
        return resp


def catty(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "catty_ctx", *args], capture_output=True, text=True, env=proxy_env())


STEPS = range(0, 9, 3)  # the first step of each of Claude Code's three resumed runs (Codex keeps a run a step: in three runs its mean prefix reuse is 0.856 against the bound 0.85, in nine 0.893)


def seq(n: int) -> str:
    """Step N's command: 1,201 numbers to read."""
    return f"seq {n * 100000} {n * 100000 + 1200}"


def read(n: int) -> str:
    """What the model says of step N's output."""
    return f"Step {n} read. " + "The numbers rise by one each line and none is missing. " * 30


def mean_reuse(lists: list[list[Any]]) -> float:
    reuse = [prefix_reuse(lists[i - 1], lists[i]) for i in range(1, len(lists))]
    return sum(reuse) / len(reuse)


def check_session(root: Path, sent_usage: list[dict[str, int]]) -> Path:
    """The proxy's session of the conversation: inspect 0, the error found in the segments, usage exact."""
    folders = [d for d in session_dirs(root) if (d / "segments").exists()]
    assert len(folders) == 1, session_dirs(root)
    folder = folders[0]
    assert catty("inspect", str(folder), "--json").returncode == 0
    grep = catty("segment", "grep", str(folder), "E_PLANTED_7731")
    assert grep.returncode == 0 and ERROR in grep.stdout, grep
    evs = [orjson.loads(x) for x in (folder / "updates.jsonl").read_bytes().splitlines()]
    usage = [(e["input"], e["output"], e["cache_read"]) for e in evs if e["kind"] == "usage"]
    assert sorted(usage) == sorted((u["input"], u["output"], u["cache_read"]) for u in sent_usage), (
        session_dirs(root), (root / "proxy.log").read_text() if (root / "proxy.log").exists() else "")
    return folder


@pytest.mark.long
@pytest.mark.agents("claude")
def test_claude_code_through_the_proxy(claude: Claude, loopback: Any, tmp_path: Path) -> None:
    root, hooks = tmp_path / "root", tmp_path / "hooks.jsonl"
    up = SentAnthropic(loopback.listen())
    with up, running_proxy(root, up.origin, "--window", "24000", wrap=loopback.wrap) as (url, _):
        relay = Relay(loopback.listen(), loopback.socket, ("127.0.0.1", int(url.rsplit(":", 1)[1])))
        c = Claude(loopback, Front(relay.url), claude.exe, claude.home, claude.cwd,  # type: ignore[arg-type]
                   env={"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1", "CLAUDE_CODE_ENABLE_TASKS": "0"})
        c.write_settings(recording_hooks(hooks, ("PreCompact", "PostCompact")))  # the events it must never run
        todos = [{"content": f"todo {n}", "status": "pending", "activeForm": f"doing {n}"} for n in ("alpha", "beta", "gamma")]
        up.push(tool_use("TodoWrite", {"todos": todos}),
                tool_use("Bash", {"command": f"echo '{ERROR}' >&2; exit 3", "description": "build"}),
                tool_use("Write", {"file_path": str(c.cwd / "parse.c"), "content": "int parse(void);\n"}),
                tool_use("Write", {"file_path": str(c.cwd / "parse.h"), "content": "int parse(void);\n"}),
                text("Started."))
        sid = c.prompt(FIRST).check().session_id
        assert sid
        for n in STEPS:  # nine steps in three resumed runs: each run an agent's start-up fewer
            up.push(*[tool_use("Bash", {"command": seq(m), "description": "list"}, text=read(m - 1) if m > n else None) for m in range(n, n + 3)],
                    text(read(n + 2)))
            c.prompt(f"steps {n} to {n + 2}: read the numbers", resume=sid).check()
        time.sleep(1)
        relay.close()
    bodies = up.bodies()
    assert [anthropic_problems(b) for b in bodies] == [[] for _ in bodies]
    assert not [h for h in recorded(hooks) if h["event"] in ("PreCompact", "PostCompact")]
    assert not any("compact_boundary" in line or '"isCompactSummary":true' in line for line in c.transcript(sid).read_text().splitlines())
    dumped = [orjson.dumps(b) for b in bodies]
    compacted = [i for i, d in enumerate(dumped) if b"This session is being continued" in d]
    assert compacted, [len(d) for d in dumped]
    first = compacted[0]
    assert len(dumped[first]) < len(dumped[first - 1])
    for fact in (FORBIDDEN, "todo alpha", "todo beta", "todo gamma", "E_PLANTED_7731", "parse.c", "parse.h"):
        assert fact.encode() in dumped[first], fact
    reuse = mean_reuse([cached_units(b) for b in bodies])
    print(f"claude: {len(bodies)} upstream requests, mean prefix reuse {reuse:.3f}")
    assert reuse >= 0.85
    assert sorted(relay.bodies()) == sorted(up.sent)  # what Claude Code received is what the upstream sent, byte for byte
    folder = check_session(root, [_anthropic_usage(b) for b in up.sent])
    # One conversation, three copies: Claude Code's transcript, the hooks' mirror of it, the proxy's
    # session. `usage` over all three counts each call once, as over the transcript alone.
    counted_once(tmp_path, "claude", sid, c.transcript(sid), folder, len(up.sent), ("calls", "input", "output", "cache_read"),
                 [("log", "mirror", "proxy")])


def counted_once(tmp_path: Path, agent: str, sid: str, log: Path, folder: Path, calls: int, keys: tuple[str, ...],
                 orders: list[tuple[str, ...]]) -> Any:
    """`usage` over the agent's LOG alone counts CALLS calls; over each of ORDERS (of "log", the hooks'
    "mirror" of it, the "proxy"'s session FOLDER) the same KEYS' totals, each extra copy's calls as
    duplicates. The report over LOG alone."""
    mirror = tmp_path / "mirrors" / sid
    mirror.parent.mkdir()
    sync(mirror, str(log), agent, sid)
    alone = usage([str(log)], timezone_name="UTC", use_cache=False)[0]
    assert alone.totals["calls"] == calls
    copies = {"log": log, "mirror": mirror, "proxy": folder}
    for order in orders:
        together = usage([str(copies[name]) for name in order], timezone_name="UTC", use_cache=False)[0]
        assert {k: together.totals[k] for k in keys} == {k: alone.totals[k] for k in keys}, order
        assert together.duplicates == alone.duplicates + (len(order) - 1) * calls, order
    return alone


def _anthropic_usage(sent: bytes) -> dict[str, int]:
    for line in sent.splitlines():
        if line.startswith(b"data: ") and b'"message_delta"' in line:
            u = orjson.loads(line[6:])["usage"]
            return {"input": u["input_tokens"], "output": u["output_tokens"], "cache_read": u["cache_read_input_tokens"]}
    u = orjson.loads(sent)["usage"]
    return {"input": u["input_tokens"], "output": u["output_tokens"], "cache_read": u["cache_read_input_tokens"]}


PATCH = "*** Begin Patch\n*** Add File: {name}\n+int parse(void);\n*** End Patch\n"


def apply_patch(name: str) -> Turn:
    return Turn([{"type": "custom_tool_call", "id": f"ctc_{name.replace('.', '_')}", "call_id": f"call_patch_{name.replace('.', '_')}",
                  "name": "apply_patch", "input": PATCH.format(name=name), "status": "completed"}])


def _responses_usage(sent: bytes) -> dict[str, int]:
    for line in sent.splitlines():
        if line.startswith(b"data: ") and b'"response.completed"' in line:
            u = orjson.loads(line[6:])["response"]["usage"]
            cached = u["input_tokens_details"]["cached_tokens"]
            return {"input": u["input_tokens"] - cached, "output": u["output_tokens"], "cache_read": cached}
    raise AssertionError("no usage in an answer")


@pytest.mark.long
@pytest.mark.agents("codex")
def test_codex_through_the_proxy(codex: Codex, loopback: Any, tmp_path: Path) -> None:
    root = tmp_path / "root"
    up = SentResponses(loopback.listen())
    with up, running_proxy(root, up.origin, "--window", "20000", wrap=loopback.wrap) as (url, _):
        relay = Relay(loopback.listen(), loopback.socket, ("127.0.0.1", int(url.rsplit(":", 1)[1])))
        c = Codex(loopback, Front(relay.url + "/v1"), codex.exe, codex.home, codex.cwd, model="gpt-5.5")  # type: ignore[arg-type]
        plan = [{"step": f"todo {n}", "status": "pending"} for n in ("alpha", "beta", "gamma")]
        up.push(function_call("update_plan", {"plan": plan}), exec_command(f"sh -c \"echo '{ERROR}' >&2; exit 3\""),
                apply_patch("parse.c"), apply_patch("parse.h"), message("Started."))
        sid = c.exec(FIRST).check().session_id
        assert sid
        for n in range(9):
            up.push(exec_command(seq(n)), message(read(n)))
            c.exec(f"step {n}: read the numbers", resume=sid).check()
        time.sleep(1)
        relay.close()
    assert {r.route for r in up.requests} == {"POST /v1/responses"}  # no compaction request of its own
    bodies = up.bodies()
    assert [responses_problems(b) for b in bodies] == [[] for _ in bodies]
    assert not any(orjson.loads(line).get("type") == "compacted" for line in c.rollout(sid).read_bytes().splitlines())
    dumped = [orjson.dumps(b) for b in bodies]
    compacted = [i for i, d in enumerate(dumped) if b"This session is being continued" in d]
    assert compacted, [len(d) for d in dumped]
    first = compacted[0]
    assert len(dumped[first]) < len(dumped[first - 1])
    for fact in (FORBIDDEN, "todo alpha", "todo beta", "todo gamma", "E_PLANTED_7731", "parse.c", "parse.h"):
        assert fact.encode() in dumped[first], fact
    reuse = mean_reuse([cached_units(b) for b in bodies])
    print(f"codex: {len(bodies)} upstream requests, mean prefix reuse {reuse:.3f}")
    assert reuse >= 0.85
    assert sorted(relay.bodies()) == sorted(up.sent)
    folder = check_session(root, [_responses_usage(b) for b in up.sent])
    # One conversation, three copies: Codex's rollout, the hooks' mirror of it, the proxy's session.
    # The proxy names each call by the session's running totals, which the rollout records too:
    # `usage` over any of them together counts each call once, as over the rollout alone.
    alone = counted_once(tmp_path, "codex", sid, c.rollout(sid), folder, len(up.sent), ("calls", "input", "output", "cache_read", "reasoning"),
                         [("log", "proxy"), ("proxy", "log"), ("mirror", "proxy"), ("proxy", "mirror", "log")])
    assert sum(u["input"] + u["cache_read"] for u in map(_responses_usage, up.sent)) == alone.totals["input"] + alone.totals["cache_read"]

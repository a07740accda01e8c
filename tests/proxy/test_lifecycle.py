"""The lifecycle on the request copy, driven by a scripted Anthropic client through the real
proxy to a fake upstream: repair at the boundary, cache-aware prune batches, a compaction
whose replacement later requests reuse byte for byte, the recorded session read by the
ordinary commands (docs/proxy.md#what-it-changes-in-a-request)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from agents.anthropic_fake import FakeAnthropic, text, tool_use
from support.proxy_checks import anthropic_problems, cached_units, prefix_reuse
from support.proxy_run import events, listen, post, proxy_env, running_proxy, session_dirs

pytest.importorskip("aiohttp")

SID = "5f0c2b9a-7d41-4e8a-9b1c-0a2b3c4d5e6f"
ERROR = "E_PLANTED_7731: segmentation fault at 0xdeadbeef in parse_header"
NOTE = "Keep in mind what the earlier logs said about the parser and the header handling. " * 12
FORBIDDEN = "the word PAMPLEMOUSSE must never appear in any file"


def catty(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "catty_ctx", *args], capture_output=True, text=True, env=proxy_env())


class Client:
    """A scripted agent: keeps its whole history, moves its breakpoint to the last block as Claude Code does."""

    def __init__(self, url: str, up: FakeAnthropic) -> None:
        self.url, self.up = url, up
        self.msgs: list[dict[str, Any]] = []
        self.usage: list[dict[str, int]] = []

    def send(self, reply: Any, *content: Any) -> dict[str, Any]:
        self.up.push(reply)
        self.msgs.append({"role": "user", "content": list(content)})
        body = {"model": "claude-sonnet-4-5", "max_tokens": 1000,
                "system": [{"type": "text", "text": "You are a careful coding agent.", "cache_control": {"type": "ephemeral"}}],
                "tools": [{"name": n, "description": n, "input_schema": {"type": "object"}} for n in ("Bash", "Edit", "TodoWrite")],
                "messages": [*self.msgs[:-1], {**self.msgs[-1], "content": [*content[:-1], {**content[-1], "cache_control": {"type": "ephemeral"}}]}]}
        status, _, raw, _ = post(self.url, "/v1/messages?beta=true", body, {"x-api-key": "k", "anthropic-version": "2023-06-01",
                                                                          "x-claude-code-session-id": SID})
        assert status == 200, raw
        answer = orjson.loads(raw)
        self.usage.append(answer["usage"])
        self.msgs.append({"role": "assistant", "content": answer["content"]})
        time.sleep(0.05)
        return answer


def result(call: dict[str, Any], output: str, is_error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call["content"][-1]["id"], "content": output, "is_error": is_error}


@pytest.mark.long
def test_a_session_past_its_window_is_repaired_pruned_and_compacted(tmp_path: Path) -> None:
    root = tmp_path / "root"
    # (a window with room for pass 2's note beside the fitted reserve: below about 36,000 tokens
    # `compact --prefire` is refused, since no note of it could ever be used)
    with FakeAnthropic(listen()) as up, running_proxy(root, up.origin, "--window", "60000") as (url, _):
        c = Client(url, up)
        todos = {"todos": [{"content": f"todo {n}", "status": "pending", "activeForm": f"doing {n}"} for n in ("alpha", "beta", "gamma")]}
        a = c.send(tool_use("TodoWrite", todos), {"type": "text", "text": f"Fix the parser. Rule: {FORBIDDEN}."})
        a = c.send(tool_use("Bash", {"command": "make"}), result(a, "Todos have been modified"))
        a = c.send(tool_use("Edit", {"file_path": "src/parse.c", "old_string": "a", "new_string": "b"}), result(a, ERROR, is_error=True))
        a = c.send(tool_use("Edit", {"file_path": "include/parse.h", "old_string": "c", "new_string": "d"}), result(a, "edited"))
        a = c.send(tool_use("Bash", {"command": "ls"}), result(a, "edited"))
        # A call the client never answered (its history lost the result): the upstream copy answers it.
        dangling = a["content"][-1]["id"]
        c.msgs[-1]["content"] = [{"type": "text", "text": "Listing."}, *c.msgs[-1]["content"]]
        a = c.send(text("ok"), {"type": "text", "text": "never mind, go on"})
        for turn in range(140):
            a = c.send(tool_use("Bash", {"command": f"cat log{turn}.txt"}), {"type": "text", "text": f"turn {turn}: look at log{turn}.txt. " + NOTE})
            a = c.send(text(f"Read log {turn}."), result(a, f"log {turn}\n" + ("line of log output\n" * 180)))
        time.sleep(0.5)
    bodies = up.bodies()
    assert all(not anthropic_problems(b) for b in bodies), [anthropic_problems(b) for b in bodies if anthropic_problems(b)][:3]
    # the dangling call answered in the copies (the client never answered it)
    assert all(f'"tool_use_id":"{dangling}"'.encode() in orjson.dumps(b) for b in bodies[6:] if dangling.encode() in orjson.dumps(b))
    sizes = [len(orjson.dumps(b)) for b in bodies]
    pruned = [i for i, b in enumerate(bodies) if b"by catty-ctx prune" in orjson.dumps(b)]
    compacted = [i for i, b in enumerate(bodies) if b"This session is being continued" in orjson.dumps(b)]
    assert pruned and compacted, (pruned[:3], compacted[:3])
    first = compacted[0]
    assert sizes[first] < sizes[first - 1]
    head = orjson.dumps(bodies[first]).decode()
    for fact in ("PAMPLEMOUSSE", "todo alpha", "todo beta", "todo gamma", "E_PLANTED_7731", "src/parse.c", "include/parse.h", "segment_000.md"):
        assert fact in head, fact
    assert "Fix the parser" not in orjson.dumps(bodies[-1]["messages"][1:]).decode()  # the span is gone from the copy
    reuse = [prefix_reuse(cached_units(bodies[i - 1]), cached_units(bodies[i])) for i in range(1, len(bodies))]
    assert sum(reuse) / len(reuse) >= 0.85, sum(reuse) / len(reuse)
    # after the compaction, each request repeats the replacement byte for byte
    assert all(bodies[i]["messages"][0] == bodies[first]["messages"][0] for i in range(first, len(bodies)) if b"being continued" in orjson.dumps(bodies[i]["messages"][0]))

    [folder] = session_dirs(root)
    evs = events(folder)
    assert [e for e in evs if e["kind"] == "repair"] == [
        {**e, "action": "answer", "call_id": dangling, "reason": "dangling_call"} for e in evs if e["kind"] == "repair"]
    assert len([e for e in evs if e["kind"] == "repair"]) == 1
    [comp] = [e for e in evs if e["kind"] == "compaction"]
    assert comp["mode"] == "segments" and comp["two_pass"]["pass1_latency_ms"] is not None  # pass 1 ran before the threshold
    assert list((folder / "compaction_requests").glob("prefire-*.json"))
    assert catty("inspect", str(folder), "--json").returncode == 0
    grep = catty("segment", "grep", str(folder), "E_PLANTED_7731")
    assert grep.returncode == 0 and "E_PLANTED_7731" in grep.stdout
    recorded = [e for e in evs if e["kind"] == "usage"]
    assert [(u["input"], u["output"], u["cache_read"], u["cache_write"]) for u in recorded] == [
        (u["input_tokens"], u["output_tokens"], u["cache_read_input_tokens"], u["cache_creation_input_tokens"]) for u in c.usage]
    ledger = orjson.loads(catty("usage", str(folder), "--json").stdout)
    assert orjson.dumps(ledger).count(str(sum(u["input_tokens"] for u in c.usage)).encode()) >= 1

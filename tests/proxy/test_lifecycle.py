"""The lifecycle on the request copy, driven by a scripted Anthropic client through the real
proxy to a fake upstream: repair at the boundary, cache-aware prune batches, a compaction
whose replacement later requests reuse byte for byte, the recorded session read by the
ordinary commands (docs/proxy.md#what-it-changes-in-a-request)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from agents.anthropic_fake import FakeAnthropic, text, tool_use
from support.proxy_checks import anthropic_problems, cached_units, prefix_reuse
from support.proxy_run import Client, events, listen, post, proxy_env, result, running_proxy, session_dirs

pytest.importorskip("aiohttp")

SID = "5f0c2b9a-7d41-4e8a-9b1c-0a2b3c4d5e6f"
ERROR = "E_PLANTED_7731: segmentation fault at 0xdeadbeef in parse_header"
NOTE = "Keep in mind what the earlier logs said about the parser and the header handling. " * 12
FORBIDDEN = "the word PAMPLEMOUSSE must never appear in any file"


def catty(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "catty_ctx", *args], capture_output=True, text=True, env=proxy_env())


@pytest.mark.long
def test_a_session_past_its_window_is_repaired_pruned_and_compacted(tmp_path: Path) -> None:
    root = tmp_path / "root"
    # (a window with room for pass 2's note beside the fitted reserve: below about 36,000 tokens
    # `compact --prefire` is refused, since no note of it could ever be used)
    with FakeAnthropic(listen()) as up, running_proxy(root, up.origin, "--window", "60000") as (url, proxy):
        c = Client(url, up, SID, proxy=proxy)
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


def test_a_pass_1_just_started_at_the_threshold_is_waited_for(tmp_path: Path) -> None:
    """A client with no think time reaches the threshold while pass 1's process is still starting
    (no marker yet): the compaction waits for it and uses its note, not one pass."""
    root = tmp_path / "root"
    with FakeAnthropic(listen()) as up, running_proxy(root, up.origin, "--window", "60000", "--no-prune") as (url, _proxy):
        c = Client(url, up, SID, think=0.0)
        a = c.send(tool_use("Bash", {"command": "make"}), {"type": "text", "text": "Fix the parser."})
        turn = 0
        while not any(e["kind"] == "compaction" for folder in session_dirs(root) for e in events(folder)):
            a = c.send(text(f"Read log {turn}."), result(a, f"log {turn}\n" + ("line of log output\n" * 180)))
            a = c.send(tool_use("Bash", {"command": f"cat log{turn + 1}.txt"}), {"type": "text", "text": f"turn {turn}: go on. " + NOTE})
            turn += 1
            assert turn < 80, "never compacted"
    [folder] = session_dirs(root)
    [comp] = [e for e in events(folder) if e["kind"] == "compaction"]
    assert comp["two_pass"]["pass1_latency_ms"] is not None, comp["two_pass"]  # pass 1's note was used


def test_count_tokens_counts_the_copy_the_next_request_would_send(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with FakeAnthropic(listen()) as up, running_proxy(root, up.origin, "--window", "30000", "--no-prefire") as (url, proxy):
        c = Client(url, up, SID, proxy=proxy)
        a = c.send(tool_use("Bash", {"command": "make"}), {"type": "text", "text": f"Fix the parser. Rule: {FORBIDDEN}."})
        turn = 0
        while not any(b"being continued" in orjson.dumps(b) for b in up.bodies()):
            a = c.send(text(f"Read log {turn}."), result(a, f"log {turn}\n" + ("line of log output\n" * 180)))
            a = c.send(tool_use("Bash", {"command": f"cat log{turn + 1}.txt"}), {"type": "text", "text": f"turn {turn}: go on. " + NOTE})
            turn += 1
            assert turn < 60, "never compacted"
        time.sleep(0.5)
        [folder] = session_dirs(root)
        recorded = (folder / "updates.jsonl").read_bytes()
        hdr = {"x-api-key": "k", "anthropic-version": "2023-06-01", "x-claude-code-session-id": SID}
        ask = {"model": "claude-sonnet-4-5", "system": [{"type": "text", "text": "You are a careful coding agent.", "cache_control": {"type": "ephemeral"}}],
               "tools": [{"name": n, "description": n, "input_schema": {"type": "object"}} for n in ("Bash", "Edit", "TodoWrite")],
               "messages": [*c.msgs, {"role": "user", "content": [result(a, "done")]}]}
        status, _, raw, _ = post(url, "/v1/messages/count_tokens?beta=true", ask, hdr)
        assert status == 200, raw
        sent = [r for r in up.requests if r.path == "/v1/messages/count_tokens"]
        assert len(sent) == 1
        counted = sent[0].json
        assert b"being continued" in orjson.dumps(counted["messages"][0]) and b"Fix the parser" not in orjson.dumps(counted["messages"][1:])
        assert orjson.loads(raw)["input_tokens"] < len(orjson.dumps(ask)) // 4  # smaller than what the client holds
        # another conversation's count goes as it came
        other = {**ask, "messages": [{"role": "user", "content": "how long is this?"}]}
        assert post(url, "/v1/messages/count_tokens", other, {**hdr, "x-claude-code-session-id": "another-session"})[0] == 200
        assert [r for r in up.requests if r.path == "/v1/messages/count_tokens"][1].body == orjson.dumps(other)
        time.sleep(0.3)
    assert (folder / "updates.jsonl").read_bytes() == recorded  # a count records nothing

"""With no `--summarizer` named, both passes of a conversation's compaction are asked of the
client's own upstream, with the client's credentials and model; the credential reaches that
upstream and nothing else: no session file, artifact, note, log line (docs/proxy.md)."""
from __future__ import annotations

import time
from collections import deque
from pathlib import Path
from typing import Any

import orjson
import pytest
from agents.anthropic_fake import FakeAnthropic, Reply, text, tool_use
from agents.http_fake import FakeHTTPServer, Request, Response, json_response
from agents.openai_fake import FakeResponses, message
from support.proxy_run import Client, events, listen, result, running_proxy, session_dirs

from catty_ctx.compact.ladder import SummaryRequest
from catty_ctx.compact.spend import spend_events
from catty_ctx.proxy.summarize import UpstreamSummarizer, summarizer_of

pytest.importorskip("aiohttp")

KEY = "sk-ant-api03-" + "Pass1CredentialOnlyUpstream" * 3
SID = "7a1e0c55-9d3b-4f1e-8c2a-1b2c3d4e5f60"
NOTE = "Keep in mind what the earlier logs said about the parser and the header handling. " * 12
SUMMARY = "UPSTREAM-SUMMARY-OF-THE-SPAN: the parser was fixed; the logs were read one by one. " * 12


def is_summary_request(req: Request) -> bool:
    return is_summary_request_body(req.json)


class Upstream(FakeAnthropic):
    """The client's replies in order; a summary request (the summariser's prompt) answered with SUMMARY."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        super().__init__(listen(), fallback=self.answer)

    def push(self, *replies: Any) -> None:
        self.replies.extend(replies)

    def answer(self, req: Request) -> Reply:
        return text(SUMMARY) if is_summary_request(req) else self.replies.popleft()


def test_pass_1_and_pass_2_go_to_the_clients_upstream_with_its_credentials(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with Upstream() as up, FakeHTTPServer(listen(), {"POST /v1/chat/completions": lambda r: json_response({})}) as other, \
            running_proxy(root, up.origin, "--window", "60000", "--no-prune", "--summarizer", "upstream",
                          "--openai-upstream", other.origin) as (url, proxy):
        c = Client(url, up, SID, key=KEY, proxy=proxy)
        a = c.send(tool_use("Bash", {"command": "make"}), {"type": "text", "text": "Fix the parser."})
        turn = 0
        while not any(b"UPSTREAM-SUMMARY" in orjson.dumps(b) for b in up.bodies() if not is_summary_request_body(b)):
            a = c.send(text(f"Read log {turn}."), result(a, f"log {turn}\n" + ("line of log output\n" * 180)))
            a = c.send(tool_use("Bash", {"command": f"cat log{turn + 1}.txt"}), {"type": "text", "text": f"turn {turn}: go on. " + NOTE})
            turn += 1
            assert turn < 80, "never compacted with the upstream's summary"
        time.sleep(0.5)
    summaries = [r for r in up.requests if is_summary_request(r)]
    assert len(summaries) >= 2  # pass 1 (prefired) and pass 2 (at the threshold)
    for r in summaries:
        assert r.path == "/v1/messages" and r.query == {"beta": ["true"]}  # where the client's requests went
        assert r.headers["x-api-key"] == KEY and r.headers["anthropic-version"] == "2023-06-01"
        assert r.json["model"] == "claude-sonnet-4-5"
    assert other.requests == []

    [folder] = session_dirs(root)
    evs = events(folder)
    [comp] = [e for e in evs if e["kind"] == "compaction"]
    assert comp["summarizer"] == "upstream:claude-sonnet-4-5"
    assert comp["two_pass"]["pass1_latency_ms"] is not None  # pass 1's note was used
    spend = [e for e in evs if e["kind"] == "usage" and e.get("agent") == "compaction"]
    assert {e["purpose"] for e in spend} == {"prefire", "compaction"}, spend
    # the credential went nowhere else: no file the proxy wrote holds it
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "proxy.log" for p in written) and any(p.suffix == ".json" and "compaction_requests" in p.parts for p in written)
    leaks = [p for p in written if KEY.encode() in p.read_bytes() or KEY[-24:].encode() in p.read_bytes()]
    assert leaks == []


def is_summary_request_body(body: Any) -> bool:
    msgs = (body or {}).get("messages") or []
    return len(msgs) == 1 and isinstance(msgs[0].get("content"), str) and msgs[0]["content"].startswith("<conversation>")


def test_the_upstream_summariser_speaks_responses_and_chat_completions(tmp_path: Path) -> None:
    items = [{"role": "user", "text": "Fix the parser."}, {"role": "assistant", "text": "Done: the header check was off by one."}]
    bearer = {"Authorization": f"Bearer {KEY}", "session_id": "s-1"}
    with FakeResponses(listen()) as up:
        up.push(message(SUMMARY, input_tokens=900, cached_tokens=100))
        summ = summarizer_of(UpstreamSummarizer("responses", up.origin + "/v1/responses", bearer, "gpt-5.5").spec())
        res = summ.summarize(SummaryRequest(items=items, state={}, window=200_000))
        [req] = up.calls
    assert res.summary is not None and "UPSTREAM-SUMMARY" in res.summary and KEY not in repr(summ)
    assert req.headers["authorization"] == f"Bearer {KEY}" and req.json["model"] == "gpt-5.5" and req.json["store"] is False
    [spend] = spend_events(summ, res, purpose="prefire")
    assert (spend["model"], spend["input"], spend["cache_read"], spend["purpose"]) == ("gpt-5.5", 800, 100, "prefire")

    def chat(r: Request) -> Response:
        chunks = [b"data: " + orjson.dumps({"id": "c1", "model": "gpt-4o", "choices": [{"index": 0, "delta": {"content": SUMMARY}}]}) + b"\n\n",
                  b"data: " + orjson.dumps({"id": "c1", "model": "gpt-4o", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                                            "usage": {"prompt_tokens": 500, "completion_tokens": 70}}) + b"\n\n", b"data: [DONE]\n\n"]
        return Response(200, {"Content-Type": "text/event-stream"}, chunks)

    with FakeHTTPServer(listen(), {"POST /v1/chat/completions": chat}) as up2:
        summ = UpstreamSummarizer("chat", up2.origin + "/v1/chat/completions", bearer, "gpt-4o")
        res = summ.summarize(SummaryRequest(items=items, state={}, window=128_000))
        [req] = up2.requests
    assert res.summary is not None and "UPSTREAM-SUMMARY" in res.summary
    assert req.headers["authorization"] == f"Bearer {KEY}" and req.json["messages"][0]["role"] == "system"
    assert [(e["input"], e["output"]) for e in spend_events(summ, res, purpose="compaction")] == [(500, 70)]

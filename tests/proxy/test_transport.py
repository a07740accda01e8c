"""`catty-ctx proxy` with a scripted client and fake upstreams on 127.0.0.1: answers byte for
byte and chunk by chunk, errors and their headers, redirects, the body cap, fail-open, and
the conversation recorded as a session (docs/proxy.md)."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from agents.http_fake import FakeHTTPServer, Request, Response, json_response
from support.proxy_run import events, listen, post, proxy_env, running_proxy, session_dirs

pytest.importorskip("aiohttp")

KEY = "sk-ant-api03-" + "S3cr3tKeyForTheProxyTest" * 2


def chat_stream(chunks: list[str], usage: dict[str, int]) -> list[bytes]:
    out = [b"data: " + orjson.dumps({"id": "chatcmpl-1", "model": "gpt-4o", "choices": [{"index": 0, "delta": {"content": c}}]}) + b"\n\n"
           for c in chunks]
    out.append(b"data: " + orjson.dumps({"id": "chatcmpl-1", "model": "gpt-4o", "choices": [], "usage": usage}) + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return out


def test_chat_completions_stream_arrives_chunk_by_chunk_and_is_recorded(tmp_path: Path) -> None:
    first_read = threading.Event()
    usage = {"prompt_tokens": 120, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 100}}
    pieces = chat_stream(["Hel", "lo"], usage)

    def gated() -> Any:
        yield pieces[0]
        assert first_read.wait(20), "the client never got the first chunk while the upstream held the rest"
        yield from pieces[1:]

    def answer(req: Request) -> Response:
        return Response(200, {"Content-Type": "text/event-stream", "x-request-id": "req_42"}, gated())  # type: ignore[arg-type]

    with FakeHTTPServer(listen(), {"POST /v1/chat/completions": answer}) as up, running_proxy(tmp_path / "root", up.origin) as (url, _):
        body = {"model": "gpt-4o", "stream": True, "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello"}]}
        host, port = url.removeprefix("http://").split(":")
        import http.client
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        conn.request("POST", "/v1/chat/completions", body=orjson.dumps(body), headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
        resp = conn.getresponse()
        got = resp.read1(65536)
        first_read.set()
        rest = resp.read()
        assert resp.status == 200 and resp.getheader("x-request-id") == "req_42"
        assert got + rest == b"".join(pieces)
        assert got == pieces[0]  # the first chunk came before the upstream sent the second
        assert up.requests[0].json == body and up.requests[0].headers["authorization"] == f"Bearer {KEY}"
        time.sleep(0.5)  # the answer is recorded after the stream ends
    [folder] = session_dirs(tmp_path / "root")
    evs = events(folder)
    assert [e["kind"] for e in evs] == ["session", "message", "message", "message", "usage"]
    assert evs[3]["role"] == "assistant" and evs[3]["text"] == "Hello"
    assert {k: evs[4][k] for k in ("input", "output", "cache_read")} == {"input": 20, "output": 7, "cache_read": 100}
    assert KEY not in "".join(p.read_text(errors="replace") for p in (tmp_path / "root").rglob("*") if p.is_file())
    ran = subprocess.run([sys.executable, "-m", "catty_ctx", "inspect", str(folder), "--json"], capture_output=True, env=proxy_env())
    assert ran.returncode == 0, ran.stderr


def test_a_repeated_history_appends_only_what_is_new(tmp_path: Path) -> None:
    answers = iter(["First answer.", "Second answer."])

    def answer(req: Request) -> Response:
        msg = {"id": f"msg_{len(up.requests)}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
               "content": [{"type": "text", "text": next(answers)}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 50, "output_tokens": 5, "cache_read_input_tokens": 10, "cache_creation_input_tokens": 3}}
        return json_response(msg)

    with FakeHTTPServer(listen(), {"POST /v1/messages": answer}) as up, running_proxy(tmp_path / "root", up.origin) as (url, _):
        hdr = {"x-api-key": KEY, "anthropic-version": "2023-06-01", "x-claude-code-session-id": "0b7c1d2e-1111-4222-8333-944445555666"}
        msgs: list[dict[str, Any]] = [{"role": "user", "content": "one"}]
        status, _, raw, _ = post(url, "/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": "S", "messages": msgs}, hdr)
        first = orjson.loads(raw)
        assert status == 200 and first["content"][0]["text"] == "First answer."
        time.sleep(0.3)
        msgs += [{"role": "assistant", "content": first["content"]}, {"role": "user", "content": "two"}]
        status, _, raw, _ = post(url, "/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": "S", "messages": msgs}, hdr)
        assert status == 200
        time.sleep(0.3)
    [folder] = session_dirs(tmp_path / "root")
    assert folder.relative_to(tmp_path / "root").parts == ("claude", "0b7c1d2e-1111-4222-8333-944445555666")
    texts = [(e["role"], e["text"]) for e in events(folder) if e["kind"] == "message"]
    assert texts == [("system", "S"), ("user", "one"), ("assistant", "First answer."), ("user", "two"), ("assistant", "Second answer.")]
    usage = [e for e in events(folder) if e["kind"] == "usage"]
    assert [(u["input"], u["output"], u["cache_read"], u["cache_write"]) for u in usage] == [(50, 5, 10, 3)] * 2


@pytest.mark.parametrize("status", [429, 529])
def test_errors_pass_through_with_their_headers(tmp_path: Path, status: int) -> None:
    err = {"type": "error", "error": {"type": "rate_limit_error" if status == 429 else "overloaded_error", "message": "slow down"}}
    hdrs = {"Content-Type": "application/json", "retry-after": "17", "request-id": "req_err_1",
            "anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": "2026-12-07T20:00:00Z"}

    def answer(req: Request) -> Response:
        return Response(status, hdrs, [orjson.dumps(err)])

    with FakeHTTPServer(listen(), {"POST /v1/messages": answer}) as up, running_proxy(tmp_path / "root", up.origin) as (url, _):
        got, headers, raw, _ = post(url, "/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
                                    {"x-api-key": KEY})
    assert got == status and raw == orjson.dumps(err)
    for k, v in hdrs.items():
        assert headers[k.lower()] == v
    assert len(up.requests) == 1  # never retried by the proxy


def test_a_redirect_to_another_origin_is_not_followed(tmp_path: Path) -> None:
    with FakeHTTPServer(listen(), {}) as other:
        def answer(req: Request) -> Response:
            return Response(307, {"Location": other.origin + "/v1/messages", "Content-Type": "text/plain"}, [b"moved"])

        with FakeHTTPServer(listen(), {"POST /v1/messages": answer}) as up, running_proxy(tmp_path / "root", up.origin) as (url, _):
            got, headers, raw, _ = post(url, "/v1/messages", {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
                                        {"x-api-key": KEY, "Authorization": f"Bearer {KEY}"})
        assert got == 307 and headers["location"] == other.origin + "/v1/messages" and raw == b"moved"
        assert other.requests == []  # the other origin got nothing, no credential
        assert up.requests[0].headers["x-api-key"] == KEY


def test_a_body_over_the_cap_passes_through_unprocessed(tmp_path: Path) -> None:
    big = orjson.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x" * (50 << 20)}]})

    def answer(req: Request) -> Response:
        return json_response({"ok": len(req.body)})

    with FakeHTTPServer(listen(), {"POST /v1/messages": answer}) as up, running_proxy(tmp_path / "root", up.origin) as (url, _):
        got, _, raw, _ = post(url, "/v1/messages", big, {"x-api-key": KEY})
    assert got == 200 and orjson.loads(raw) == {"ok": len(big)}
    assert up.requests[0].body == big
    log = (tmp_path / "root" / "proxy.log").read_text().splitlines()
    assert len(log) == 1 and "over the cap" in log[0]
    assert session_dirs(tmp_path / "root") == []


def test_a_request_it_cannot_parse_passes_through_unchanged(tmp_path: Path) -> None:
    bad = b'{"model": "m", "messages": [{"role": "user", "content": "unterminated'

    def answer(req: Request) -> Response:
        return json_response({"type": "error", "error": {"type": "invalid_request_error", "message": "bad json"}}, 400)

    with FakeHTTPServer(listen(), {"POST /v1/messages": answer, "GET /v1/models": lambda r: json_response({"data": []})}) as up, \
            running_proxy(tmp_path / "root", up.origin) as (url, _):
        got, _, _, _ = post(url, "/v1/messages", bad, {"x-api-key": KEY})
        listed, _, raw, _ = post(url, "/v1/models", b"", {"Authorization": f"Bearer {KEY}"}, method="GET")
    assert got == 400 and up.requests[0].body == bad
    assert listed == 200 and raw == b'{"data":[]}'  # an unknown path passes through
    log = (tmp_path / "root" / "proxy.log").read_text().splitlines()
    assert len(log) == 1 and "forwarded unchanged" in log[0] and KEY not in log[0]


def test_an_edited_history_is_recorded_as_a_rewind_and_the_turn_again(tmp_path: Path) -> None:
    def answer(req: Request) -> Response:
        return json_response({"id": f"msg_{len(up.requests)}", "type": "message", "role": "assistant", "model": "m",
                              "content": [{"type": "text", "text": f"answer {len(up.requests)}"}], "stop_reason": "end_turn",
                              "usage": {"input_tokens": 5, "output_tokens": 2}})

    hdr = {"x-api-key": KEY, "x-claude-code-session-id": "rewound-1"}
    with FakeHTTPServer(listen(), {"POST /v1/messages": answer}) as up, running_proxy(tmp_path / "root", up.origin) as (url, _):
        one = [{"role": "user", "content": "first"}]
        post(url, "/v1/messages", {"model": "m", "max_tokens": 9, "messages": one}, hdr)
        time.sleep(0.3)
        two = [*one, {"role": "assistant", "content": [{"type": "text", "text": "answer 1"}]}, {"role": "user", "content": "second"}]
        post(url, "/v1/messages", {"model": "m", "max_tokens": 9, "messages": two}, hdr)
        time.sleep(0.3)
        edited = [*one, {"role": "assistant", "content": [{"type": "text", "text": "answer 1"}]}, {"role": "user", "content": "second, edited"}]
        post(url, "/v1/messages", {"model": "m", "max_tokens": 9, "messages": edited}, hdr)
        time.sleep(0.3)
    [folder] = session_dirs(tmp_path / "root")
    kinds = [(e["kind"], e.get("text") or e.get("to_turn")) for e in events(folder) if e["kind"] in ("message", "rewind")]
    assert kinds == [("message", "first"), ("message", "answer 1"), ("message", "second"), ("message", "answer 2"),
                     ("rewind", 1), ("message", "second, edited"), ("message", "answer 3")]
    view = subprocess.run([sys.executable, "-m", "catty_ctx", "resume", str(folder)], capture_output=True, text=True, env=proxy_env())
    assert [orjson.loads(x)["text"] for x in view.stdout.splitlines()] == ["first", "answer 1", "second, edited", "answer 3"]


def test_a_codex_call_is_named_by_its_sessions_running_totals_when_seen_from_the_first_request(tmp_path: Path) -> None:
    """The name a rollout gives the call too (docs/usage.md#counting-each-call-once); a Codex
    session first met mid-way keeps the response's id: its running totals are not known."""
    def answer(req: Request) -> Response:
        n = len(up.requests)
        return json_response({"id": f"resp_{n}", "object": "response", "model": "gpt-5.5", "status": "completed",
                              "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Answer {n}."}]}],
                              "usage": {"input_tokens": 100 * n, "input_tokens_details": {"cached_tokens": 40}, "output_tokens": 7,
                                        "output_tokens_details": {"reasoning_tokens": 3}, "total_tokens": 100 * n + 7}})

    def user(text: str) -> dict[str, Any]:
        return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}

    def said(text: str) -> dict[str, Any]:
        return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}

    with FakeHTTPServer(listen(), {"POST /v1/responses": answer}) as up, running_proxy(tmp_path / "root", up.origin) as (url, _):
        def ask(sid: str, items: list[dict[str, Any]]) -> None:
            status, _, raw, _ = post(url, "/v1/responses", {"model": "gpt-5.5", "instructions": "I", "input": items}, {"session-id": sid})
            assert status == 200, raw
            time.sleep(0.3)

        ask("sess-new", [user("one")])
        ask("sess-new", [user("one"), said("Answer 1."), user("two")])
        ask("sess-late", [user("zero"), said("Earlier."), user("three")])  # the proxy started after this session's first call
    names = {d.name: [e["request_id"] for e in events(d) if e["kind"] == "usage"] for d in session_dirs(tmp_path / "root")}
    assert names == {"sess-new": ["codex-session:sess-new:100,40,7,3", "codex-session:sess-new:300,80,14,6"], "sess-late": ["resp_3"]}

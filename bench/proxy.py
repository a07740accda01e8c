"""Benchmark: what `catty-ctx proxy` adds to a request, against a direct connection, in one run
(docs/proxy.md#speed).

- time to the first byte of a streamed answer to a 150,000-token Anthropic Messages request
  and to a Responses request of the same size (a coding session of ~2,000 messages; each
  request repeats the history and adds a turn, as an agent does), direct and through the
  proxy in the same run, median over the requests after the first (target: <= 10 ms added);
- latency per streamed chunk: the upstream stamps each chunk with the time it sent it, the
  client subtracts it from the time it got it (target: <= 1 ms added, median);
- the proxy's peak memory with 8 sessions sending such requests at once (target: <= 200 MB).

Run: python bench/proxy.py [--requests N] [--tokens T] [--gap SECONDS]
"""
from __future__ import annotations

import sys

# This file's folder comes first on sys.path and its inspect.py would shadow the stdlib's.
sys.path.pop(0)

import argparse
import asyncio
import http.client
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
EXTRA = [a for a in os.environ.get("BENCH_PROXY_ARGS", "").split() if a]
CHUNKS = 40  # events of each streamed answer
GAP_S = 0.005  # between two chunks the upstream sends


def session(tokens: int, seed: int = 0) -> list[dict[str, Any]]:
    """Anthropic messages of a coding session, about TOKENS tokens (bytes / 4)."""
    msgs: list[dict[str, Any]] = []
    n = 0
    size = 0
    while size < tokens * 4:
        call = f"toolu_{seed}_{n:05d}"
        out = f"output of step {n}\n" + "".join(f"{seed}:{n}:{i} some log line of a build\n" for i in range(20))
        turn = [{"role": "user", "content": f"step {n}: run the tests of module {n % 17} and tell me what failed"},
                {"role": "assistant", "content": [{"type": "text", "text": f"Running the tests of module {n % 17}."},
                                                  {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": f"pytest tests/m{n % 17}"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": out}]},
                {"role": "assistant", "content": [{"type": "text", "text": f"Module {n % 17}: two failures, both in the parser."}]}]
        msgs += turn
        size += len(orjson.dumps(turn))
        n += 1
    return msgs


def body(msgs: list[dict[str, Any]], extra: int) -> bytes:
    conv = [*msgs, *({"role": "assistant" if i % 2 else "user", "content": f"follow-up {i}"} for i in range(2 * extra)),
            {"role": "user", "content": f"follow-up {2 * extra}"}]
    return orjson.dumps({"model": "claude-sonnet-4-5", "max_tokens": 1000, "stream": True,
                         "system": [{"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}],
                         "messages": conv})


def responses_body(msgs: list[dict[str, Any]], extra: int) -> bytes:
    """The same session as a Responses request (Codex's shape: messages, function calls, outputs)."""
    inp: list[dict[str, Any]] = [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are a coding agent."}]}]
    for m in msgs:
        content = m["content"]
        if isinstance(content, str):
            inp.append({"type": "message", "role": m["role"], "content": [{"type": "input_text", "text": content}]})
            continue
        for b in content:
            if b["type"] == "text":
                kind = "output_text" if m["role"] == "assistant" else "input_text"
                inp.append({"type": "message", "role": m["role"], "content": [{"type": kind, "text": b["text"]}]})
            elif b["type"] == "tool_use":
                inp.append({"type": "function_call", "call_id": b["id"], "name": "shell", "arguments": orjson.dumps(b["input"]).decode()})
            elif b["type"] == "tool_result":
                inp.append({"type": "function_call_output", "call_id": b["tool_use_id"], "output": b["content"]})
    inp += [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"follow-up {i}"}]} for i in range(extra + 1)]
    return orjson.dumps({"model": "gpt-5-codex", "instructions": "You are Codex.", "stream": True, "store": False,
                         "prompt_cache_key": "bench", "input": inp})


# -- the upstream: aiohttp on its own loop in a thread -----------------------------------------------


async def answer(request: web.Request) -> web.StreamResponse:
    await request.read()
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    start = {"type": "message_start", "message": {"id": "msg_b", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                                                  "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}}
    await resp.write(b"event: message_start\ndata: " + orjson.dumps(start) + b"\n\n")
    await resp.write(b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n')
    for _ in range(CHUNKS):
        await asyncio.sleep(GAP_S)
        stamp = time.perf_counter_ns()
        delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"<{stamp}>"}}
        await resp.write(b"event: content_block_delta\ndata: " + orjson.dumps(delta) + b"\n\n")
    await resp.write(b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
                     b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":40}}\n\n'
                     b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    await resp.write_eof()
    return resp


async def responses_answer(request: web.Request) -> web.StreamResponse:
    await request.read()
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(b'event: response.created\ndata: {"type":"response.created","response":{"id":"resp_b","status":"in_progress"}}\n\n')
    for _ in range(CHUNKS):
        await asyncio.sleep(GAP_S)
        delta = {"type": "response.output_text.delta", "output_index": 0, "delta": f"<{time.perf_counter_ns()}>"}
        await resp.write(b"event: response.output_text.delta\ndata: " + orjson.dumps(delta) + b"\n\n")
    done = {"type": "response.completed", "response": {"id": "resp_b", "model": "gpt-5-codex", "status": "completed",
                                                        "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}],
                                                        "usage": {"input_tokens": 10, "output_tokens": 40}}}
    await resp.write(b"event: response.completed\ndata: " + orjson.dumps(done) + b"\n\n")
    await resp.write_eof()
    return resp


def start_upstream() -> int:
    ready: list[int] = []

    def run() -> None:
        loop = asyncio.new_event_loop()
        app = web.Application(client_max_size=1 << 30)
        app.router.add_post("/v1/messages", answer)
        app.router.add_post("/v1/responses", responses_answer)
        runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        ready.append(runner.addresses[0][1])
        loop.run_forever()

    threading.Thread(target=run, daemon=True).start()
    while not ready:
        time.sleep(0.01)
    return ready[0]


# -- the client ------------------------------------------------------------------------------------


def request(port: int, data: bytes, sid: str, path: str = "/v1/messages") -> tuple[float, list[float]]:
    """(time to the first body byte in s, the latency of each text chunk in s)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    t0 = time.perf_counter()
    if path == "/v1/messages":
        headers = {"Content-Type": "application/json", "x-api-key": "bench", "anthropic-version": "2023-06-01", "x-claude-code-session-id": sid}
    else:
        headers = {"Content-Type": "application/json", "Authorization": "Bearer bench", "session_id": sid}
    conn.request("POST", path, body=data, headers=headers)
    resp = conn.getresponse()
    first = resp.read1(65536)
    ttfb = time.perf_counter() - t0
    lat: list[float] = []
    buf = first
    while True:
        now = time.perf_counter_ns()
        for part in buf.split(b'":"<')[1:]:
            lat.append((now - int(part.split(b">", 1)[0])) / 1e9)
        buf = resp.read1(65536)
        if not buf:
            break
    conn.close()
    return ttfb, lat


def proxy(root: Path, upstream: int) -> tuple[subprocess.Popen[bytes], int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "catty_ctx", "proxy", "--listen", "127.0.0.1:0", "--root", str(root),
                             "--anthropic-upstream", f"http://127.0.0.1:{upstream}", "--openai-upstream", f"http://127.0.0.1:{upstream}",
                             "--summarizer", "extractive", *EXTRA], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    url = proc.stdout.readline().decode().strip()
    return proc, int(url.rsplit(":", 1)[1])


def cpu_s(pid: int) -> float:
    """User + system CPU time of process PID so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def request_path_cpu(msgs: list[dict[str, Any]], n: int) -> list[float]:
    """CPU seconds of the work done before a request is forwarded (parse, key, fingerprint
    chain, repair, compaction lookup, prune), in this process, for N requests after a first."""
    sys.path.insert(0, str(ROOT))
    from catty_ctx.proxy.anthropic import ANTHROPIC
    from catty_ctx.proxy.families import conversation_key
    from catty_ctx.proxy.lifecycle import Lifecycle, LifecycleOptions
    from catty_ctx.proxy.recorder import PendingRecord, Recorder
    from catty_ctx.proxy.reuse import ParseCache

    tmp = Path(tempfile.mkdtemp(prefix="proxy-bench-cpu-"))
    rec = Recorder(tmp)
    parses = ParseCache()
    life = Lifecycle(LifecycleOptions(steps=frozenset({"repair", "prune", "compact"})), print)
    out = []

    async def one(i: int) -> float:
        data = body(msgs, i)
        t = time.process_time()
        doc = orjson.loads(data)
        parsed, digests = parses.parse(ANTHROPIC, doc)
        agent, sid = conversation_key("anthropic", {"x-claude-code-session-id": "cpu"}, doc, parsed.items)
        conv = rec.open.get(rec.key(agent, sid, parsed.items)) or rec.conversation(agent, sid, parsed.items, model="m", window=200_000)
        pending = PendingRecord(rec, conv, parsed.items, digests)
        await life.apply(conv, ANTHROPIC, doc, parsed, pending, data)
        spent = time.process_time() - t
        pending.flush()
        return spent

    for i in range(n + 1):
        out.append(asyncio.run(one(i)))
    shutil.rmtree(tmp, ignore_errors=True)
    return out[1:]


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=15)
    ap.add_argument("--tokens", type=int, default=150_000)
    ap.add_argument("--gap", type=float, default=0.2, help="seconds between an answer's end and the next request (an agent's tool run)")
    args = ap.parse_args()
    upstream = start_upstream()
    tmp = Path(tempfile.mkdtemp(prefix="proxy-bench-"))
    proc, port = proxy(tmp / "root", upstream)
    try:
        msgs = session(args.tokens)
        print(f"request: {len(msgs)} messages, {len(body(msgs, 0)):,} bytes (~{len(body(msgs, 0)) // 4:,} tokens)")
        runs: dict[str, list[tuple[float, list[float]]]] = {"direct": [], "proxy": [], "direct-r": [], "proxy-r": []}
        cpu = 0.0
        for i in range(args.requests + 1):  # the same conversation growing by a turn; direct and proxy alternate
            data = body(msgs, i)
            runs["direct"].append(request(upstream, data, "bench-direct"))
            before = cpu_s(proc.pid)
            runs["proxy"].append(request(port, data, "bench-one"))
            time.sleep(args.gap)  # the answer's recording, after the stream, counted with its request
            cpu += cpu_s(proc.pid) - before if i else 0.0
            data = responses_body(msgs, i)
            runs["direct-r"].append(request(upstream, data, "bench-direct", "/v1/responses"))
            runs["proxy-r"].append(request(port, data, "bench-codex", "/v1/responses"))
            time.sleep(args.gap)
        ttfb = {k: statistics.median(t for t, _ in v[1:]) * 1000 for k, v in runs.items()}
        lat = {k: statistics.median(x for _, ls in v[1:] for x in ls) * 1000 for k, v in runs.items()}
        cold = runs["proxy"][0][0] * 1000
        load = os.getloadavg()
        for name, d, p in (("Anthropic Messages", "direct", "proxy"), ("Responses", "direct-r", "proxy-r")):
            print(f"time to first byte, {name}, median of {args.requests}: direct {ttfb[d]:.2f} ms, proxy {ttfb[p]:.2f} ms: "
                  f"+{ttfb[p] - ttfb[d]:.2f} ms added ({ttfb[p] / ttfb[d]:.2f}x; target <= +10 ms)")
        print(f"first request (records the whole history) {cold:.0f} ms; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} "
              f"on {os.cpu_count()} CPUs (wall times grow with it)")
        print(f"the proxy's CPU time per request (parse, lifecycle, forward, stream, record), mean of {args.requests}: "
              f"{cpu / args.requests * 1000:.1f} ms")
        path = request_path_cpu(msgs, args.requests)
        print(f"CPU of the request path before forwarding (parse, fingerprints, repair, prune), in-process, median of {args.requests}: "
              f"{statistics.median(path) * 1000:.1f} ms (min {min(path) * 1000:.1f})")
        for name, d, p in (("Anthropic Messages", "direct", "proxy"), ("Responses", "direct-r", "proxy-r")):
            print(f"latency per chunk, {name}, median: direct {lat[d]:.3f} ms, proxy {lat[p]:.3f} ms: "
                  f"+{lat[p] - lat[d]:.3f} ms (target <= +1 ms)")
        bodies = [body(session(args.tokens, seed=s), 0) for s in range(8)]
        for rnd in range(2):
            threads = [threading.Thread(target=request, args=(port, b, f"bench-c{s}")) for s, b in enumerate(bodies)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            bodies = [body(session(args.tokens, seed=s), rnd + 1) for s in range(8)]
        print(f"memory, 8 concurrent sessions of {len(bodies[0]):,} bytes: proxy peak {peak_rss_mb(proc.pid):.0f} MB (target <= 200 MB)")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

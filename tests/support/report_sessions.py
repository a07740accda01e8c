"""Sessions for the report's tests, built through the library as an agent would write them.

`rich_session` holds everything a page shows: tool calls and results, an error result, a
message carrying HTML (a script, an image and a stylesheet pointing at URL), a blob, a
subagent's usage and two compactions (the second a two-pass one that finds no note: at this
20,000-token window the fitted reserve leaves no room for one, so `--prefire` is refused).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

HOSTILE = '<script>alert("pwned")</script><img src="{url}/img.png"><link rel="stylesheet" href="{url}/x.css"><marquee>not moving</marquee>'


def _turn(i: int, *, big: int = 0) -> list[dict[str, Any]]:
    out = "x" * big if big else f"output of step {i}\n" * 40
    return [
        {"kind": "message", "id": f"u{i}", "role": "user", "text": f"Turn {i}: please look at file_{i}.py"},
        {"kind": "message", "id": f"a{i}", "role": "assistant", "text": f"Reading file_{i}.py."},
        {"kind": "tool_call", "call_id": f"c{i}", "name": "read_file", "args": {"path": f"file_{i}.py"}},
        {"kind": "tool_result", "call_id": f"c{i}", "output": out, "is_error": i % 5 == 0},
        {"kind": "usage", "model": "claude-sonnet-4-5", "input": 200 + 50 * i, "output": 80, "cache_read": 1500 * i, "cache_write": 100, "reasoning": 0},
        {"kind": "message", "id": f"a{i}.end", "role": "assistant", "text": f"Done with turn {i}."},
    ]


def rich_session(path: Path, *, url: str = "http://127.0.0.1:9") -> Path:
    from catty_ctx import compact_session, create_session
    from catty_ctx.session.blobs import externalize

    s = create_session(path, session_id="rich-1", window=20_000, model="claude-sonnet-4-5")
    s.append([{"kind": "message", "id": "sys", "role": "system", "text": "You are a test agent."}])
    s.append([ev for i in range(1, 6) for ev in _turn(i)])
    compact_session(s, force=True, mode="segments")
    s.append([ev for i in range(6, 10) for ev in _turn(i)])
    compact_session(s, force=True, two_pass=True)
    s.append([{"kind": "message", "id": "evil", "role": "user", "text": HOSTILE.format(url=url)}])
    big = [externalize(ev, path, user_limit=0, tool_limit=40_000) for ev in _turn(10, big=60_000)]
    s.append(big)
    s.append([{"kind": "usage", "agent": "explore-1", "model": "claude-haiku-4-5", "input": 500, "output": 50, "cache_read": 0, "cache_write": 0, "reasoning": 0}])
    s.append([ev for i in range(11, 14) for ev in _turn(i)])
    return path


def log_events(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (path / "updates.jsonl").read_bytes().splitlines()]

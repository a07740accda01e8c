"""The parse of a request reusing an earlier one gives what a full parse gives, on every
family: growing histories, moved breakpoints, rewinds, a call joining the assistant item the
cut falls after (docs/proxy.md#speed)."""
from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from catty_ctx.proxy.anthropic import ANTHROPIC
from catty_ctx.proxy.openai import CHAT, RESPONSES
from catty_ctx.proxy.recorder import chain
from catty_ctx.proxy.reuse import ParseCache, common_len


def same_as_full(cache: ParseCache, fam: Any, body: dict[str, Any]) -> None:
    body = orjson.loads(orjson.dumps(body))  # fresh objects, as each request's body is
    parsed, digests = cache.parse(fam, body)
    full = fam.parse(orjson.loads(orjson.dumps(body)))
    assert (parsed.items, parsed.locs, parsed.lead, parsed.marks) == (full.items, full.locs, full.lead, full.marks)
    assert digests == chain(full.items)


def anthropic_turn(n: int) -> list[dict[str, Any]]:
    call = f"toolu_{n}"
    return [{"role": "user", "content": f"step {n}"},
            {"role": "assistant", "content": [{"type": "text", "text": f"doing {n}"}, {"type": "tool_use", "id": call, "name": "Bash", "input": {"n": n}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": f"out {n}"}, {"type": "text", "text": "more"}]}]


def test_anthropic_growing_with_a_moving_breakpoint_and_a_rewind() -> None:
    cache = ParseCache()
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "lead"}]
    system = [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]
    for n in range(12):
        msgs += anthropic_turn(n)
        sent = copy.deepcopy(msgs)
        sent[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}  # the breakpoint on the last block, as Claude Code moves it
        same_as_full(cache, ANTHROPIC, {"system": system, "messages": sent})
    assert cache.reused > 0
    same_as_full(cache, ANTHROPIC, {"system": system, "messages": msgs[:10] + anthropic_turn(99)})  # a rewind
    same_as_full(cache, ANTHROPIC, {"system": "another system", "messages": msgs})  # another head: no reuse of the wrong items
    same_as_full(cache, ANTHROPIC, {"messages": msgs[1:4]})


def test_responses_calls_join_the_assistant_item_before_the_cut() -> None:
    cache = ParseCache()
    inp: list[dict[str, Any]] = [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "dev"}]},
                                 {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}]
    for n in range(8):
        inp.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"a{n}"}]})
        same_as_full(cache, RESPONSES, {"instructions": "be brief", "input": inp})
        # the next request adds calls that join the assistant item the previous request ended on
        inp.append({"type": "function_call", "call_id": f"c{n}", "name": "shell", "arguments": orjson.dumps({"cmd": n}).decode()})
        inp.append({"type": "reasoning", "summary": []})
        inp.append({"type": "custom_tool_call", "call_id": f"d{n}", "name": "apply_patch", "input": "x"})
        same_as_full(cache, RESPONSES, {"instructions": "be brief", "input": inp})
        inp.append({"type": "function_call_output", "call_id": f"c{n}", "output": "Process exited with code 1"})
        inp.append({"type": "custom_tool_call_output", "call_id": f"d{n}", "output": "ok"})
        same_as_full(cache, RESPONSES, {"instructions": "be brief", "input": inp})
    assert cache.reused > 0
    same_as_full(cache, RESPONSES, {"instructions": "be brief", "input": "a plain string"})


def test_chat_completions() -> None:
    cache = ParseCache()
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "s"}]
    for n in range(6):
        msgs += [{"role": "user", "content": f"u{n}"},
                 {"role": "assistant", "content": None, "tool_calls": [{"id": f"t{n}", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": f"t{n}", "content": "r"}]
        same_as_full(cache, CHAT, {"messages": msgs})
    assert cache.reused > 0


def test_common_len() -> None:
    a = list(range(100))
    for b in (a, a[:50], [*a[:97], -1, -2], [*a[:3], -1, *a[4:]], [-1, *a[1:]], [*a, 5, 6], []):
        want = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        assert common_len(a, b) == want, b[:5]


def test_the_proxy_collects_cyclic_garbage_between_requests() -> None:
    import gc
    import weakref

    pytest.importorskip("aiohttp")
    from catty_ctx.proxy.server import GC_YOUNG, collect_garbage

    class Node:
        pass

    gc.disable()
    try:
        gc.collect()
        a, b = Node(), Node()
        a.other, b.other = b, a  # type: ignore[attr-defined]
        gone = weakref.ref(a)
        del a, b
        collect_garbage()  # too few allocations yet: nothing is collected
        assert gone() is not None
        keep = [[] for _ in range(GC_YOUNG)]
        collect_garbage()
        assert gone() is None
        del keep
    finally:
        gc.enable()


def test_the_cache_is_bounded_by_conversations_and_bytes() -> None:
    from catty_ctx.proxy import reuse

    cache = ParseCache()
    for n in range(reuse.KEEP + 5):
        cache.parse(CHAT, {"messages": [{"role": "user", "content": f"conversation {n}"}]}, 100)
    assert len(cache.known) == reuse.KEEP and cache.size == 100 * reuse.KEEP
    big = reuse.KEEP_BYTES // 2 + 1
    cache.parse(CHAT, {"messages": [{"role": "user", "content": "a"}]}, big)
    cache.parse(CHAT, {"messages": [{"role": "user", "content": "b"}]}, big)  # the two are over the bound together
    assert len(cache.known) == 1 and cache.size == big
    cache.parse(CHAT, {"messages": [{"role": "user", "content": "c"}]}, 3 * reuse.KEEP_BYTES)  # the newest is always kept
    assert len(cache.known) == 1 and cache.size == 3 * reuse.KEEP_BYTES

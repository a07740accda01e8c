"""What every upstream request of a proxy test must satisfy, and how much of its prefix it shares
with the one before: checked on the bodies the fake upstream received."""
from __future__ import annotations

from typing import Any

import orjson


def strip_cc(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: strip_cc(x) for k, x in v.items() if k != "cache_control"}
    if isinstance(v, list):
        return [strip_cc(x) for x in v]
    return v


def count_cc(v: Any) -> int:
    if isinstance(v, dict):
        return ("cache_control" in v) + sum(count_cc(x) for x in v.values())
    if isinstance(v, list):
        return sum(count_cc(x) for x in v)
    return 0


def anthropic_problems(body: dict[str, Any]) -> list[str]:
    """Pairing, empty text blocks and breakpoints of one Messages request."""
    problems = []
    msgs = body["messages"]
    if count_cc(body) > 4:
        problems.append(f"{count_cc(body)} cache_control breakpoints")
    answered: set[str] = set()
    for i, m in enumerate(msgs):
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        for b in blocks:
            if b.get("type") == "text" and not b.get("text"):
                problems.append(f"message {i}: empty text block")
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
        for r in results:
            if r not in answered:
                problems.append(f"message {i}: result {r} answers no call of the message before")
        answered = set()
        if uses:
            nxt = msgs[i + 1] if i + 1 < len(msgs) else None
            got = [b["tool_use_id"] for b in (nxt["content"] if nxt and isinstance(nxt["content"], list) else []) if b.get("type") == "tool_result"]
            if sorted(got) != sorted(uses):
                problems.append(f"message {i}: calls {uses} answered by {got}")
            answered = set(uses)
    return problems


def responses_problems(body: dict[str, Any]) -> list[str]:
    calls: list[str] = []
    problems = []
    seen_out: set[str] = set()
    for x in body["input"]:
        t = x.get("type")
        if t in ("function_call", "custom_tool_call"):
            calls.append(x["call_id"])
        elif t in ("function_call_output", "custom_tool_call_output"):
            if x["call_id"] not in calls or x["call_id"] in seen_out:
                problems.append(f"output {x['call_id']} without its call (or twice)")
            seen_out.add(x["call_id"])
    problems += [f"call {c} unanswered" for c in calls if c not in seen_out]
    return problems


def same_tokens(m: Any) -> Any:
    """A message as the provider tokenises it: breakpoints left out, a string content the same
    as one text block (Claude Code sends the last message as blocks, to carry its breakpoint,
    and the same message as a string in the next request)."""
    m = strip_cc(m)
    if isinstance(m, dict) and isinstance(m.get("content"), str):
        m = {**m, "content": [{"type": "text", "text": m["content"]}]}
    return m


def prefix_reuse(prev: list[Any], cur: list[Any]) -> float:
    """The share of CUR's bytes (its messages as the provider tokenises them) in the messages
    it shares with PREV from the start: what a provider's prompt cache can reuse."""
    a = [orjson.dumps(same_tokens(m), option=orjson.OPT_SORT_KEYS) for m in prev]
    b = [orjson.dumps(same_tokens(m), option=orjson.OPT_SORT_KEYS) for m in cur]
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    total = sum(map(len, b))
    return sum(map(len, b[:n])) / total if total else 1.0


def cached_units(body: dict[str, Any]) -> list[Any]:
    """A request in the order a provider's prompt cache reads it: tools, system, then the
    conversation (Anthropic's messages, the Responses input, Chat's messages)."""
    head = [body.get("tools"), body.get("system", body.get("instructions"))]
    conv = body.get("messages", body.get("input"))
    return [*head, *(conv if isinstance(conv, list) else [conv])]

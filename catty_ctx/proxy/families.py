"""The API families the proxy understands, and the table that names a request's conversation
(docs/proxy.md#what-it-understands).

A family reads its requests as catty items (docs/spec.md#the-context-view), each with the
place in the native body it came from, and changes the native body in the few ways the
lifecycle asks (drop a result, answer a call, shorten a result, replace a span); everything
else of the body is left as it came. `FAMILIES` maps a request path to its family; any other
path is passed through untouched.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from ..importers.claude_events import usage_fields as anthropic_fields
from ..view.fingerprint import prefix_fp

Item = dict[str, Any]


class Loc(NamedTuple):
    """Where an item sits in the native body: a message (or input item) index, and the block
    index inside it for a tool result that is a content block (Anthropic), else -1. An
    assistant item merged from several input items (Responses) names its last one."""

    msg: int
    block: int = -1


Mark = tuple[int, int, bool, int | None]


@dataclass
class Parsed:
    """A request read as items. `lead`: the native messages at the front that a compaction
    keeps (system and developer messages before the conversation)."""

    items: list[Item]
    locs: list[Loc]
    lead: int = 0
    call_kinds: dict[str, str] = field(default_factory=dict)  # call id -> the native call type (Responses)
    # The parser's state before each native message and after the last: (items so far, lead,
    # still leading, the assistant item calls may join): where a later parse resumes (reuse.py).
    marks: list[Mark] = field(default_factory=list)


@dataclass
class Answer:
    """What an upstream answered, read from its stream or body: the items, the exact usage
    (catty's fields: input, output, cache_read, cache_write, reasoning) and the model."""

    items: list[Item] = field(default_factory=list)
    usage: dict[str, int] | None = None
    model: str | None = None
    request_id: str | None = None  # the response's own id (Anthropic's `msg_…`)
    header_id: str | None = None  # the upstream's `request-id` header, which Claude Code records as `requestId`


class Family:
    """What every family shares: its name, the agent name of a client that gives no session
    key, and the body key holding its conversation list."""

    name = ""
    client = ""
    list_key = "messages"

    def head(self, body: dict[str, Any]) -> Any:
        """What of BODY besides its list the items depend on (its system text)."""
        return None

    def parse(self, body: dict[str, Any]) -> Parsed:
        return self.parse_from(body, None, 0)[0]

    def parse_from(self, body: dict[str, Any], prev: Parsed | None, start: int) -> tuple[Parsed, int]:  # pragma: no cover - interface
        """BODY's items, the first START native messages read as PREV read them (the same head
        and messages); and how many leading items are PREV's unchanged (their digests hold)."""
        raise NotImplementedError

    @staticmethod
    def resume(prev: Parsed | None, start: int) -> tuple[int, list[Item], list[Loc], list[Mark], int, bool, int | None]:
        """Where a parse starts: native message START with PREV's items, locs and marks before
        it and the parser's state there, or (when PREV has no such message) the top."""
        if prev is None or not 0 < start < len(prev.marks):
            return 0, [], [], [], 0, True, None
        at, lead, leading, open_at = prev.marks[start]
        return start, prev.items[:at], prev.locs[:at], prev.marks[:start], lead, leading, open_at

    def messages(self, body: dict[str, Any]) -> list[Any]:
        msgs = body.get(self.list_key)
        if not isinstance(msgs, list):
            raise ValueError(f"no {self.list_key} list")
        return msgs


def strip_cache_control(value: Any) -> Any:
    """VALUE without `cache_control` keys: the client moves its breakpoints between requests,
    so the prefix a compaction is keyed by must not depend on them."""
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def native_prefix_fp(messages: list[Any], k: int) -> str:
    """The fingerprint (docs/spec.md#fingerprints) of the first K native messages, breakpoints left out."""
    return prefix_fp(strip_cache_control(m) for m in messages[:k])


# -- naming a conversation -----------------------------------------------------------------------

# (agent, where, name): the first rule a request answers names its conversation; `agent` None
# is the family's own client name. One entry per agent: adding one (a new header) is one line.
SESSION_KEYS: tuple[tuple[str | None, str, str], ...] = (
    ("claude", "header", "x-claude-code-session-id"),
    ("claude", "metadata", "user_id"),  # metadata.user_id: a JSON string holding session_id
    ("grok", "header", "x-grok-conv-id"),
    ("codex", "header", "session-id"),
    ("codex", "header", "session_id"),  # older releases
    ("codex", "header", "conversation_id"),
    (None, "body", "prompt_cache_key"),
)
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def _from_rule(where: str, name: str, headers: Any, body: dict[str, Any]) -> str | None:
    if where == "header":
        value = headers.get(name)
    elif where == "body":
        value = body.get(name)
    else:  # metadata.user_id: a JSON string (Claude Code) or a plain id
        meta = body.get("metadata")
        raw = meta.get(name) if isinstance(meta, dict) else None
        value = None
        if isinstance(raw, str) and raw.startswith("{"):
            try:
                doc = orjson.loads(raw)
            except orjson.JSONDecodeError:
                doc = None
            value = doc.get("session_id") if isinstance(doc, dict) else None
    return value if isinstance(value, str) and value else None


def opening(items: list[Item]) -> list[Item]:
    """The first two items, or fewer when a user message comes first: the same in every request
    of a conversation, from its first (Codex rewrites its context messages after the second)."""
    for i, item in enumerate(items[:2]):
        if item.get("role") == "user":
            return items[:i + 1]
    return items[:2]


def conversation_key(client: str, headers: Any, body: dict[str, Any], items: list[Item]) -> tuple[str, str]:
    """(agent, session id) of a request: by SESSION_KEYS, else the fingerprint of its opening items."""
    for agent, where, name in SESSION_KEYS:
        value = _from_rule(where, name, headers, body)
        if value is not None:
            sid = value if _SAFE_ID.fullmatch(value) and ".." not in value else prefix_fp([value])[:32]
            return agent or client, sid
    return client, prefix_fp(opening(items))[:32]


def count_breakpoints(value: Any) -> int:
    """How many `cache_control` breakpoints VALUE holds (Anthropic allows 4 a request)."""
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(count_breakpoints(v) for v in value.values())
    if isinstance(value, list):
        return sum(count_breakpoints(v) for v in value)
    return 0


def usage_fields(u: Any, *, openai: bool) -> dict[str, int] | None:
    """A provider's usage object as a `usage` event's counts (docs/spec.md#events): `input`
    without the cached part, `cache_read` and `cache_write` beside it."""
    if not isinstance(u, dict):
        return None

    def n(d: Any, key: str) -> int:
        v = d.get(key) if isinstance(d, dict) else None
        return v if type(v) is int and v > 0 else 0

    if not openai:
        return {**(anthropic_fields(u) or {}), "reasoning": 0}  # (as an import of the agent's transcript counts it)
    if "prompt_tokens" in u:  # Chat Completions
        cached = n(u.get("prompt_tokens_details"), "cached_tokens")
        return {"input": max(n(u, "prompt_tokens") - cached, 0), "output": n(u, "completion_tokens"), "cache_read": cached,
                "cache_write": 0, "reasoning": n(u.get("completion_tokens_details"), "reasoning_tokens")}
    cached = n(u.get("input_tokens_details"), "cached_tokens")  # Responses
    return {"input": max(n(u, "input_tokens") - cached, 0), "output": n(u, "output_tokens"), "cache_read": cached,
            "cache_write": 0, "reasoning": n(u.get("output_tokens_details"), "reasoning_tokens")}

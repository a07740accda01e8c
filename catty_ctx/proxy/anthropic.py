"""The Anthropic Messages API as the proxy reads and changes it (docs/proxy.md#what-it-understands).

Items: the `system` text, each message's text, an assistant's `tool_use` blocks as its
calls, a user message's `tool_result` blocks as tool items (in front of the text beside
them). Thinking, images, documents and server tools (`server_tool_use` with its
`*_tool_result` inside the same assistant message) are no items: they stay as they are and
are never paired or dropped. Changes keep every other block and field, and the client's
`cache_control` breakpoints stay on the blocks they were on.
"""
from __future__ import annotations

from typing import Any

import orjson

from ..importers.common import parse_args, text_of
from .families import Answer, Family, Item, Loc, Parsed, count_breakpoints, usage_fields

MAX_BREAKPOINTS = 4


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def assistant_item(blocks: list[Any]) -> Item:
    # One pass over the blocks: this runs for every assistant message of every request.
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for b in blocks:
        if type(b) is not dict:
            continue
        kind = b.get("type")
        if kind == "text":
            texts.append(b.get("text") or "")
        elif kind == "tool_use":
            args = b.get("input")
            calls.append({"call_id": str(b.get("id")), "name": str(b.get("name") or ""), "args": args if type(args) is dict else parse_args(args)})
    item: Item = {"role": "assistant", "text": "\n".join(texts)}
    if calls:
        item["tool_calls"] = calls
    return item


class AnthropicFamily(Family):
    name = "anthropic"
    client = "anthropic"

    def head(self, body: dict[str, Any]) -> Any:
        return body.get("system")

    def parse_from(self, body: dict[str, Any], prev: Parsed | None, start: int) -> tuple[Parsed, int]:
        msgs = self.messages(body)
        start, items, locs, marks, lead, leading, _ = self.resume(prev, start)
        if not start:
            system = body.get("system")
            if system:
                items.append({"role": "system", "text": text_of(system)})
                locs.append(Loc(-1))
        fresh = len(items)
        for mi in range(start, len(msgs)):
            m = msgs[mi]
            marks.append((len(items), lead, leading, None))
            if not isinstance(m, dict):
                raise ValueError(f"message {mi} is not an object")
            role = m.get("role")
            content = m.get("content")
            if role == "user" and type(content) is str:  # the common plain prompt
                leading = False
                items.append({"role": "user", "text": content})
                locs.append(Loc(mi))
                continue
            blocks = _blocks(content)
            if role == "system":  # Claude Code sends some system text as messages
                items.append({"role": "system", "text": text_of(m.get("content"))})
                locs.append(Loc(mi))
                lead = mi + 1 if leading else lead
                continue
            leading = False
            if role == "assistant":
                items.append(assistant_item(blocks))
                locs.append(Loc(mi))
                continue
            texts: list[str] = []
            results = 0
            for bi, b in enumerate(blocks):
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "tool_result":
                    items.append({"role": "tool", "call_id": str(b.get("tool_use_id")), "output": text_of(b.get("content")),
                                  "is_error": b.get("is_error") is True})
                    locs.append(Loc(mi, bi))
                    results += 1
                elif b.get("type") == "text":
                    texts.append(b.get("text") or "")
            if texts or not results:
                item: Item = {"role": "user", "text": "\n".join(texts)}
                if results:  # text sent beside tool results is not a new turn
                    item["synthetic"] = "with_results"
                items.append(item)
                locs.append(Loc(mi))
        marks.append((len(items), lead, leading, None))
        return Parsed(items, locs, lead, marks=marks), fresh

    def fix(self, body: dict[str, Any], drops: set[Loc], answers: dict[int, list[str]], text: str) -> None:
        """Drop the result blocks DROPS; answer the calls of each assistant message (by index) with TEXT."""
        msgs: list[Any] = list(self.messages(body))
        for mi in {loc.msg for loc in drops}:
            gone = {loc.block for loc in drops if loc.msg == mi}
            kept = [b for bi, b in enumerate(_blocks(msgs[mi].get("content"))) if bi not in gone]
            msgs[mi] = {**msgs[mi], "content": kept} if kept else None
        for ai in sorted(answers, reverse=True):
            blocks = [{"type": "tool_result", "tool_use_id": cid, "content": text, "is_error": True} for cid in answers[ai]]
            nxt = msgs[ai + 1] if ai + 1 < len(msgs) else None
            if ai + 1 < len(msgs) and nxt is None:
                msgs[ai + 1] = {"role": "user", "content": blocks}
            elif isinstance(nxt, dict) and nxt.get("role") == "user":
                content = _blocks(nxt.get("content"))
                at = 0
                while at < len(content) and isinstance(content[at], dict) and content[at].get("type") == "tool_result":
                    at += 1
                msgs[ai + 1] = {**nxt, "content": content[:at] + blocks + content[at:]}
            else:
                msgs.insert(ai + 1, {"role": "user", "content": blocks})
        body["messages"] = [m for m in msgs if m is not None]

    def set_output(self, body: dict[str, Any], loc: Loc, text: str) -> None:
        """The result at LOC holds TEXT: its message and block copied, never changed where the
        client's history (what compactions are keyed by) still holds them."""
        msgs = self.messages(body)
        content = list(msgs[loc.msg]["content"])
        content[loc.block] = {**content[loc.block], "content": text}
        msgs[loc.msg] = {**msgs[loc.msg], "content": content}

    def tail_ok(self, msgs: list[Any], k: int) -> bool:
        """Can the live tail start at message K (no result in it answers a call before it)?"""
        m = msgs[k]
        if m.get("role") == "assistant":
            return True
        return m.get("role") == "user" and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in _blocks(m.get("content")))

    def replace_span(self, body: dict[str, Any], lead: int, k: int, text: str) -> None:
        """Messages LEAD..K-1 become one user message holding TEXT (with a breakpoint of its own
        when the request has fewer than four, so the new prefix is cached)."""
        msgs = self.messages(body)
        block: dict[str, Any] = {"type": "text", "text": text}
        rest = {**body, "messages": msgs[:lead] + msgs[k:]}
        if count_breakpoints(rest) < MAX_BREAKPOINTS:
            block["cache_control"] = {"type": "ephemeral"}
        body["messages"] = [*msgs[:lead], {"role": "user", "content": [block]}, *msgs[k:]]

    def reader(self) -> AnthropicReader:
        return AnthropicReader()


class AnthropicReader:
    """The answer, from the SSE events (`event`) or the JSON body (`document`)."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.partial: dict[int, str] = {}
        self.usage: dict[str, Any] = {}
        self.model: str | None = None
        self.id: str | None = None
        self.done = False

    def event(self, name: str, data: bytes) -> None:
        doc = orjson.loads(data)
        kind = doc.get("type") if isinstance(doc, dict) else None
        if kind == "message_start":
            self.document(doc.get("message") or {}, final=False)
        elif kind == "content_block_start":
            self.blocks[doc["index"]] = dict(doc.get("content_block") or {})
        elif kind == "content_block_delta":
            i, delta = doc["index"], doc.get("delta") or {}
            if delta.get("type") == "text_delta":
                block = self.blocks.setdefault(i, {"type": "text", "text": ""})
                block["text"] = (block.get("text") or "") + (delta.get("text") or "")
            elif delta.get("type") == "input_json_delta":
                self.partial[i] = self.partial.get(i, "") + (delta.get("partial_json") or "")
        elif kind == "content_block_stop":
            i = doc["index"]
            if i in self.partial and i in self.blocks:
                raw = self.partial.pop(i)
                self.blocks[i]["input"] = orjson.loads(raw) if raw else {}
        elif kind == "message_delta":
            self.usage.update({k: v for k, v in (doc.get("usage") or {}).items() if v is not None})
        elif kind == "message_stop":
            self.done = True

    def document(self, msg: dict[str, Any], final: bool = True) -> None:
        self.model = msg.get("model") if isinstance(msg.get("model"), str) else self.model
        self.id = msg.get("id") if isinstance(msg.get("id"), str) else self.id
        self.usage.update(msg.get("usage") or {})
        for i, b in enumerate(msg.get("content") or []):
            if isinstance(b, dict):
                self.blocks[i] = b
        self.done = self.done or final

    def finish(self) -> Answer | None:
        if not self.done:
            return None
        blocks = [self.blocks[i] for i in sorted(self.blocks)]
        return Answer([assistant_item(blocks)], usage_fields(self.usage, openai=False), self.model, self.id)


ANTHROPIC = AnthropicFamily()

"""A fake Anthropic Messages API: `POST /v1/messages` (streamed as SSE, or one JSON body),
`POST /v1/messages/count_tokens`, answers from a script, every request recorded."""
from __future__ import annotations

import itertools
import socket
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from .http_fake import Request, Response, ScriptedModel, json_response, sse_response

DEFAULT_MODEL = "claude-sonnet-4-5"


@dataclass
class Reply:
    """One assistant message. `content` holds finished blocks (text, tool_use, thinking);
    `usage` overrides what the server would count (input_tokens: the request body's bytes / 4,
    output_tokens: the reply's). A large `input_tokens` is how a test pushes the client to
    compact on its own."""

    content: list[dict[str, Any]]
    stop_reason: str = "end_turn"
    usage: dict[str, int] = field(default_factory=dict)
    model: str | None = None  # None: the model the request named
    status: int = 200
    error: dict[str, Any] | None = None  # with status >= 400: the error body's "error"


def text(s: str, **usage: int) -> Reply:
    return Reply([{"type": "text", "text": s}], usage=usage)


def tool_use(name: str, input: dict[str, Any], *, text: str | None = None, id: str | None = None, **usage: int) -> Reply:
    """An assistant turn that calls `name` (e.g. "Bash" with {"command": ...}), optionally
    after a text block; its tool_result comes back in the client's next request."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks.append({"type": "tool_use", "id": id or f"toolu_{uuid.uuid4().hex[:24]}", "name": name, "input": input})
    return Reply(blocks, stop_reason="tool_use", usage=usage)


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks a request sends after the model's last turn. Not only in its last
    message: an MCP server that finished connecting during the turn adds its instructions after
    them, as a message of its own (Claude Code)."""
    messages = body["messages"]
    last_turn = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    return [b for m in messages[last_turn + 1:] if isinstance(m.get("content"), list) for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"]


def error(status: int, message: str, type: str = "invalid_request_error") -> Reply:
    return Reply([], status=status, error={"type": type, "message": message})


Script = Reply | Callable[[Request], Reply]


def _estimate_tokens(b: bytes | str) -> int:
    return max(1, len(b) // 4)


def _output_tokens(blocks: list[dict[str, Any]]) -> int:
    return sum(_estimate_tokens(orjson.dumps(b.get("text") or b.get("input") or b.get("thinking") or "")) for b in blocks)


class FakeAnthropic(ScriptedModel[Reply]):
    """Each `POST /v1/messages` takes the next script entry (see ScriptedModel); by default
    the spent script answers with a short text. `messages` are those requests in order."""

    model_route = "POST /v1/messages"

    def __init__(self, sock: socket.socket, script: Iterable[Script] = (), fallback: Script | None = None) -> None:
        self._ids = itertools.count(1)
        super().__init__(sock, {
            "POST /v1/messages": self._messages,
            "POST /v1/messages/count_tokens": self._count_tokens,
        }, script, fallback or (lambda req: text("(the script has no more replies)")))

    @property
    def base_url(self) -> str:
        """ANTHROPIC_BASE_URL for the client (it appends /v1/messages itself)."""
        return self.origin

    @property
    def messages(self) -> list[Request]:
        return self.calls

    def _count_tokens(self, req: Request) -> Response:
        return json_response({"input_tokens": _estimate_tokens(req.body)})

    def _messages(self, req: Request) -> Response:
        reply = self.next_reply(req)
        body = req.json or {}
        if reply.status >= 400:
            return json_response({"type": "error", "error": reply.error or {"type": "api_error", "message": "error"}}, reply.status)
        usage = {"input_tokens": _estimate_tokens(req.body), "output_tokens": _output_tokens(reply.content),
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, **reply.usage}
        message = {"id": f"msg_fake{next(self._ids):06d}{uuid.uuid4().hex[:8]}", "type": "message", "role": "assistant",
                   "model": reply.model or body.get("model") or DEFAULT_MODEL, "content": reply.content,
                   "stop_reason": reply.stop_reason, "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            return json_response(message)
        start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        events: list[tuple[str, Any]] = [("message_start", {"type": "message_start", "message": start})]
        for i, block in enumerate(reply.content):
            events += _block_events(i, block)
        events.append(("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                                         "usage": usage}))
        events.append(("message_stop", {"type": "message_stop"}))
        return sse_response(events)


def _block_events(i: int, block: dict[str, Any]) -> list[tuple[str, Any]]:
    kind = block["type"]
    if kind == "text":
        empty, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
    elif kind == "tool_use":
        empty = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": orjson.dumps(block["input"]).decode()}
    elif kind == "thinking":
        empty, delta = {"type": "thinking", "thinking": "", "signature": ""}, {"type": "thinking_delta", "thinking": block["thinking"]}
    else:
        raise ValueError(f"no stream form for a {kind!r} block")
    events: list[tuple[str, Any]] = [
        ("content_block_start", {"type": "content_block_start", "index": i, "content_block": empty}),
        ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
    ]
    if kind == "thinking":
        events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                               "delta": {"type": "signature_delta", "signature": block.get("signature", "c2ln")}}))
    events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    return events

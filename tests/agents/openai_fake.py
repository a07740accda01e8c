"""A fake OpenAI Responses API for Codex: `POST /v1/responses` (SSE), `GET /v1/models`,
answers from a script (messages, function calls such as exec_command, usage), every request
recorded."""
from __future__ import annotations

import itertools
import socket
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from .http_fake import Request, Response, ScriptedModel, json_response, sse_response

DEFAULT_MODEL = "gpt-5.1-codex"


@dataclass
class Turn:
    """One response: its output items (assistant messages, function calls, reasoning) and its
    usage (input_tokens defaults to the request body's bytes / 4). An `input_tokens` above the
    client's model_auto_compact_token_limit is how a test makes Codex compact."""

    output: list[dict[str, Any]]
    usage: dict[str, Any] = field(default_factory=dict)
    status: int = 200
    error: dict[str, Any] | None = None  # with status >= 400: the error body's "error"
    failed: dict[str, Any] | None = None  # a streamed response.failed with this error


def message(text: str, **usage: Any) -> Turn:
    return Turn([_message_item(text)], usage=usage)


def function_call(name: str, arguments: dict[str, Any], *, text: str | None = None, call_id: str | None = None,
                  namespace: str | None = None, **usage: Any) -> Turn:
    """A call the client runs and answers in its next request (`function_call_output` with the
    same call_id), e.g. function_call("exec_command", {"cmd": "echo hi"}); an MCP tool is
    called in its server's namespace: function_call("TOOL", {...}, namespace="mcp__SERVER")."""
    items = [_message_item(text)] if text else []
    call = {"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:24]}", "call_id": call_id or f"call_{uuid.uuid4().hex[:24]}",
            "name": name, "arguments": orjson.dumps(arguments).decode(), "status": "completed"}
    if namespace:
        call["namespace"] = namespace
    items.append(call)
    return Turn(items, usage=usage)


def exec_command(cmd: str, **kw: Any) -> Turn:
    return function_call("exec_command", {"cmd": cmd}, **kw)


def error(status: int, message: str, type: str = "invalid_request_error") -> Turn:
    return Turn([], status=status, error={"type": type, "message": message, "code": None})


def _message_item(text: str) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{uuid.uuid4().hex[:24]}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def counts(req: Request, turn: Turn) -> tuple[int, int]:
    """(input, output) tokens of TURN answering REQ: its usage's, else the body's bytes / 4
    and a sixteenth of each output item's bytes."""
    inp = int(turn.usage.get("input_tokens", max(1, len(req.body) // 4)))
    out = int(turn.usage.get("output_tokens", sum(max(1, len(orjson.dumps(i)) // 16) for i in turn.output)))
    return inp, out


Script = Turn | Callable[[Request], Turn]


class FakeResponses(ScriptedModel[Turn]):
    """Each `POST /v1/responses` takes the next script entry (see ScriptedModel); by default
    the spent script answers with a short message. `responses` are those requests in order."""

    model_route = "POST /v1/responses"

    def __init__(self, sock: socket.socket, script: Iterable[Script] = (), fallback: Script | None = None,
                 models: Iterable[str] = (DEFAULT_MODEL,)) -> None:
        self.models = list(models)
        self._ids = itertools.count(1)
        super().__init__(sock, {
            "POST /v1/responses": self._responses,
            "GET /v1/models": self._models,
        }, script, fallback or (lambda req: message("(the script has no more replies)")))

    @property
    def base_url(self) -> str:
        """The provider's base_url for config.toml."""
        return self.origin + "/v1"

    @property
    def responses(self) -> list[Request]:
        return self.calls

    def _models(self, req: Request) -> Response:
        return json_response({"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models]})

    def _responses(self, req: Request) -> Response:
        return self.stream(req, self.next_reply(req))

    def stream(self, req: Request, turn: Turn, **extra_usage: Any) -> Response:
        """TURN as the SSE events of a response to REQ (EXTRA_USAGE added to its usage)."""
        if turn.status >= 400:
            return json_response({"error": turn.error or {"type": "server_error", "message": "error"}}, turn.status)
        body = req.json or {}
        rid = f"resp_fake{next(self._ids):06d}{uuid.uuid4().hex[:8]}"
        inp, out = counts(req, turn)
        usage = {"input_tokens": inp,
                 "input_tokens_details": {"cached_tokens": int(turn.usage.get("cached_tokens", 0))},
                 "output_tokens": out,
                 "output_tokens_details": {"reasoning_tokens": int(turn.usage.get("reasoning_tokens", 0))},
                 "total_tokens": inp + out, **extra_usage}
        model = body.get("model") or DEFAULT_MODEL
        head = {"id": rid, "object": "response", "created_at": 0, "model": model, "status": "in_progress", "output": []}
        events: list[tuple[str, Any]] = [("response.created", {"type": "response.created", "response": head})]
        for i, item in enumerate(turn.output):
            events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": i,
                                                          "item": {**item, "status": "in_progress"}}))
            if item["type"] == "message":
                for j, part in enumerate(item["content"]):
                    events.append(("response.output_text.delta", {"type": "response.output_text.delta", "item_id": item["id"],
                                                                  "output_index": i, "content_index": j, "delta": part["text"]}))
            events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": i, "item": item}))
        if turn.failed is not None:
            events.append(("response.failed", {"type": "response.failed", "response": {**head, "status": "failed", "error": turn.failed}}))
        else:
            events.append(("response.completed", {"type": "response.completed",
                                                  "response": {**head, "status": "completed", "output": turn.output, "usage": usage}}))
        return sse_response([(e, {**d, "sequence_number": n}) for n, (e, d) in enumerate(events)])

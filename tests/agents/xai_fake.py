"""A fake xAI API for Grok Build: `POST /v1/responses` (SSE, the main loop of a model whose
catalogue entry says `api_backend: responses`), `POST /v1/chat/completions` (SSE chunks, the
main loop of any other model), `GET /v1/models` (the catalogue, with the context window that
decides when grok compacts). Main-loop calls take the script (openai_fake's `Turn`s); grok's
side calls (session title, turn summary, title refresh, compaction) are answered here without
touching the script and kept in `side_calls`. Every usage carries `cost_in_usd_ticks`."""
from __future__ import annotations

import itertools
import socket
import time
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from .http_fake import Request, Response, json_response
from .openai_fake import FakeResponses, Turn, counts, function_call, message

DEFAULT_MODEL = "grok-4.6"
WINDOW = 200_000
TICKS_PER_TOKEN = 1_000  # the fake's price: 10^-7 USD a token, so costs are checkable
SIDE_PREFIXES = ("xai-title-refresh-", "xai-turn-summary-", "xai-compact-", "xai-recap-")
# A summary grok accepts (it rejects one under ~500 characters as degenerate and retries).
SUMMARY = ("<summary>\n1. Primary Request and Intent: the user asked to run the tests and fix parse.py.\n"
           "2. Key Technical Concepts: pytest, a parser returning the wrong number.\n"
           "3. Files and Code Sections: parse.py (parse() must return 3).\n"
           "4. Errors and Fixes: test_parse failed; parse.py was fixed.\n"
           "5. Problem Solving: the tests were run, the failure read, the function corrected.\n"
           "6. All User Messages: run the tests; fix it; check the file.\n"
           "7. Pending Tasks: none known.\n8. Current Work: checking parse.py after the fix.\n"
           "9. Optional Next Step: run the tests again to confirm they pass now.\n</summary>")


def run(command: str, description: str = "run a command", **usage: Any) -> Turn:
    """A `run_terminal_command` call (grok's shell tool); its output comes back next request."""
    return function_call("run_terminal_command", {"command": command, "description": description}, **usage)


def write(file_path: str, content: str, **usage: Any) -> Turn:
    return function_call("write", {"file_path": file_path, "content": content}, **usage)


def spawn(prompt: str, description: str = "look around", background: bool = False, **usage: Any) -> Turn:
    """A `spawn_subagent` call (in the foreground unless BACKGROUND): grok runs a child session whose model calls take the next
    script entries, then answers the parent's call with the child's result."""
    return function_call("spawn_subagent", {"prompt": prompt, "description": description, "background": background}, **usage)


def title_call(req: Request) -> bool:
    choice = (req.json or {}).get("tool_choice")
    return isinstance(choice, dict) and "session_title" in orjson.dumps(choice).decode()


class FakeXai(FakeResponses):
    """`FakeResponses` plus grok's routes. `models` entries become catalogue rows with
    `context_window` = `window`; `script` holds main-loop (and subagent) calls only."""

    def __init__(self, sock: socket.socket, script: Iterable[Turn | Callable[[Request], Turn]] = (),
                 fallback: Turn | Callable[[Request], Turn] | None = None, models: Iterable[str] = (DEFAULT_MODEL,),
                 window: int = WINDOW, backend: str = "responses", summary: str = SUMMARY) -> None:
        self.window = window
        self.backend = backend
        self.summary = summary
        self.side_calls: list[Request] = []
        self._chunks = itertools.count(1)
        super().__init__(sock, script, fallback or (lambda req: message("(the script has no more replies)")), models)
        self.routes["POST /v1/chat/completions"] = self._chat
        self.model_routes = ("POST /v1/responses", "POST /v1/chat/completions")

    @property
    def calls(self) -> list[Request]:
        """Main-loop requests (either API), in order; side calls left out."""
        side = {id(r) for r in self.side_calls}
        return [r for r in self.requests if r.route in self.model_routes and id(r) not in side]

    def compactions(self) -> list[Request]:
        return [r for r in self.side_calls if r.headers.get("x-grok-req-id", "").startswith("xai-compact-")]

    def _models(self, req: Request) -> Response:
        return json_response({"object": "list", "data": [
            {"id": m, "model": m, "object": "model", "created": 0, "owned_by": "fake", "api_backend": self.backend,
             "context_window": self.window, "auto_compact_threshold_percent": 85} for m in self.models]})

    def _side(self, req: Request) -> Turn | None:
        if title_call(req):
            return function_call("session_title", {"title": "Fake session title"})
        rid = req.headers.get("x-grok-req-id", "")
        if rid.startswith(SIDE_PREFIXES):
            return message(self.summary if rid.startswith("xai-compact-") else "A short summary of the turn.")
        return None

    def _turn(self, req: Request) -> Turn:
        side = self._side(req)
        if side is not None:
            with self._lock:
                self.side_calls.append(req)
            return side
        return self.next_reply(req)

    def _responses(self, req: Request) -> Response:
        turn = self._turn(req)
        return self.stream(req, turn, cost_in_usd_ticks=self._ticks(req, turn))

    @staticmethod
    def _ticks(req: Request, turn: Turn) -> int:
        if "cost_in_usd_ticks" in turn.usage:
            return int(turn.usage["cost_in_usd_ticks"])
        return sum(counts(req, turn)) * TICKS_PER_TOKEN

    def _chat(self, req: Request) -> Response:
        turn = self._turn(req)
        if turn.status >= 400:
            return json_response({"error": turn.error or {"type": "server_error", "message": "error"}}, turn.status)
        body = req.json or {}
        model = body.get("model") or DEFAULT_MODEL
        cid = f"chatcmpl-fake{next(self._chunks):06d}"
        base = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return b"data: " + orjson.dumps({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + b"\n\n"

        out = [chunk({"role": "assistant", "content": ""})]
        calls = 0
        for item in turn.output:
            if item["type"] == "message":
                out.append(chunk({"content": "".join(p["text"] for p in item["content"])}))
            elif item["type"] == "function_call":
                out.append(chunk({"tool_calls": [{"index": calls, "id": item["call_id"], "type": "function",
                                                  "function": {"name": item["name"], "arguments": item["arguments"]}}]}))
                calls += 1
        out.append(chunk({}, "tool_calls" if calls else "stop"))
        inp, outp = counts(req, turn)
        usage = {"prompt_tokens": inp, "completion_tokens": outp, "total_tokens": inp + outp,
                 "prompt_tokens_details": {"cached_tokens": int(turn.usage.get("cached_tokens", 0))},
                 "completion_tokens_details": {"reasoning_tokens": int(turn.usage.get("reasoning_tokens", 0))},
                 "cost_in_usd_ticks": self._ticks(req, turn)}
        out.append(b"data: " + orjson.dumps({**base, "choices": [], "usage": usage}) + b"\n\n")
        out.append(b"data: [DONE]\n\n")
        return Response(200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}, out)


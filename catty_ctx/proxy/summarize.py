"""The proxy's summariser: the client's own upstream, with the client's credentials
(docs/proxy.md#what-it-changes-in-a-request).

When no `--summarizer` is named, both passes of a conversation's compaction are written by
the model the conversation talks to: the summary request goes to the upstream URL the
client's request went to, in the client's API (Anthropic Messages, Responses, Chat
Completions), with the client's headers (its `x-api-key` / `Authorization`, API version and
betas) and its model. The headers live only in memory and in the pipe to pass 1's process:
no argument, environment variable, log line, artifact or session file holds them, and the
transport follows no redirect to another origin. Its spend is recorded as compaction spend
(`usage` events of agent `compaction`, purpose `prefire` or `compaction`).
"""
from __future__ import annotations

import time
from typing import Any

import orjson

from ..compact.ladder import Prompt, StreamTimer, Transient
from ..compact.summarizers import ModelSummarizer, check_status
from ..compact.transport import post
from ..defaults import MAX_RESPONSE_BYTES
from .anthropic import ANTHROPIC
from .openai import CHAT, RESPONSES
from .sse import Tee

UPSTREAM = "upstream"  # the --summarizer value (the default) naming this summariser
FAMILIES = {f.name: f for f in (ANTHROPIC, RESPONSES, CHAT)}
# The client's headers that describe its body or its connection, not who it is: never copied.
NOT_COPIED = frozenset({"content-type", "content-length", "content-encoding", "accept", "accept-encoding", "transfer-encoding",
                        "connection", "keep-alive", "host", "te", "trailer", "upgrade", "proxy-authorization", "proxy-connection"})
MAX_TOKENS = 8192  # of an Anthropic summary (the API needs a bound)
TIMEOUT_S = 600.0


def client_headers(headers: Any) -> dict[str, str]:
    """The headers of the client's request a summary request carries (its credentials among them)."""
    return {str(k): str(v) for k, v in headers.items() if k.lower() not in NOT_COPIED}


class UpstreamSummarizer(ModelSummarizer):
    """One summary request to URL in FAMILY's API, with HEADERS and MODEL; streamed."""

    def __init__(self, family: str, url: str, headers: dict[str, str], model: str, *, timeout: float = TIMEOUT_S, **kw: Any) -> None:
        super().__init__(**kw)
        self.family = FAMILIES[family]
        self.url, self.headers, self.model = url, headers, model
        self.id = f"{UPSTREAM}:{model}"
        self.timeout = timeout

    def __repr__(self) -> str:  # never the headers
        return f"UpstreamSummarizer({self.family.name}, {self.model})"

    def spec(self) -> dict[str, Any]:
        """What pass 1's process needs to make the same summariser (sent through its stdin only)."""
        return {"family": self.family.name, "url": self.url, "headers": self.headers, "model": self.model}

    def body(self, prompt: Prompt) -> bytes:
        name = self.family.name
        if name == "anthropic":
            doc: dict[str, Any] = {"model": self.model, "max_tokens": MAX_TOKENS, "system": prompt.system,
                                   "messages": [{"role": "user", "content": prompt.user}], "stream": True}
        elif name == "responses":
            doc = {"model": self.model, "instructions": prompt.system, "stream": True, "store": False,
                   "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt.user}]}]}
        else:
            doc = {"model": self.model, "messages": prompt.messages(), "stream": True, "stream_options": {"include_usage": True}}
        return orjson.dumps(doc)

    def call_once(self, prompt: Prompt, timer: StreamTimer) -> tuple[str, dict[str, Any] | None]:
        headers = {**self.headers, "Content-Type": "application/json", "Accept": "text/event-stream", "Accept-Encoding": "identity"}
        with post(self.url, self.body(prompt), headers, timeout=self.timeout, max_bytes=MAX_RESPONSE_BYTES) as answer:
            check_status(answer)
            tee = Tee(self.family, {k: answer.header(k) for k in ("Content-Type", "Content-Encoding")})
            for chunk in answer.lines() if tee.sse else (answer.body(),):
                if tee.feed(chunk) or not tee.sse:  # (a line completes one event at most)
                    timer.delta(time.monotonic())
            try:
                got = tee.answer()
            except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
                raise Transient(f"malformed answer ({type(exc).__name__})") from None
        if tee.error is not None:
            raise Transient(f"malformed answer ({type(tee.error).__name__})")
        if got is None:
            raise Transient("the answer ended before its last event")
        text = "\n".join(it.get("text") or "" for it in got.items if it.get("role") == "assistant")
        usage: dict[str, Any] | None = dict(got.usage) if got.usage is not None else None
        if usage is not None and got.request_id:
            usage["request_id"] = got.request_id
        return text, usage


def summarizer_of(spec: Any) -> Any:
    """The summariser a pass-1 job names: a spec string (`extractive`, `cmd:…`, `openai:…`) or an upstream's spec()."""
    if isinstance(spec, dict):
        return UpstreamSummarizer(str(spec["family"]), str(spec["url"]), {str(k): str(v) for k, v in spec["headers"].items()}, str(spec["model"]))
    return str(spec)

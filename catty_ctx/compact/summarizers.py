"""The summarisers, and the registry that names them (`get_summarizer`).

- `extractive`: offline and deterministic (see `extractive.py`).
- `cmd:CMD`: the prompt on CMD's stdin, the summary from its stdout; no shell unless CMD
  itself is one (`cmd:sh -c '…'`).
- `openai:MODEL`: an OpenAI-compatible `/chat/completions` endpoint over stdlib http.client
  (`transport.py`: no redirect to another origin, one deadline, a cap on the answer),
  streamed, with streaming timings kept by an O(1) accumulator.

Both model summarisers run the ladder of `ladder.py`.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Iterable
from typing import Any

import orjson

from ..defaults import MAX_RESPONSE_BYTES
from ..errors import UsageError
from .extractive import ExtractiveSummarizer
from .ladder import (
    ATTEMPTS_PER_STAGE,
    BACKOFF_S,
    CMD_TIMEOUT_S,
    HTTP_TIMEOUT_S,
    MIN_SUMMARY_CHARS,
    Deterministic,
    Overflow,
    Prompt,
    StreamTimer,
    Summarizer,
    SummaryRequest,
    SummaryResult,
    Transient,
    run_ladder,
)


def _env_backoff() -> float:
    """CATTY_CTX_RETRY_BACKOFF (seconds before the second attempt), else grok-build's 3 s."""
    env = os.environ.get("CATTY_CTX_RETRY_BACKOFF")
    if not env:
        return BACKOFF_S
    try:
        value = float(env)
    except ValueError:
        value = -1.0
    if value < 0:
        raise UsageError(f"CATTY_CTX_RETRY_BACKOFF={env!r} is not a number of seconds")
    return value


class ModelSummarizer(Summarizer):
    def __init__(self, *, attempts: int = ATTEMPTS_PER_STAGE, backoff: float | None = None, min_chars: int = MIN_SUMMARY_CHARS) -> None:
        self.attempts = attempts
        self.backoff = backoff if backoff is not None else _env_backoff()
        self.min_chars = min_chars

    model: str | None = None  # what the ledger names the spend by (the id when None)

    def call_once(self, prompt: Prompt, timer: StreamTimer) -> str | tuple[str, dict[str, Any] | None]:  # pragma: no cover - interface
        raise NotImplementedError

    timeout: float = 0.0  # a transport's own bound on one call (seconds); each sets its own

    def summarize(self, req: SummaryRequest) -> SummaryResult:
        return run_ladder(self.id, req, self._bounded_call, attempts=self.attempts, backoff=self.backoff, min_chars=self.min_chars)

    def _bounded_call(self, prompt: Prompt, timer: StreamTimer) -> str | tuple[str, dict[str, Any] | None]:
        """One call whose timeout is at most what is left of the compaction's deadline, whatever
        the transport (each reads `self.timeout`)."""
        own = self.timeout
        if timer.ends is None or not own:
            return self.call_once(prompt, timer)
        self.timeout = timer.time_left(own)
        try:
            return self.call_once(prompt, timer)
        finally:
            self.timeout = own


# -- cmd:CMD ---------------------------------------------------------------------------------


# How a command says its input is too long for its model, so the ladder moves on: exit
# status 3, or (with any non-zero status) this line on its stderr.
CMD_OVERFLOW_STATUS = 3
CMD_OVERFLOW_LINE = "context_length_exceeded"
# How it says a failure is worth retrying after a wait (sysexits' EX_TEMPFAIL); any other
# non-zero status is final: the same input would fail the same way.
CMD_TEMPFAIL_STATUS = 75


class CmdSummarizer(ModelSummarizer):
    """The prompt on the command's stdin, the summary from its stdout (argv, no shell)."""

    def __init__(self, command: str, *, timeout: float = CMD_TIMEOUT_S, **kw: Any) -> None:
        super().__init__(**kw)
        try:
            self.argv = shlex.split(command)
        except ValueError as exc:
            raise UsageError(f"--summarizer cmd:{command}: {exc}") from None
        if not self.argv:
            raise UsageError("--summarizer cmd: needs a command (cmd:CMD)")
        self.id = f"cmd:{command}"
        self.timeout = timeout

    def call_once(self, prompt: Prompt, timer: StreamTimer) -> str:
        try:
            proc = subprocess.run(self.argv, input=prompt.text().encode(), capture_output=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise Transient(f"{self.argv[0]} did not answer within {self.timeout:g}s") from None
        except OSError as exc:
            raise Deterministic(f"cannot run {self.argv[0]}: {exc.strerror}") from None
        timer.delta(time.monotonic())
        tail = proc.stderr.decode(errors="replace").strip().splitlines()
        if proc.returncode == CMD_OVERFLOW_STATUS or (proc.returncode != 0 and CMD_OVERFLOW_LINE in (t.strip() for t in tail)):
            raise Overflow(f"{self.argv[0]} reported its input too long (exit {proc.returncode})")
        if proc.returncode == CMD_TEMPFAIL_STATUS:
            raise Transient(f"{self.argv[0]} exited {proc.returncode} (a temporary failure)" + (f": {tail[-1]}" if tail else ""))
        if proc.returncode != 0:
            raise Deterministic(f"{self.argv[0]} exited {proc.returncode}" + (f": {tail[-1]}" if tail else ""))
        return proc.stdout.decode(errors="replace")


# -- openai:MODEL ----------------------------------------------------------------------------

_OVERFLOW_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context window",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "request too large",
)
DEFAULT_BASE_URL = "https://api.openai.com/v1"


def is_overflow(status: int, body: str) -> bool:
    low = body.lower()
    return status == 413 or (status == 400 and any(m in low for m in _OVERFLOW_MARKERS))


class OpenAISummarizer(ModelSummarizer):
    """An OpenAI-compatible /chat/completions endpoint, streamed (stdlib http.client: no new dependency)."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None, timeout: float = HTTP_TIMEOUT_S,
                 max_response_bytes: int = MAX_RESPONSE_BYTES, **kw: Any) -> None:
        super().__init__(**kw)
        if not model:
            raise UsageError("--summarizer openai: needs a model (openai:MODEL)")
        self.model = model
        self.id = f"openai:{model}"
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if self.base_url == DEFAULT_BASE_URL and not self.api_key:
            raise UsageError("openai summariser: set OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint)")
        self.timeout = timeout  # the whole request: connection, answer and body (transport.py)
        self.max_response_bytes = max_response_bytes

    def call_once(self, prompt: Prompt, timer: StreamTimer) -> tuple[str, dict[str, Any] | None]:
        from .transport import post

        # include_usage: the stream's last chunk carries the tokens the provider counted.
        body = orjson.dumps({"model": self.model, "messages": prompt.messages(), "stream": True, "stream_options": {"include_usage": True}})
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        with post(f"{self.base_url}/chat/completions", body, headers, timeout=self.timeout, max_bytes=self.max_response_bytes) as answer:
            check_status(answer)
            if "text/event-stream" in answer.header("Content-Type"):
                return _read_sse(answer.lines(), timer)
            data = answer.body()
            timer.delta(time.monotonic())
            return _message_content(data), _usage_of(data)


def check_status(answer: Any) -> None:
    """Raise what an error answer means to the ladder: Overflow, Transient (5xx, 408, 409, 429) or Deterministic."""
    if answer.status < 400:
        return
    from .transport import error_text

    text = error_text(answer)
    if is_overflow(answer.status, text):
        raise Overflow(f"HTTP {answer.status}: {_error_message(text)}")
    if answer.status >= 500 or answer.status in (408, 409, 429):
        raise Transient(f"HTTP {answer.status}: {_error_message(text)}")
    raise Deterministic(f"HTTP {answer.status}: {_error_message(text)}")


def _error_message(text: str) -> str:
    try:
        doc = orjson.loads(text)
        err = doc.get("error") if isinstance(doc, dict) else None
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
    except orjson.JSONDecodeError:
        pass
    return " ".join(text.split())[:300] or "(no body)"


def _message_content(data: bytes) -> str:
    try:
        doc = orjson.loads(data)
        content = doc["choices"][0]["message"]["content"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        raise Transient("malformed response (no choices[0].message.content)") from None
    return content if isinstance(content, str) else ""


def provider_usage(raw: Any, request_id: Any = None) -> dict[str, Any] | None:
    """An OpenAI `usage` object as the ledger's fields (None when absent or malformed)."""
    if not isinstance(raw, dict):
        return None
    inp, out = raw.get("prompt_tokens"), raw.get("completion_tokens")
    if type(inp) is not int or type(out) is not int:
        return None
    fields: dict[str, Any] = {"input": inp, "output": out}
    cached = (raw.get("prompt_tokens_details") or {}).get("cached_tokens") if isinstance(raw.get("prompt_tokens_details"), dict) else None
    if type(cached) is int and 0 < cached <= inp:
        fields["input"], fields["cache_read"] = inp - cached, cached
    reasoning = (raw.get("completion_tokens_details") or {}).get("reasoning_tokens") if isinstance(raw.get("completion_tokens_details"), dict) else None
    if type(reasoning) is int and reasoning > 0:
        fields["reasoning"] = reasoning
    if isinstance(request_id, str) and request_id:
        fields["request_id"] = request_id
    return fields


def _usage_of(data: bytes) -> dict[str, Any] | None:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return provider_usage(doc.get("usage"), doc.get("id")) if isinstance(doc, dict) else None


def _read_sse(lines: Iterable[bytes], timer: StreamTimer) -> tuple[str, dict[str, Any] | None]:
    parts: list[str] = []
    usage: dict[str, Any] | None = None
    for raw in lines:
        line = raw.strip()
        if not line.startswith(b"data:"):
            continue
        payload = line[5:].strip()
        if payload == b"[DONE]":
            break
        try:
            doc = orjson.loads(payload)
        except orjson.JSONDecodeError:
            raise Transient("malformed stream chunk") from None
        if isinstance(doc, dict) and doc.get("error"):
            raise Transient(f"stream error: {_error_message(orjson.dumps(doc).decode())}")
        if isinstance(doc, dict) and doc.get("usage"):
            usage = provider_usage(doc["usage"], doc.get("id")) or usage
        try:
            content = doc["choices"][0]["delta"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            continue
        if content:
            timer.delta(time.monotonic())
            parts.append(content)
    return "".join(parts), usage


# -- choosing one ----------------------------------------------------------------------------


def get_summarizer(spec: str | Summarizer, **options: Any) -> Summarizer:
    """`extractive`, `cmd:CMD` or `openai:MODEL` (options: attempts, backoff, min_chars, timeout; max_response_bytes for openai:);
    a summariser already made (the proxy's, which calls its client's upstream) is itself."""
    if isinstance(spec, Summarizer):
        return spec
    if spec == "extractive":
        return ExtractiveSummarizer()
    kind, _, rest = spec.partition(":")
    if kind == "cmd" and rest:
        options.pop("max_response_bytes", None)  # (a command's answer is its stdout)
        return CmdSummarizer(rest, **options)
    if kind == "openai" and rest:
        return OpenAISummarizer(rest, **options)
    raise UsageError(f"unknown summariser '{spec}' (use extractive, cmd:CMD or openai:MODEL)")

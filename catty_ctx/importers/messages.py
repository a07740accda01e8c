"""OpenAI chat and Anthropic messages arrays (a JSON file) → catty-ctx events.

Many frameworks save a conversation as the request they would send: a `messages` array
(or an object holding one, with `system`, `model` and `usage` beside it). OpenAI's form
carries tool calls on the assistant message and results as `tool` messages; Anthropic's
carries `tool_use` / `tool_result` content blocks. Such files hold no timestamps, so every
event gets the file's `created` time when it has one, else the epoch: the same file always
gives the same events. A file of one message object per line is read too.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..session.layout import blob_handle
from .common import SHAPE_ERRORS, EventBuilder, Warn, content_blocks, not_recognised, shape_error, split_data_url, text_of
from .reading import iter_jsonl, load_json

WHAT = {"openai": "an OpenAI messages array", "anthropic": "an Anthropic messages array"}
_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def _load(path: Path, report: Any, lenient: bool, warn: Warn | None) -> Any:
    if path.suffix == ".jsonl":  # one message object per line
        return [line.record for line in iter_jsonl(path, report=report, lenient=lenient, warn=warn)]
    return load_json(path)


def _messages(doc: Any) -> tuple[list[Any], dict[str, Any]]:
    if isinstance(doc, list):
        return doc, {}
    if isinstance(doc, dict):
        for key in ("messages", "conversation", "history"):
            if isinstance(doc.get(key), list):
                return doc[key], doc
    return [], {}


def _usage_fields(u: Any) -> dict[str, Any] | None:
    """OpenAI (prompt/completion, cached inside prompt) or Anthropic usage → catty-ctx fields."""
    if not isinstance(u, dict):
        return None

    def n(d: Any, key: str) -> int:
        v = d.get(key) if isinstance(d, dict) else None
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0

    if "prompt_tokens" in u or "completion_tokens" in u:
        cached = n(u.get("prompt_tokens_details"), "cached_tokens")
        return {"input": max(n(u, "prompt_tokens") - cached, 0), "output": n(u, "completion_tokens"), "cache_read": cached,
                "reasoning": n(u.get("completion_tokens_details"), "reasoning_tokens")}
    if "input_tokens" in u or "output_tokens" in u:
        return {"input": n(u, "input_tokens"), "output": n(u, "output_tokens"),
                "cache_read": n(u, "cache_read_input_tokens"), "cache_write": n(u, "cache_creation_input_tokens")}
    return None


class _Converter:
    def __init__(self, b: EventBuilder, model: str | None, ts: Any) -> None:
        self.b = b
        self.model = model
        self.ts = ts
        self.n_calls = 0

    def image(self, part: dict[str, Any]) -> dict[str, Any] | None:
        if part.get("type") == "image_url":
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            split = split_data_url(url) if isinstance(url, str) else None
            return self.b.image(*split) if split else None
        src = part.get("source")
        if isinstance(src, dict) and src.get("type") == "base64" and isinstance(src.get("data"), str):
            return self.b.image(src.get("media_type"), src["data"])
        return None

    def content(self, value: Any) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[str]]:
        """(text, images, tool_use blocks, tool_result blocks, thinking) of a content value."""
        if isinstance(value, str) or value is None:
            return value or "", [], [], [], []
        texts: list[str] = []
        images: list[dict[str, Any]] = []
        uses: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        thinking: list[str] = []
        for part in content_blocks(value):
            ptype = part.get("type")
            if ptype in ("text", "input_text", "output_text"):
                texts.append(part.get("text") or "")
            elif ptype in ("image_url", "image"):
                img = self.image(part)
                if img:
                    images.append(img)
            elif ptype == "tool_use":
                uses.append(part)
            elif ptype == "tool_result":
                results.append(part)
            elif ptype == "thinking":
                thinking.append(part.get("thinking") or "")
            else:
                self.b.skip(f"block:{ptype}")
        return "\n".join(texts), images, uses, results, thinking

    def message(self, i: int, m: dict[str, Any]) -> None:
        b, ts = self.b, self.ts
        role = m.get("role")
        mid = str(m.get("id") or f"m{i}")
        text, images, uses, results, thinking = self.content(m.get("content"))
        if role in ("tool", "function"):
            call_id = m.get("tool_call_id") or (f"fn{self.n_calls}" if role == "function" else None)
            b.tool_result(str(call_id), text, is_error=m.get("is_error") is True, ts=ts, images=images or None)
            return
        if role == "user" and results and not text and not images:
            for r in results:
                self.result(r)
            return
        for r in results:
            self.result(r)
        b.message(str(role), text, id=mid, ts=ts, images=images or None)
        for t in thinking:
            b.reasoning(t, ts=ts)
        for call in m.get("tool_calls") or ():
            if isinstance(call, dict):
                fn = call["function"] if isinstance(call.get("function"), dict) else {}
                b.tool_call(str(call.get("id")), str(fn.get("name") or ""), fn.get("arguments"), ts=ts)
        fc = m.get("function_call")
        if isinstance(fc, dict):  # the legacy single function call
            self.n_calls += 1
            b.tool_call(f"fn{self.n_calls}", str(fc.get("name") or ""), fc.get("arguments"), ts=ts)
        for u in uses:
            b.tool_call(str(u.get("id")), str(u.get("name") or ""), u.get("input"), ts=ts)
        usage = _usage_fields(m.get("usage"))
        if usage is not None and role == "assistant":
            b.usage(m.get("model") if isinstance(m.get("model"), str) else self.model, **usage, ts=ts)

    def result(self, r: dict[str, Any]) -> None:
        content = r.get("content")
        text, images, _, _, _ = self.content(content) if isinstance(content, list) else (text_of(content), [], [], [], [])
        self.b.tool_result(str(r.get("tool_use_id")), text, is_error=r.get("is_error") is True, ts=self.ts, images=images or None)


def convert(source: Path, start: Any, *, flavour: str = "openai", lenient: bool = False, warn: Warn | None = None,
            session_id: str | None = None) -> EventBuilder:
    path = source
    report = start.report
    if path.is_dir():
        raise not_recognised(str(path), WHAT[flavour] + " file")
    doc = _load(path, report, lenient, warn)
    msgs, top = _messages(doc)
    msgs = [m for m in msgs if isinstance(m, dict)]
    if not any(m.get("role") in _ROLES for m in msgs):
        raise not_recognised(str(path), WHAT[flavour])
    sid = top.get("id") if isinstance(top.get("id"), str) else None
    model = top.get("model") if isinstance(top.get("model"), str) else None
    ts = top.get("created_at") or top.get("created") or None
    # No id in the file: name the session after its content, so the same file gives the same id.
    b = start(session_id=sid or blob_handle(path.read_bytes())[:16], ts=ts, model=model, source_path=path)
    conv = _Converter(b, model, ts)
    system = top.get("system")
    if system:
        text = system if isinstance(system, str) else text_of(system)
        b.message("system", text, id="system", ts=ts)
    for i, m in enumerate(msgs):
        role = m.get("role")
        if role not in _ROLES:
            b.skip(f"role:{role}")
            continue
        try:
            conv.message(i, m)
        except SHAPE_ERRORS as exc:
            shape_error(exc, path=f"{path} (message {i})", line=None, report=report, lenient=lenient, warn=warn)
    usage = _usage_fields(top.get("usage"))
    if usage is not None:
        b.usage(model, **usage, ts=ts)
    return b

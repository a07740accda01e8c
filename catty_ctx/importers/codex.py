"""Codex CLI rollouts (`sessions/YYYY/MM/DD/rollout-*.jsonl`) → catty-ctx events.

Codex writes `{timestamp, type, payload}` lines: `session_meta`, `response_item` (what the
model saw), `event_msg` (what the UI showed: copies of messages, token counts),
`turn_context` and `compacted`. The importer takes messages and tool calls from
`response_item` only (so nothing is imported twice), turns harness context blocks into
synthetic messages, and derives usage from `token_count` the way `UsageTracker` says.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ..errors import UsageError
from .common import SHAPE_ERRORS, EventBuilder, Warn, iter_jsonl, not_recognised, shape_error, split_data_url, text_of

FORMAT = "codex"
WHAT = "a Codex CLI session"
_LINE_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_ITEM_TYPES = ("message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
                         "custom_tool_call_output", "local_shell_call", "web_search_call")
# User-role text that the harness injects: context for the model, not a user turn.
_HARNESS_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>",
                     "<user_shell_command>", "<turn_aborted>", "<permissions instructions>")


# -- usage (shared with the usage ledger) ------------------------------------------------------


def _n(d: Any, key: str) -> int:
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


class UsageTracker:
    """`token_count` events → per-request usage.

    Codex repeats a token_count when nothing new happened; only a change of the cumulative
    `total_token_usage` marks a new request, whose own counts are `last_token_usage`.
    Codex's input includes cached tokens: input = input − cached, cache_read = cached.
    """

    def __init__(self) -> None:
        self.model: str | None = None
        self._last_total: tuple[int, ...] | None = None

    def turn_context(self, payload: dict[str, Any]) -> None:
        if isinstance(payload.get("model"), str):
            self.model = payload["model"]

    def token_count(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        info = payload.get("info")
        if not isinstance(info, dict):
            return None
        total = info.get("total_token_usage")
        last = info.get("last_token_usage")
        if not isinstance(last, dict):
            return None
        key = tuple(_n(total, k) for k in ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens"))
        if key == self._last_total:
            return None
        self._last_total = key
        cached = _n(last, "cached_input_tokens")
        return {
            "model": self.model,
            "input": max(_n(last, "input_tokens") - cached, 0),
            "cache_read": cached,
            "output": _n(last, "output_tokens"),
            "reasoning": _n(last, "reasoning_output_tokens"),
        }


# -- conversion --------------------------------------------------------------------------------


_AGENTS_HEADER = "# AGENTS.md instructions for "


def instructions_from(text: str) -> dict[str, str]:
    """{path: text} of the instruction files in a harness block (`<user_instructions>`, AGENTS.md)."""
    body = text.strip()
    for tag in ("user_instructions", "INSTRUCTIONS"):
        if body.startswith(f"<{tag}>") and body.endswith(f"</{tag}>"):
            body = body[len(tag) + 2 : -len(tag) - 3].strip()
            break
    else:
        if not body.startswith(_AGENTS_HEADER):
            return {}
    if body.startswith(_AGENTS_HEADER):
        first, _, rest = body.partition("\n")
        path = first[len(_AGENTS_HEADER):].strip()
        return {(path.rstrip("/") + "/AGENTS.md") if path else "AGENTS.md": rest.strip()}
    return {"AGENTS.md": body}


def _is_harness(text: str) -> bool:
    return text.lstrip().startswith(_HARNESS_PREFIXES)


def _normalise(rec: dict[str, Any]) -> tuple[str, dict[str, Any], Any] | None:
    """(line type, payload, ts) for the current layout and the older one of bare items."""
    rtype = rec.get("type")
    if rtype in _LINE_TYPES and isinstance(rec.get("payload"), dict):
        return rtype, rec["payload"], rec.get("timestamp")
    if rtype in _ITEM_TYPES:
        return "response_item", rec, rec.get("timestamp")
    if rtype is None and isinstance(rec.get("id"), str) and "timestamp" in rec:
        return "session_meta", rec, rec.get("timestamp")  # the older first line
    return None


def find_session_file(source: Path, session_id: str | None) -> Path:
    if source.is_file():
        return source
    files = sorted(source.rglob("rollout-*.jsonl"))
    if session_id:
        files = [p for p in files if p.stem.endswith(session_id)]
        if not files:
            raise UsageError(f"{source}: no Codex session {session_id} in this tree")
    if len(files) == 1:
        return files[0]
    if not files:
        raise not_recognised(str(source), WHAT)
    raise UsageError(f"{source}: holds {len(files)} sessions; name one with --session ID")


class _Converter:
    def __init__(self, b: EventBuilder, tracker: UsageTracker) -> None:
        self.b = b
        self.tracker = tracker
        self.context: dict[str, tuple[Any, str]] = {}  # prompt-context part -> (value, source)
        self.instructions: dict[str, str] = {}

    def item(self, p: dict[str, Any], ts: Any, lineno: int) -> None:
        b = self.b
        itype = p.get("type")
        if itype == "message":
            self.message(p, ts, lineno)
        elif itype == "reasoning":
            summary = p.get("summary")
            text = "\n".join(text_of(s.get("text")) for s in summary if isinstance(s, dict)) if isinstance(summary, list) else ""
            b.reasoning(text, ts=ts, encrypted=bool(p.get("encrypted_content")))
        elif itype == "function_call":
            b.tool_call(str(p.get("call_id") or p.get("id")), str(p.get("name") or ""), p.get("arguments"), ts=ts)
        elif itype == "custom_tool_call":
            b.tool_call(str(p.get("call_id") or p.get("id")), str(p.get("name") or ""), p.get("input"), ts=ts)
        elif itype == "local_shell_call":
            action = p.get("action") if isinstance(p.get("action"), dict) else {}
            b.tool_call(str(p.get("call_id") or p.get("id")), "local_shell", action, ts=ts)
        elif itype in ("function_call_output", "custom_tool_call_output"):
            self.output(p, ts)
        elif itype == "compaction":
            b.compaction("[summary encrypted by the provider]", id=f"line-{lineno}", ts=ts, summarizer="codex-remote")
        else:
            b.skip(f"response_item:{itype}")

    def message(self, p: dict[str, Any], ts: Any, lineno: int) -> None:
        role = p.get("role")
        if role not in ("user", "assistant", "developer", "system"):
            self.b.skip(f"message:{role}")
            return
        texts: list[str] = []
        images: list[dict[str, Any]] = []
        for part in p.get("content") or ():
            if not isinstance(part, dict):
                continue
            if part.get("type") in ("input_text", "output_text", "text"):
                texts.append(part.get("text") or "")
            elif part.get("type") == "input_image":
                url = part.get("image_url")
                split = split_data_url(url) if isinstance(url, str) else None
                img = self.b.image(*split) if split else None
                if img:
                    images.append(img)
        text = "\n".join(texts)
        synthetic = "harness_context" if role == "user" and texts and all(_is_harness(t) for t in texts) else None
        mid = str(p.get("id") or f"line-{lineno}")
        self.b.message(role, text, id=mid, ts=ts, images=images or None, synthetic=synthetic)
        if synthetic:
            found = instructions_from(text)
            if found:
                # the instructions facet is what a compaction's head carries forward
                self.instructions.update(found)
                self.b.state("instructions", [{"path": k, "text": v} for k, v in self.instructions.items()], ts=ts)

    def output(self, p: dict[str, Any], ts: Any) -> None:
        out = p.get("output")
        is_error = False
        if isinstance(out, dict):  # older files: {content, success}
            is_error = out.get("success") is False
            out = out.get("content")
        images: list[dict[str, Any]] = []
        if isinstance(out, list):
            texts = []
            for part in out:
                if isinstance(part, dict) and part.get("type") == "input_image" and isinstance(part.get("image_url"), str):
                    split = split_data_url(part["image_url"])
                    img = self.b.image(*split) if split else None
                    if img:
                        images.append(img)
                else:
                    texts.append(text_of([part]))
            text = "\n".join(texts)
        else:
            text = text_of(out)
            if text.startswith("{") and '"exit_code"' in text:
                import orjson

                try:
                    meta = orjson.loads(text).get("metadata") or {}
                    is_error = is_error or (isinstance(meta.get("exit_code"), int) and meta["exit_code"] != 0)
                except (orjson.JSONDecodeError, AttributeError):
                    pass
        self.b.tool_result(str(p.get("call_id")), text, is_error=is_error, ts=ts, images=images or None)


def _meta_context(meta: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """Prompt-context parts from session_meta: {part: (value, source)}."""
    parts: dict[str, tuple[Any, str]] = {"audience": ("main", "codex: a rollout file is one main session")}
    if isinstance(meta.get("cli_version"), str):
        parts["agent_version"] = (f"codex {meta['cli_version']}", "codex: session_meta.cli_version")
    if isinstance(meta.get("cwd"), str):
        parts["environment.cwd"] = (meta["cwd"], "codex: session_meta.cwd")
    git = meta.get("git")
    if isinstance(git, dict) and isinstance(git.get("branch"), str):
        parts["environment.git_branch"] = (git["branch"], "codex: session_meta.git.branch")
    return parts


def _snapshot(context: dict[str, tuple[Any, str]]) -> dict[str, Any]:
    from ..snapshot import snapshot_value

    return snapshot_value({k: v for k, (v, _) in context.items()}, {k: src for k, (_, src) in context.items()})


def convert(source: Path, start: Any, *, lenient: bool = False, warn: Warn | None = None, session_id: str | None = None) -> EventBuilder:
    path = find_session_file(source, session_id)
    report = start.report
    tracker = UsageTracker()
    conv: _Converter | None = None
    for line in iter_jsonl(path, report=report, lenient=lenient, warn=warn, what=WHAT):
        norm = _normalise(line.record)
        if norm is None:
            report.skipped[str(line.record.get("type"))] += 1
            continue
        ltype, payload, ts = norm
        if conv is None:
            # session_meta is the first line; a file without one is named after itself.
            meta = payload if ltype == "session_meta" else {}
            parent = meta.get("forked_from_id")
            b = start(
                session_id=str(meta.get("id") or path.stem),
                ts=meta.get("timestamp") or ts,
                cwd=meta.get("cwd") if isinstance(meta.get("cwd"), str) else None,
                model=meta.get("model") if isinstance(meta.get("model"), str) else None,
                parent_session_id=parent if isinstance(parent, str) else None,
                source_path=path,
            )
            conv = _Converter(b, tracker)
            conv.context = _meta_context(meta)
            b.state("prompt_context", _snapshot(conv.context), ts=ts)
            instructions = meta.get("instructions")
            if isinstance(instructions, str) and instructions.strip():
                b.message("user", instructions, id=f"{meta.get('id') or path.stem}:instructions", ts=ts, synthetic="harness_context")
                conv.instructions["AGENTS.md"] = instructions
                b.state("instructions", [{"path": "AGENTS.md", "text": instructions}], ts=ts)
            if ltype == "session_meta":
                continue
        if ltype == "session_meta":
            report.skipped["session_meta:again"] += 1  # a resumed or forked file repeats it
            continue
        try:
            _dispatch(conv, tracker, ltype, payload, ts, line.lineno)
        except SHAPE_ERRORS as exc:
            shape_error(exc, path=line.path, line=line.lineno, report=report, lenient=lenient, warn=warn)
    if conv is None:
        raise not_recognised(str(path), WHAT)
    return conv.b


def _dispatch(conv: _Converter, tracker: UsageTracker, ltype: str, payload: dict[str, Any], ts: Any, lineno: int) -> None:
    b = conv.b
    if ltype == "response_item":
        conv.item(payload, ts, lineno)
    elif ltype == "turn_context":
        tracker.turn_context(payload)
        before = dict(conv.context)
        for key, part in (("model", "model"), ("cwd", "environment.cwd"), ("approval_policy", "approval_policy"), ("effort", "reasoning_effort")):
            if isinstance(payload.get(key), str) and payload[key]:
                conv.context[part] = (payload[key], f"codex: turn_context.{key}")
        if conv.context != before:  # a new snapshot only when the context changed
            b.state("prompt_context", _snapshot(conv.context), ts=ts)
    elif ltype == "event_msg":
        if payload.get("type") == "token_count":
            info = payload.get("info")
            window = info.get("model_context_window") if isinstance(info, dict) else None
            if type(window) is int and window > 0:
                b.window = window
            usage = tracker.token_count(payload)
            if usage is not None:
                b.usage(usage.pop("model"), **usage, ts=ts)
        else:
            b.skip(f"event_msg:{payload.get('type')}")  # UI copies of response items
    elif ltype == "compacted":
        b.compaction(text_of(payload.get("message")), id=f"line-{lineno}", ts=ts, summarizer="codex")

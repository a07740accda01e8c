"""Codex CLI records → events: usage from token counts, the harness's injected text, messages
shown only by the UI (and the UI's copies of response items), calls and their outputs, a
fork's inherited prefix, rollbacks and compactions. See `codex` for the format."""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import orjson

from ..view.snapshot import snapshot_value
from .common import EventBuilder, split_data_url, text_of, to_ts

_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")
# How Codex says a tool failed in the output text itself: a patch it could not apply, or a
# header line (before "Output:") with a non-zero exit code (exec_command, apply_patch).
_PATCH_FAILED = "apply_patch verification failed"
_EXIT_LINE = re.compile(r"^(?:Exit code:|Process exited with code) (-?\d+)\r?$", re.MULTILINE)
# User-role text that the harness injects: context for the model, not a user turn.
_HARNESS_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>",
                     "<user_shell_command>", "<turn_aborted>", "<permissions instructions>")
# event_msg types that open one of the session's own turns; a forked copy never holds them.
TURN_STARTS = ("task_started", "turn_started")


# -- usage (shared with the usage ledger) ------------------------------------------------------


def _n(d: Any, key: str) -> int:
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


_TOTAL_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")


class UsageTracker:
    """`token_count` events → per-request usage.

    Codex repeats a token_count when nothing new happened; only a change of the cumulative
    `total_token_usage` marks a new request, whose own counts are `last_token_usage` (in
    files without it: what the totals moved by). Codex's input includes cached tokens:
    input = input − cached, cache_read = cached. The same rule as the usage ledger's.
    """

    def __init__(self) -> None:
        self.model: str | None = None
        self._last_total: tuple[int, ...] | None = None

    def turn_context(self, payload: dict[str, Any]) -> None:
        if isinstance(payload.get("model"), str) and payload["model"]:
            self.model = payload["model"]

    def token_count(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        info = payload.get("info")
        if not isinstance(info, dict) or not isinstance(info.get("total_token_usage"), dict):
            return None
        total = info["total_token_usage"]
        key = tuple(_n(total, k) for k in _TOTAL_KEYS)
        if key == self._last_total:
            return None
        before = self._last_total or (0,) * len(_TOTAL_KEYS)
        self._last_total = key
        last = info.get("last_token_usage")
        if not isinstance(last, dict):
            last = {k: max(a - b, 0) for k, a, b in zip(_TOTAL_KEYS, key, before)}
        inp = _n(last, "input_tokens")
        cached = min(_n(last, "cached_input_tokens"), inp)
        return {
            "model": self.model,
            "input": inp - cached,
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


def is_harness(text: str) -> bool:
    return text.lstrip().startswith(_HARNESS_PREFIXES)


def words(text: str) -> str:
    return " ".join(text.split())


def _copies(event_text: str, item_text: str) -> bool:
    """Whether an event's message text is the UI's copy of a response item's.

    The same text, but for spacing, or the item's text ending or starting with it (an item
    with images carries placeholders around the words the user typed).
    """
    if event_text == item_text:
        return True
    e, i = words(event_text), words(item_text)
    return e == i or (bool(e) and (i.startswith(e) or i.endswith(e)))


class Converter:
    def __init__(self, b: EventBuilder, tracker: UsageTracker, *, own_id: str, own_ts: str | None, parent: str | None) -> None:
        self.b = b
        self.tracker = tracker
        self.context: dict[str, tuple[Any, str]] = {}  # prompt-context part -> (value, source)
        self.instructions: dict[str, str] = {}
        self.own_id = own_id
        self.own_ts = own_ts
        self.parent = parent
        # Messages only an event_msg has shown so far: (role, text, images, ts, line). A
        # response item with the same text replaces one; anything else in the conversation
        # writes them first, so they keep their place.
        self.pending: list[tuple[str, str, list[str], Any, int]] = []
        # Texts of response-item messages whose event_msg copy has not come yet, per role
        # (reset at each user turn: a copy follows its item closely).
        self.seen: dict[str, list[str]] = {"user": [], "assistant": []}
        # The copy of a parent's history at the top of a fork or subagent thread.
        self.inherited = False
        self.inherited_by_time = False
        self.inherited_open: dict[str, str] = {}  # call_id -> name, made in the copy, unanswered
        # Calls whose output has not come yet, and the developer or system messages Codex
        # recorded meanwhile (a permissions or model change noted mid-turn): those wait until
        # the outputs are in, so no message parts a call from its output.
        self.open_calls: set[str] = set()
        self.held: list[tuple[dict[str, Any], Any, int]] = []

    # -- the inherited prefix --------------------------------------------------------------
    def enter_inherited(self, *, by_time: bool) -> None:
        if not self.inherited:
            self.inherited = True
            self.inherited_by_time = by_time

    def answer_inherited(self, ts: Any) -> None:
        """The child's own records begin: answer the calls the copy left open (the spawn call)."""
        if self.inherited_open:
            whose = f"the parent session {self.parent}" if self.parent else "the session this one was forked from"
            for call_id, name in self.inherited_open.items():
                self.b.tool_result(call_id, f"[{name}: this call started the present session; its result went to {whose}]",
                                   ts=ts)
            self.inherited_open = {}
            self.b.end_assistant()

    def observe_time(self, ts: Any) -> None:
        """Records older than the session's own start are copies; the first newer one ends the copy."""
        if self.own_ts is None or self.parent is None or not isinstance(ts, str):
            return  # only a fork or a subagent thread holds a copy
        # Codex writes every time as UTC with milliseconds and a Z, as own_ts is: compare as is
        stamp = ts if len(ts) == 24 and ts[-1] == "Z" else to_ts(ts)
        if stamp is None:
            return
        if stamp < self.own_ts:
            self.enter_inherited(by_time=True)
        elif self.inherited and self.inherited_by_time:
            self.inherited = False  # its open calls are answered at the next message, if no output comes

    def settle(self) -> None:
        """Write the held messages (the outputs came, or none will: the conversation moved on)."""
        held, self.held = self.held, []
        self.open_calls.clear()
        for p, ts, lineno in held:
            self.message(p, ts, lineno)

    # -- event-only messages ---------------------------------------------------------------
    def flush(self) -> None:
        if self.pending and self.held:
            self.settle()
        pending, self.pending = self.pending, []
        for role, text, images, ts, lineno in pending:
            self.emit_message(role, text, id=f"line-{lineno}", ts=ts, image_urls=images)

    def event_message(self, role: str, payload: dict[str, Any], ts: Any, lineno: int) -> None:
        text = payload.get("message")
        text = text if isinstance(text, str) else text_of(text)
        kind = payload.get("kind")
        if role == "user" and ((kind is not None and kind not in ("plain", "user")) or is_harness(text)):
            # some versions show harness context as user_message events too (kind
            # user_instructions, environment_context): the response item has it already
            self.b.skip("event_msg:user_message (harness context)")
            return
        for i, seen in enumerate(self.seen[role]):
            if _copies(text, seen):
                del self.seen[role][i]
                self.b.skip(f"event_msg:{payload.get('type')}")  # a UI copy of a response item
                return
        images = payload.get("images")
        urls = [u for u in images if isinstance(u, str)] if isinstance(images, list) else []
        self.pending.append((role, text, urls, ts, lineno))

    def emit_message(self, role: str, text: str, *, id: str, ts: Any, images: list[dict[str, Any]] | None = None,
                     image_urls: Iterable[str] = (), synthetic: str | None = None) -> None:
        for url in image_urls:
            split = split_data_url(url)
            img = self.b.image(*split) if split else None
            if img:
                images = [*(images or []), img]
        if self.inherited_open:
            self.answer_inherited(ts)  # a call's output never comes after a message: none will come
        if role == "user" and not synthetic:
            self.seen = {"user": [], "assistant": []}
        self.b.message(role, text, id=id, ts=ts, images=images or None, synthetic=synthetic)

    # -- response items --------------------------------------------------------------------
    def item(self, p: dict[str, Any], ts: Any, lineno: int) -> None:
        b = self.b
        itype = p.get("type")
        if itype == "message":
            self.message(p, ts, lineno)
        elif itype == "reasoning":
            summary = p.get("summary")
            text = "\n".join(text_of(s.get("text")) for s in summary if isinstance(s, dict)) if isinstance(summary, list) else ""
            b.reasoning(text, ts=ts, encrypted=bool(p.get("encrypted_content")))
        elif itype in _CALLS:
            self.flush()
            call_id = str(p.get("call_id") or p.get("id"))
            if itype == "local_shell_call":
                name, args = "local_shell", p.get("action") if isinstance(p.get("action"), dict) else {}
            else:
                name, args = str(p.get("name") or ""), p.get("input" if itype == "custom_tool_call" else "arguments")
            b.tool_call(call_id, name, args, ts=ts)
            self.open_calls.add(call_id)
            if self.inherited:
                self.inherited_open[call_id] = name or "unknown"
        elif itype in _OUTPUTS:
            self.flush()
            self.output(p, ts)
            self.inherited_open.pop(str(p.get("call_id")), None)
            # a call made after this result is a new step, not a parallel call of the last one
            b.end_assistant()
            self.open_calls.discard(str(p.get("call_id")))
            if not self.open_calls and self.held:
                self.settle()
        elif itype == "compaction":
            self.settle()
            self.flush()
            self.answer_inherited(ts)
            b.compaction("[summary encrypted by the provider]", id=f"line-{lineno}", ts=ts, summarizer="codex-remote")
        else:
            b.skip(f"response_item:{itype}")

    def message(self, p: dict[str, Any], ts: Any, lineno: int) -> None:
        role = p.get("role")
        if role not in ("user", "assistant", "developer", "system"):
            self.b.skip(f"message:{role}")
            return
        if role in ("developer", "system") and self.open_calls:
            self.held.append((p, ts, lineno))
            return
        if self.held:
            self.settle()
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
        synthetic = "harness_context" if role == "user" and texts and all(is_harness(t) for t in texts) else None
        mid = str(p.get("id") or f"line-{lineno}")
        if role in ("user", "assistant") and not synthetic:
            match = next((i for i, (r, t, *_) in enumerate(self.pending) if r == role and _copies(t, text)), None)
            if match is not None:
                # the event came first: this item replaces it, in its place (events shown
                # after it stay waiting for their own items)
                later = self.pending[match + 1 :]
                del self.pending[match:]
                self.b.skip(f"event_msg:{'user_message' if role == 'user' else 'agent_message'}")
                self.flush()
                self.emit_message(role, text, id=mid, ts=ts, images=images)
                self.pending = later
                return
            self.flush()
            self.emit_message(role, text, id=mid, ts=ts, images=images)
            self.seen[role].append(text)
            return
        # harness context and developer text do not move the event-only messages before them
        self.emit_message(role, text, id=mid, ts=ts, images=images, synthetic=synthetic)
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
            is_error = is_error or failed_output(text)
            if text.startswith("{") and '"exit_code"' in text:
                try:
                    meta = orjson.loads(text).get("metadata") or {}
                    is_error = is_error or (isinstance(meta.get("exit_code"), int) and meta["exit_code"] != 0)
                except (orjson.JSONDecodeError, AttributeError):
                    pass
        self.b.tool_result(str(p.get("call_id")), text, is_error=is_error, ts=ts, images=images or None)

    def rolled_back(self, payload: dict[str, Any], ts: Any) -> None:
        """`thread_rolled_back`: the last N user turns left the model's history."""
        n = payload.get("num_turns")
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            self.b.skip("event_msg:thread_rolled_back")
            return
        self.settle()
        self.flush()
        starts = self.b.turn_starts
        keep = max(len(starts) - n, 0)
        self.b.rewind(keep, ts=ts)
        del starts[keep:]


def snapshot(context: dict[str, tuple[Any, str]]) -> dict[str, Any]:
    return snapshot_value({k: v for k, (v, _) in context.items()}, {k: src for k, (_, src) in context.items()})


def dispatch(conv: Converter, tracker: UsageTracker, ltype: str, payload: dict[str, Any], ts: Any, lineno: int) -> None:
    b = conv.b
    if ltype == "response_item":
        conv.item(payload, ts, lineno)
    elif ltype == "turn_context":
        tracker.turn_context(payload)
        if tracker.model:
            b.model = tracker.model
        before = dict(conv.context)
        for key, part in (("model", "model"), ("cwd", "environment.cwd"), ("approval_policy", "approval_policy"), ("effort", "reasoning_effort")):
            if isinstance(payload.get(key), str) and payload[key]:
                conv.context[part] = (payload[key], f"codex: turn_context.{key}")
        if conv.context != before:  # a new snapshot only when the context changed
            b.state("prompt_context", snapshot(conv.context), ts=ts)
    elif ltype == "event_msg":
        etype = payload.get("type")
        if etype == "token_count":
            info = payload.get("info")
            window = info.get("model_context_window") if isinstance(info, dict) else None
            if type(window) is int and window > 0:
                b.window = window
            usage = tracker.token_count(payload)
            if usage is not None:
                b.usage(usage.pop("model"), **usage, ts=ts)
        elif etype == "user_message":
            conv.event_message("user", payload, ts, lineno)
        elif etype == "agent_message":
            conv.event_message("assistant", payload, ts, lineno)
        elif etype == "thread_rolled_back":
            conv.rolled_back(payload, ts)
        else:
            if etype in TURN_STARTS and (conv.inherited or conv.inherited_open):
                conv.inherited = False  # the child's own first turn
                conv.answer_inherited(ts)
            b.skip(f"event_msg:{etype}")  # UI marks and copies of response items
    elif ltype == "compacted":
        conv.settle()
        conv.flush()
        conv.answer_inherited(ts)
        summary = text_of(payload.get("message"))
        history = payload.get("replacement_history")
        if not summary.strip() and isinstance(history, list):
            # a remote compaction: no summary text, the history that replaces the old one
            # (the user's messages kept, the rest encrypted)
            kept = [text_of(i.get("content")) for i in history
                    if isinstance(i, dict) and i.get("type") == "message" and i.get("role") in ("user", "assistant")]
            kept = [t for t in kept if t.strip() and not is_harness(t)]
            summary = "\n\n".join(kept) or "[summary encrypted by the provider]"
            b.compaction(summary, id=f"line-{lineno}", ts=ts, summarizer="codex-remote")
        else:
            b.compaction(summary, id=f"line-{lineno}", ts=ts, summarizer="codex")


def failed_output(text: str) -> bool:
    """Whether Codex's output text of a tool call says that the call failed."""
    if text.startswith(_PATCH_FAILED):
        return True
    header, sep, _ = text.partition("\nOutput:\n")
    found = _EXIT_LINE.search(header) if sep else None
    return found is not None and found.group(1) != "0"

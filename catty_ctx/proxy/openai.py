"""The OpenAI Responses API and Chat Completions as the proxy reads and changes them
(docs/proxy.md#what-it-understands).

Responses: `instructions` and the message items are text items; `function_call`,
`custom_tool_call` and `local_shell_call` items join the assistant message before them as its
calls (a call with none before it gets an empty assistant item), and their `*_output` items
are tool items; reasoning and every other item type are no items and stay as they are.
Chat Completions: messages, an assistant's `tool_calls`, `tool` messages. An answer is read
with the same code as a request, so the item recorded for it is the item the next request
repeats.
"""
from __future__ import annotations

import re
from typing import Any

import orjson

from ..importers.common import parse_args, text_of
from .families import Answer, Family, Item, Loc, Parsed, usage_fields

CALLS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output",
         "local_shell_call": "local_shell_call_output"}
OUTPUTS = frozenset(CALLS.values())
_LEADING = ("system", "developer")
# How a shell tool's output says the command failed: Codex's exec_command text, or a JSON
# output's exit code (the older shell tool).
_FAILED = re.compile(r'(?m)^Process exited with code [1-9][0-9]*$|"exit_code":\s*[1-9]')


def failed(output: str) -> bool:
    return _FAILED.search(output[:2000]) is not None


def _call(x: dict[str, Any]) -> dict[str, Any]:
    name = str(x.get("name") or x.get("type"))
    if isinstance(x.get("namespace"), str):
        name = f"{x['namespace']}.{name}"
    if x.get("type") == "custom_tool_call":
        args: Any = {"input": x.get("input")}
    else:
        args = parse_args(x.get("arguments") if "arguments" in x else x.get("action"))
    return {"call_id": str(x.get("call_id")), "name": name, "args": args}


class ResponsesFamily(Family):
    name = "responses"
    client = "openai"
    list_key = "input"

    def head(self, body: dict[str, Any]) -> Any:
        return body.get("instructions")

    def parse_from(self, body: dict[str, Any], prev: Parsed | None, start: int) -> tuple[Parsed, int]:
        plain = isinstance(body.get("input"), str)
        start, items, locs, marks, lead, leading, open_at = self.resume(None if plain else prev, start)
        if not start and isinstance(body.get("instructions"), str) and body["instructions"]:
            items.append({"role": "system", "text": body["instructions"]})
            locs.append(Loc(-1))
        if plain:
            items.append({"role": "user", "text": body["input"]})
            locs.append(Loc(-1))
            return Parsed(items, locs, 0), 0
        inp = self.messages(body)
        kinds: dict[str, str] = dict(prev.call_kinds) if prev is not None and start else {}
        fresh = len(items)
        if open_at is not None:  # calls may still join it: a copy of its own (PREV keeps its item)
            joined = items[open_at] = dict(items[open_at])
            if "tool_calls" in joined:
                joined["tool_calls"] = list(joined["tool_calls"])
            fresh = open_at
        for i in range(start, len(inp)):
            x = inp[i]
            marks.append((len(items), lead, leading, open_at))
            if not isinstance(x, dict):
                raise ValueError(f"input item {i} is not an object")
            kind = x.get("type") or ("message" if "role" in x else None)
            if kind == "message":
                role = str(x.get("role"))
                if leading and role in _LEADING:
                    lead = i + 1
                else:
                    leading = False
                items.append({"role": role, "text": text_of(x.get("content"))})
                locs.append(Loc(i))
                open_at = len(items) - 1 if role == "assistant" else None
            elif kind in CALLS:
                leading = False
                call = _call(x)
                kinds[call["call_id"]] = kind
                if open_at is None:
                    items.append({"role": "assistant", "text": ""})
                    locs.append(Loc(i))
                    open_at = len(items) - 1
                items[open_at].setdefault("tool_calls", []).append(call)
                locs[open_at] = Loc(i)
            elif kind in OUTPUTS:
                leading = False
                out = x.get("output")
                out = out if isinstance(out, str) else text_of(out)
                items.append({"role": "tool", "call_id": str(x.get("call_id")), "output": out, "is_error": failed(out)})
                locs.append(Loc(i))
                open_at = None
        marks.append((len(items), lead, leading, open_at))
        return Parsed(items, locs, lead, kinds, marks), fresh

    def fix(self, body: dict[str, Any], drops: set[Loc], answers: dict[int, list[str]], text: str) -> None:
        inp: list[Any] = list(self.messages(body))
        kinds = self.parse(body).call_kinds
        for loc in drops:
            inp[loc.msg] = None
        for ai in sorted(answers, reverse=True):
            j = ai + 1
            while j < len(inp) and (inp[j] is None or inp[j].get("type") in OUTPUTS):
                j += 1
            inp[j:j] = [{"type": CALLS.get(kinds.get(cid, ""), "function_call_output"), "call_id": cid, "output": text}
                        for cid in answers[ai]]
        body["input"] = [x for x in inp if x is not None]

    def set_output(self, body: dict[str, Any], loc: Loc, text: str) -> None:
        inp = self.messages(body)
        inp[loc.msg] = {**inp[loc.msg], "output": text}  # a copy: the client's item stays as it came

    def tail_ok(self, msgs: list[Any], k: int) -> bool:
        x = msgs[k]
        return (x.get("type") or "message") == "message" and x.get("role") in ("user", "assistant")

    def replace_span(self, body: dict[str, Any], lead: int, k: int, text: str) -> None:
        inp = self.messages(body)
        body["input"] = [*inp[:lead], {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}, *inp[k:]]

    def reader(self) -> ResponsesReader:
        return ResponsesReader()


class ResponsesReader:
    def __init__(self) -> None:
        self.response: dict[str, Any] | None = None
        self.done_items: dict[int, Any] = {}

    def event(self, name: str, data: bytes) -> None:
        doc = orjson.loads(data)
        kind = doc.get("type") if isinstance(doc, dict) else None
        if kind == "response.output_item.done" and isinstance(doc.get("output_index"), int):
            self.done_items[doc["output_index"]] = doc.get("item")
        elif kind in ("response.completed", "response.incomplete", "response.failed", "response.done"):
            self.document(doc.get("response") or {})

    def document(self, resp: dict[str, Any]) -> None:
        self.response = resp

    def finish(self) -> Answer | None:
        resp = self.response
        if resp is None:
            return None
        output = resp.get("output") or [self.done_items[i] for i in sorted(self.done_items)]
        items = RESPONSES.parse({"input": [x for x in output if isinstance(x, dict)]}).items
        model = resp.get("model") if isinstance(resp.get("model"), str) else None
        rid = resp.get("id") if isinstance(resp.get("id"), str) else None
        return Answer(items, usage_fields(resp.get("usage"), openai=True), model, rid)


class ChatFamily(Family):
    name = "chat"
    client = "openai"

    def parse_from(self, body: dict[str, Any], prev: Parsed | None, start: int) -> tuple[Parsed, int]:
        msgs = self.messages(body)
        start, items, locs, marks, lead, leading, _ = self.resume(prev, start)
        fresh = len(items)
        for i in range(start, len(msgs)):
            m = msgs[i]
            marks.append((len(items), lead, leading, None))
            if not isinstance(m, dict):
                raise ValueError(f"message {i} is not an object")
            role = str(m.get("role"))
            if leading and role in _LEADING:
                lead = i + 1
            else:
                leading = False
            if role == "tool":
                items.append({"role": "tool", "call_id": str(m.get("tool_call_id")), "output": text_of(m.get("content")), "is_error": False})
            else:
                item: Item = {"role": role, "text": text_of(m.get("content"))}
                calls = [{"call_id": str(c.get("id")), "name": str((c.get("function") or {}).get("name") or ""),
                          "args": parse_args((c.get("function") or {}).get("arguments"))}
                         for c in m.get("tool_calls") or () if isinstance(c, dict)]
                if calls:
                    item["tool_calls"] = calls
                items.append(item)
            locs.append(Loc(i))
        marks.append((len(items), lead, leading, None))
        return Parsed(items, locs, lead, marks=marks), fresh

    def fix(self, body: dict[str, Any], drops: set[Loc], answers: dict[int, list[str]], text: str) -> None:
        msgs: list[Any] = list(self.messages(body))
        for loc in drops:
            msgs[loc.msg] = None
        for ai in sorted(answers, reverse=True):
            j = ai + 1
            while j < len(msgs) and (msgs[j] is None or msgs[j].get("role") == "tool"):
                j += 1
            msgs[j:j] = [{"role": "tool", "tool_call_id": cid, "content": text} for cid in answers[ai]]
        body["messages"] = [m for m in msgs if m is not None]

    def set_output(self, body: dict[str, Any], loc: Loc, text: str) -> None:
        msgs = self.messages(body)
        msgs[loc.msg] = {**msgs[loc.msg], "content": text}  # a copy: the client's message stays as it came

    def tail_ok(self, msgs: list[Any], k: int) -> bool:
        return msgs[k].get("role") in ("user", "assistant")

    def replace_span(self, body: dict[str, Any], lead: int, k: int, text: str) -> None:
        msgs = self.messages(body)
        body["messages"] = [*msgs[:lead], {"role": "user", "content": text}, *msgs[k:]]

    def reader(self) -> ChatReader:
        return ChatReader()


class ChatReader:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Any = None
        self.model: str | None = None
        self.id: str | None = None
        self.seen = False
        self.done = False  # [DONE] or a finish_reason came: the answer is whole

    def event(self, name: str, data: bytes) -> None:
        if data.strip() == b"[DONE]":
            self.done = True
            return
        doc = orjson.loads(data)
        if not isinstance(doc, dict):
            return
        self.seen = True
        self.model = doc.get("model") or self.model
        self.id = doc.get("id") or self.id
        if doc.get("usage"):
            self.usage = doc["usage"]
        for choice in doc.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            self.done = self.done or bool(choice.get("finish_reason"))
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                self.text.append(delta["content"])
            for tc in delta.get("tool_calls") or ():
                call = self.calls.setdefault(tc.get("index", 0), {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
                call["id"] = tc.get("id") or call["id"]
                fn = tc.get("function") or {}
                call["function"]["name"] += fn.get("name") or ""
                call["function"]["arguments"] += fn.get("arguments") or ""

    def document(self, doc: dict[str, Any]) -> None:
        self.seen = self.done = True
        self.model, self.id, self.usage = doc.get("model"), doc.get("id"), doc.get("usage")
        msg = ((doc.get("choices") or [{}])[0] or {}).get("message") or {}
        self.text = [msg.get("content") or ""]
        self.calls = dict(enumerate(msg.get("tool_calls") or ()))

    def finish(self) -> Answer | None:
        if not (self.seen and self.done):
            return None
        msg: dict[str, Any] = {"role": "assistant", "content": "".join(self.text)}
        if self.calls:
            msg["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        items = CHAT.parse({"messages": [msg]}).items
        return Answer(items, usage_fields(self.usage, openai=True), self.model if isinstance(self.model, str) else None,
                      self.id if isinstance(self.id, str) else None)


RESPONSES = ResponsesFamily()
CHAT = ChatFamily()

"""Provider request documents from view items, and their validation (resume's output).

OpenAI chat: assistant `tool_calls` with JSON-string arguments, `tool` messages right after.
Anthropic messages: the system prompt apart, strict user/assistant alternation, `tool_use`
blocks answered by `tool_result` blocks at the start of the next user message. Each document
is checked before it leaves (grok-build's resume did not strip orphans: docs/design.md#w7).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from ..errors import DataError
from .integrity import pairing_problems

Item = dict[str, Any]


def is_empty(item: Item) -> bool:
    """A message item with nothing to send: no text, no images, no tool calls."""
    return item.get("role") != "tool" and not item.get("text") and not item.get("images") and not item.get("tool_calls")


def sendable(items: list[Item]) -> tuple[list[Item], int]:
    """The items minus empty messages (providers refuse them), and how many were left out."""
    kept = [it for it in items if not is_empty(it)]
    return kept, len(items) - len(kept)


def openai_arguments(args: Any) -> str:
    """JSON-string arguments; a non-JSON argument string is sent as it was recorded."""
    return args if isinstance(args, str) else orjson.dumps(args).decode()


def anthropic_input(args: Any) -> dict[str, Any]:
    """`input` must be an object: a non-JSON argument string travels as {"raw_arguments": …}."""
    return args if isinstance(args, dict) else {"raw_arguments": args}


def _image_note(img: Any) -> str:
    blob = img.get("blob") if isinstance(img, dict) else None
    return f"[image {blob}]" if blob else "[image]"


def _openai_image(img: Any) -> dict[str, Any]:
    if isinstance(img, dict):
        url = img.get("url") or (f"data:{img.get('media_type', 'image/png')};base64,{img['data']}" if img.get("data") else None)
        if url:
            return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "text", "text": _image_note(img)}


def _anthropic_image(img: Any) -> dict[str, Any]:
    if isinstance(img, dict):
        if img.get("data"):
            return {"type": "image", "source": {"type": "base64", "media_type": img.get("media_type", "image/png"), "data": img["data"]}}
        if img.get("url"):
            return {"type": "image", "source": {"type": "url", "url": img["url"]}}
    return {"type": "text", "text": _image_note(img)}


def to_openai(items: Iterable[Item]) -> dict[str, Any]:
    """A tool message carries text only, so the images of a run of tool results (screenshots)
    follow the run in one user message that says whose they are."""
    messages: list[dict[str, Any]] = []
    shown: list[dict[str, Any]] = []  # image parts of the current run of tool results

    def end_run() -> None:
        if shown:
            messages.append({"role": "user", "content": list(shown)})
            shown.clear()

    for it in items:
        role = it["role"]
        if role == "tool":
            messages.append({"role": "tool", "tool_call_id": it["call_id"], "content": it.get("output", "")})
            if it.get("images"):
                shown.append({"type": "text", "text": f"Images returned by tool call {it['call_id']}:"})
                shown.extend(_openai_image(i) for i in it["images"])
            continue
        end_run()
        if it.get("images"):
            content: Any = ([{"type": "text", "text": it["text"]}] if it.get("text") else []) + [_openai_image(i) for i in it["images"]]
        else:
            content = it.get("text", "")
        msg: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant" and it.get("tool_calls"):
            if not content:
                msg["content"] = None
            msg["tool_calls"] = [
                {"id": c["call_id"], "type": "function", "function": {"name": c["name"], "arguments": openai_arguments(c["args"])}}
                for c in it["tool_calls"]
            ]
        messages.append(msg)
    end_run()
    return {"messages": messages}


def to_anthropic(items: Iterable[Item]) -> dict[str, Any]:
    """System and developer items before the first conversation item form `system`; later
    ones travel as user text (the API has no system role inside the conversation)."""
    system: list[str] = []
    messages: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if messages and messages[-1]["role"] == role:
            if role == "user" and any(b["type"] == "tool_result" for b in blocks):
                # tool_result blocks must open the user turn that answers the tool_use
                prev = messages[-1]["content"]
                lead = [b for b in prev if b["type"] == "tool_result"]
                messages[-1]["content"] = lead + blocks + [b for b in prev if b["type"] != "tool_result"]
            else:
                messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})

    for it in items:
        role = it["role"]
        if role in ("system", "developer") and not messages:
            system.append(it.get("text", ""))
            continue
        if role == "tool":
            content: Any = it.get("output", "")
            if it.get("images"):  # a tool_result may hold image blocks beside its text
                content = ([{"type": "text", "text": content}] if content else []) + [_anthropic_image(i) for i in it["images"]]
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": it["call_id"], "content": content}
            if it.get("is_error"):
                block["is_error"] = True
            add("user", [block])
            continue
        blocks: list[dict[str, Any]] = []
        if it.get("text"):
            blocks.append({"type": "text", "text": it["text"]})
        blocks.extend(_anthropic_image(i) for i in it.get("images") or ())
        if role == "assistant":
            blocks.extend({"type": "tool_use", "id": c["call_id"], "name": c["name"], "input": anthropic_input(c["args"])} for c in it.get("tool_calls") or ())
            add("assistant", blocks)
        else:
            add("user", blocks)
    if messages and messages[0]["role"] != "user":
        messages.insert(0, {"role": "user", "content": [{"type": "text", "text": "(The conversation continues from an earlier session.)"}]})
    return {"system": "\n\n".join(t for t in system if t), "messages": messages}


# -- validation ---------------------------------------------------------------------------


def _invalid(fmt: str, index: int, what: str) -> DataError:
    return DataError(f"{fmt} request invalid at message {index}: {what}")


def validate_openai(doc: dict[str, Any]) -> None:
    """Every tool call answered exactly once by the tool messages right after its assistant."""
    msgs = doc["messages"]
    i = 0
    while i < len(msgs):
        m = msgs[i]
        if m["role"] == "tool":
            raise _invalid("openai", i, f"tool message for {m.get('tool_call_id')} answers no call before it")
        if not m.get("content") and not m.get("tool_calls"):
            raise _invalid("openai", i, "empty message")
        i += 1
        if m.get("tool_calls"):
            want = [c["id"] for c in m["tool_calls"]]
            got: list[str] = []
            while i < len(msgs) and msgs[i]["role"] == "tool":
                got.append(msgs[i]["tool_call_id"])
                i += 1
            if sorted(got) != sorted(want) or len(set(want)) != len(want):
                raise _invalid("openai", i, f"calls {want} answered by {got}")
            for c in m["tool_calls"]:
                if not isinstance(c["function"]["arguments"], str):
                    raise _invalid("openai", i, "tool call arguments must be a string")


def validate_anthropic(doc: dict[str, Any]) -> None:
    """Alternation starting with user; each tool_use answered once in the next user message."""
    msgs = doc["messages"]
    if not msgs:
        return
    if msgs[0]["role"] != "user":
        raise _invalid("anthropic", 0, "the first message must be a user message")
    pending: list[str] = []
    for i, m in enumerate(msgs):
        if i and m["role"] == msgs[i - 1]["role"]:
            raise _invalid("anthropic", i, "two messages of the same role in a row")
        if not m["content"]:
            raise _invalid("anthropic", i, "empty message")
        kinds = [b["type"] for b in m["content"]]
        if m["role"] == "user":
            answered = [b["tool_use_id"] for b in m["content"] if b["type"] == "tool_result"]
            if sorted(answered) != sorted(pending):
                raise _invalid("anthropic", i, f"tool_use {pending} answered by {answered}")
            n = len(answered)
            if kinds[:n] != ["tool_result"] * n:
                raise _invalid("anthropic", i, "tool_result blocks must come first")
            pending = []
        else:
            if "tool_result" in kinds:
                raise _invalid("anthropic", i, "tool_result in an assistant message")
            pending = [b["id"] for b in m["content"] if b["type"] == "tool_use"]
            if len(set(pending)) != len(pending):
                raise _invalid("anthropic", i, "repeated tool_use id")
    if pending:
        raise _invalid("anthropic", len(msgs) - 1, f"tool_use {pending} never answered")


def validate_items(items: list[Item]) -> None:
    """The item format: pairing as providers require it, no empty messages."""

    for i, it in enumerate(items):
        if is_empty(it):
            raise DataError(f"items invalid at item {i}: empty message")
    checker = pairing_problems(items)
    if not checker.ok:
        p = checker.found[0]
        raise DataError(f"items invalid: {p.kind} result for call {p.call_id}")


FORMATS = {"openai": (to_openai, validate_openai), "anthropic": (to_anthropic, validate_anthropic)}

"""Usage records of a Gemini CLI chat: each `gemini` message carrying `tokens` is one call.

Gemini CLI keeps a chat as one JSON document (`session-*.json`: `sessionId`, `projectHash`,
`messages`) or, in newer versions, as JSON Lines (`session-*.jsonl`: a metadata line, then
message records, `$set` and `$rewindTo` lines; a record written again with the same id
replaces the earlier one). A reply's id identifies the call: its copies collapse by it. A
rewind does not undo what was billed, so the calls of rewound replies still count.

`tokens` holds the provider's counts: `input` (the prompt, cached part included), `output`,
`cached`, `thoughts` and `tool` (tool-use prompt tokens). Thinking tokens are billed as output,
so `output` here is output + thoughts (and `reasoning` the thoughts alone); `input` is the
uncached prompt plus the tool-use prompt.
"""
from __future__ import annotations

import os
from typing import Any

import msgspec

from ..session.jsonl import marked_lines
from .lines import UNDECODABLE, count, json_object, typed_view
from .records import MAIN_AGENT, UNKNOWN_MODEL, Record
from .times import epoch

MARK = b'"tokens"'
DOCUMENT = ".json"  # the older form: one document, read whole every time it changed


_Message = typed_view("_Message", id=Any, type=Any, timestamp=Any, model=Any, tokens=Any, sessionId=Any)  # (sessionId: the metadata line's)
_Document = typed_view("_Document", sessionId=Any, messages=list[_Message] | None)  # type: ignore[valid-type]  # (a Struct typed_view made: a value to mypy); a message's content is skipped unbuilt


_decode_document = msgspec.json.Decoder(_Document).decode
_decode_lines = msgspec.json.Decoder(_Message).decode_lines
_decode_any = msgspec.json.decode


def is_document(mm: Any, path: str) -> bool:
    """Whether the chat in MM (at PATH) is the older form, one JSON document, rather than JSON Lines.

    Told by the content, whatever the name: JSON Lines begin with the metadata object, whole on
    its line, and more lines follow; a document opens alone on its first line (written indented),
    or is one line naming the messages. A `.json` file is a document unless it begins as JSON Lines do.
    """
    size = len(mm)
    pos = 0
    while pos < size:
        nl = mm.find(b"\n", pos, size)
        end = nl if nl >= 0 else size
        first = mm[pos:end].strip()
        if first:
            if first == b"{":
                return True
            more = bool(mm[end : min(size, end + 4096)].strip()) or (size > end + 4096 and bool(mm[end:size].strip()))
            if more:
                return path.endswith(DOCUMENT) and not first.endswith(b"}")
            return path.endswith(DOCUMENT) or b'"messages"' in first
        pos = end + 1
    return path.endswith(DOCUMENT)


def project_of(path: str) -> str:
    """The project folder a chat lies in (`tmp/<project>/chats/session-….json`), else ''."""
    parts = os.path.normpath(path).split(os.sep)
    return parts[-3] if len(parts) >= 3 and parts[-2] == "chats" else ""


def call(m: dict[str, Any], session: str, project: str, intern: Any) -> Record | str | None:
    """The record of one message (a dict), None when it is no call, or why it is bad."""
    return reply(m.get("type"), m.get("tokens"), m.get("timestamp"), m.get("model"), m.get("id"), session, project, intern)


def reply(kind: Any, tokens: Any, stamp: Any, model: Any, mid: Any, session: str, project: str, intern: Any) -> Record | str | None:
    """The record of a message's fields, None when it is no call, or why it is bad."""
    if kind != "gemini" or type(tokens) is not dict:
        return None
    ts = epoch(stamp)
    if ts is None:
        return "a reply's tokens without a timestamp"
    cached = count(tokens.get("cached"))
    thoughts = count(tokens.get("thoughts"))
    prompt = count(tokens.get("input"))
    model = intern(model, model) if type(model) is str and model else UNKNOWN_MODEL
    mid = str(mid) if mid is not None and mid != "" else None
    return Record(ts, model, max(prompt - cached, 0) + count(tokens.get("tool")), count(tokens.get("output")) + thoughts,
                  min(cached, prompt) if prompt else cached, 0, thoughts, None, f"g\0{mid}" if mid else None, False, MAIN_AGENT,
                  session, project, False, None, None)


def parse(mm: Any, start: int, end: int, path: str, state: Any, recs: list[Record], bad: list[tuple[int, str]], typed: bool = True) -> Any:
    """Append the records of [start, end) to RECS and the bad lines to BAD; the state is the session id."""
    project = project_of(path)
    intern: Any = {}.setdefault
    session = state if type(state) is str else os.path.splitext(os.path.basename(path))[0]
    if is_document(mm, path):
        messages: Any
        with memoryview(mm) as view, view[0:len(mm)] as whole:
            try:
                doc = _decode_document(whole)
                sid, messages = doc.sessionId, [msgspec.structs.asdict(m) for m in doc.messages or ()]
            except msgspec.ValidationError:  # (another shape somewhere: the general decoder, same rules)
                try:
                    got = _decode_any(whole)
                except UNDECODABLE:
                    got = None
                if type(got) is not dict:
                    bad.append((0, "not a Gemini CLI chat document"))
                    return session
                sid, messages = got.get("sessionId"), got.get("messages")
            except UNDECODABLE:
                bad.append((0, "not valid JSON"))
                return session
        if type(sid) is str and sid:
            session = sid
        for m in messages if type(messages) is list else ():
            if type(m) is dict:
                rec = call(m, session, project, intern)
                if isinstance(rec, str):
                    bad.append((0, rec))
                elif rec is not None:
                    recs.append(rec)
        return session
    with memoryview(mm) as view, view[start:end] as part:
        try:
            lines = _decode_lines(part)  # (every line at once, in C, the content skipped unbuilt)
        except (*UNDECODABLE, msgspec.ValidationError):
            lines = None
    if lines is not None:
        read: list[Record] = []
        for i, line_m in enumerate(lines):
            if i == 0 and start == 0 and line_m.type is None and type(line_m.sessionId) is str and line_m.sessionId:
                session = line_m.sessionId
            line_rec = reply(line_m.type, line_m.tokens, line_m.timestamp, line_m.model, line_m.id, session, project, intern)
            if isinstance(line_rec, str):
                break  # (a bad one: read again line by line, which names it)
            if line_rec is not None:
                read.append(line_rec)
        else:
            recs.extend(read)
            return session
    if start == 0:
        first_end = mm.find(b"\n", 0, end)
        head = json_object(mm[0 : first_end if first_end >= 0 else end], 0, [])
        if head is not None and "type" not in head and type(head.get("sessionId")) is str and head["sessionId"]:
            session = head["sessionId"]

    for off, line in marked_lines(mm, start, end, MARK):
        obj = json_object(line, off, bad)
        if obj is None:
            continue
        rec = call(obj, session, project, intern)
        if isinstance(rec, str):
            bad.append((off, rec))
        elif rec is not None:
            recs.append(rec)
    return session

"""Usage records of a Codex rollout: a call is a `token_count` event whose cumulative totals moved.

Marked lines are decoded into msgspec Structs of the fields read here (the rest of a line, a
session's instructions included, is skipped unbuilt); a line of another shape goes to the
general decoder and the same rules.
"""
from __future__ import annotations

import os
import re

import msgspec

from ..formats.calls import CODEX_TOTALS, codex_call, codex_running
from ..session.jsonl import marked_lines
from .claude import Count
from .lines import MISMATCH, count, json_object, typed_view
from .records import MAIN_AGENT, UNKNOWN_MODEL, Record
from .times import epoch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    # `_Rollout.line`'s fields of one line: kind, stamp, payload type, session id, cwd, model, totals, last call, has info.
    _Fields = tuple[Any, Any, Any, Any, Any, Any, Any, Any, bool]

PATTERN = re.compile(rb'"(?:token_count|turn_context|session_meta)"')
# The counts read: the totals that name a call, then the cache writes (in the input, billed apart where a model prices them).
_TOTALS = (*CODEX_TOTALS, "cache_write_input_tokens")


_Tokens = typed_view("_Tokens", input_tokens=Count, cached_input_tokens=Count, output_tokens=Count, reasoning_output_tokens=Count,
                     total_tokens=Count, cache_write_input_tokens=Count)
_Info = typed_view("_Info", total_token_usage=_Tokens | None, last_token_usage=_Tokens | None)
_Payload = typed_view("_Payload", type=str | None, info=_Info | None, id=str | None, cwd=str | None, model=str | None)
_Line = typed_view("_Line", type=str | None, timestamp=str | None, payload=_Payload | None)
_decode_line = msgspec.json.Decoder(_Line).decode


def _general_only(line: bytes) -> Any:
    raise msgspec.ValidationError("typed decoding off")


def _counts(t: Any) -> tuple[int, int, int, int, int, int]:
    """`lines.count` of each of `_TOTALS` (typed: each is None or an int64 already)."""
    a, b, c, d, e, f = t.input_tokens, t.cached_input_tokens, t.output_tokens, t.reasoning_output_tokens, t.total_tokens, t.cache_write_input_tokens
    return (a if a is not None and a > 0 else 0, b if b is not None and b > 0 else 0, c if c is not None and c > 0 else 0,
            d if d is not None and d > 0 else 0, e if e is not None and e > 0 else 0, f if f is not None and f > 0 else 0)


class _Rollout:
    """The parser's state while a rollout is read: see `parse`."""

    __slots__ = ("cwd", "model", "named", "prev", "session")
    model: Any
    session: Any
    cwd: Any
    named: Any

    def __init__(self, state: Any, path: str) -> None:
        prev, self.model, self.session, self.cwd, self.named = (
            state if state is not None else (None, None, os.path.splitext(os.path.basename(path).removesuffix(".zst"))[0], "", False))
        self.prev = tuple(prev) if prev is not None else None  # (a cache hands back a list)

    def state(self) -> list[Any]:
        return [self.prev, self.model, self.session, self.cwd, self.named]

    def line(self, kind: Any, stamp: Any, ptype: Any, sid: Any, where: Any, model_named: Any, total: Any, last: Any,
             has_info: bool, recs: list[Record]) -> str | None:
        """Take one line's fields (its totals and last call: None when absent); why it is bad, or None."""
        if kind == "session_meta":
            if not self.named:  # the first is the file's own; later ones are a parent's, copied
                self.session, self.cwd, self.named = str(sid or self.session), str(where or self.cwd), bool(sid)
            self.model = model_named or self.model
        elif kind == "turn_context":
            self.model = model_named or self.model
        elif kind == "event_msg" and ptype == "token_count":
            if not has_info:
                return None  # rate limits only
            if total is None:
                return "token_count without total_token_usage"
            prev = self.prev
            if total == prev:
                return None  # Codex repeats the last count when nothing was called
            if last is None:  # older logs: the call is what the totals moved by
                base = prev or (0,) * len(total)
                last = tuple(max(0, a - b) for a, b in zip(total, base))
            self.prev = total
            ts = epoch(stamp)
            if ts is None:
                return "token_count without a timestamp"
            # Codex's input includes the cached tokens and the cache writes.
            inp = last[0]
            cached = min(last[1], inp)
            written = min(last[5], inp - cached)
            # A forked rollout copies its parent's history: the copy has the same time and totals (its name, as an import's).
            # The uuid is the name a proxy gives the call: the session's running totals (`copies.collapse` meets them).
            key = "r\0" + codex_call(stamp, total[:5])
            recs.append(Record(ts, str(self.model or UNKNOWN_MODEL), inp - cached - written, last[2], cached, written, last[3],
                               None, key, False, MAIN_AGENT, self.session, self.cwd, False, None, codex_running(self.session, total[:4])))
        return None


def _fields(o: Any) -> _Fields | None:
    """A typed line's fields for `_Rollout.line`, None when it holds no payload."""
    p = o.payload
    if p is None:
        return None
    info = p.info
    total = _counts(info.total_token_usage) if info is not None and info.total_token_usage is not None else None
    last = _counts(info.last_token_usage) if info is not None and info.last_token_usage is not None else None
    return o.type, o.timestamp, p.type, p.id, p.cwd, p.model, total, last, info is not None


def _whole(mm: Any, start: int, end: int, path: str, state: Any, recs: list[Record]) -> Any:
    """The state after [start, end) when every line there reads typed and none is bad (the records
    appended to RECS); else None, and the marked lines are read one by one.

    One C call decodes every line, skipping the parts of a line no field declares (a reply's text,
    a tool's output) about as fast as a byte search reads them: less than finding the marked
    lines with a regular expression and decoding those."""
    with memoryview(mm) as view, view[start:end] as part:
        try:
            lines = _decode_lines(part)
        except MISMATCH:
            return None
    rollout = _Rollout(state, path)
    got: list[Record] = []
    for o in lines:
        kind = o.type
        if kind == "event_msg":
            p = o.payload
            if p is None or p.type != "token_count":
                continue  # (`_Rollout.line` takes nothing else of an event)
        elif kind == "turn_context":
            p = o.payload
            if p is not None and p.model:
                rollout.model = p.model  # (all `_Rollout.line` takes of it)
            continue
        elif kind != "session_meta":
            continue
        fields = _fields(o)
        if fields is not None and rollout.line(*fields, got) is not None:
            return None
    recs.extend(got)
    return rollout.state()


_decode_lines = msgspec.json.Decoder(_Line).decode_lines


def parse(mm: Any, start: int, end: int, path: str, state: Any, recs: list[Record], bad: list[tuple[int, str]], typed: bool = True) -> Any:
    """Append the records of [start, end) to RECS and the bad lines to BAD; returns the state to resume from.

    The state: the last cumulative totals, the current model, the session id, the cwd, and
    whether the file's own session_meta was seen (a subagent's or fork's rollout then copies
    its parent's session_meta: that one names the parent, not this file's session).
    TYPED False reads every line with the general decoder (what a typed read must equal).
    """
    if typed:
        done = _whole(mm, start, end, path, state, recs)
        if done is not None:
            return done
    decode = _decode_line if typed else _general_only
    rollout = _Rollout(state, path)

    for off, line in marked_lines(mm, start, end, PATTERN):
        try:
            fields = _fields(decode(line))
        except MISMATCH:
            d = json_object(line, off, bad)
            if d is None:
                continue
            p = d.get("payload")
            if type(p) is not dict:
                continue
            gi: Any = p.get("info")
            has_info = type(gi) is dict
            gt = gi.get("total_token_usage") if has_info else None
            gl = gi.get("last_token_usage") if has_info else None
            total = tuple(count(gt.get(k)) for k in _TOTALS) if type(gt) is dict else None
            last = tuple(count(gl.get(k)) for k in _TOTALS) if type(gl) is dict else None
            fields = (d.get("type"), d.get("timestamp"), p.get("type"), p.get("id"), p.get("cwd"), p.get("model"), total, last, has_info)
        if fields is None:
            continue
        why = rollout.line(*fields, recs)
        if why is not None:
            bad.append((off, why))
    return rollout.state()

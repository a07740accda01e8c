"""Usage records of a Codex rollout: a call is a `token_count` event whose cumulative totals moved.

Marked lines are decoded into msgspec Structs of the fields read here (the rest of a line, a
session's instructions included, is skipped unbuilt); a line of another shape goes to the
general decoder and the same rules.
"""
from __future__ import annotations

import os
import re
from typing import Optional

import msgspec

from .claude import Count
from ..jsonl import marked_lines
from .lines import MISMATCH, json_object, count
from .records import MAIN_AGENT, UNKNOWN_MODEL, Record
from .times import epoch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PATTERN = re.compile(rb'"(?:token_count|turn_context|session_meta)"')
_TOTALS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")


# Not GC-tracked: decoded Structs hold no cycles, and tracking thousands of them costs collections.
class _Tokens(msgspec.Struct, gc=False):
    input_tokens: Count = None
    cached_input_tokens: Count = None
    output_tokens: Count = None
    reasoning_output_tokens: Count = None
    total_tokens: Count = None


class _Info(msgspec.Struct, gc=False):
    total_token_usage: Optional[_Tokens] = None
    last_token_usage: Optional[_Tokens] = None


class _Payload(msgspec.Struct, gc=False):
    type: Optional[str] = None
    info: Optional[_Info] = None
    id: Optional[str] = None
    cwd: Optional[str] = None
    model: Optional[str] = None


class _Line(msgspec.Struct, gc=False):
    type: Optional[str] = None
    timestamp: Optional[str] = None
    payload: Optional[_Payload] = None


_decode_line = msgspec.json.Decoder(_Line).decode


def _general_only(line: bytes) -> Any:
    raise msgspec.ValidationError("typed decoding off")


def _counts(t: _Tokens) -> tuple[int, int, int, int, int]:
    return (count(t.input_tokens), count(t.cached_input_tokens), count(t.output_tokens), count(t.reasoning_output_tokens),
            count(t.total_tokens))


def parse(mm: Any, start: int, end: int, path: str, state: Any, recs: list[Record], bad: list[tuple[int, str]], typed: bool = True) -> Any:
    """Append the records of [start, end) to RECS and the bad lines to BAD; returns the state to resume from.

    The state: the last cumulative totals, the current model, the session id, the cwd, and
    whether the file's own session_meta was seen (a subagent's or fork's rollout then copies
    its parent's session_meta: that one names the parent, not this file's session).
    TYPED False reads every line with the general decoder (what a typed read must equal).
    """
    decode = _decode_line if typed else _general_only
    prev, model, session, cwd, named = state if state is not None else (None, None, os.path.splitext(os.path.basename(path).removesuffix(".zst"))[0], "", False)
    if prev is not None:
        prev = tuple(prev)  # (a cache hands back a list)
    for off, line in marked_lines(mm, start, end, PATTERN):
        # Each line comes down to: the record's type, time, payload type, session id, cwd, model,
        # and for a token_count its totals and last call (None: absent), or "skip", or why it is bad.
        try:
            o = decode(line)
            p = o.payload
            if p is None:
                continue
            kind, stamp, ptype, sid, where, model_named = o.type, o.timestamp, p.type, p.id, p.cwd, p.model
            info = p.info
            total = _counts(info.total_token_usage) if info is not None and info.total_token_usage is not None else None
            last = _counts(info.last_token_usage) if info is not None and info.last_token_usage is not None else None
            has_info = info is not None
        except MISMATCH:
            d = json_object(line, off, bad)
            if d is None:
                continue
            p = d.get("payload")
            if type(p) is not dict:
                continue
            kind, stamp, ptype, sid, where, model_named = d.get("type"), d.get("timestamp"), p.get("type"), p.get("id"), p.get("cwd"), p.get("model")
            gi = p.get("info")
            has_info = type(gi) is dict
            gt = gi.get("total_token_usage") if has_info else None
            gl = gi.get("last_token_usage") if has_info else None
            total = tuple(count(gt.get(k)) for k in _TOTALS) if type(gt) is dict else None  # type: ignore[assignment]
            last = tuple(count(gl.get(k)) for k in _TOTALS) if type(gl) is dict else None  # type: ignore[assignment]
        if kind == "session_meta":
            if not named:  # the first is the file's own; later ones are a parent's, copied
                session, cwd, named = str(sid or session), str(where or cwd), bool(sid)
            model = model_named or model
        elif kind == "turn_context":
            model = model_named or model
        elif kind == "event_msg" and ptype == "token_count":
            if not has_info:
                continue  # rate limits only
            if total is None:
                bad.append((off, "token_count without total_token_usage"))
                continue
            if total == prev:
                continue  # Codex repeats the last count when nothing was called
            if last is None:  # older logs: the call is what the totals moved by
                base = prev or (0, 0, 0, 0, 0)
                last = tuple(max(0, a - b) for a, b in zip(total, base))  # type: ignore[assignment]
            prev = total
            ts = epoch(stamp)
            if ts is None:
                bad.append((off, "token_count without a timestamp"))
                continue
            inp = last[0]  # type: ignore[index]
            cached = min(last[1], inp)  # type: ignore[index]
            # A forked rollout copies its parent's history: the copy has the same time and totals.
            key = f"x\0{stamp}\0" + "\0".join(map(str, total))
            recs.append(Record(ts, str(model or UNKNOWN_MODEL), inp - cached, last[2], cached, 0, last[3],  # type: ignore[index]
                               None, key, False, MAIN_AGENT, session, cwd, False, None, None))
    return [prev, model, session, cwd, named]

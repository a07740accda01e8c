"""Usage records of a Codex rollout: a call is a `token_count` event whose cumulative totals moved."""
from __future__ import annotations

import os
import re

import orjson

from .lines import count, lines_with
from .records import MAIN_AGENT, UNKNOWN_MODEL, Record
from .times import epoch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PATTERN = re.compile(rb'"(?:token_count|turn_context|session_meta)"')
_LAST = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")


def parse(mm: Any, start: int, end: int, path: str, state: Any, recs: list[Record], bad: list[tuple[int, str]]) -> Any:
    """Append the records of [start, end) to RECS and the bad lines to BAD; returns the state to resume from.

    The state: the last cumulative totals, the current model, the session id and the cwd.
    """
    prev, model, session, cwd = state if state is not None else (None, None, os.path.splitext(os.path.basename(path))[0], "")
    if prev is not None:
        prev = tuple(prev)  # (a cache hands back a list)
    loads = orjson.loads
    for off, line in lines_with(mm, start, end, pattern=PATTERN):
        try:
            o = loads(line)
        except orjson.JSONDecodeError:
            bad.append((off, "not valid JSON"))
            continue
        if type(o) is not dict:
            bad.append((off, "not a JSON object"))
            continue
        if type(o.get("payload")) is not dict:
            continue
        p = o["payload"]
        kind = o.get("type")
        if kind == "session_meta":
            session = str(p.get("id") or session)
            cwd = str(p.get("cwd") or cwd)
            model = p.get("model") or model
        elif kind == "turn_context":
            model = p.get("model") or model
        elif kind == "event_msg" and p.get("type") == "token_count":
            info = p.get("info")
            if type(info) is not dict:
                continue  # rate limits only
            total, last = info.get("total_token_usage"), info.get("last_token_usage")
            if type(total) is not dict:
                bad.append((off, "token_count without total_token_usage"))
                continue
            moved = (count(total.get("input_tokens")), count(total.get("cached_input_tokens")), count(total.get("output_tokens")),
                     count(total.get("reasoning_output_tokens")), count(total.get("total_tokens")))
            if moved == prev:
                continue  # Codex repeats the last count when nothing was called
            if type(last) is not dict:  # older logs: the call is what the totals moved by
                base = prev or (0, 0, 0, 0, 0)
                last = dict(zip(_LAST, (max(0, a - b) for a, b in zip(moved, base))))
            prev = moved
            ts = epoch(o.get("timestamp"))
            if ts is None:
                bad.append((off, "token_count without a timestamp"))
                continue
            inp = count(last.get("input_tokens"))
            cached = min(count(last.get("cached_input_tokens")), inp)
            # A forked rollout copies its parent's history: the copy has the same time and totals.
            key = f"x\0{o.get('timestamp')}\0" + "\0".join(map(str, moved))
            recs.append(Record(ts, str(model or UNKNOWN_MODEL), inp - cached, count(last.get("output_tokens")), cached, 0,
                               count(last.get("reasoning_output_tokens")), None, key, False, MAIN_AGENT, session, cwd, False, None, None))
    return [prev, model, session, cwd]

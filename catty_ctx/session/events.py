"""Event kinds, the envelope and validation (docs/spec.md#events).

Events stay plain dicts (orjson in, orjson out) so unknown kinds and fields travel through
every command untouched; `check_event` is the one place that says what a valid event is
(the field rules below).
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

SCHEMA_VERSION = 1
DEFAULT_WINDOW = 200_000
SPAN_KINDS = frozenset({"message", "tool_call", "tool_result"})  # the conversation a compaction's segment archives

ROLES = frozenset({"system", "developer", "user", "assistant"})

Event = dict[str, Any]


# Field rules: name -> (accepted types, required). `int` never accepts bool here.
_STR = (str,)
_INT = (int,)
_NUM = (int, float)
_BOOL = (bool,)
_ANY: tuple[type, ...] = ()
_Rules = dict[str, tuple[tuple[type, ...], bool, bool]]  # types, required, nullable


def _r(types: tuple[type, ...], required: bool = True, nullable: bool = False) -> tuple[tuple[type, ...], bool, bool]:
    return (types, required, nullable)


KIND_RULES: dict[str, _Rules] = {
    "session": {
        "session_id": _r(_STR),
        "parent_session_id": _r(_STR, False, True),
        "forked_from_seq": _r(_INT, False, True),
        "cwd": _r(_STR, False, True),
        "model": _r(_STR, False, True),
        "window": _r(_INT, False, True),
    },
    "message": {
        "id": _r(_STR),
        "role": _r(_STR),
        "text": _r(_STR),
        "images": _r((list,), False),
        "synthetic": _r(_STR, False),
    },
    "tool_call": {
        "call_id": _r(_STR),
        "name": _r(_STR),
        "args": _r((dict, str)),
    },
    "tool_result": {
        "call_id": _r(_STR),
        "output": _r(_STR, False),
        "blob": _r(_STR, False),
        "bytes": _r(_INT, False),
        "is_error": _r(_BOOL),
    },
    "usage": {
        "model": _r(_STR),
        "input": _r(_INT),
        "output": _r(_INT),
        "cache_read": _r(_INT, False),
        "cache_write": _r(_INT, False),
        "cache_write_1h": _r(_INT, False),  # of cache_write: written for an hour (billed 2x input by Anthropic, not 1.25x)
        "reasoning": _r(_INT, False),
        "cost_usd": _r(_NUM, False, True),
        "request_id": _r(_STR, False, True),
        "incomplete": _r(_BOOL, False),
        "off_branch": _r(_BOOL, False),
    },
    "state": {
        "facet": _r(_STR),
        "value": _r(_ANY),
    },
    "compaction": {
        "id": _r(_STR),
        "mode": _r(_STR),
        "through_seq": _r(_INT),
        "summary": _r(_STR),
        "summarizer": _r(_STR, False),
        "trigger": _r(_STR, False),
        "tokens_before": _r(_INT, False),
        "tokens_after": _r(_INT, False),
        "prefix_fp": _r(_STR, False),
        "segment": _r(_ANY, False),
        "artifact": _r(_ANY, False),
        "two_pass": _r(_ANY, False),
    },
    "repair": {
        "action": _r(_STR),
        "call_id": _r(_STR, False),
        "target_seq": _r(_INT, False),
        "call_ids": _r((list,), False),
        "count": _r(_INT, False),
        "text": _r(_STR, False),
        "reason": _r(_STR),
    },
    "rewind": {
        "to_turn": _r(_INT),
    },
}
KINDS = frozenset(KIND_RULES)
_NON_NEGATIVE = frozenset(
    {"input", "output", "cache_read", "cache_write", "cache_write_1h", "reasoning", "window", "to_turn", "bytes",
     "through_seq", "tokens_before", "tokens_after", "target_seq", "forked_from_seq"}
)

_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", dict: "an object", list: "an array"}
_MISSING = object()


def _type_name(types: tuple[type, ...]) -> str:
    return " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types)


# Precompiled per kind: (name, exact types or None for any, required, nullable, non-negative).
# JSON decoding yields exact types, so `type(v) in types` is both fast and keeps bool apart
# from int.
_Spec = tuple[tuple[str, "frozenset[type] | None", bool, bool, bool], ...]
_SPECS: dict[str, _Spec] = {
    kind: tuple(
        (name, frozenset(types) if types else None, required, nullable, name in _NON_NEGATIVE and int in types)
        for name, (types, required, nullable) in rules.items()
    )
    for kind, rules in KIND_RULES.items()
}


def check_fields(obj: dict[str, Any]) -> str | None:
    """Check a kind's own fields; return what is wrong, or None. Unknown kinds pass."""
    kind = obj.get("kind")
    spec = _SPECS.get(kind) if type(kind) is str else None
    if spec is None:
        return None
    for name, types, required, nullable, non_negative in spec:
        value = obj.get(name, _MISSING)
        if value is _MISSING:
            if required:
                return f"{kind} event lacks field '{name}'"
            continue
        if types is None:
            continue
        if type(value) not in types:
            if value is None and nullable:
                continue
            return f"{kind} field '{name}' must be {_type_name(KIND_RULES[str(kind)][name][0])}"
        if non_negative and value < 0:
            return f"{kind} field '{name}' must not be negative"
    if kind == "message":
        if obj["role"] not in ROLES:
            return f"message role '{obj['role']}' is not one of system, developer, user, assistant"
    elif kind == "tool_result" and "output" not in obj and "blob" not in obj:
        return "tool_result needs 'output' or 'blob'"
    return None


_ENVELOPE = (
    "type(_v := o.get('v')) is int and _v == 1"
    " and type(_s := o.get('seq')) is int and _s >= 0"
    " and type(o.get('ts')) is str"
    " and type(o.get('agent', '')) in _STR_OR_NONE"
)


def _compile_fast_checks() -> dict[str, Callable[[dict[str, Any]], bool]]:
    """One straight-line predicate per kind (envelope included): True when the event is valid.

    Reading a log validates every line, so the common case must be cheap; only a line that
    fails here goes through `_describe_problem` to say what is wrong.
    """
    ns: dict[str, Any] = {"_M": _MISSING, "ROLES": ROLES, "_STR_OR_NONE": (str, type(None))}
    checks: dict[str, Callable[[dict[str, Any]], bool]] = {}
    for kind, rules in KIND_RULES.items():
        parts: list[str] = [_ENVELOPE]
        for name, (types, required, nullable) in rules.items():
            if not types:
                if required:
                    parts.append(f"{name!r} in o")
                continue
            allowed = tuple(types) + ((type(None),) if nullable else ())
            tname = f"T_{kind}_{name}"
            ns[tname] = allowed
            non_negative = name in _NON_NEGATIVE and int in types
            test = f"type(_x) in {tname}" + (" and (type(_x) is not int or _x >= 0)" if non_negative else "")
            if required:
                parts.append(f"((_x := o.get({name!r}, _M)) is not _M and {test})")
            else:
                parts.append(f"((_x := o.get({name!r}, _M)) is _M or ({test}))")
        if kind == "message":
            parts.append("o['role'] in ROLES")
        elif kind == "tool_result":
            parts.append("('output' in o or 'blob' in o)")
        exec(f"def check_{kind}(o):\n    return " + " and ".join(parts), ns)
        checks[kind] = ns[f"check_{kind}"]
    exec(f"def check_unknown(o):\n    return {_ENVELOPE}", ns)
    checks[""] = ns["check_unknown"]  # any other non-empty kind: the envelope only
    return checks


_FAST = _compile_fast_checks()
_FAST_UNKNOWN = _FAST.pop("")


def check_event(obj: Any) -> str | None:
    """Check a full event (envelope + fields); return what is wrong, or None."""
    if type(obj) is dict:
        kind = obj.get("kind")
        if type(kind) is str and kind and _FAST.get(kind, _FAST_UNKNOWN)(obj):
            return None
    return _describe_problem(obj)


def _describe_problem(obj: Any) -> str | None:
    if type(obj) is not dict:
        return "not a JSON object"
    v = obj.get("v")
    if v != SCHEMA_VERSION or type(v) is not int:
        return f"field 'v' must be {SCHEMA_VERSION}" if "v" in obj else "event lacks field 'v'"
    seq = obj.get("seq")
    if type(seq) is not int or seq < 0:
        return "event lacks a non-negative integer 'seq'" if "seq" not in obj or seq is None else "field 'seq' must be a non-negative integer"
    ts = obj.get("ts")
    if type(ts) is not str:
        return "event lacks a string 'ts'"
    kind = obj.get("kind")
    if type(kind) is not str or not kind:
        return "event lacks a string 'kind'"
    if "agent" in obj and obj["agent"] is not None and type(obj["agent"]) is not str:
        return "field 'agent' must be a string"
    return check_fields(obj)


def now_ts() -> str:
    """RFC 3339 UTC with milliseconds and a Z, the form every writer uses."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def is_real_user(ev: Event) -> bool:
    """A real user message starts a turn; synthetic ones and subagents' do not."""
    return (
        ev.get("kind") == "message"
        and ev.get("role") == "user"
        and not ev.get("synthetic")
        and not ev.get("agent")
    )

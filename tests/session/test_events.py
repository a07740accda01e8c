"""SPEC "Events": validation names what is wrong; the fast path agrees with the descriptive one."""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from catty_ctx.session.events import KIND_RULES, _describe_problem, check_event

_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False), st.text(max_size=3), st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
_names = st.sampled_from(sorted({n for rules in KIND_RULES.values() for n in rules} | {"v", "seq", "ts", "agent", "x"}))


@st.composite
def events(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from([*KIND_RULES, "x-unknown"]))
    ev: dict[str, Any] = {"v": 1, "seq": draw(st.integers(0, 5)), "ts": "t", "kind": kind}
    for name in KIND_RULES.get(kind, {}):
        if draw(st.booleans()):
            ev[name] = draw(_values)
    for name, value in draw(st.dictionaries(_names, _values, max_size=3)).items():
        ev[name] = value
    if kind == "message" and draw(st.booleans()):
        ev["role"] = draw(st.sampled_from(["user", "assistant", "robot"]))
    return ev


@settings(max_examples=150, deadline=None)
@given(events())
def test_fast_check_agrees_with_the_descriptive_check(ev: dict[str, Any]) -> None:
    assert (check_event(ev) is None) == (_describe_problem(ev) is None)


def test_a_valid_event_of_each_kind_passes() -> None:
    samples = [
        {"kind": "session", "session_id": "s", "window": 1000, "parent_session_id": None},
        {"kind": "message", "id": "m", "role": "developer", "text": "", "images": [], "synthetic": "r"},
        {"kind": "tool_call", "call_id": "c", "name": "n", "args": "not json {"},
        {"kind": "tool_result", "call_id": "c", "blob": "ab", "bytes": 10, "is_error": False},
        {"kind": "usage", "model": "m", "input": 1, "output": 2, "cost_usd": 0.5, "incomplete": True},
        {"kind": "state", "facet": "todos", "value": []},
        {"kind": "compaction", "id": "k", "mode": "summary", "through_seq": 3, "summary": "s"},
        {"kind": "repair", "action": "drop", "target_seq": 3, "reason": "r"},
        {"kind": "rewind", "to_turn": 0},
        {"kind": "something-new", "anything": {"goes": 1}},
    ]
    for ev in samples:
        assert check_event({"v": 1, "seq": 1, "ts": "t", **ev}) is None, ev


def test_envelope_problems_are_named() -> None:
    assert check_event([1]) == "not a JSON object"
    assert check_event({"seq": 0, "ts": "t", "kind": "x"}) == "event lacks field 'v'"
    assert check_event({"v": 1, "seq": -1, "ts": "t", "kind": "x"}) == "field 'seq' must be a non-negative integer"
    assert check_event({"v": 1, "seq": 0, "kind": "x"}) == "event lacks a string 'ts'"
    assert check_event({"v": 1, "seq": 0, "ts": "t", "kind": "x", "agent": 5}) == "field 'agent' must be a string"

"""Fuzzing the reader and the view: no input crashes them (only DataError may come out)."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catty_ctx.errors import DataError
from catty_ctx.view.integrity import pairing_problems
from catty_ctx.session.store import Session
from catty_ctx.view.fold import view

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "updates.jsonl").write_bytes(data)
        try:
            items = view(Session.open(d))
        except DataError:
            return
        pairing_problems(items)


@_SETTINGS
@given(st.binary(max_size=400))
def test_random_bytes_never_crash_the_reader(data: bytes) -> None:
    _read(data)


_ids = st.sampled_from(["c1", "c2", "c3"])
_event = st.one_of(
    st.builds(lambda r, t: {"kind": "message", "id": "m", "role": r, "text": t}, st.sampled_from(["user", "assistant", "system", "developer"]), st.text(max_size=5)),
    st.builds(lambda c: {"kind": "tool_call", "call_id": c, "name": "t", "args": {}}, _ids),
    st.builds(lambda c, e: {"kind": "tool_result", "call_id": c, "output": "o", "is_error": e}, _ids, st.booleans()),
    st.builds(lambda k: {"kind": "rewind", "to_turn": k}, st.integers(0, 4)),
    st.builds(lambda t: {"kind": "compaction", "id": "k", "mode": "summary", "through_seq": t, "summary": "s"}, st.integers(0, 30)),
    st.builds(lambda t: {"kind": "repair", "action": "drop", "target_seq": t, "reason": "r"}, st.integers(0, 30)),
    st.builds(lambda c: {"kind": "repair", "action": "answer", "call_id": c, "reason": "r"}, _ids),
    st.builds(lambda i: {"kind": "usage", "model": "m", "input": i, "output": 1}, st.integers(0, 10**6)),
    st.builds(lambda v: {"kind": "state", "facet": "todos", "value": v}, st.just([{"text": "x", "status": "pending"}])),
    st.just({"kind": "x-unknown", "a": 1}),
)


@_SETTINGS
@given(st.lists(_event, max_size=30), st.integers(0, 3))
def test_any_sequence_of_valid_events_folds(events: list[dict[str, Any]], cut: int) -> None:
    lines = [orjson.dumps({"v": 1, "seq": 0, "ts": "t", "kind": "session", "session_id": "f"})]
    for seq, ev in enumerate(events, 1):
        lines.append(orjson.dumps({"v": 1, "seq": seq, "ts": "t", **ev}))
    data = b"\n".join(lines) + b"\n"
    _read(data[: len(data) - cut])  # sometimes with a torn tail
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "updates.jsonl").write_bytes(data)
        first = view(Session.open(d))
        assert first == view(Session.open(d))  # same log, same view

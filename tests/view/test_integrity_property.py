"""Property (hypothesis): any mix of calls, results, duplicates, missing and orphaned results,
snapshots and a torn tail → repair → a log that keeps every complete original line, resumes
as valid OpenAI and Anthropic requests, and that `repair --check` finds clean."""
from __future__ import annotations

from pathlib import Path
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catty_ctx.errors import DataError
from catty_ctx.fork import resume
from catty_ctx.repair.plan import analyse
from catty_ctx.repair.fix import repair_session, repaired_items
from catty_ctx.view.providers import sendable, validate_anthropic, validate_openai
from catty_ctx.session.store import Session
from support import call, msg, result, session_event, write_log

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("user"), st.sampled_from(["", "go on", "next"])),
        st.tuples(st.just("system"), st.sampled_from(["", "note"])),
        st.tuples(st.just("assistant"), st.sampled_from(["", "thinking", "thinking more"])),
        st.tuples(st.just("snapshot"), st.just("")),
        st.tuples(st.just("call"), st.sampled_from(["read", "sh"])),
        st.tuples(st.just("answer"), st.integers(0, 5)),  # the k-th latest call: answered, duplicated or displaced
        st.tuples(st.just("orphan"), st.just("")),
        st.tuples(st.just("usage"), st.just("")),
    ),
    max_size=40,
)


def _events(ops: list[tuple[str, object]]) -> list[dict]:
    events: list[dict] = [session_event()]
    calls: list[str] = []
    n = 0
    for op, arg in ops:
        n += 1
        if op in ("user", "system", "assistant"):
            events.append(msg(op, str(arg), f"m{n}"))
        elif op == "snapshot" and events[-1]["kind"] == "message":
            prev = events[-1]
            events.append({**prev, "text": prev["text"] + " …more"})
        elif op == "call":
            calls.append(f"c{n}")
            events.append(call(calls[-1], str(arg), {"n": n} if n % 3 else "raw {not json"))
        elif op == "answer" and calls:
            events.append(result(calls[-1 - int(arg) % len(calls)], f"out {n}", is_error=n % 4 == 0))
        elif op == "orphan":
            events.append(result(f"ghost{n}", "?"))
        elif op == "usage":
            events.append({"kind": "usage", "model": "m", "input": n, "output": 1})
    return events


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, torn=st.sampled_from([b"", b'{"v":1,"seq":', b'{"v":1,"seq":999,"ts":"x","kind":"mess']))
def test_any_broken_history_repairs_to_valid_requests_and_a_clean_check(ops: list, torn: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = write_log(Path(tmp) / "s", _events(ops), raw_tail=torn)
        original = (d / "updates.jsonl").read_bytes()
        complete = original[: original.rfind(b"\n") + 1]
        s = Session.open(d)
        repair_session(s)
        after = (d / "updates.jsonl").read_bytes()
        assert after.startswith(complete)  # every complete original line is still there, in place
        assert not analyse(s).found  # what `repair --check` reports: clean, exit 0
        if not any(i["role"] != "system" for i in sendable(repaired_items(s)[0])[0]):
            try:  # nothing left to send: resume says so (exit 65), never an empty request
                resume(s, "openai")
            except DataError as exc:
                assert "no conversation to resume" in str(exc)
                return
            raise AssertionError("resume of an empty view printed a request")
        openai, _ = resume(s, "openai")
        anthropic, _ = resume(s, "anthropic")
        validate_openai(openai)
        validate_anthropic(anthropic)
        items, _ = resume(s, "items")
        assert all(i["role"] != "tool" or i["call_id"] for i in items)

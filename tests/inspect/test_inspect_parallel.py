"""inspect on two processes (a large log's every other chunk folded by a forked worker) gives
the report of one pass, byte for byte, and the same errors naming the same file:line.

The size threshold and the chunk size are parameters, so a small log takes the two-process
path here with chunks of a few lines."""
from __future__ import annotations

import io
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catty_ctx.inspect import two_cores as parallel
from catty_ctx.errors import DataError
from catty_ctx.inspect.session import inspect_session
from catty_ctx.session.store import Session
from support import call, msg, result, session_event, write_log

pytestmark = pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="the two-process path needs fork")


def _report(target: Path | Session, **kw: object) -> tuple[bytes, list[str]]:
    warnings: list[str] = []
    session = target if isinstance(target, Session) else Session.open(target)
    rep = inspect_session(session, warn=warnings.append, **kw)  # type: ignore[arg-type]
    return orjson.dumps(rep), warnings


def _both(target: Path, chunk_bytes: int) -> None:
    serial = _report(target, parallel=False)
    assert _report(target, parallel=True, chunk_bytes=chunk_bytes) == serial


def _turns(n: int) -> list[dict]:
    events: list[dict] = [msg("system", "be brief")]
    for t in range(n):
        events += [msg("user", f"question {t} " + "q" * (t * 37 % 300)), msg("assistant", f"step {t}")]
        events += [call(f"c{t}a", "read", {"path": f"f{t}.py"}), call(f"c{t}b", "sh", "ls {raw")]
        events += [result(f"c{t}a", "A" * (t * 91 % 2000)), result(f"c{t}b", "B", is_error=t % 5 == 0)]
        events.append({"kind": "usage", "model": "m", "input": 100 + t, "output": 10, "cache_read": 1000 * t})
        if t % 7 == 3:
            events.append(result(f"ghost{t}", "orphan"))
        if t % 11 == 4:
            events += [msg("assistant", "calls without answers"), call(f"d{t}")]
        events.append(msg("assistant", f"done {t}", images=["img-hash"] if t % 9 == 2 else None) if t % 9 == 2 else msg("assistant", f"done {t}"))
    return events


def test_two_processes_give_the_report_of_one_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = write_log(tmp_path / "s", [session_event(window=50_000), *_turns(120)])
    merged: list[int] = []
    real = parallel._merge
    monkeypatch.setattr(parallel, "_merge", lambda *a: merged.append(1) or real(*a))
    for chunk in (200, 1500, 4000, 1 << 20):
        _both(d, chunk)
    # A chunk per byte, on a log of the first 30 of those turns (every kind of turn they make is
    # there): the chunks are as many as the log's bytes, and each costs both processes a step.
    _both(write_log(tmp_path / "short", [session_event(window=50_000), *_turns(30)]), 1)
    assert merged, "the worker folded none of the chunks"


@pytest.mark.parametrize("dies", ["before pass 1", "before the chunks", "after a chunk"])
def test_a_worker_that_dies_leaves_its_chunks_to_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dies: str) -> None:
    d = write_log(tmp_path / "s", [session_event(), *_turns(40)])
    real_scan, real_fold = parallel.scan_markers, parallel._fold_chunks

    def scan(path: Path, *a: object, start: int = 0, **kw: object) -> object:
        if start and dies == "before pass 1":
            raise MemoryError  # only the worker scans from the middle
        return real_scan(path, *a, start=start, **kw)  # type: ignore[arg-type]

    def fold(*a: object) -> object:
        if dies == "before the chunks":
            raise MemoryError
        chunks = real_fold(*a)  # type: ignore[arg-type]
        yield next(chunks)
        raise MemoryError

    monkeypatch.setattr(parallel, "scan_markers", scan)
    monkeypatch.setattr(parallel, "_fold_chunks", fold)
    _both(d, 300)


def test_a_large_log_takes_two_processes_by_default_and_a_small_one_does_not() -> None:
    """Asked in a fresh interpreter, as a run asks it: a thread another test left running in
    this worker would (rightly) forbid a fork here."""
    import os
    import subprocess
    import sys

    from support import ROOT

    code = "from catty_ctx.inspect import two_cores as p; print(p.can_split(p.PARALLEL_MIN_BYTES - 1), p.can_split(p.PARALLEL_MIN_BYTES))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT))).stdout.split()
    assert out == ["False", str(len(os.sched_getaffinity(0)) > 1)]


def test_an_invalid_line_in_the_workers_chunks_names_its_file_and_line(tmp_path: Path) -> None:
    _invalid_lines(tmp_path, every=13)


@pytest.mark.slow
def test_an_invalid_line_anywhere_names_its_file_and_line(tmp_path: Path) -> None:
    _invalid_lines(tmp_path, every=1)


def _invalid_lines(tmp_path: Path, every: int) -> None:
    """Each of three bad lines in place of every EVERY-th line (from the second): both paths raise
    the same error, naming the file and the line (each try forks a worker)."""
    d = write_log(tmp_path / "s", [session_event(), *_turns(30)])
    log = d / "updates.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    bad_lines = (b'{"v":1,"seq":\n', b'{"v":1,"seq":99999,"ts":"x","kind":"message","id":"m","role":"user","text":"t"}\n',
                 b'{"v":1,"seq":5,"ts":"x","kind":"message","id":"m","role":"robot","text":"t"}\n')
    for n in range(1, len(lines), every):
        for bad in bad_lines:
            log.write_bytes(b"".join(lines[:n]) + bad + b"".join(lines[n + 1 :]))
            with pytest.raises(DataError) as one:
                inspect_session(Session.open(d), parallel=False)
            with pytest.raises(DataError) as two:
                inspect_session(Session.open(d), parallel=True, chunk_bytes=300)
            assert str(two.value) == str(one.value)
            assert str(one.value).startswith(f"{log}:{n + 1}: ")


def test_a_torn_tail_still_warns_with_its_line(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), *_turns(20)], raw_tail=b'{"v":1,"seq":999,"ts":"x","kind":"mess')
    report, warnings = _report(d, parallel=True, chunk_bytes=500)
    assert (report, warnings) == _report(d, parallel=False)
    assert len(warnings) == 1 and "torn final line" in warnings[0]
    assert orjson.loads(report)["problems"]["torn"] == 1


def test_stdin_takes_the_same_path(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), *_turns(40)])
    data = (d / "updates.jsonl").read_bytes()
    with Session.from_stream(io.BytesIO(data)) as s:
        piped = _report(s, parallel=True, chunk_bytes=700)
    assert orjson.loads(piped[0])["fp"] == orjson.loads(_report(d, parallel=False)[0])["fp"]
    with Session.from_stream(io.BytesIO(data)) as s:
        assert piped == _report(s, parallel=False)


OPS = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["user", "assistant", "system", "synthetic"]), st.integers(0, 400)),
        st.tuples(st.just("call"), st.integers(0, 3)),
        st.tuples(st.just("result"), st.integers(0, 3)),
        st.tuples(st.just("usage"), st.integers(0, 100_000)),
        st.tuples(st.just("subagent"), st.integers(0, 3)),
        st.tuples(st.just("state"), st.sampled_from(["todos", "skills", "mcp", "plan"])),
        st.tuples(st.just("compaction"), st.integers(0, 30)),
        st.tuples(st.just("rewind"), st.integers(0, 3)),
        st.tuples(st.just("drop"), st.integers(1, 20)),
        st.tuples(st.just("answer"), st.integers(0, 3)),
        st.tuples(st.just("unknown"), st.integers(0, 3)),
    ),
    max_size=60,
)


def _events(ops: list[tuple[str, object]]) -> list[dict]:
    events: list[dict] = [session_event(window=30_000)]
    calls: list[str] = []
    for n, (op, arg) in enumerate(ops, 1):
        seq = len(events)
        if op in ("user", "assistant", "system"):
            events.append(msg(op, "x" * int(arg), f"m{n}"))  # type: ignore[call-overload]
        elif op == "synthetic":
            events.append(msg("user", "reminder", f"m{n}", synthetic="harness_context"))
        elif op == "call":
            calls.append(f"c{n}")
            events.append(call(calls[-1], "edit_file", {"path": f"f{arg}.py"}))
        elif op == "result":
            events.append(result(calls[-1 - int(arg) % len(calls)] if calls else f"ghost{n}", "out " * int(arg)))  # type: ignore[call-overload]
        elif op == "usage":
            events.append({"kind": "usage", "model": "m", "input": int(arg), "output": 3})  # type: ignore[call-overload]
        elif op == "subagent":
            events.append({**msg("user", "sub", f"s{n}"), "agent": f"sub{arg}"})
        elif op == "state":
            value = [{"name": f"k{n}", "description": "d", "path": "p"}] if arg == "skills" else [{"name": "srv", "tools": ["a"]}] if arg == "mcp" else "plan" if arg == "plan" else []
            events.append({"kind": "state", "facet": arg, "value": value})
        elif op == "compaction":
            events.append({"kind": "compaction", "id": f"k{n}", "mode": "summary", "through_seq": max(seq - 1 - int(arg), 0), "summary": f"S{n}"})  # type: ignore[call-overload]
        elif op == "rewind":
            events.append({"kind": "rewind", "to_turn": int(arg)})  # type: ignore[call-overload]
        elif op == "drop":
            events.append({"kind": "repair", "action": "drop", "target_seq": max(seq - int(arg), 1), "reason": "duplicate_result"})  # type: ignore[call-overload]
        elif op == "answer" and calls:
            events.append({"kind": "repair", "action": "answer", "call_id": calls[-1 - int(arg) % len(calls)], "reason": "dangling_call"})  # type: ignore[call-overload]
        elif op == "unknown":
            events.append({"kind": "future_kind", "payload": arg})
    return events


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, chunk=st.integers(1, 2000), torn=st.sampled_from([b"", b'{"v":1,"seq":']))
def test_any_session_gives_the_same_report_on_two_processes(ops: list, chunk: int, torn: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _both(write_log(Path(tmp) / "s", _events(ops), raw_tail=torn), chunk)

"""The ledger kept between runs: after logs only grew, their new calls are added to the last fold,
and the answer is always the one a full scan gives."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catty_ctx.usage import pipeline as U
from catty_ctx.usage import filecache, filescan
from support.usage_trees import claude_tree

SONNET = "claude-sonnet-4-20250514"


def line(mid: str | None, rid: str | None, *, sid: str = "s1", uuid: str, side: bool = False, out: int = 5, inp: int = 10,
         ts: str = "2026-02-01T10:00:00.000Z", cost: float | None = None, model: str = SONNET) -> bytes:
    obj: dict[str, Any] = {"type": "assistant", "sessionId": sid, "isSidechain": side, "timestamp": ts, "uuid": uuid,
                           "message": {"model": model, "role": "assistant", "content": [],
                                       "usage": {"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": 3,
                                                 "cache_creation_input_tokens": 1}}}
    if mid is not None:
        obj["message"]["id"] = mid
    if rid is not None:
        obj["requestId"] = rid
    if cost is not None:
        obj["costUSD"] = cost
    return orjson.dumps(obj) + b"\n"


def answer(root: Path, by: str, **kw: Any) -> tuple[dict[str, Any], U.Scan]:
    led, scan = U.usage([str(root)], by=by, timezone_name="UTC", **kw)
    return led.document(scan), scan


def same_as_a_full_scan(root: Path, by: str, until: str | None = None, monkeypatch: pytest.MonkeyPatch | None = None) -> U.Scan:
    """The cached answer equals the answer of a scan that reads every log, in every reported count.

    With MONKEYPATCH, the cached answer must come without the full scan (the kept ledger adjusted)."""
    with pytest.MonkeyPatch.context() as m:
        if monkeypatch is not None:
            m.setattr(filescan, "scan", _refuse)
        got, scan = answer(root, by, until=until)
    full, _ = answer(root, by, until=until, use_cache=False)
    for doc in (got, full):
        for name in ("files_parsed", "bytes_parsed"):
            doc.pop(name)
    assert got == full
    return scan


def _refuse(*_a: Any, **_k: Any) -> Any:
    raise AssertionError("the full scan ran")


# (--by block is never kept: a block depends on every call before it, and on the time now)
KEPT_BY = [by for by in U.BY_CHOICES if by != "block"]


@pytest.mark.parametrize("by", KEPT_BY)
def test_calls_appended_to_a_log_are_added_to_the_kept_ledger_without_a_full_scan(tmp_path: Path, by: str,
                                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    claude_tree(tmp_path / "c", seed=21, projects=2, sessions=3)
    logs = sorted((tmp_path / "c").rglob("*.jsonl"))
    same_as_a_full_scan(tmp_path / "c", by)  # cold: nothing kept yet
    with open(logs[0], "ab") as f:
        f.write(line("msg_a1", "req_a1", uuid="ua1"))
    same_as_a_full_scan(tmp_path / "c", by)  # the first run that reads a cache keeps the ledger
    with open(logs[1], "ab") as f:  # a response's content-block lines: one call
        tail = line("msg_a2", "req_a2", uuid="ua2", out=1) + line("msg_a2", "req_a2", uuid="ua3", out=40)
        f.write(tail)
    new_log = logs[0].parent / "new-session.jsonl"  # (a new log in a known folder)
    new_log.write_bytes(line("msg_a3", "req_a3", uuid="ua4", sid="new-session", ts="2026-03-05T01:00:00.000Z"))
    scan = same_as_a_full_scan(tmp_path / "c", by, monkeypatch=monkeypatch)
    assert scan.files_parsed == 2 and scan.bytes_parsed == len(tail) + new_log.stat().st_size
    with open(logs[2], "ab") as f:
        f.write(line("msg_a4", "req_a4", uuid="ua5", ts="2026-04-01T00:00:00.000Z"))
    same_as_a_full_scan(tmp_path / "c", by, monkeypatch=monkeypatch)


def test_a_run_after_an_append_reads_only_the_grown_logs_cache_entries_and_merges_a_large_delta(tmp_path: Path,
                                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """After an append only the grown log's entry is read from the per-file cache (not the
    whole file); a delta past DELTA_MAX_BYTES is merged into the base file, which later runs read."""
    claude_tree(tmp_path / "c", seed=22, projects=2, sessions=3)
    logs = sorted((tmp_path / "c").rglob("*.jsonl"))
    same_as_a_full_scan(tmp_path / "c", "day")
    with open(logs[0], "ab") as f:
        f.write(line("msg_b1", "req_b1", uuid="ub1"))
    same_as_a_full_scan(tmp_path / "c", "day")  # the first run that reads a cache keeps the ledger
    read: list[set[str]] = []
    real = filecache.entries_of
    monkeypatch.setattr(filecache, "entries_of", lambda arg, wanted: read.append(set(wanted)) or real(arg, wanted))
    with open(logs[1], "ab") as f:
        f.write(line("msg_b2", "req_b2", uuid="ub2"))
    same_as_a_full_scan(tmp_path / "c", "day", monkeypatch=monkeypatch)
    assert read == [{str(logs[1])}]
    base = next(U.cache_dir().glob("usage-v*.bin"))
    before = base.read_bytes()
    monkeypatch.setattr(filecache, "DELTA_MAX_BYTES", 0)  # every delta now goes into the base file
    with open(logs[2], "ab") as f:
        f.write(line("msg_b3", "req_b3", uuid="ub3", ts="2026-04-01T00:00:00.000Z"))
    same_as_a_full_scan(tmp_path / "c", "day", monkeypatch=monkeypatch)
    assert base.read_bytes() != before and not list(U.cache_dir().glob("usage-delta-*.bin"))
    scan = same_as_a_full_scan(tmp_path / "c", "session")  # a new question: every log from the merged base file
    assert scan.files_parsed == 0 and scan.from_cache == scan.files


@pytest.mark.parametrize("copy", ["larger content-block copy", "replay by uuid", "side question re-log", "reported cost",
                                  "bad line", "torn line"])
def test_an_appended_line_that_meets_an_earlier_call_is_answered_by_the_full_scan(tmp_path: Path, copy: str) -> None:
    root = tmp_path / "projects" / "p"
    root.mkdir(parents=True)
    main, other = root / "s1.jsonl", root / "s2.jsonl"
    main.write_bytes(line("msg_1", "req_1", uuid="u1") + line("msg_2", "req_2", uuid="u2"))
    other.write_bytes(line("msg_9", "req_9", uuid="u9", sid="s2"))
    same_as_a_full_scan(tmp_path, "model")
    with open(other, "ab") as f:
        f.write(line("msg_10", "req_10", uuid="u10", sid="s2"))
    same_as_a_full_scan(tmp_path, "model")  # (keeps the ledger)
    tail = {
        "larger content-block copy": line("msg_1", "req_1", uuid="u1b", out=500),
        "replay by uuid": line("msg_x", "req_x", uuid="u2", out=70),
        "side question re-log": line("msg_2", "req_new", uuid="u3", side=True),
        "reported cost": line("msg_3", "req_3", uuid="u4", cost=0.25),
        "bad line": b'{"message": {"usage": {"output_tokens": 1}}, "timestamp": "never"}\n',
        "torn line": line("msg_4", "req_4", uuid="u5")[:40],
    }[copy]
    target = other if copy != "larger content-block copy" else main
    with open(target, "ab") as f:
        f.write(tail)
    scan = same_as_a_full_scan(tmp_path, "model")
    assert scan.records, "answered by the full scan (which hands back every record)"


def test_a_log_that_shrank_or_disappeared_is_answered_by_the_full_scan(tmp_path: Path) -> None:
    root = tmp_path / "projects" / "p"
    root.mkdir(parents=True)
    a, b = root / "a.jsonl", root / "b.jsonl"
    a.write_bytes(line("msg_1", "req_1", uuid="u1") + line("msg_2", "req_2", uuid="u2"))
    b.write_bytes(line("msg_3", "req_3", uuid="u3"))
    same_as_a_full_scan(tmp_path, "day")
    with open(b, "ab") as f:
        f.write(line("msg_4", "req_4", uuid="u4"))
    same_as_a_full_scan(tmp_path, "day")
    a.write_bytes(line("msg_1", "req_1", uuid="u1"))
    same_as_a_full_scan(tmp_path, "day")
    b.unlink()
    same_as_a_full_scan(tmp_path, "day")


def test_a_damaged_kept_ledger_or_index_is_ignored(tmp_path: Path) -> None:
    claude_tree(tmp_path / "c", seed=22, projects=1, sessions=2)
    log = sorted((tmp_path / "c").rglob("*.jsonl"))[0]
    same_as_a_full_scan(tmp_path / "c", "model")
    for n in range(3):
        with open(log, "ab") as f:
            f.write(line(f"msg_d{n}", f"req_d{n}", uuid=f"ud{n}"))
        if n == 1:
            for delta in U.cache_dir().glob("usage-delta-*.bin"):  # (the entries the last append rewrote)
                delta.write_bytes(delta.read_bytes()[:-3])
        if n == 2:
            for kept in U.cache_dir().glob("usage-folds-*.bin"):
                kept.write_bytes(b"\x00not marshal")
            for kept in U.cache_dir().glob("usage-index-*.bin"):
                kept.write_bytes(b"\xe9\x02")  # marshal of a tuple cut short
        same_as_a_full_scan(tmp_path / "c", "model")


# Appends drawn from everything a log can grow by: new calls, copies of earlier ones under
# every dedupe rule, sidechains, other days, new logs, reported costs, bad and torn lines.
APPEND = st.tuples(
    st.sampled_from(["new", "new", "new", "side new", "block copy", "uuid replay", "side re-log", "side new", "cost", "bad", "torn", "no request id"]),
    st.integers(0, 3),  # which log (3: a new one)
    st.integers(0, 40),  # which earlier call, or the output count
    st.sampled_from(["2026-02-01T10:00:00.000Z", "2026-02-01T23:59:59.500Z", "2026-02-02T00:00:00.000Z", "2026-03-09T12:00:00.000Z"]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(APPEND, min_size=1, max_size=4), min_size=1, max_size=5), st.sampled_from(["model", "day", "session", "agent"]),
       st.sampled_from([None, "2026-02-01"]))
def test_any_sequence_of_appends_gives_the_full_scans_answer(batches: list[list[tuple[str, int, int, str]]], by: str,
                                                            until: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")  # (the autouse fixture restores it)
        root = Path(tmp) / "projects" / "p"
        root.mkdir(parents=True)
        logs = [root / f"s{i}.jsonl" for i in range(4)]
        calls: list[tuple[str, str, str]] = []  # (message id, request id, session) written so far
        n = 0
        for i in range(3):
            logs[i].write_bytes(line(f"msg_{i}", f"req_{i}", uuid=f"u{i}", sid=f"s{i}"))
            calls.append((f"msg_{i}", f"req_{i}", f"s{i}"))
        same_as_a_full_scan(Path(tmp), by, until)
        for batch in batches:
            for kind, which, k, ts in batch:
                n += 1
                log = logs[which]
                sid = log.stem
                mid, rid, csid = calls[k % len(calls)]
                data = {
                    "new": lambda: line(f"msg_n{n}", f"req_n{n}", uuid=f"un{n}", sid=sid, ts=ts, out=k),
                    "block copy": lambda: line(mid, rid, uuid=f"un{n}", sid=csid, ts=ts, out=k),
                    "uuid replay": lambda: line(f"msg_r{n}", f"req_r{n}", uuid=f"u{k % 3}", sid=sid, ts=ts),
                    "side re-log": lambda: line(mid, f"req_s{n}", uuid=f"un{n}", sid=csid, side=True, ts=ts),
                    "side new": lambda: line(f"msg_n{n}", f"req_n{n}", uuid=f"un{n}", sid=sid, side=True, ts=ts),
                    "cost": lambda: line(f"msg_n{n}", f"req_n{n}", uuid=f"un{n}", sid=sid, cost=k / 7, ts=ts),
                    "bad": lambda: b'{"message": {"usage": {"output_tokens": 1}}}\n',
                    "torn": lambda: line(f"msg_t{n}", f"req_t{n}", uuid=f"ut{n}", sid=sid)[: 20 + k],
                    "no request id": lambda: line(f"id_{k % 2}", None, uuid=f"un{n}", sid=sid, ts=ts),
                }[kind]()
                if kind in ("new", "side new", "cost"):
                    calls.append((f"msg_n{n}", f"req_n{n}", sid))
                if kind != "torn" and log.exists() and not log.read_bytes().endswith(b"\n"):
                    data = b"\n" + data  # (the torn line before it ends here, as a bad line)
                with open(log, "ab") as f:
                    f.write(data)
            same_as_a_full_scan(Path(tmp), by, until)
            # A second question between appends: from the kept calls when they are current, else in full.
            same_as_a_full_scan(Path(tmp), "project" if by != "project" else "model", until)


@pytest.mark.parametrize("first", ["model", "day"])
def test_a_new_question_about_logs_kept_is_the_fold_of_their_kept_calls(tmp_path: Path, first: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    claude_tree(tmp_path / "c", seed=24, projects=2, sessions=3)
    same_as_a_full_scan(tmp_path / "c", first)  # cold: nothing kept yet
    same_as_a_full_scan(tmp_path / "c", "project")  # the first run that reads a cache keeps the calls
    for by in KEPT_BY:  # every other question comes from them, without the full scan
        same_as_a_full_scan(tmp_path / "c", by, monkeypatch=monkeypatch)
    same_as_a_full_scan(tmp_path / "c", "week", until="2026-03-01", monkeypatch=monkeypatch)


def test_kept_calls_behind_an_append_are_never_folded_and_are_written_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude_tree(tmp_path / "c", seed=25, projects=1, sessions=3)
    logs = sorted((tmp_path / "c").rglob("*.jsonl"))
    same_as_a_full_scan(tmp_path / "c", "model")  # cold: nothing kept yet
    same_as_a_full_scan(tmp_path / "c", "project")  # keeps its fold, the index and the calls
    with open(logs[0], "ab") as f:
        f.write(line("msg_k1", "req_k1", uuid="uk1", ts="2026-04-02T00:00:00.000Z"))
    same_as_a_full_scan(tmp_path / "c", "project", monkeypatch=monkeypatch)  # the kept fold, adjusted
    # The kept calls lack that call: a new question is the full scan's (which keeps the calls anew) ...
    with pytest.MonkeyPatch.context() as m:
        m.setattr(filescan, "scan", _refuse)
        with pytest.raises(AssertionError, match="the full scan ran"):
            answer(tmp_path / "c", "session")
    same_as_a_full_scan(tmp_path / "c", "session")
    # ... and the next new question comes from them again.
    same_as_a_full_scan(tmp_path / "c", "day", monkeypatch=monkeypatch)


def test_damaged_kept_calls_are_ignored(tmp_path: Path) -> None:
    claude_tree(tmp_path / "c", seed=26, projects=1, sessions=2)
    same_as_a_full_scan(tmp_path / "c", "model")  # cold: nothing kept yet
    same_as_a_full_scan(tmp_path / "c", "project")  # keeps the calls
    (calls,) = U.cache_dir().glob("usage-calls-*.bin")
    for damage in (calls.read_bytes()[:-7], b"\x92\x90\xc1", b""):
        calls.write_bytes(damage)
        same_as_a_full_scan(tmp_path / "c", "agent")
        for answers in U.cache_dir().glob("usage-answers-*.bin"):
            answers.unlink()  # (the question again, not its cached answer)


def test_folds_are_kept_for_the_last_questions_only(tmp_path: Path) -> None:
    import marshal

    from catty_ctx.usage import kept

    claude_tree(tmp_path / "c", seed=23, projects=1, sessions=1)
    same_as_a_full_scan(tmp_path / "c", "model")  # cold: nothing kept
    for day in range(1, kept.FOLDS_KEPT + 6):
        U.usage([str(tmp_path / "c")], by="day", until=f"2026-03-{day:02d}", timezone_name="UTC")
    (folds,) = U.cache_dir().glob("usage-folds-*.bin")
    kept_questions = marshal.loads(folds.read_bytes())
    assert len(kept_questions) == kept.FOLDS_KEPT
    assert any("2026-03-21" in q for q in kept_questions) and not any("2026-03-01" in q for q in kept_questions)


def test_a_replay_of_a_dropped_copy_appended_later_meets_the_record_it_was_dropped_for(tmp_path: Path) -> None:
    """A log read in parts collapses as when read at once: the copy a larger one replaced is
    remembered (its uuid), so its replay appended later is not a new call."""
    root = tmp_path / "projects" / "p"
    root.mkdir(parents=True)
    log = root / "s0.jsonl"
    log.write_bytes(line("msg_0", "req_0", uuid="u0") + line("msg_9", "req_9", uuid="u9"))
    same_as_a_full_scan(tmp_path, "model")
    with open(log, "ab") as f:
        f.write(line("msg_0", "req_0", uuid="un1", out=9))  # a larger copy: u0's record is replaced
    same_as_a_full_scan(tmp_path, "model")
    with open(log, "ab") as f:
        f.write(line("msg_r2", "req_r2", uuid="u0"))  # a replay of u0 with rewritten ids
    scan = same_as_a_full_scan(tmp_path, "model")
    assert scan.files_parsed == 1
    assert U.usage([str(tmp_path)], by="model", use_cache=False)[0].totals["calls"] == 2

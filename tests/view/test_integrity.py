"""`repair` as the issue promises it: every problem found and fixed, nothing lost."""
from __future__ import annotations

import shutil
from io import BytesIO
from pathlib import Path

import orjson
import pytest

from catty_ctx.errors import DataError
from catty_ctx.view.integrity import pairing_problems
from catty_ctx.repair.plan import analyse
from catty_ctx.repair.fix import repair_session, repair_stream, repaired_items
from catty_ctx.session.store import Session
from catty_ctx.view.fold import view
from support import FIXTURES, call, msg, result, session_event, write_log


def _bad(name: str, tmp_path: Path) -> Path:
    dest = tmp_path / name
    shutil.copytree(FIXTURES / "broken" / name, dest)
    return dest


def _repair(d: Path) -> list[dict]:
    s = Session.open(d)
    repair_session(s)
    assert not analyse(s).found, "a second repair finds nothing"
    return view(s)


def test_torn_final_line_is_quarantined_with_its_offset_and_the_log_truncated(tmp_path: Path) -> None:
    d = tmp_path / "t"
    shutil.copytree(FIXTURES / "sessions" / "torn", d)
    log = (d / "updates.jsonl").read_bytes()
    cut = log.rindex(b"\n") + 1
    repair_session(Session.open(d))
    index = [orjson.loads(x) for x in (d / "quarantine" / "index.jsonl").read_bytes().splitlines()]
    assert index[0]["offset"] == cut and index[0]["bytes"] == len(log) - cut
    assert (d / "quarantine" / index[0]["file"]).read_bytes() == log[cut:]
    after = (d / "updates.jsonl").read_bytes()
    assert after.startswith(log[:cut]) and after.endswith(b"\n")
    note = orjson.loads(after.splitlines()[-1])
    assert note["kind"] == "repair" and note["action"] == "quarantine" and str(cut) in note["text"]


def test_invalid_middle_line_is_kept_in_quarantine_and_the_log_made_loadable(tmp_path: Path) -> None:
    d = _bad("invalid", tmp_path)
    before = (d / "updates.jsonl").read_bytes()
    bad_line = before.splitlines(keepends=True)[3]
    mode = (d / "updates.jsonl").stat().st_mode
    with pytest.raises(DataError):
        list(Session.open(d).events())
    items = _repair(d)
    saved = [p.read_bytes() for p in (d / "quarantine").glob("*.bin")]
    assert saved == [bad_line]
    index = orjson.loads((d / "quarantine" / "index.jsonl").read_bytes().splitlines()[0])
    assert index["seq"] == 3 and index["line"] == 4
    events = list(Session.open(d).events())  # loadable: seq 3 is an accepted gap
    assert [e["seq"] for e in events][:4] == [0, 1, 2, 4]
    for line in before.splitlines(keepends=True):
        assert line == bad_line or line in (d / "updates.jsonl").read_bytes()
    assert pairing_problems(items).ok
    assert (d / "updates.jsonl").stat().st_mode == mode


def test_duplicate_results_keep_the_last(tmp_path: Path) -> None:
    items = _repair(_bad("duplicate", tmp_path))
    outputs = [i["output"] for i in items if i["role"] == "tool"]
    assert outputs == ["B", "A"]


def test_dangling_calls_are_answered_in_call_order_at_the_end_of_the_run(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "go"), msg("assistant", "", "a1"), call("c1"), call("c2"), call("c3"), result("c2", "B"), msg("user", "stop", "u2")])
    items = _repair(d)
    run = [(i["call_id"], i.get("synthetic")) for i in items if i["role"] == "tool"]
    assert run == [("c2", None), ("c1", "dangling_call"), ("c3", "dangling_call")]
    assert items[-1]["text"] == "stop"
    assert "not executed" in items[2]["output"] or "not executed" in items[3]["output"]


def test_orphan_and_displaced_results_leave_the_view(tmp_path: Path) -> None:
    d = _bad("orphan", tmp_path)
    plan = analyse(Session.open(d))
    assert plan.counts == {"orphan_result": 1, "displaced_result": 1}
    items = _repair(d)
    assert [i["output"] for i in items if i["role"] == "tool"] == ["A", "B"]


def test_streaming_snapshots_keep_the_last_copy(tmp_path: Path) -> None:
    items = _repair(_bad("snapshot", tmp_path))
    assert [i["text"] for i in items if i["role"] == "assistant"] == ["Reading both files now."]


def test_messages_that_share_an_id_but_do_not_grow_are_not_snapshots(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "a", "x"), msg("assistant", "one", "x"), msg("assistant", "two", "x")])
    assert analyse(Session.open(d)).counts == {"missing_summary": 1}


def test_a_repeated_call_id_is_dropped_with_its_results(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "go"), msg("assistant", "", "a1"), call("c1"), result("c1"),
                                   msg("assistant", "", "a2"), call("c1"), result("c1", "again")])
    items = _repair(d)
    assert sum(len(i.get("tool_calls", [])) for i in items) == 1 and pairing_problems(items).ok


def test_missing_summary_is_rebuilt_from_the_log(tmp_path: Path) -> None:
    d = _bad("no-summary", tmp_path)
    _repair(d)
    summary = orjson.loads((d / "summary.json").read_bytes())
    assert summary["session_id"] == "bad-0001" and summary["title"] == "Read both files."
    assert summary["last_seq"] == 7 and summary["log_size"] == (d / "updates.jsonl").stat().st_size


def test_stale_summary_is_rebuilt_keeping_fields_the_log_cannot_know(tmp_path: Path) -> None:
    d = _bad("stale-summary", tmp_path)
    s = orjson.loads((d / "summary.json").read_bytes())
    (d / "summary.json").write_bytes(orjson.dumps({**s, "custom": 7}))
    _repair(d)
    summary = orjson.loads((d / "summary.json").read_bytes())
    assert summary["last_seq"] == 8 and summary["custom"] == 7
    assert summary["log_size"] == (d / "updates.jsonl").stat().st_size


def test_an_unreadable_summary_is_kept_in_quarantine_and_rebuilt(tmp_path: Path) -> None:
    d = _bad("duplicate", tmp_path)
    (d / "summary.json").write_bytes(b"{not json")
    _repair(d)
    assert orjson.loads((d / "summary.json").read_bytes())["session_id"] == "bad-0001"
    assert [p.read_bytes() for p in (d / "quarantine").glob("summary-*.json")] == [b"{not json"]


def test_original_events_stay_in_the_log(tmp_path: Path) -> None:
    for name in ("duplicate", "orphan", "snapshot"):
        d = _bad(name, tmp_path)
        before = (d / "updates.jsonl").read_bytes()
        _repair(d)
        after = (d / "updates.jsonl").read_bytes()
        assert after.startswith(before) and len(after) > len(before)
        assert all(orjson.loads(x)["kind"] == "repair" for x in after[len(before):].splitlines())


def test_a_clean_session_is_left_alone(demo: Path) -> None:
    before = (demo / "updates.jsonl").read_bytes()
    assert not repair_session(Session.open(demo)).found
    assert (demo / "updates.jsonl").read_bytes() == before


def test_repaired_view_in_memory_equals_the_view_after_repair(tmp_path: Path) -> None:
    for name in ("duplicate", "orphan", "snapshot", "no-summary"):
        d = _bad(name, tmp_path)
        items, notes = repaired_items(Session.open(d))
        assert notes
        assert items == _repair(d)


def test_an_invalid_line_stays_a_data_error_for_the_repaired_view(tmp_path: Path) -> None:
    d = _bad("invalid", tmp_path)
    with pytest.raises(DataError) as err:
        repaired_items(Session.open(d))
    assert ":4:" in str(err.value) and "repair" in str(err.value)


def test_repair_stream_writes_the_stream_then_its_repairs(tmp_path: Path) -> None:
    d = _bad("duplicate", tmp_path)
    data = (d / "updates.jsonl").read_bytes()
    out = BytesIO()
    with Session.open("-", stdin=BytesIO(data + b'{"v":1,"se')) as s:
        repair_stream(s, out)
    assert out.getvalue().startswith(data)
    tail = [orjson.loads(x) for x in out.getvalue()[len(data):].splitlines()]
    assert [(e["seq"], e["action"], e["target_seq"]) for e in tail] == [(10, "drop", 6)]


def test_repair_stream_refuses_an_invalid_line_and_writes_nothing(tmp_path: Path) -> None:
    data = (FIXTURES / "broken" / "invalid" / "updates.jsonl").read_bytes()
    out = BytesIO()
    with Session.open("-", stdin=BytesIO(data)) as s, pytest.raises(DataError) as err:
        repair_stream(s, out)
    assert ":4:" in str(err.value) and out.getvalue() == b""


def test_two_torn_tails_at_the_same_offset_are_both_kept(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "hi")], raw_tail=b'{"v":1,"se')
    repair_session(Session.open(d))
    log = d / "updates.jsonl"
    size = log.stat().st_size
    with open(log, "ab") as f:
        f.write(b'{"v":1,"seq":')
    repair_session(Session.open(d))
    kept = sorted(p.read_bytes() for p in (d / "quarantine").glob("*.bin"))
    assert kept == [b'{"v":1,"se', b'{"v":1,"seq":'] and log.stat().st_size > size


def test_a_lost_line_becomes_an_accepted_gap(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "a"), msg("user", "b", "m2"), msg("user", "c", "m3")])
    lines = (d / "updates.jsonl").read_bytes().splitlines(keepends=True)
    (d / "updates.jsonl").write_bytes(b"".join(lines[:2] + lines[3:]))
    with pytest.raises(DataError):
        list(Session.open(d).events())
    _repair(d)
    assert [e["seq"] for e in Session.open(d).events()][:3] == [0, 1, 3]


def test_a_log_that_is_only_a_torn_line_is_emptied_into_quarantine(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [], raw_tail=b'{"v":1,"seq":0,"ts":"2026')
    repair_session(Session.open(d))
    assert (d / "updates.jsonl").read_bytes() == b""
    assert [p.read_bytes() for p in (d / "quarantine").glob("*.bin")] == [b'{"v":1,"seq":0,"ts":"2026']


def test_repair_rewriting_the_log_loses_no_concurrent_append(tmp_path: Path) -> None:
    """The rewrite (an invalid line leaves the log) happens under the lock, so a writer in
    another process appending all the while loses nothing and its seqs stay contiguous."""
    import subprocess
    import sys

    from support import ROOT

    d = write_log(tmp_path / "s", [session_event(), msg("user", "a"), msg("user", "b", "m2")])
    log = d / "updates.jsonl"
    script = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "from catty_ctx.session.store import Session\n"
        "s = Session.open(sys.argv[1])\n"
        "for i in range(60):\n"
        "    s.append([{'kind': 'message', 'id': f'w{i}', 'role': 'assistant', 'text': str(i)}], warn=None)\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", script, str(d)])
    repairs = 0
    while writer.poll() is None and repairs < 15:
        s = Session.open(d)
        with s.lock():  # a bad writer, under the lock: a garbage line, then a valid one after it
            n = s.next_seq()
            with open(log, "ab") as f:
                f.write(b"{garbage\n" + orjson.dumps({"v": 1, "seq": n + 1, "ts": "2026-11-01T00:00:00.000Z", "kind": "state", "facet": "plan", "value": "x"}) + b"\n")
        repair_session(Session.open(d))
        repairs += 1
    assert writer.wait() == 0 and repairs >= 1
    events = list(Session.open(d).events())
    texts = [e["text"] for e in events if e["kind"] == "message" and e["id"].startswith("w")]
    assert texts == [str(i) for i in range(60)]
    assert len((d / "quarantine" / "index.jsonl").read_bytes().splitlines()) >= repairs

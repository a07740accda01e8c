"""SPEC "Events" and "The session directory": reading, appending, the lock, summary.json."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest

from catty_ctx.errors import DataError, ExitCode, LockBusy
from catty_ctx.session.store import Session
from catty_ctx.session.create import create_session
from catty_ctx.sources import root_sessions
from support import ROOT, msg, session_event, write_log


def test_reads_a_directory_a_bare_file_and_a_stream(demo: Path) -> None:
    by_dir = list(Session.open(demo).events())
    by_file = list(Session.open(demo / "updates.jsonl").events())
    with open(demo / "updates.jsonl", "rb") as f, Session.open("-", stdin=f) as s:
        by_stream = list(s.events())
    assert by_dir == by_file == by_stream
    assert [e["seq"] for e in by_dir] == list(range(len(by_dir)))


def test_torn_final_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "hi")], raw_tail=b'{"v":1,"seq":2,"ts"')
    warnings: list[str] = []
    events = list(Session.open(d).events(warn=warnings.append))
    assert len(events) == 2
    assert len(warnings) == 1 and "updates.jsonl:3" in warnings[0] and "torn" in warnings[0]


def test_invalid_line_in_the_middle_names_file_and_line(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "hi"), msg("user", "again")])
    lines = (d / "updates.jsonl").read_bytes().splitlines(keepends=True)
    lines[1] = b"{not json\n"
    (d / "updates.jsonl").write_bytes(b"".join(lines))
    with pytest.raises(DataError) as err:
        list(Session.open(d).events())
    assert str(err.value).startswith(f"{d / 'updates.jsonl'}:2: invalid JSON")
    assert err.value.exit_code == ExitCode.DATA


@pytest.mark.parametrize(
    "bad, why",
    [
        ({"kind": "message", "id": "m", "role": "robot", "text": "x"}, "role 'robot'"),
        ({"kind": "message", "id": "m", "role": "user"}, "lacks field 'text'"),
        ({"kind": "tool_result", "call_id": "c", "is_error": "no", "output": ""}, "'is_error' must be a boolean"),
        ({"kind": "usage", "model": "m", "input": True, "output": 1}, "'input' must be an integer"),
        ({"kind": "rewind", "to_turn": -1}, "must not be negative"),
    ],
)
def test_validation_names_what_is_wrong(tmp_path: Path, bad: dict, why: str) -> None:
    d = write_log(tmp_path / "s", [session_event(), bad])
    with pytest.raises(DataError, match=why):
        list(Session.open(d).events())


def test_unknown_kinds_and_fields_are_carried_through(tmp_path: Path) -> None:
    d = create_session(tmp_path / "s", session_id="x")
    d.append([{"kind": "x-custom", "payload": {"a": [1, 2]}}, {**msg("user", "hi"), "x_extra": 7}])
    events = list(d.events())
    assert events[1]["kind"] == "x-custom" and events[1]["payload"] == {"a": [1, 2]}
    assert events[2]["x_extra"] == 7


def test_seq_gaps_and_duplicates_are_data_errors(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "a")])
    raw = (d / "updates.jsonl").read_bytes()
    (d / "updates.jsonl").write_bytes(raw + raw.splitlines(keepends=True)[1])
    with pytest.raises(DataError, match=r":3: seq 1 where 2 was expected"):
        list(Session.open(d).events())


def test_append_assigns_contiguous_seqs_and_keeps_a_given_ts(tmp_path: Path) -> None:
    s = create_session(tmp_path / "s", session_id="sid", window=1000, model="m")
    written = s.append([msg("user", "one", ts="2020-01-01T00:00:00Z"), {**msg("assistant", "two"), "seq": 99, "v": 7}])
    assert [e["seq"] for e in written] == [1, 2]
    assert written[0]["ts"] == "2020-01-01T00:00:00Z"
    assert written[1]["v"] == 1
    summary = orjson.loads((tmp_path / "s" / "summary.json").read_bytes())
    assert summary["session_id"] == "sid" and summary["window"] == 1000
    assert summary["events"] == 3 and summary["last_seq"] == 2 and summary["title"] == "one"
    assert summary["log_size"] == (tmp_path / "s" / "updates.jsonl").stat().st_size


def test_append_checks_every_event_before_writing(tmp_path: Path) -> None:
    s = create_session(tmp_path / "s")
    before = s.log_path.read_bytes()
    with pytest.raises(DataError, match="event 2"):
        s.append([msg("user", "fine"), {"kind": "message", "id": "m", "role": "user"}])
    assert s.log_path.read_bytes() == before


def test_append_quarantines_a_torn_tail_instead_of_gluing_onto_it(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "hi")], raw_tail=b'{"v":1,"seq":2')
    s = Session.open(d)
    s.append([msg("user", "after")], warn=None)
    events = list(s.events())
    assert [e["seq"] for e in events] == [0, 1, 2] and events[2]["text"] == "after"
    q = d / "quarantine"
    saved = [p for p in q.iterdir() if p.suffix == ".bin"]
    assert saved and saved[0].read_bytes() == b'{"v":1,"seq":2'


def test_lock_busy_gives_up_after_the_timeout(tmp_path: Path) -> None:
    s = create_session(tmp_path / "s")
    with s.lock():
        with pytest.raises(LockBusy) as err:
            Session.open(tmp_path / "s").append([msg("user", "x")], lock_timeout=0.2)
    assert err.value.exit_code == ExitCode.TEMP_FAIL == 75


def _race(tmp_path: Path, each: int) -> None:
    """A real multi-process race: 4 processes appending EACH events, 4 at a time: seq 0..4*EACH
    without a gap, every line valid, each writer's own order kept."""
    target = tmp_path / "s"
    create_session(target, session_id="race")
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from catty_ctx.session.store import Session
        s = Session.open({str(target)!r})
        w = sys.argv[1]
        for i in range(0, {each}, 4):
            s.append([{{"kind": "message", "id": f"{{w}}-{{j}}", "role": "user", "text": f"{{w}} {{j}}"}} for j in range(i, i + 4)], warn=None)
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(w)]) for w in range(4)]
    assert all(p.wait(timeout=300) == 0 for p in procs)
    raw = (target / "updates.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    lines = raw.splitlines()
    events = [orjson.loads(line) for line in lines]
    assert len(events) == 4 * each + 1  # the session event + 4 x EACH
    assert [e["seq"] for e in events] == list(range(4 * each + 1))
    ids = [e["id"] for e in events[1:]]
    assert len(set(ids)) == 4 * each
    for w in range(4):  # each writer's own order survives
        mine = [int(i.split("-")[1]) for i in ids if i.startswith(f"{w}-")]
        assert mine == list(range(each))
    summary = orjson.loads((target / "summary.json").read_bytes())
    assert summary["last_seq"] == 4 * each


def test_four_processes_appending_400_events_each(tmp_path: Path) -> None:
    _race(tmp_path, 400)


@pytest.mark.slow
def test_four_processes_appending_2000_events_each(tmp_path: Path) -> None:
    _race(tmp_path, 2000)


def test_root_sessions_walks_a_root_without_entering_sessions(tmp_path: Path) -> None:
    write_log(tmp_path / "a" / "s1", [session_event("1")])
    write_log(tmp_path / "b" / "c" / "s2", [session_event("2")])
    write_log(tmp_path / "a" / "s1" / "segments" / "nested", [session_event("3")])
    assert [p.relative_to(tmp_path).as_posix() for p in root_sessions(tmp_path)] == ["a/s1", "b/c/s2"]


def test_a_session_being_built_leaves_nothing_behind_when_building_fails(tmp_path: Path) -> None:
    """Whatever fails while a new session is built in its staging folder, the folder goes; a
    failed write is a WriteError naming the destination (exit 73), anything else passes on."""
    from catty_ctx.errors import WriteError
    from catty_ctx.session.new import building

    staging, dest = tmp_path / ".new.staging", tmp_path / "new"
    staging.mkdir()
    (staging / "updates.jsonl.part").write_bytes(b"{}\n")
    with pytest.raises(WriteError, match=r"new: cannot write \(No space left on device\)"):
        with building(staging, dest, "cannot write"):
            raise OSError(28, "No space left on device")
    assert not staging.exists() and not dest.exists()
    staging.mkdir()
    with pytest.raises(KeyboardInterrupt):
        with building(staging, dest, "cannot write"):
            raise KeyboardInterrupt
    assert not staging.exists()
    staging.mkdir()
    with building(staging, dest, "cannot write"):
        pass
    assert staging.is_dir()  # success: the caller has placed (or will place) it

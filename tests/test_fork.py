"""`fork` and `resume` as the issue promises them."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from catty_ctx.errors import DataError, UsageError, WriteError
from catty_ctx.view.fingerprint import chain_hex
from catty_ctx.fork import fork, resume
from catty_ctx.session.store import Session
from catty_ctx.view.fold import view
from support import ROOT, call, msg, session_event, write_log


def test_child_view_fingerprints_equal_the_parents_prefix(demo: Path, tmp_path: Path) -> None:
    parent = view(Session.open(demo))
    for turn in (1, 2):
        child_dir = tmp_path / f"child{turn}"
        fork(demo, child_dir, at_turn=turn)
        child = view(Session.open(child_dir))
        assert list(chain_hex(child)) == list(chain_hex(parent))[: len(child)]
    assert view(Session.open(tmp_path / "child2")) == parent


def test_at_turn_counts_the_turns_of_the_live_branch_after_a_rewind(tmp_path: Path) -> None:
    d = write_log(tmp_path / "p", [session_event(), msg("user", "t1", "u1"), msg("assistant", "a1", "a1"),
                                   msg("user", "t2", "u2"), msg("assistant", "a2", "a2"), {"kind": "rewind", "to_turn": 1},
                                   msg("user", "t2 again", "u3"), msg("assistant", "b2", "a3"), msg("user", "t3", "u4"), msg("assistant", "a4", "a4")])
    res = fork(d, tmp_path / "c", at_turn=2)
    child = view(Session.open(tmp_path / "c"))
    assert res.forked_from_seq == 7 and [i["text"] for i in child] == ["t1", "a1", "t2 again", "b2"]
    assert list(chain_hex(child)) == list(chain_hex(view(Session.open(d))))[:4]


def test_copied_events_keep_their_seq_and_the_child_records_its_parent(demo: Path, tmp_path: Path) -> None:
    res = fork(demo, tmp_path / "c", at_turn=1, model="other-model", cwd="/elsewhere")
    parent_events = list(Session.open(demo).events())
    child_events = list(Session.open(tmp_path / "c").events())
    first = child_events[0]
    assert first["kind"] == "session" and first["seq"] == 0
    assert first["parent_session_id"] == "demo-0001" and first["forked_from_seq"] == res.forked_from_seq == 14
    assert first["model"] == "other-model" and first["cwd"] == "/elsewhere" and first["session_id"] != "demo-0001"
    assert child_events[1:] == parent_events[1:15]
    summary = orjson.loads((tmp_path / "c" / "summary.json").read_bytes())
    assert summary["session_kind"] == "fork" and summary["parent_session_id"] == "demo-0001"
    assert summary["forked_from_seq"] == 14 and summary["forked_at"] and summary["model"] == "other-model"
    assert summary["session_id"] == first["session_id"] and summary["last_seq"] == 14


def test_segments_and_the_blobs_the_copy_needs_come_along(tmp_path: Path) -> None:
    handle, unused = "ab" * 16, "cd" * 16
    d = write_log(tmp_path / "p", [session_event(), msg("user", "one"), msg("assistant", "", "a"), call("c1"),
                                   {"kind": "tool_result", "call_id": "c1", "blob": handle, "bytes": 5, "is_error": False},
                                   msg("user", "two", "u2"), msg("assistant", "", "b"), call("c2"),
                                   {"kind": "tool_result", "call_id": "c2", "blob": unused, "bytes": 5, "is_error": False}])
    (d / "blobs").mkdir()
    (d / "blobs" / handle).write_bytes(b"hello")
    (d / "blobs" / unused).write_bytes(b"later")
    (d / "segments").mkdir()
    (d / "segments" / "segment_000.md").write_text("# segment 0\n\n- seq: 1..4\n")  # ends before the fork point
    (d / "segments" / "INDEX.md").write_text("| Segment |\n")
    fork(d, tmp_path / "c", at_turn=1)
    c = tmp_path / "c"
    assert sorted(p.name for p in (c / "blobs").iterdir()) == [handle]
    assert (c / "segments" / "segment_000.md").read_text() == "# segment 0\n\n- seq: 1..4\n"
    assert (c / "segments" / "INDEX.md").exists()  # the child's hints point at its own archive


def test_compaction_hints_in_the_child_point_at_its_own_segments(tmp_path: Path) -> None:
    d = write_log(tmp_path / "p", [session_event(), msg("user", "one"), msg("assistant", "did one", "a"),
                                   {"kind": "compaction", "id": "k1", "mode": "segments", "through_seq": 2, "summary": "S", "segment": "segment_000.md"},
                                   msg("user", "two", "u2")])
    (d / "segments").mkdir()
    (d / "segments" / "segment_000.md").write_text("# archived turn one\n")
    fork(d, tmp_path / "c")
    child = view(Session.open(tmp_path / "c"))
    assert child == view(Session.open(d))
    hint = next(i["text"] for i in child if i.get("synthetic") == "compaction_summary")
    assert "segments/" in hint and "segment_000.md" in hint and str(d) not in hint
    assert (tmp_path / "c" / "segments" / "segment_000.md").read_text() == "# archived turn one\n"


def test_symlinks_are_never_followed_out_of_the_session(tmp_path: Path) -> None:
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "key").write_text("do not copy")
    d = write_log(tmp_path / "p", [session_event(), msg("user", "one")])
    (d / "segments").mkdir()
    (d / "segments" / "link").symlink_to(outside)
    (d / "segments" / "file-link").symlink_to(outside / "key")
    res = fork(d, tmp_path / "c")
    assert not any((tmp_path / "c" / "segments").iterdir())
    assert len(res.skipped) == 2


def test_refuses_a_non_empty_dest_and_accepts_an_empty_one(demo: Path, tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("mine")
    with pytest.raises(UsageError):  # the docs' exit 2: DEST is the caller's choice, not a write that failed
        fork(demo, tmp_path / "full")
    assert (tmp_path / "full" / "x").read_text() == "mine"
    (tmp_path / "empty").mkdir()
    fork(demo, tmp_path / "empty")
    assert (tmp_path / "empty" / "summary.json").exists()


def test_a_killed_forks_temporary_tree_is_cleared_by_the_next_fork(demo: Path, tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    stale = tmp_path / f".c.fork-deadbeef-{int(gone.stdout)}.tmp"  # its fork process has exited
    stale.mkdir()
    (stale / "updates.jsonl.part").write_bytes(b"half")
    fork(demo, tmp_path / "c")
    assert not stale.exists() and (tmp_path / "c" / "updates.jsonl").exists()


def test_at_turn_beyond_the_session_is_a_usage_error(demo: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        fork(demo, tmp_path / "c", at_turn=9)
    assert not (tmp_path / "c").exists()


def test_an_invalid_parent_leaves_no_dest(tmp_path: Path) -> None:
    d = write_log(tmp_path / "p", [session_event(), msg("user", "a"), msg("user", "b")])
    lines = (d / "updates.jsonl").read_bytes().splitlines(keepends=True)
    (d / "updates.jsonl").write_bytes(lines[0] + b"{oops\n" + lines[2])
    with pytest.raises(DataError):
        fork(d, tmp_path / "c")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p"]


def test_resume_needs_summary_json(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "a")])
    with pytest.raises(UsageError) as err:
        resume(Session.open(d), "openai")
    assert "summary.json" in str(err.value) and "repair" in str(err.value)


def test_resume_openai_sends_json_string_arguments_and_tool_messages_right_after(demo: Path) -> None:
    doc, notes = resume(Session.open(demo), "openai")
    msgs = doc["messages"]
    assert notes == []
    i = next(k for k, m in enumerate(msgs) if m.get("tool_calls"))
    assert [c["function"]["arguments"] for c in msgs[i]["tool_calls"]] == ['{"path":"tests/test_parse.py"}', '{"command":"pytest tests/test_parse.py -q"}']
    assert [m["role"] for m in msgs[i + 1 : i + 3]] == ["tool", "tool"]
    assert [m["tool_call_id"] for m in msgs[i + 1 : i + 3]] == ["c1", "c2"]


def test_resume_anthropic_keeps_system_apart_and_alternates(demo: Path) -> None:
    doc, _ = resume(Session.open(demo), "anthropic")
    assert doc["system"].startswith("You are a careful coding agent")
    roles = [m["role"] for m in doc["messages"]]
    assert roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:]))
    uses = [b for m in doc["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert [u["id"] for u in uses] == ["c1", "c2", "c3", "c4"]


def _big_session(path: Path, events: int) -> int:
    """A session of `events` events written straight to disk (fast), with blobs."""
    path.mkdir()
    (path / "blobs").mkdir()
    handles = []
    for i in range(20):
        h = f"{i:032x}"
        (path / "blobs" / h).write_bytes(os.urandom(4096))
        handles.append(h)
    with open(path / "updates.jsonl", "wb") as f:
        f.write(orjson.dumps({"v": 1, "seq": 0, "ts": "2026-11-01T00:00:00.000Z", "kind": "session", "session_id": "big"}) + b"\n")
        seq = 1
        while seq < events:
            turn = [msg("user", "x" * 200, f"u{seq}"), msg("assistant", "y" * 200, f"a{seq}"), call(f"c{seq}", "read", {"path": "z" * 50}),
                    {"kind": "tool_result", "call_id": f"c{seq}", "blob": handles[(seq // 4) % 20], "bytes": 4096, "is_error": False}]
            for ev in turn:
                f.write(orjson.dumps({"v": 1, "seq": seq, "ts": "2026-11-01T00:00:00.000Z", **ev}) + b"\n")
                seq += 1
    (path / "summary.json").write_bytes(b'{"schema":1,"session_id":"big"}')
    return seq


def _kill_trials(tmp_path: Path, trials: int, events: int) -> tuple[int, int]:
    parent = tmp_path / "parent"
    total = _big_session(parent, events)
    script = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from catty_ctx.fork import fork; fork(sys.argv[1], sys.argv[2])"
    rng = random.Random(7)
    outcomes = [0, 0]
    took = None  # how long a fork runs once its temporary tree exists (measured on trial 0)
    for t in range(trials):
        dest = tmp_path / f"child{t}"
        proc = subprocess.Popen([sys.executable, "-c", script, str(parent), str(dest)])
        deadline = time.monotonic() + 30
        while not list(tmp_path.glob(f".child{t}.fork-*")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        if took is None:
            started = time.monotonic()
            proc.wait()
            took = time.monotonic() - started
            continue
        time.sleep(rng.random() * took * 1.2)  # mostly mid-fork, sometimes just after it
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if dest.exists():
            events_ = list(Session.open(dest).events(warn=None))
            assert len(events_) == total and events_[0]["parent_session_id"] == "big"
            assert orjson.loads((dest / "summary.json").read_bytes())["session_kind"] == "fork"
            assert len(list((dest / "blobs").iterdir())) == 20
            outcomes[1] += 1
        else:
            outcomes[0] += 1
    return outcomes[0], outcomes[1]


def test_kill_9_during_a_fork_leaves_no_dest_or_a_complete_one(tmp_path: Path) -> None:
    absent, complete = _kill_trials(tmp_path, trials=5, events=60_000)
    assert absent + complete == 4 and absent >= 1


@pytest.mark.slow
def test_kill_9_campaign_of_100_forks(tmp_path: Path) -> None:
    absent, complete = _kill_trials(tmp_path, trials=101, events=60_000)
    assert absent + complete == 100 and absent and complete

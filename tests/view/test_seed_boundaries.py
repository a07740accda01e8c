"""Repair at the write boundaries, persisted (docs/design.md#m5b): a new turn, a
cancellation, a compaction and a fork write the repairs the view needs; a call whose turn
is still open is never touched."""
from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from support import call, cli, jsonl, msg, result, session_event, write_log


def _lines(s: Path) -> list[dict]:
    return jsonl((s / "updates.jsonl").read_bytes())


def _append(s: Path, *events: dict, extra: tuple[str, ...] = ()) -> list[dict]:
    r = cli("append", str(s), *extra, input=b"".join(orjson.dumps(e) + b"\n" for e in events))
    assert r.returncode == 0, r.stderr
    return jsonl(r.stdout)


def _late_result_summarizer(tmp_path: Path, s: Path) -> str:
    """A command summariser during whose run the tool call r1 finishes (its result appended)."""
    late = orjson.dumps(result("r1", "done")).decode()
    script = tmp_path / "summarise.py"
    script.write_text(
        "import subprocess, sys\n"
        "sys.stdin.read()\n"
        f"subprocess.run([sys.executable, '-m', 'catty_ctx', 'append', {str(s)!r}, '-q'], input={late!r}.encode(), check=True)\n"
        "print('<summary>' + 'The user asked for a build; it is running. ' * 30 + '</summary>')\n")
    return f"cmd:{sys.executable} {script}"


def _dangling(tmp_path: Path) -> Path:
    return write_log(tmp_path / "s", [session_event(), msg("user", "run it"), msg("assistant", "on it"), call("c1", "Bash"),
                                      call("c2", "Read"), result("c2")])


def test_a_new_turn_after_a_dangling_call_appends_a_repair_first(tmp_path: Path) -> None:
    s = _dangling(tmp_path)
    assert cli("repair", str(s), "--check").returncode == 1
    written = _append(s, msg("user", "and now?"))
    assert [e["kind"] for e in written] == ["repair", "message"]
    rep = written[0]
    assert (rep["action"], rep["reason"], rep["count"], rep["call_ids"]) == ("answer", "new_turn", 1, ["c1"])
    log = _lines(s)
    assert log[-2]["kind"] == "repair" and log[-1]["text"] == "and now?"
    assert cli("repair", str(s), "--check").returncode == 0
    items = jsonl(cli("resume", str(s), "--format", "items").stdout)
    answered = [i for i in items if i.get("role") == "tool" and i.get("call_id") == "c1"]
    assert len(answered) == 1 and answered[0]["synthetic"] == "new_turn"
    shown = cli("inspect", str(s), "--json")
    assert shown.returncode == 0
    assert orjson.loads(shown.stdout)["repairs"] == {"count": 1, "reasons": {"new_turn": 1}}


def test_a_call_whose_turn_is_open_is_left_alone(tmp_path: Path) -> None:
    s = _dangling(tmp_path)
    # Another call and an assistant message in the same turn: the tools are still running.
    written = _append(s, msg("assistant", "meanwhile"), call("c3", "Bash"), result("c3"))
    assert [e["kind"] for e in written] == ["message", "tool_call", "tool_result"]
    assert not any(e["kind"] == "repair" for e in _lines(s))
    # A synthetic user message that is not a cancellation is no boundary either.
    _append(s, msg("user", "<reminder>", synthetic="continuation_state"))
    assert not any(e["kind"] == "repair" for e in _lines(s))


def test_a_cancellation_repairs_with_its_reason(tmp_path: Path) -> None:
    s = _dangling(tmp_path)
    written = _append(s, msg("user", "[Request interrupted by user]", synthetic="interrupted"))
    assert [(e["kind"], e.get("reason")) for e in written] == [("repair", "cancelled"), ("message", None)]
    assert cli("repair", str(s), "--check").returncode == 0


def test_no_repair_and_a_retried_append(tmp_path: Path) -> None:
    s = _dangling(tmp_path)
    m = msg("user", "next")
    assert [e["kind"] for e in _append(s, m, extra=("--no-repair",))] == ["message"]
    assert cli("repair", str(s), "--check").returncode == 1
    t = _dangling(tmp_path / "t")
    _append(t, m)
    before = (t / "updates.jsonl").read_bytes()
    assert _append(t, m) == []  # the same message again: nothing, no second repair
    assert (t / "updates.jsonl").read_bytes() == before


def test_calls_in_the_same_batch_before_the_turn(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", [session_event(), msg("user", "go")])
    written = _append(s, msg("assistant", "a"), call("k1"), call("k2"), result("k1"), msg("user", "again"))
    assert [e["kind"] for e in written][-2:] == ["repair", "message"]
    assert written[-2]["call_ids"] == ["k2"]
    assert cli("repair", str(s), "--check").returncode == 0


def test_a_subagent_turn_repairs_the_subagent_only(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", [session_event(), msg("user", "go"), msg("assistant", "a"), call("p1"),
                                   msg("user", "sub task", agent="A"), msg("assistant", "x", agent="A"), {**call("a1"), "agent": "A"}])
    written = _append(s, msg("user", "sub again", agent="A"))
    assert written[0]["kind"] == "repair" and written[0]["agent"] == "A" and written[0]["call_ids"] == ["a1"]
    # The main loop's call p1 is in a turn still open: left alone.
    assert not any(e["kind"] == "repair" and e.get("agent") is None for e in _lines(s))


def test_a_fork_at_a_turn_writes_the_repairs_its_view_needs(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", [session_event(), msg("user", "one"), msg("assistant", "a"), call("f1"),
                                   msg("user", "two"), msg("assistant", "b"), call("f2"), result("f2"), msg("user", "three")])
    r = cli("fork", str(s), str(tmp_path / "child"), "--at-turn", "2", "--json")
    assert r.returncode == 0, r.stderr
    child = _lines(tmp_path / "child")
    reps = [e for e in child if e["kind"] == "repair"]
    assert [(e["reason"], e["call_ids"]) for e in reps] == [("fork", ["f1"])]
    assert cli("repair", str(tmp_path / "child"), "--check").returncode == 0
    # A fork of an open turn leaves its running call alone.
    t = write_log(tmp_path / "t", [session_event(), msg("user", "one"), msg("assistant", "a"), call("g1")])
    assert cli("fork", str(t), str(tmp_path / "child2")).returncode == 0
    assert not any(e["kind"] == "repair" for e in _lines(tmp_path / "child2"))


def test_a_compaction_writes_the_repair_its_new_head_needs(tmp_path: Path) -> None:
    """A tool finishes while the summariser runs: its result comes after the head that folded
    its call, an orphan the compaction's commit records as such (reason compaction)."""
    s = write_log(tmp_path / "s", [session_event(), msg("user", "build it " * 50), msg("assistant", "running"), call("r1", "Bash"),
                                   msg("assistant", "waiting " * 50), call("r2", "Bash")])
    r = cli("compact", str(s), "--force", "--summarizer", _late_result_summarizer(tmp_path, s))
    assert r.returncode == 0, r.stderr
    log = _lines(s)
    kinds = [e["kind"] for e in log]
    assert kinds.index("tool_result") < kinds.index("compaction")  # (appended while it ran: before the commit)
    reps = [e for e in log if e["kind"] == "repair"]
    assert [(e["action"], e["reason"]) for e in reps] == [("drop", "compaction")]
    assert reps[0]["target_seq"] == next(e["seq"] for e in log if e["kind"] == "tool_result")
    assert cli("repair", str(s), "--check").returncode == 0


def test_the_turn_a_boundary_closes_is_found_reading_backwards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An append at a new turn reads the turn it closes, not the log: the last real user
    message's line, found from the end by chunks (a line cut between chunks included)."""
    from catty_ctx.view import boundary

    s = write_log(tmp_path / "s", [session_event(), msg("user", "first " * 500), msg("assistant", "a"), call("c1"), result("c1", "r" * 3000),
                                   msg("user", "second " * 700), msg("assistant", "b"), msg("user", "<note>", synthetic="continuation_state"),
                                   {**msg("user", "sub"), "agent": "A"}, call("c2"), result("c2", "s" * 5000)])
    data = (s / "updates.jsonl").read_bytes()
    want = data.index(b'"second ')
    want = data.rindex(b"\n", 0, want) + 1
    for chunk in (64, 1000, 1 << 20):
        monkeypatch.setattr(boundary, "_CHUNK", chunk)
        assert boundary.turn_start(s / "updates.jsonl", {None}) == want
        sub = data.index(b'"text":"sub"')
        assert boundary.turn_start(s / "updates.jsonl", {"A"}) == data.rindex(b"\n", 0, sub) + 1
        assert boundary.turn_start(s / "updates.jsonl", {"B"}) == 0


def test_a_late_result_alone_is_repaired_in_the_compactions_own_append_and_a_fork_inherits_a_clean_view(tmp_path: Path) -> None:
    """The same late result with no other call left over in the log: every call id has a result
    somewhere in the raw log, yet the view after the commit holds an orphan. The repair goes in
    the compaction's own append (the event right after it), and `repair --check` is clean after
    the compaction and after a fork of the compacted session."""
    s = write_log(tmp_path / "s", [session_event(), msg("user", "build it " * 50), msg("assistant", "running"), call("r1", "Bash")])
    r = cli("compact", str(s), "--force", "--summarizer", _late_result_summarizer(tmp_path, s))
    assert r.returncode == 0, r.stderr
    log = _lines(s)
    comp = next(e for e in log if e["kind"] == "compaction")
    (rep,) = [e for e in log if e["kind"] == "repair"]
    assert (rep["action"], rep["reason"], rep["seq"]) == ("drop", "compaction", comp["seq"] + 1)
    assert rep["target_seq"] == next(e["seq"] for e in log if e["kind"] == "tool_result")
    assert cli("repair", str(s), "--check").returncode == 0
    r = cli("fork", str(s), str(tmp_path / "child"))
    assert r.returncode == 0, r.stderr
    assert cli("repair", str(tmp_path / "child"), "--check").returncode == 0

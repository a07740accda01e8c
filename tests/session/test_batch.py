"""docs/reliability.md "Atomic appends": a batch lands whole or not at all, a kill -9 inside its
write included. The kill is forced where it matters: a child process whose batch write puts
part of the batch in the log (whole lines, or whole lines then a torn one: what Linux leaves
when a fatal signal ends a write between pages) and then kills itself with SIGKILL."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from support import call, cli, msg, session_event, write_log
from support.killed_writer import killed_inside

from catty_ctx.session import batch
from catty_ctx.session.store import Session


def events_in(s: Path, n: int, size: int, tag: str) -> bytes:
    return b"".join(orjson.dumps(msg("user", "z" * size, f"{tag}-{i}")) + b"\n" for i in range(n))


def quarantined(s: Path) -> list[dict]:
    index = s / "quarantine" / "index.jsonl"
    return [orjson.loads(line) for line in index.read_bytes().splitlines()] if index.exists() else []


def ids(s: Path) -> list[str]:
    return [ev["id"] for ev in Session.open(s).events(warn=None) if ev["kind"] == "message"]


@pytest.mark.parametrize("cut", ["lines", "torn"])
def test_an_append_killed_inside_its_write_is_cut_back_whole_by_the_next_append(tmp_path: Path, cut: str) -> None:
    """Before: the next append quarantined only the torn final line (or nothing, when the cut
    fell between lines) and kept the batch's first lines: a batch half landed."""
    s = tmp_path / "s"
    cli("append", "--create", str(s), "-q", input=events_in(s, 1, 10, "seed"), check=True)
    before = (s / "updates.jsonl").read_bytes()
    first = events_in(s, 8, 3000, "k")
    killed_inside(cut, "append", str(s), "-q", input=first)
    part = (s / "updates.jsonl").read_bytes()[len(before):]
    assert part and part.count(b"\n") < 8 and part.endswith(b"\n") == (cut == "lines")  # the window, hit
    check = cli("repair", "--check", "--json", str(s))  # (before: nothing found when the cut fell between lines)
    assert check.returncode == 1 and orjson.loads(check.stdout)["problems"]["cut_batch"] == 1
    after = cli("append", str(s), input=events_in(s, 1, 10, "next"))
    assert after.returncode == 0 and ids(s) == ["seed-0", "next-0"]  # the first batch not at all
    assert b"a batch cut short by a killed writer" in after.stderr
    kept = quarantined(s)
    assert [(r["offset"], r["bytes"]) for r in kept] == [(len(before), len(part))] and "killed writer" in kept[0]["reason"]
    assert (s / "quarantine" / kept[0]["file"]).read_bytes() == part  # nothing lost
    assert not (s / "updates.jsonl.batch").exists()
    assert cli("repair", "--check", str(s)).returncode == 0
    cli("append", str(s), "-q", input=first, check=True)  # the retry lands it whole, once
    assert ids(s) == ["seed-0", "next-0", *(f"k-{i}" for i in range(8))]


def test_a_repair_killed_inside_its_write_is_settled_by_the_next_repair(tmp_path: Path) -> None:
    """Another writer through the same path: repair's 30 answers (about 7 KB), cut short; the
    next repair moves the part to quarantine, then finds the calls still dangling and answers
    them whole."""
    events = [session_event(), msg("user", "hi", "u1")]
    for i in range(30):
        events += [msg("assistant", "", f"a{i}"), call(f"c{i}", "sh", {"cmd": "ls"})]
    s = write_log(tmp_path / "s", [*events, msg("user", "next", "u2")])
    before = (s / "updates.jsonl").read_bytes()
    killed_inside("torn", "repair", str(s))
    part = (s / "updates.jsonl").read_bytes()[len(before):]
    assert 0 < part.count(b"\n") < 30
    assert cli("repair", str(s)).returncode == 0
    answers = [ev["call_id"] for ev in Session.open(s).events() if ev["kind"] == "repair" and ev["action"] == "answer"]
    assert answers == [f"c{i}" for i in range(30)]  # each once
    assert [(r["offset"], r["bytes"]) for r in quarantined(s)] == [(len(before), len(part))]
    assert cli("repair", "--check", str(s)).returncode == 0


def test_a_batch_killed_after_its_write_is_kept_and_its_record_dropped(tmp_path: Path) -> None:
    s = tmp_path / "s"
    cli("append", "--create", str(s), "-q", input=events_in(s, 1, 10, "seed"), check=True)
    killed_inside("whole", "append", str(s), "-q", input=events_in(s, 8, 3000, "k"))
    assert (s / "updates.jsonl.batch").exists()
    cli("append", str(s), "-q", input=events_in(s, 1, 10, "next"), check=True)
    assert ids(s) == ["seed-0", *(f"k-{i}" for i in range(8)), "next-0"]
    assert quarantined(s) == [] and not (s / "updates.jsonl.batch").exists()


def test_a_small_batch_within_one_page_pays_no_side_write(tmp_path: Path) -> None:
    """One page is copied in one step (whole or not at all): no record is written for it."""
    s = tmp_path / "s"
    cli("append", "--create", str(s), "-q", input=events_in(s, 1, 10, "seed"), check=True)
    assert (s / "updates.jsonl").stat().st_size < batch.PAGE - 500
    killed_inside("whole", "append", str(s), "-q", input=events_in(s, 2, 100, "k"))
    assert not (s / "updates.jsonl.batch").exists()
    assert not batch.splittable(batch.PAGE - 10, 10) and batch.splittable(batch.PAGE - 10, 11)
    assert not batch.splittable(0, batch.PAGE) and batch.splittable(1, batch.PAGE)


def test_a_writer_killed_between_keeping_the_cut_part_and_cutting_it_leaves_one_copy(tmp_path: Path) -> None:
    """The writer after it finds the part already kept (the quarantine index's last record): it
    cuts the log back without a second copy."""
    s = tmp_path / "s"
    cli("append", "--create", str(s), "-q", input=events_in(s, 1, 10, "seed"), check=True)
    before = (s / "updates.jsonl").read_bytes()
    killed_inside("torn", "append", str(s), "-q", input=events_in(s, 8, 3000, "k"))
    part = (s / "updates.jsonl").read_bytes()[len(before):]
    killed_inside("kept", "append", str(s), "-q", input=events_in(s, 1, 10, "next"))
    assert (s / "updates.jsonl").read_bytes() == before + part and (s / "updates.jsonl.batch").exists()
    assert len(quarantined(s)) == 1
    cli("append", str(s), "-q", input=events_in(s, 1, 10, "next"), check=True)
    assert ids(s) == ["seed-0", "next-0"]
    kept = quarantined(s)
    assert [(r["offset"], r["bytes"]) for r in kept] == [(len(before), len(part))]
    assert (s / "quarantine" / kept[0]["file"]).read_bytes() == part


def test_a_writer_killed_between_keeping_a_torn_tail_and_cutting_it_leaves_one_copy(tmp_path: Path) -> None:
    """The same window on the torn-tail path (`Session.quarantine_tail` is shared): before, the
    next append copied the torn line to quarantine a second time."""
    s = write_log(tmp_path / "s", [session_event(), msg("user", "hi", "u1")], raw_tail=b'{"v":1,"seq":2,"ki')
    log = (s / "updates.jsonl").read_bytes()
    killed_inside("kept", "append", str(s), "-q", input=events_in(s, 1, 10, "next"))
    assert (s / "updates.jsonl").read_bytes() == log and len(quarantined(s)) == 1
    cli("append", str(s), "-q", input=events_in(s, 1, 10, "next"), check=True)
    assert ids(s) == ["u1", "next-0"]
    assert [(r["offset"], r["bytes"]) for r in quarantined(s)] == [(log.rindex(b"\n") + 1, len(b'{"v":1,"seq":2,"ki'))]


def test_a_record_that_does_not_describe_the_log_cuts_nothing(tmp_path: Path) -> None:
    """A record left beside a log that was since replaced (another inode), or one that ends
    before the log does, is dropped: only the bytes of the batch it names are ever cut."""
    s = write_log(tmp_path / "s", [session_event(), msg("user", "hi", "u1"), msg("user", "z" * 9000, "u2")])
    log = s / "updates.jsonl"
    size = log.stat().st_size
    for mark in ({"start": 10, "end": size + 100, "inode": log.stat().st_ino + 1},
                 {"start": 10, "end": size - 1, "inode": log.stat().st_ino}, {"start": 10}, "torn"):
        (s / "updates.jsonl.batch").write_bytes(b'{"start": 1' if mark == "torn" else orjson.dumps(mark))
        assert batch.cut_span(log) is None
        cli("append", str(s), "-q", input=events_in(s, 1, 10, f"n{len(ids(s))}"), check=True)
        assert not (s / "updates.jsonl.batch").exists() and quarantined(s) == []
    assert ids(s)[:2] == ["u1", "u2"] and len(ids(s)) == 6


def test_a_record_that_is_a_link_is_refused_by_a_writer_that_needs_it(tmp_path: Path) -> None:
    s = tmp_path / "s"
    cli("append", "--create", str(s), "-q", input=events_in(s, 1, 10, "seed"), check=True)
    before = (s / "updates.jsonl").read_bytes()
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    (s / "updates.jsonl.batch").symlink_to(victim)
    proc = cli("append", str(s), input=events_in(s, 8, 3000, "k"))
    assert proc.returncode == 73 and b"updates.jsonl.batch" in proc.stderr
    assert (s / "updates.jsonl").read_bytes() == before and victim.read_bytes() == b"keep"

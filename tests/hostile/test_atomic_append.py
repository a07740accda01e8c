"""Hostile io: an append commits whole or not at all, never drops a payload, never duplicates
(issue 29 item 4; docs/reliability.md "Atomic appends")."""
from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from support import call, cli, jsonl, msg, result

from catty_ctx.session.blobs import write_blob
from catty_ctx.session.event_ids import index_path
from catty_ctx.session.layout import blob_handle
from catty_ctx.session.store import Session
from catty_ctx.session.create import create_session


def _events(n: int, tag: str, size: int = 50) -> bytes:
    out = []
    for i in range(n):
        out.append({"kind": "message", "id": f"{tag}-{i}", "role": "user" if i % 2 == 0 else "assistant", "text": "x" * size})
    return b"".join(orjson.dumps(ev) + b"\n" for ev in out)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs (root only): a disk that fills up."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(disk: Path, leave: int) -> Path:
    """Take the disk's free space down to about LEAVE bytes."""
    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    filler = disk / "filler"
    with open(filler, "ab") as f:
        f.write(b"\0" * max(0, free - leave))
    return filler


def test_a_batch_that_does_not_fit_leaves_the_log_byte_identical_and_its_retry_lands_once(tiny_disk: Path) -> None:
    s = tiny_disk / "s"
    cli("append", "--create", str(s), "-q", input=_events(2, "first"), check=True)
    before_log = (s / "updates.jsonl").read_bytes()
    before_summary = (s / "summary.json").read_bytes()
    filler = _fill(tiny_disk, 40_000)
    batch = _events(200, "big", size=400)  # ~90 KB: more than the disk has left
    proc = cli("append", str(s), "-q", input=batch)
    assert proc.returncode == 73, proc.stderr
    assert (s / "updates.jsonl").read_bytes() == before_log  # nothing of the batch committed
    assert (s / "summary.json").read_bytes() == before_summary  # and the summary not moved ahead
    assert not [p for p in s.iterdir() if p.name.endswith(".tmp")]
    filler.unlink()
    cli("append", str(s), "-q", input=batch, check=True)
    again = cli("append", str(s), "-q", input=batch, check=True)  # a second retry: all already there
    assert b"already in the log" in again.stderr
    events = list(Session.open(s).events())
    ids = [e["id"] for e in events if e["kind"] == "message"]
    assert len(ids) == len(set(ids)) == 202
    summary = orjson.loads((s / "summary.json").read_bytes())
    assert summary["last_seq"] == events[-1]["seq"] and summary["log_size"] == (s / "updates.jsonl").stat().st_size


def test_every_batch_under_a_filling_disk_lands_whole_or_not_at_all(tiny_disk: Path) -> None:
    s = tiny_disk / "s"
    cli("append", "--create", str(s), "-q", input=_events(1, "seed"), check=True)
    log = s / "updates.jsonl"
    failures = 0
    for round_ in range(60):
        before = log.read_bytes()
        batch = _events(1 + (round_ * 7) % 40, f"r{round_}", size=200 + (round_ * 131) % 3000)
        proc = cli("append", str(s), "-q", input=batch)
        after = log.read_bytes()
        if proc.returncode == 0:
            assert after.startswith(before) and after.count(b"\n") - before.count(b"\n") == batch.count(b"\n")
        else:
            assert proc.returncode == 73, proc.stderr
            assert after == before
            failures += 1
    assert failures > 0  # the disk did fill up
    list(Session.open(s).events())  # and the log reads whole


def test_appending_the_same_event_file_twice_leaves_one_copy_of_each_event(tmp_path: Path) -> None:
    events = b"".join(orjson.dumps(ev) + b"\n" for ev in [
        msg("user", "hi", "u1"), msg("assistant", "calling", "a1"), call("c1"), result("c1"),
        {"kind": "usage", "model": "m", "input": 1, "output": 2, "request_id": "req-1"},
    ])
    s = tmp_path / "s"
    cli("append", "--create", str(s), "-q", input=events, check=True)
    proc = cli("append", str(s), input=events, check=True)
    assert proc.stdout == b"" and b"5 event(s) already in the log" in proc.stderr
    assert [e["kind"] for e in Session.open(s).events()] == ["session", "message", "message", "tool_call", "tool_result", "usage"]
    cli("append", str(s), "-q", "--allow-duplicate-ids", input=events, check=True)  # the opt-out
    assert len(list(Session.open(s).events())) == 11


def test_the_library_append_run_twice_leaves_one_copy(tmp_path: Path) -> None:
    s = create_session(tmp_path / "s")
    for _ in range(2):
        s.append([{"kind": "message", "id": "m1", "role": "user", "text": "hello"}], warn=None)
    assert len(list(s.events())) == 2


def test_the_id_cache_follows_what_other_writers_appended(tmp_path: Path) -> None:
    s = create_session(tmp_path / "s")
    s.append([msg("user", "a", "u1")], warn=None)
    with s.lock():  # another writer (compact, repair) appends without the cache
        s.append_locked([msg("user", "b", "u2")], warn=None)
    s.append([msg("user", "b", "u2"), msg("user", "c", "u3")], warn=None)
    assert [e.get("id") for e in s.events()][1:] == ["u1", "u2", "u3"]
    index_path(s.log_path).write_bytes(b"garbage")  # a broken cache is rebuilt from the log
    s.append([msg("user", "a", "u1")], warn=None)
    assert len(list(s.events())) == 4


def test_ids_are_told_apart_by_kind_and_agent(tmp_path: Path) -> None:
    s = create_session(tmp_path / "s")
    s.append([msg("user", "a", "x"), call("x"), result("x"), msg("user", "sub", "x", agent="sub-1")], warn=None)
    assert len(list(s.events())) == 5


def test_a_blob_that_cannot_be_written_fails_the_append_with_73(tmp_path: Path) -> None:
    s = tmp_path / "s"
    cli("append", "--create", str(s), "-q", input=_events(1, "a"), check=True)
    (s / "blobs").write_text("a file where the folder should be")
    before = (s / "updates.jsonl").read_bytes()
    big = orjson.dumps(result("c1", "row\n" * 30_000)) + b"\n"
    proc = cli("append", str(s), "-q", input=big)
    assert proc.returncode == 73 and b"cannot store" in proc.stderr
    assert (s / "updates.jsonl").read_bytes() == before


def test_an_existing_blob_with_the_right_size_but_wrong_bytes_is_replaced(tmp_path: Path) -> None:
    data = b"payload " * 10_000
    handle = blob_handle(data)
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / handle).write_bytes(b"X" * len(data))  # planted, or a torn copy
    assert write_blob(tmp_path, data) == handle
    assert (tmp_path / "blobs" / handle).read_bytes() == data


def test_large_assistant_messages_are_externalised(tmp_path: Path) -> None:
    s = tmp_path / "s"
    text = "word " * 20_000
    cli("append", "--create", str(s), "-q", input=orjson.dumps(msg("assistant", text, "a1")) + b"\n", check=True)
    last = jsonl((s / "updates.jsonl").read_bytes())[-1]
    assert last["blob"] and last["bytes"] == len(text) and len(last["text"]) < 40_000
    assert cli("blob", str(s), last["blob"], check=True).stdout == text.encode()


def test_a_log_that_is_a_symbolic_link_is_never_appended_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    cli("append", "--create", str(victim), "-q", input=_events(1, "v"), check=True)
    before = (victim / "updates.jsonl").read_bytes()
    attacker = tmp_path / "attacker"
    attacker.mkdir()
    (attacker / "summary.json").write_bytes((victim / "summary.json").read_bytes())
    (attacker / "updates.jsonl").symlink_to(victim / "updates.jsonl")
    for args in (("append", str(attacker), "-q"), ("compact", str(attacker), "--force")):
        proc = cli(*args, input=_events(1, "evil"))
        assert proc.returncode in (65, 73), proc.stderr
        assert b"Traceback" not in proc.stderr
    assert (victim / "updates.jsonl").read_bytes() == before
    assert not (attacker / "segments").exists() or not any((attacker / "segments").iterdir())


def test_a_summary_that_is_a_symbolic_link_is_never_written_through(tmp_path: Path) -> None:
    s = tmp_path / "s"
    cli("append", "--create", str(s), "-q", input=_events(1, "v"), check=True)
    other = tmp_path / "other.json"
    other.write_bytes((s / "summary.json").read_bytes())
    (s / "summary.json").unlink()
    (s / "summary.json").symlink_to(other)
    before = other.read_bytes()
    proc = cli("append", str(s), "-q", input=_events(1, "w"))
    assert proc.returncode == 73 and b"symbolic link" in proc.stderr
    assert other.read_bytes() == before and (s / "summary.json").is_symlink()


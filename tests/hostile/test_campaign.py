"""The slow hostile campaign (`-m slow`; docs/reliability.md "The hostile campaign"): event
shapes fuzzed against the reading commands, appends on a filling disk, appends killed with
SIGKILL. Each run prints its figures."""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from catty_ctx.session.store import Session, new_summary
from support import cli

pytestmark = pytest.mark.slow

BASE = [
    {"kind": "session", "session_id": "s", "cwd": "/w", "model": "m", "window": 1000},
    {"kind": "message", "id": "u1", "role": "user", "text": "hello"},
    {"kind": "message", "id": "a1", "role": "assistant", "text": "ok", "images": [{"media_type": "image/png", "blob": "0" * 32}]},
    {"kind": "tool_call", "call_id": "c1", "name": "sh", "args": {"cmd": "ls"}},
    {"kind": "tool_result", "call_id": "c1", "output": "x", "is_error": False},
    {"kind": "usage", "model": "m", "input": 10, "output": 5, "cache_read": 1, "cache_write": 1, "reasoning": 0, "cost_usd": 0.1, "request_id": "r"},
    {"kind": "state", "facet": "todos", "value": [{"text": "t", "status": "pending"}]},
    {"kind": "compaction", "id": "k", "mode": "summary", "through_seq": 4, "summary": "sum", "summarizer": "extractive",
     "trigger": "manual", "tokens_before": 10, "tokens_after": 5, "prefix_fp": "ab", "segment": 0, "artifact": "compaction_requests/k.json",
     "two_pass": {"hit": False}},
    {"kind": "repair", "action": "drop_result", "call_id": "c1", "target_seq": 4, "text": "t", "reason": "r"},
    {"kind": "rewind", "to_turn": 1},
    {"kind": "message", "id": "u2", "role": "user", "text": "again"},
]
VALUES = [None, 5, -1, 1.5, True, "s", "", [], [1], {}, {"a": 1}, "9999-12-31T23:59:59Z", 2**63 - 1]
COMMANDS = [("inspect", "{s}"), ("inspect", "{s}", "--items", "--json"), ("prune", "{s}"), ("resume", "{s}", "--format", "openai"),
            ("resume", "{s}", "--format", "anthropic"), ("repair", "--check", "{s}"), ("segment", "list", "{s}"),
            ("usage", "{s}", "--json"), ("usage", "{s}", "--by", "day", "--since", "2026-01-01", "--json"),
            ("compact", "{s}", "--force", "--dry-run"), ("report", "{s}", "-o", "{s}/r.html"), ("fork", "{s}", "{s}-fork", "--dry-run")]


def _write(d: Path, events: list[dict]) -> None:
    d.mkdir()
    lines = [orjson.dumps({"v": 1, "seq": i, "ts": f"2026-11-01T00:00:{i:02d}.000Z", **e}) for i, e in enumerate(events)]
    (d / "updates.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (d / "summary.json").write_bytes(orjson.dumps(new_summary(events[0])))


def test_event_shapes_against_the_reading_commands(tmp_path: Path) -> None:
    tried = 0
    crashes: list[str] = []
    for idx, ev in enumerate(BASE):
        for name in sorted(set(ev) - {"kind"} | {"agent", "ts"}):
            for value in VALUES:
                events = [dict(e) for e in BASE]
                events[idx][name] = value
                d = tmp_path / f"c{tried}"
                _write(d, events)
                for command in COMMANDS:
                    args = [a.replace("{s}", str(d)) for a in command]
                    proc = cli(*args)
                    tried += 1
                    if proc.returncode == 70 or b"Traceback" in proc.stderr:
                        crashes.append(f"{args[0]} {ev['kind']}.{name}={value!r}: {proc.stderr[-200:]!r}")
                shutil.rmtree(d, ignore_errors=True)
    print(f"event shapes: {tried} runs, {len(crashes)} crashes")
    assert not crashes, crashes[:5]


def test_random_bytes_in_a_log_are_data_errors(tmp_path: Path) -> None:
    rng = random.Random(29)
    good = b"".join(orjson.dumps({"v": 1, "seq": i, "ts": "2026-11-01T00:00:00.000Z", **e}) + b"\n" for i, e in enumerate(BASE))
    tried = 0
    for trial in range(300):
        data = bytearray(good)
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(data))
            op = rng.random()
            if op < 0.4:
                data[at] = rng.randrange(256)
            elif op < 0.7:
                del data[at : at + rng.randint(1, 20)]
            else:
                data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        d = tmp_path / f"b{trial}"
        d.mkdir()
        (d / "updates.jsonl").write_bytes(bytes(data))
        for args in (("inspect", str(d)), ("resume", str(d)), ("repair", "--check", str(d)), ("usage", str(d), "--json")):
            proc = cli(*args)
            tried += 1
            assert proc.returncode in (0, 1, 2, 65) and b"Traceback" not in proc.stderr, (args, proc.stderr)
        shutil.rmtree(d)
    print(f"byte fuzz: {tried} runs, 0 crashes")


@pytest.fixture
def tiny_disk(tmp_path: Path):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _batch(tag: str, n: int, size: int) -> bytes:
    return b"".join(orjson.dumps({"kind": "message", "id": f"{tag}-{i}", "role": "user", "text": "z" * size}) + b"\n" for i in range(n))


def test_appends_on_a_filling_disk_land_whole_or_not_at_all_and_retries_never_duplicate(tiny_disk: Path) -> None:
    rng = random.Random(4)
    s = tiny_disk / "s"
    cli("append", "--create", str(s), "-q", input=_batch("seed", 1, 10), check=True)
    log = s / "updates.jsonl"
    failed = landed = 0
    for round_ in range(400):
        batch = _batch(f"r{round_}", rng.randint(1, 60), rng.randint(10, 4000))
        before = log.read_bytes()
        proc = cli("append", str(s), "-q", input=batch)
        after = log.read_bytes()
        if proc.returncode == 0:
            landed += 1
            assert after.startswith(before)
        else:
            assert proc.returncode == 73 and after == before, proc.stderr
            failed += 1
            # make room by dropping a quarter of the blobs-free space hog, then retry twice
            for hog in sorted(tiny_disk.glob("hog*"))[:1]:
                hog.unlink()
            cli("append", str(s), "-q", input=batch)
            cli("append", str(s), "-q", input=batch)
        if round_ % 50 == 49 and not list(tiny_disk.glob("hog*")):
            for i in range(8):
                with open(tiny_disk / f"hog{round_}-{i}", "wb") as f:
                    try:
                        f.write(b"\0" * 120_000)
                    except OSError:
                        break
    ids = [e["id"] for e in Session.open(s).events() if e["kind"] == "message"]
    assert len(ids) == len(set(ids))
    print(f"disk full: {landed} batches landed, {failed} refused whole (73), 0 partial, 0 duplicated")
    assert failed > 0


def test_appends_killed_with_sigkill_leave_whole_batches(tmp_path: Path) -> None:
    s = tmp_path / "s"
    cli("append", "--create", str(s), "-q", input=_batch("seed", 1, 10), check=True)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    rng = random.Random(9)
    kills = 0
    for trial in range(60):
        batch = _batch(f"k{trial}", 50, 2000)
        proc = subprocess.Popen([sys.executable, "-m", "catty_ctx", "append", str(s), "-q"], stdin=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env)
        assert proc.stdin is not None
        proc.stdin.write(batch)
        proc.stdin.close()
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        cli("repair", str(s))  # a torn tail (none expected) would be quarantined here
        ids = [e["id"] for e in Session.open(s).events() if e["kind"] == "message"]
        got = [i for i in ids if i.startswith(f"k{trial}-")]
        assert len(got) in (0, 50), (trial, len(got))  # the batch is whole or absent
        assert len(ids) == len(set(ids))
        cli("append", str(s), "-q", input=batch, check=True)  # the retry completes it, once
        ids = [e["id"] for e in Session.open(s).events() if e["kind"] == "message"]
        assert len([i for i in ids if i.startswith(f"k{trial}-")]) == 50
    print(f"kill -9: {kills} appends killed, every batch whole or absent, every retry once")


def _killed_at_growth(s: Path, batch: bytes, env: dict[str, str], delay: float) -> None:
    """`append` of BATCH killed -9 DELAY seconds after the log first grows (or as it ends)."""
    log = s / "updates.jsonl"
    size = log.stat().st_size
    proc = subprocess.Popen([sys.executable, "-m", "catty_ctx", "append", str(s), "-q"], stdin=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None
    proc.stdin.write(batch)
    proc.stdin.close()
    while proc.poll() is None and log.stat().st_size == size:
        pass
    if delay:
        time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_appends_killed_as_the_log_grows_land_whole_or_not_at_all(tmp_path: Path) -> None:
    """Kills aimed at the write itself: batches of 200 events of 20 KB (about 4 MB, some 1,000
    pages), each `append` killed -9 the moment the log grows or up to half a millisecond after.
    A kill inside the write leaves whole lines then (mostly) a torn one; `repair --check` names
    the cut batch, the next writer (an `append` of another event) moves it to quarantine and
    cuts the log back before its own batch, and the retry lands the batch whole, once. A new session every 10 appends keeps the files small. Prints
    where the kills landed."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    rng = random.Random(43)
    landed = {"before": 0, "inside": 0, "after": 0}
    kept_lines = problems = 0
    for trial in range(60):
        s = tmp_path / f"s{trial // 10}"
        if trial % 10 == 0:
            shutil.rmtree(tmp_path / f"s{trial // 10 - 1}", ignore_errors=True)
            cli("append", "--create", str(s), "-q", input=_batch("seed", 1, 10), check=True)
        log = s / "updates.jsonl"
        batch = _batch(f"g{trial}", 200, 20_000)
        before = log.stat().st_size
        _killed_at_growth(s, batch, env, rng.choice([0.0, 0.0, rng.uniform(0, 0.0005)]))
        part = _past(log, before)
        where = "before" if not part else "after" if part.count(b"\n") == 200 else "inside"
        landed[where] += 1
        if where == "inside":
            check = cli("repair", "--check", "--json", str(s))
            problems += check.returncode == 1 and orjson.loads(check.stdout)["problems"].get("cut_batch") == 1
        cli("append", str(s), "-q", input=_batch(f"n{trial}", 1, 10), check=True)  # the next writer, another batch
        ids = [orjson.loads(line)["id"] for line in _past(log, before).splitlines()]
        whole = [f"g{trial}-{i}" for i in range(200)]
        assert ids == ([*whole, f"n{trial}-0"] if where == "after" else [f"n{trial}-0"]), (trial, where, len(ids))  # whole or not at all
        cli("append", str(s), "-q", input=batch, check=True)  # the retry, as a runtime would: whole, once
        ids = [orjson.loads(line)["id"] for line in _past(log, before).splitlines()]
        assert ids == ([*whole, f"n{trial}-0"] if where == "after" else [f"n{trial}-0", *whole]), (trial, where, len(ids))
        if where == "inside":
            kept_lines += part.count(b"\n")
            rec = orjson.loads((s / "quarantine" / "index.jsonl").read_bytes().splitlines()[-1])
            assert (rec["offset"], rec["bytes"]) == (before, len(part)), trial
            assert (s / "quarantine" / rec["file"]).read_bytes() == part, trial
        if trial % 10 == 9:
            cli("repair", str(s), check=True)  # (a kill after the write, before summary.json's rename: a stale summary)
            assert cli("repair", "--check", str(s)).returncode == 0
    assert landed["inside"] > 0 and problems == landed["inside"]
    print(f"kill -9 at the log's growth: 60 appends of about 4 MB; killed before the write {landed['before']}, inside it "
          f"{landed['inside']} ({kept_lines} whole lines of those batches moved to quarantine with their torn tails, "
          f"none kept), after it {landed['after']}; every retry landed its batch whole, once")


def _past(log: Path, offset: int) -> bytes:
    with open(log, "rb") as f:
        f.seek(offset)
        return f.read()

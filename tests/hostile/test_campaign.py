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

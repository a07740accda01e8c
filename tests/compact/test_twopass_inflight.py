"""Two-pass as the seed runs it: pass 1 started early and left running (`compact --prefire`
in a process of its own), found in flight by pass 2 through its marker; pass 2 waits up to a
bound and records the real wait, or runs a single pass; pass 1 writes its request artifact;
a stale pass-1 note is counted as wasted tokens."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import orjson

from catty_ctx.compact.twopass import cache_path, in_flight, marker_path
from catty_ctx.session.files import create_exclusive
from catty_ctx.session.store import Session
from support import ROOT, cli, jsonl, msg, session_event, write_log

SUMMARY = "<summary>" + "The user wants the parser split; the tokenizer is half done. " * 30 + "</summary>"


def _session(path: Path) -> Path:
    events = [session_event(window=200_000), msg("system", "sys")]
    for i in range(10):
        events += [msg("user", f"turn {i}: " + "u" * 400, f"u{i}"), msg("assistant", f"step {i}: " + "a" * 400, f"a{i}")]
    return write_log(path, events)


def _slow_summariser(tmp_path: Path, seconds: float, name: str = "slow") -> str:
    script = tmp_path / f"{name}.py"
    script.write_text(f"import sys, time\nsys.stdin.read()\ntime.sleep({seconds})\nprint({SUMMARY!r})\n")
    return f"cmd:{sys.executable} {script}"


def _start_prefire(s: Path, spec: str) -> subprocess.Popen[bytes]:
    """`compact --prefire` in a process of its own, left running; returns once its marker is there."""
    proc = subprocess.Popen([sys.executable, "-m", "catty_ctx", "compact", str(s), "--prefire", "--summarizer", spec],
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not marker_path(s).exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return proc


def test_pass_two_waits_for_a_pass_one_in_flight_and_records_the_real_wait(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    spec = _slow_summariser(tmp_path, 1.5)
    pre = _start_prefire(s, spec)
    try:
        assert in_flight(s) is not None and in_flight(s)["pid"] == pre.pid
        t0 = time.monotonic()
        out = orjson.loads(cli("compact", str(s), "--force", "--two-pass", "--summarizer", spec, "--json", check=True).stdout)
        elapsed_ms = (time.monotonic() - t0) * 1000
    finally:
        assert pre.wait(timeout=60) == 0, pre.stderr.read() if pre.stderr else ""
    tp = out["two_pass"]
    assert tp["hit"] is True and tp["in_flight"] is True and tp["timed_out"] is False
    assert 300 < tp["waited_ms"] < elapsed_ms  # the wait is measured, not a constant
    assert jsonl((s / "updates.jsonl").read_bytes())[-1]["two_pass"]["waited_ms"] == tp["waited_ms"]
    assert not marker_path(s).exists() and not cache_path(s).exists()  # pass 1 finished; its note was consumed
    # pass 1 wrote its request artifact: the prefix it summarised and what came back
    (art,) = [p for p in (s / "compaction_requests").iterdir() if p.name.startswith("prefire-")]
    doc = orjson.loads(art.read_bytes())
    assert doc["trigger"] == "prefire" and doc["summary"] and doc["input"]["items"][0]["text"] == "sys"
    assert doc["attempts"][0]["outcome"] == "success"


def test_pass_two_gives_up_after_the_bound_and_compacts_in_one_pass(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    spec = _slow_summariser(tmp_path, 30)
    pre = _start_prefire(s, spec)
    try:
        fast = _slow_summariser(tmp_path, 0, "fast")
        out = orjson.loads(cli("compact", str(s), "--force", "--two-pass", "--prefire-wait", "0.4", "--summarizer", fast, "--json", check=True).stdout)
    finally:
        pre.kill()  # the process this test started
        pre.wait()
    tp = out["two_pass"]
    assert tp == {"hit": False, "stale": False, "pass1_latency_ms": None, "waited_ms": tp["waited_ms"], "in_flight": True, "timed_out": True}
    assert 400 <= tp["waited_ms"] < 20_000 and out["status"] == "compacted"  # not the 30 s pass 1 (a loaded machine's margin)
    # the killed pass 1 left its marker behind; a dead process is not in flight
    assert marker_path(s).exists() and in_flight(s) is None


def test_a_second_prefire_does_not_start_while_one_is_in_flight(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    spec = _slow_summariser(tmp_path, 30)
    pre = _start_prefire(s, spec)
    try:
        out = orjson.loads(cli("compact", str(s), "--prefire", "--summarizer", spec, "--json", check=True).stdout)
    finally:
        pre.kill()
        pre.wait()
    assert out["status"] == "in_flight"


def test_a_stale_pass_one_note_is_counted_as_wasted_tokens(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    spec = _slow_summariser(tmp_path, 0)
    cli("compact", str(s), "--prefire", "--summarizer", spec, check=True)
    spent = orjson.loads(cache_path(s).read_bytes())["spend"]
    wasted = sum(e["input"] + e["output"] for e in spent)
    assert wasted > 1000 and spent[0]["estimated"] is True
    # a rewind rewrites the prefix: the note can never match again
    Session.open(s).append([{"kind": "rewind", "to_turn": 0}, msg("user", "start over", "r1")])
    out = orjson.loads(cli("compact", str(s), "--force", "--two-pass", "--summarizer", spec, "--json", check=True).stdout)
    assert out["two_pass"]["stale"] is True and out["two_pass"]["wasted_tokens"] == wasted
    purposes = [e["purpose"] for e in jsonl((s / "updates.jsonl").read_bytes()) if e["kind"] == "usage"]
    assert purposes == ["prefire", "compaction"] and not cache_path(s).exists()


def test_a_marker_older_than_an_hour_is_stale_even_when_its_pid_lives(tmp_path: Path) -> None:
    import socket

    s = _session(tmp_path / "s")
    marker_path(s).parent.mkdir()
    for age, flying in ((10, True), (3_700, False)):
        marker_path(s).write_bytes(orjson.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time() - age}))
        assert (in_flight(s) is not None) is flying, age


def _claim_at_the_barrier(path: str, barrier: object, wins: object) -> None:
    barrier.wait()  # type: ignore[attr-defined]
    if create_exclusive(path, str(os.getpid()).encode()):
        wins.put(os.getpid())  # type: ignore[attr-defined]


def test_of_eight_processes_claiming_one_marker_at_once_exactly_one_wins(tmp_path: Path) -> None:
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    barrier, wins = ctx.Barrier(8), ctx.Queue()
    marker = tmp_path / "prefire.running"
    for _round in range(5):
        procs = [ctx.Process(target=_claim_at_the_barrier, args=(str(marker), barrier, wins)) for _ in range(8)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(30)
        winners = [wins.get(timeout=5)]
        assert wins.empty() and marker.read_bytes() == str(winners[0]).encode()
        assert [p.name for p in tmp_path.iterdir()] == ["prefire.running"]  # no temp file left
        marker.unlink()


def test_prefires_started_together_run_pass_one_once(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    spec = _slow_summariser(tmp_path, 2)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-m", "catty_ctx", "compact", str(s), "--prefire", "--summarizer", spec, "--json"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    statuses = sorted(orjson.loads(p.communicate(timeout=120)[0])["status"] for p in procs)
    assert statuses == ["in_flight", "in_flight", "prefired"]
    assert len(list((s / "compaction_requests").glob("prefire-*"))) == 1  # one pass-1 artifact


def test_a_marker_left_by_a_dead_pass_one_is_taken_over(tmp_path: Path) -> None:
    import socket

    s = _session(tmp_path / "s")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    marker_path(s).parent.mkdir()
    marker_path(s).write_bytes(orjson.dumps({"pid": int(dead.stdout), "host": socket.gethostname(), "started": time.time()}))
    out = orjson.loads(cli("compact", str(s), "--prefire", "--summarizer", _slow_summariser(tmp_path, 0), "--json", check=True).stdout)
    assert out["status"] == "prefired" and not marker_path(s).exists()

"""kill -9 at random moments: every event that existed before the kill is still there, byte
for byte, and the session still loads. Real processes, real files."""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import orjson
import pytest

from catty_ctx.store import Session
from conftest import FIXTURES, ROOT

ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def _append_input(n: int) -> bytes:
    return b"".join(orjson.dumps({"kind": "message", "id": f"k{i}", "role": "user", "text": f"event {i} " + "z" * (i % 300)}) + b"\n" for i in range(n))


def _kill_at_random(cmd: list[str], stdin: bytes, rng: random.Random, max_delay: float, watch: Path | None = None) -> int:
    """Kill -9 after a random delay: from the start (any moment, start-up included) or, every
    other trial, from the moment `watch` starts to grow (so the kill lands mid-write)."""
    size = watch.stat().st_size if watch is not None and watch.exists() else 0
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    try:
        if stdin:
            proc.stdin.write(stdin)  # type: ignore[union-attr]
        proc.stdin.close()  # type: ignore[union-attr]
    except BrokenPipeError:
        pass
    if watch is not None and rng.random() < 0.5:
        deadline = time.monotonic() + 10
        while proc.poll() is None and time.monotonic() < deadline and (not watch.exists() or watch.stat().st_size == size):
            time.sleep(0.001)
        time.sleep(rng.uniform(0, 0.02))
    else:
        time.sleep(rng.uniform(0.05, max_delay))
    proc.send_signal(signal.SIGKILL)
    return proc.wait()


def check_after_crash(session: Path, before: bytes) -> None:
    """The log before the kill is a byte-identical prefix, and what follows loads."""
    after = (session / "updates.jsonl").read_bytes()
    assert after.startswith(before), "an event that existed before the kill changed"
    events = list(Session.open(session).events(warn=None))  # a torn tail is tolerated
    assert [e["seq"] for e in events] == list(range(len(events)))


def run_trials(trials: int, seed: int, tmp_path: Path, make_cmd: Callable[[Path], tuple[list[str], bytes]], max_delay: float) -> int:
    rng = random.Random(seed)
    killed = 0
    for i in range(trials):
        session = tmp_path / f"t{i}"
        shutil.copytree(FIXTURES / "sessions" / "demo", session)
        before = (session / "updates.jsonl").read_bytes()
        cmd, stdin = make_cmd(session)
        if _kill_at_random(cmd, stdin, rng, max_delay, session / "updates.jsonl") == -signal.SIGKILL:
            killed += 1
        check_after_crash(session, before)
        # The next writer after a crash still appends cleanly (a torn tail is quarantined).
        Session.open(session).append([{"kind": "message", "id": "after", "role": "user", "text": "after the crash"}], warn=None)
        events = list(Session.open(session).events(warn=None))
        assert events[-1]["text"] == "after the crash"
    return killed


def _append_cmd(session: Path) -> tuple[list[str], bytes]:
    return [sys.executable, "-m", "catty_ctx", "append", str(session), "-q"], _append_input(10000)


def test_kill_during_append_quick(tmp_path: Path) -> None:
    killed = run_trials(10, 1, tmp_path, _append_cmd, 0.6)
    assert killed >= 3  # the kills really land while the command runs


@pytest.mark.slow
def test_kill_during_append_100_trials(tmp_path: Path) -> None:
    killed = run_trials(100, 2, tmp_path, _append_cmd, 0.8)
    assert killed >= 40

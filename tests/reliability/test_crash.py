"""kill -9 at random moments during every writer (append, compact, repair, fork, import --out):
afterwards every session loads, `repair` brings `repair --check` to 0, every event that
existed before the kill is still there byte for byte, and a new session (fork DEST, import
--out) is absent or complete. Real processes, real files."""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import orjson
import pytest

from catty_ctx.session.events import check_event
from catty_ctx.repair.plan import analyse
from catty_ctx.repair.fix import repair_session
from catty_ctx.session.store import Session
from catty_ctx.sources import root_sessions
from support import FIXTURES, ROOT

ENV = dict(os.environ, PYTHONPATH=str(ROOT))
CLI = [sys.executable, "-m", "catty_ctx"]


def _tree_state(folder: Path) -> list[tuple[str, int]]:
    """Names and sizes of everything under `folder`: it changes once a command starts writing."""
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            try:
                out.append((p, os.lstat(p).st_size if name in filenames else -1))
            except FileNotFoundError:
                pass
    return sorted(out)


def _start(cmd: list[str], stdin: bytes) -> subprocess.Popen[bytes]:
    """Start the command; its input is fed from a thread, so the clock starts with the process
    (writing to the pipe blocks until the command has started up and reads)."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)

    def feed() -> None:
        try:
            if stdin:
                proc.stdin.write(stdin)  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        except (BrokenPipeError, ValueError, OSError):
            pass  # killed before it read everything

    threading.Thread(target=feed, daemon=True).start()
    return proc


def _wait_for_a_write(proc: subprocess.Popen[bytes], watch: Path, initial: list[tuple[str, int]]) -> None:
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline and _tree_state(watch) == initial:
        time.sleep(0.001)


def _kill_at_random(cmd: list[str], stdin: bytes, rng: random.Random, max_delay: float, watch: Path | None = None,
                    writing: float | None = None) -> int:
    """Kill -9 after a random delay: from the start (any moment, start-up included) or, every
    other trial, from the moment something under `watch` changes, within the `writing`
    seconds the command goes on from there (so the kill lands mid-write)."""
    initial = _tree_state(watch) if watch is not None else []
    proc = _start(cmd, stdin)
    if watch is not None and rng.random() < 0.5:
        _wait_for_a_write(proc, watch, initial)
        time.sleep(rng.uniform(0, writing if writing is not None else max_delay / 4))
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


def _valid_lines(log: bytes) -> list[bytes]:
    """The complete lines of a log that are valid events (what a reader would keep)."""
    out = []
    for line in log.split(b"\n")[:-1]:
        try:
            ev = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(ev, dict) and check_event(ev) is None:
            out.append(line)
    return out


def _is_subsequence(needles: list[bytes], hay: list[bytes]) -> bool:
    it = iter(hay)
    return all(any(n == h for h in it) for n in needles)


def _repaired_and_clean(session: Path) -> list[dict]:
    """`repair`, then `repair --check` finds nothing, and the session loads."""
    with Session.open(session) as s:
        repair_session(s, lock_timeout=5)
    with Session.open(session) as s:
        plan = analyse(s)
        assert plan.found == 0, plan.notes()
        events = list(s.events(warn=None))
    assert [e["seq"] for e in events] == sorted({e["seq"] for e in events})
    return events


# -- scenarios -------------------------------------------------------------------------------


@dataclass
class Scenario:
    """One writer under test. `base` is built once per campaign; each trial runs `argv` on a
    copy of it in trial/s (a new session goes to trial/out) and `check`s what the kill left."""

    name: str
    build: Callable[[Path, int], None]  # (base session dir, size)
    argv: Callable[[Path], tuple[list[str], bytes]]  # (trial dir) -> argv, stdin
    check: Callable[[Path, Path, "Campaign"], None]  # (trial dir, base dir, campaign)


@dataclass
class Campaign:
    base: Path
    reference: Path  # the trial the command ran to its end in (a complete DEST to compare with)


def _filler(i: int) -> dict:
    return {"kind": "message", "id": f"f{i}", "role": "user" if i % 2 else "assistant", "text": f"filler {i} " + "z" * (i % 200)}


def _demo_plus(base: Path, size: int) -> None:
    shutil.copytree(FIXTURES / "sessions" / "demo", base)
    Session.open(base).append([_filler(i) for i in range(size)], warn=None)


def _damaged(base: Path, size: int) -> None:
    """Work for repair at every stage: an invalid line in the middle, a dangling call, a
    duplicated result, a stale summary.json and a torn final line."""
    _demo_plus(base, size)
    s = Session.open(base)
    n = s.next_seq()
    bad = orjson.dumps({"v": 1, "seq": n, "ts": "2026-11-01T00:00:00.000Z", "kind": "tool_result", "call_id": 7, "output": 1})
    with open(base / "updates.jsonl", "ab") as f:
        f.write(bad + b"\n")
    s.append([{"kind": "message", "id": "ask", "role": "assistant", "text": "calling"}, {"kind": "tool_call", "call_id": "dangling", "name": "t", "args": {}}], warn=None)
    s.append([_filler(size + i) for i in range(size // 4)], warn=None)
    (base / "summary.json").write_bytes(b'{"schema": 1, "session_id": "stale", "last_seq": 3}')
    with open(base / "updates.jsonl", "ab") as f:
        f.write(b'{"v":1,"seq":99999,"ts":"2026-11-0')


def _same_prefix_then_clean(trial: Path, base: Path, campaign: Campaign) -> None:
    before = (base / "updates.jsonl").read_bytes()
    check_after_crash(trial / "s", before)
    _repaired_and_clean(trial / "s")
    assert (trial / "s" / "updates.jsonl").read_bytes().startswith(before)


def _repair_kept_every_event(trial: Path, base: Path, campaign: Campaign) -> None:
    before = (base / "updates.jsonl").read_bytes()
    _repaired_and_clean(trial / "s")
    after = (trial / "s" / "updates.jsonl").read_bytes().split(b"\n")
    assert _is_subsequence(_valid_lines(before), after), "a valid event was lost or changed"
    kept = b"".join(p.read_bytes() for p in (trial / "s" / "quarantine").glob("*.bin"))
    assert b'"call_id":7' in kept and b'"seq":99999,"ts":"2026-11-0' in kept  # moved, never deleted


def _new_session_absent_or_complete(trial: Path, base: Path, campaign: Campaign) -> None:
    if (trial / "s" / "updates.jsonl").exists():  # fork: the parent is read, never written
        assert (trial / "s" / "updates.jsonl").read_bytes() == (base / "updates.jsonl").read_bytes()
    out = trial / "out"
    sessions = sorted(p for p in root_sessions(trial, allow_empty=True) if isinstance(p, Path))  # the catty ones
    assert sessions == sorted(p for p in (trial / "s", out) if (p / "updates.jsonl").exists()), "a killed writer's leftovers look like a session"
    if not out.exists():
        return
    ref = (campaign.reference / "out" / "updates.jsonl").read_bytes().split(b"\n")
    got = (out / "updates.jsonl").read_bytes().split(b"\n")
    assert len(got) == len(ref)
    assert got[1:] == ref[1:]  # every event but the session one (a new id, or the source's path)
    assert orjson.loads((out / "summary.json").read_bytes())["events"] == len(ref) - 1
    _repaired_and_clean(out)


def _claude_source(base: Path, size: int) -> None:
    base.mkdir()
    with open(base / "src.jsonl", "wb") as f:
        parent = None
        for i in range(size // 2):
            for role in ("user", "assistant"):
                uid = f"{role[0]}{i}"
                rec = {"type": role, "sessionId": "imp", "parentUuid": parent, "uuid": uid, "timestamp": "2026-10-01T10:00:00.000Z",
                       "message": {"role": role, "id": f"msg{i}", "model": "m", "content": [{"type": "text", "text": f"turn {i} " + "y" * (i % 3000)}]}}
                f.write(orjson.dumps(rec) + b"\n")
                parent = uid


SCENARIOS = [
    Scenario("append", lambda b, n: shutil.copytree(FIXTURES / "sessions" / "demo", b),
             lambda t: ([*CLI, "append", str(t / "s"), "-q"], b"".join(orjson.dumps(_filler(i)) + b"\n" for i in range(10000))),
             _same_prefix_then_clean),
    Scenario("compact", _demo_plus, lambda t: ([*CLI, "compact", str(t / "s"), "--force", "--mode", "segments"], b""), _same_prefix_then_clean),
    Scenario("repair", _damaged, lambda t: ([*CLI, "repair", str(t / "s")], b""), _repair_kept_every_event),
    Scenario("fork", _demo_plus, lambda t: ([*CLI, "fork", str(t / "s"), str(t / "out")], b""), _new_session_absent_or_complete),
    Scenario("import", _claude_source, lambda t: ([*CLI, "import", "claude", str(t / "s" / "src.jsonl"), "--out", str(t / "out")], b""),
             _new_session_absent_or_complete),
]


def run_campaign(scenario: Scenario, trials: int, size: int, seed: int, tmp_path: Path, kills: int = 0) -> tuple[int, int]:
    """(trials run, trials whose process the kill really ended). The first run goes to its
    end: it measures how long the command takes and is the reference for a complete DEST.
    With KILLS, trials go on past TRIALS (up to 3 times as many) until that many kills have
    landed, each miss halving the delays: a trial that ended before its kill ran faster than
    the timed first run (which a loaded machine may have slowed)."""
    base = tmp_path / f"{scenario.name}-base"
    scenario.build(base, size)
    reference = tmp_path / f"{scenario.name}-ref"
    shutil.copytree(base, reference / "s")
    initial = _tree_state(reference)
    argv, stdin = scenario.argv(reference)
    started = time.monotonic()
    proc = _start(argv, stdin)
    _wait_for_a_write(proc, reference, initial)
    first_write = time.monotonic()
    assert proc.wait() == 0
    took = time.monotonic() - started
    writing = (time.monotonic() - first_write) * 1.1
    campaign = Campaign(base, reference)
    rng = random.Random(seed)
    killed = i = 0
    scale = 1.0
    while i < trials or (killed < kills and i < 3 * trials):
        trial = tmp_path / f"{scenario.name}-{i}"
        shutil.copytree(base, trial / "s")
        argv, stdin = scenario.argv(trial)
        hit = _kill_at_random(argv, stdin, rng, took * 1.1 * scale, watch=trial, writing=writing * scale) == -signal.SIGKILL
        killed += hit
        if kills and not hit:
            scale /= 2
        scenario.check(trial, base, campaign)
        shutil.rmtree(trial)
        i += 1
    return i, killed


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_kill_9_at_4_random_moments(tmp_path: Path, scenario: Scenario) -> None:
    trials, killed = run_campaign(scenario, 4, 1500, 1, tmp_path, kills=2)
    assert killed >= 2  # the kills really land while the command runs


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_kill_9_at_10_random_moments(tmp_path: Path, scenario: Scenario) -> None:
    trials, killed = run_campaign(scenario, 10, 1500, 1, tmp_path)
    assert killed >= 3


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_kill_9_at_100_random_moments(tmp_path: Path, scenario: Scenario) -> None:
    trials, killed = run_campaign(scenario, 100, 6000, 2, tmp_path)
    assert killed >= 50


def test_a_whole_staging_folder_left_by_a_kill_is_never_a_session(tmp_path: Path) -> None:
    """A kill between a fork's (or an import's) last two renames leaves a whole session in its
    hidden staging folder: ROOT walks (repair, compact, usage) skip it."""
    from catty_ctx.usage.pipeline import discover

    shutil.copytree(FIXTURES / "sessions" / "demo", tmp_path / "real")
    for leftover in (".child.fork-1a2b3c4d-99999.tmp", ".imported.importing-x1y2z3.tmp"):
        shutil.copytree(FIXTURES / "sessions" / "demo", tmp_path / leftover)
    assert root_sessions(tmp_path, allow_empty=True) == [tmp_path / "real"]
    assert [p for p, _ in discover(tmp_path)] == [str(tmp_path / "real" / "updates.jsonl")]

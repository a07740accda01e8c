"""Issue 43, the mirror never loses or doubles: a line longer than the reader's bound is left out
alone (with a warning), and a run interrupted between its append and its cursor (a kill -9, its
deadline) followed by a normal one leaves the mirror as an uninterrupted run does."""
from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from support import ROOT, cli, unstamped

from agents.test_agents_hooks import SID, Transcript, planted
from catty_ctx.agents import mirror as mirror_mod
from catty_ctx.agents.mirror import sync
from catty_ctx.session.jsonl import MAX_LINE_BYTES


def _events(mirror: Path) -> list[dict]:
    """The mirror's events without what differs between two runs (seq aside, the clock)."""
    data = (mirror / "updates.jsonl").read_bytes().replace(str(mirror).encode(), b"MIRROR")
    return [orjson.loads(unstamped(line)) for line in data.splitlines()]


def _segments(mirror: Path) -> list[tuple[int, int]]:
    index = mirror / "segments" / "index.json"
    return [(r["seq_from"], r["seq_to"]) for r in json.loads(index.read_text())["segments"]] if index.exists() else []


def test_an_over_long_line_is_left_out_alone_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mirrors = tmp_path / "mirrors"
    monkeypatch.setenv("CATTY_CTX_MIRRORS", str(mirrors))
    t = Transcript(tmp_path / f"{SID}.jsonl")
    t.user("BEFORE-THE-LONG-LINE")
    with open(t.path, "ab") as f:  # one record longer than the reader takes, in the middle of a read block
        f.write(b'{"type":"user","message":{"role":"user","content":"' + b"x" * (MAX_LINE_BYTES + 10) + b'"}}\n')
    t.user("AFTER-THE-LONG-LINE")
    proc = cli("hook", "claude", "pre-compact", input=json.dumps({"session_id": SID, "transcript_path": str(t.path)}).encode())
    assert proc.returncode == 0 and b"longer than" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert b"longer than" in (mirrors / "hooks.log").read_bytes()
    texts = [e.get("text") for e in _events(mirrors / "claude" / SID) if e["kind"] == "message"]
    assert texts == ["BEFORE-THE-LONG-LINE", "AFTER-THE-LONG-LINE"]


class Killed(BaseException):
    """What a kill -9 at that point leaves: nothing after it runs."""


def test_a_run_stopped_between_its_append_and_its_cursor_is_not_appended_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = Transcript(tmp_path / "t.jsonl")
    t.user("Start the parser work.")
    t.say("Starting.")
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    sync(stopped, str(t.path), "claude", SID)  # a run that completed: the cursor stands at the end of these
    planted(t)  # the transcript grows (usage and state records without ids among them)
    sync(whole, str(t.path), "claude", SID, archive=True)
    real_record = mirror_mod._record

    def stop_at_the_cursor(*args: object) -> None:
        raise Killed

    monkeypatch.setattr(mirror_mod, "_record", stop_at_the_cursor)
    with pytest.raises(Killed):
        sync(stopped, str(t.path), "claude", SID, archive=True)
    monkeypatch.setattr(mirror_mod, "_record", real_record)
    assert (stopped / "updates.jsonl").stat().st_size > 0  # the append landed, its cursor did not
    sync(stopped, str(t.path), "claude", SID, archive=True)
    assert _events(stopped) == _events(whole)
    assert _segments(stopped) == _segments(whole)


def test_a_run_stopped_after_its_segment_does_not_archive_the_span_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = Transcript(tmp_path / "t.jsonl")
    planted(t)
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    sync(whole, str(t.path), "claude", SID, archive=True)
    real_archive = mirror_mod._archive

    def archive_then_stop(*args: object, **kw: object) -> None:
        real_archive(*args, **kw)  # type: ignore[arg-type]
        raise Killed

    monkeypatch.setattr(mirror_mod, "_archive", archive_then_stop)
    with pytest.raises(Killed):
        sync(stopped, str(t.path), "claude", SID, archive=True)
    monkeypatch.setattr(mirror_mod, "_archive", real_archive)
    sync(stopped, str(t.path), "claude", SID, archive=True)
    assert _segments(stopped) == _segments(whole) and _events(stopped) == _events(whole)


def _hook_process(payload: dict, mirrors: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "catty_ctx", "hook", "claude", "pre-compact", "--mirrors", str(mirrors)],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))


KILLS = 200  # the campaign's kills (runs that ended before their kill come on top)


@pytest.mark.slow
def test_kill_9_campaign_on_the_pre_compact_hook(tmp_path: Path) -> None:
    """Hooks killed at random moments until 200 kills landed (issue 43's floor; a hook that ended
    before its kill counts as a normal run), on a transcript that
    grows between them: the mirror ends identical to one no kill touched, no temp left behind,
    no file wider than the transcript. Prints how many kills landed with an append named and not
    yet recorded (the window of `mirror._settle`)."""
    rng = random.Random(43)
    t = Transcript(tmp_path / f"{SID}.jsonl")
    t.path.chmod(0o600)
    mirrors, whole = tmp_path / "mirrors", tmp_path / "whole"
    payload = {"session_id": SID, "transcript_path": str(t.path), "trigger": "auto"}
    in_window = kills = n = 0
    while kills < KILLS:
        n += 1
        assert n <= 4 * KILLS, f"only {kills} of {n - 1} hooks were still running when killed"
        for _ in range(rng.randint(1, 4)):
            t.call("Bash", {"command": f"step {n}"}, f"output {n} " + "y" * rng.randint(10, 200_000), is_error=rng.random() < 0.2)
        proc = _hook_process(payload, mirrors)
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
        time.sleep(rng.uniform(0.005, 0.1))  # (a hook with little to mirror ends within a tenth of a second)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        cursor = mirrors / "claude" / SID / "mirror.json"
        if cursor.exists() and '"pending"' in cursor.read_text():
            in_window += 1
    done = cli("hook", "claude", "pre-compact", "--mirrors", str(mirrors), input=json.dumps(payload).encode())
    assert done.returncode == 0
    sync(whole, str(t.path), "claude", SID, archive=True)
    mirror = mirrors / "claude" / SID
    assert [e for e in _events(mirror) if e["kind"] != "state"] == [e for e in _events(whole) if e["kind"] != "state"]
    seqs = _segments(mirror)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(seqs))  # no two segments cover the same seqs
    assert not [p for p in mirror.rglob("*") if p.name.endswith(".tmp") or p.name == ".appended.jsonl"]
    assert not [p for p in [mirror, *mirror.rglob("*")] if p.stat().st_mode & 0o077]
    print(f"kills {kills} of {n} runs, {in_window} with an append named and its cursor not yet recorded")

"""Hostile io: bounded memory (issue 29 item 3; docs/reliability.md "Bounded memory").

A line past the limit is refused while it is read, the last line is found by a backward scan
in linear time, a compressed log may inflate only so far. Each case runs the real program in
a subprocess under `/usr/bin/time`, which reports its peak resident memory."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from support import cli

from catty_ctx.session.store import new_summary

TIME = "/usr/bin/time"
PEAK_LIMIT_KB = 200 * 1024
SESSION_LINE = b'{"v":1,"seq":0,"ts":"2026-11-01T00:00:00.000Z","kind":"session","session_id":"s"}\n'


def run_measured(*args: str, input_path: Path | None = None, timeout: float = 120) -> tuple[int, bytes, int]:
    """(exit code, stderr, peak RSS in KB) of `catty-ctx ARGS` in its own process."""
    if not os.path.exists(TIME):
        pytest.skip("/usr/bin/time is not installed")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    stdin = open(input_path, "rb") if input_path else subprocess.DEVNULL
    try:
        proc = subprocess.run([TIME, "-f", "PEAK %M", sys.executable, "-m", "catty_ctx", *args], stdin=stdin,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, timeout=timeout)
    finally:
        if input_path:
            stdin.close()  # type: ignore[union-attr]
    lines = proc.stderr.splitlines()
    peak = int(lines[-1].split()[1])
    return proc.returncode, b"\n".join(lines[:-1]), peak


def huge_line_session(folder: Path, line_bytes: int, *, last: bool = True) -> Path:
    """A session whose line 2 is LINE_BYTES long (a sparse file: the disk holds almost nothing)."""
    folder.mkdir()
    (folder / "summary.json").write_bytes(orjson.dumps(new_summary({"session_id": "s"})))
    log = folder / "updates.jsonl"
    with open(log, "wb") as f:
        f.write(SESSION_LINE)
        f.write(b'{"v":1,"seq":1,"ts":"2026-11-01T00:00:01.000Z","kind":"message","id":"m","role":"assistant","text":"')
        f.truncate(f.tell() + line_bytes)
        f.seek(0, 2)
        f.write(b'"}\n')
        if not last:
            f.write(b'{"v":1,"seq":2,"ts":"2026-11-01T00:00:02.000Z","kind":"message","id":"m2","role":"user","text":"x"}\n')
    return folder


READERS = [("inspect",), ("repair", "--check"), ("prune",), ("resume",), ("compact", "--force"), ("segment", "list")]


@pytest.mark.parametrize("size", [256 << 20])
def test_a_line_past_the_limit_is_refused_with_little_memory(tmp_path: Path, size: int) -> None:
    s = huge_line_session(tmp_path / "s", size)
    for args in [*READERS, ("append",)]:
        code, err, peak = run_measured(*args, str(s), input_path=_one_event(tmp_path))
        assert code in (0, 65), (args, err)
        if code == 65:
            assert b"longer than" in err and b"updates.jsonl" in err, (args, err)
        assert peak < PEAK_LIMIT_KB, (args, peak)


def _one_event(tmp_path: Path) -> Path:
    p = tmp_path / "one.jsonl"
    p.write_bytes(b'{"kind":"message","id":"new","role":"user","text":"x"}\n')
    return p


def test_the_last_line_is_read_in_linear_time(tmp_path: Path) -> None:
    """A valid 60 MiB last line (under the limit): append reads it backwards once, not in
    quadratic steps (once 27 s holding the lock)."""
    s = tmp_path / "s"
    s.mkdir()
    with open(s / "updates.jsonl", "wb") as f:
        f.write(SESSION_LINE)
        f.write(orjson.dumps({"v": 1, "seq": 1, "ts": "2026-11-01T00:00:01.000Z", "kind": "message", "id": "m", "role": "assistant",
                              "text": "y" * (60 << 20)}) + b"\n")
    # CPU seconds of this process (the append runs in it), not the clock: a loaded machine
    # stretches the clock, never the work.
    started = time.process_time()
    cli("append", str(s), "-q", input=b'{"kind":"message","id":"n","role":"user","text":"x"}\n', check=True)
    assert time.process_time() - started < 10


def _bomb(path: Path, inflated: int) -> Path:
    """A Codex rollout compressed with zstd that inflates to INFLATED bytes of valid lines."""
    if shutil.which("zstd") is None:
        pytest.skip("the zstd program is not installed")
    head = (b'{"timestamp":"2026-08-01T09:00:00.000Z","type":"session_meta","payload":{"id":"0199a011-0000-7000-8000-00000000e011",'
            b'"timestamp":"2026-08-01T09:00:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.137.0"}}\n')
    line = (b'{"timestamp":"2026-08-01T09:00:00.020Z","type":"response_item","payload":{"type":"message","role":"user",'
            b'"content":[{"type":"input_text","text":"again"}]}}\n')
    block = line * ((1 << 20) // len(line))
    with open(path, "wb") as out:
        proc = subprocess.Popen(["zstd", "-q", "-1", "-c"], stdin=subprocess.PIPE, stdout=out)
        assert proc.stdin is not None
        proc.stdin.write(head)
        left = inflated
        while left > 0:  # streamed in: the bomb is never held whole here either
            proc.stdin.write(block[:left])
            left -= len(block)
        proc.stdin.close()
        assert proc.wait() == 0
    return path


@pytest.mark.parametrize("command", [("usage", "--json"), ("import", "codex")])
def test_a_zstd_bomb_is_refused_naming_the_file(tmp_path: Path, command: tuple[str, ...]) -> None:
    bomb = _bomb(tmp_path / "rollout-2026-08-01T09-00-00-0199a011-0000-7000-8000-00000000e011.jsonl.zst", 256 << 20)
    assert bomb.stat().st_size < (256 << 20) // 200  # a ratio no log has
    code, err, peak = run_measured(*command, str(bomb))
    assert code == 65, err
    assert b"decompression bomb" in err and bomb.name.encode() in err
    assert peak < PEAK_LIMIT_KB, peak


@pytest.mark.slow
def test_a_one_gib_line_costs_under_200_mb_in_every_reader(tmp_path: Path) -> None:
    s = huge_line_session(tmp_path / "s", 1 << 30, last=False)
    for args in [*READERS, ("report", "-o", str(tmp_path / "r.html")), ("fork",), ("append",)]:
        extra = (str(tmp_path / f"fork-{len(args)}"),) if args == ("fork",) else ()
        code, err, peak = run_measured(*args, str(s), *extra, input_path=_one_event(tmp_path), timeout=300)
        assert code == 65 and b"longer than" in err, (args, err)
        assert peak < PEAK_LIMIT_KB, (args, peak)


@pytest.mark.slow
@pytest.mark.parametrize("command", [("usage", "--json"), ("import", "codex")])
def test_a_3_gib_zstd_bomb_is_refused_under_200_mb(tmp_path: Path, command: tuple[str, ...]) -> None:
    bomb = _bomb(tmp_path / "rollout-2026-08-01T09-00-00-0199a011-0000-7000-8000-00000000e011.jsonl.zst", 3 << 30)
    code, err, peak = run_measured(*command, str(bomb), timeout=300)
    assert code == 65 and b"decompression bomb" in err, err
    assert peak < PEAK_LIMIT_KB, peak

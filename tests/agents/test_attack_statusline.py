"""Issue 43, the status line bounded: only a regular file is read as the transcript (a FIFO never
blocks it), in blocks of bounded size, and a run where no line completes keeps its place."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support import ROOT

from catty_ctx.agents import transcript_tally


def _statusline(payload: dict, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "catty_ctx", "statusline"], input=json.dumps(payload).encode(), capture_output=True,
                          timeout=20, env={**os.environ, **env, "PYTHONPATH": str(ROOT)}, cwd=ROOT)


def test_a_fifo_as_the_transcript_is_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    proc = _statusline({"transcript_path": str(fifo), "model": {"display_name": "Opus"}}, {"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert proc.returncode == 0 and proc.stdout.startswith(b"Opus")


def _peak_after_reading(path: Path, cache: Path) -> tuple[int, dict]:
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over an exec, so a child of a large test worker
    # would report the worker's peak; the high-water mark belongs to the new process's memory.
    code = ("import json, sys; from catty_ctx.agents.transcript_tally import read_transcript; "
            f"s = read_transcript({str(path)!r}, {str(cache)!r}); "
            "hwm = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')); "
            "print(json.dumps([hwm, s]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    peak, state = json.loads(out.stdout)
    return peak * 1024, state


def test_a_gib_without_a_newline_is_read_in_bounded_blocks_and_not_again(tmp_path: Path) -> None:
    big = tmp_path / "sparse.jsonl"
    with open(big, "wb") as f:
        f.truncate(1 << 30)  # a sparse GiB: no line ever completes
    cache = tmp_path / "cache"
    peak, state = _peak_after_reading(big, cache)
    assert peak < 200 << 20, peak  # not the GiB
    assert state["offset"] == 0 and state["scan"] == 1 << 30  # kept: the next run does not read it again
    line = {"type": "assistant", "message": {"model": "claude-x", "usage": {"input_tokens": 7, "output_tokens": 1}}}
    with open(big, "ab") as f:
        f.write(b"\n" + json.dumps(line).encode() + b"\n")
    state = transcript_tally.read_transcript(str(big), str(cache))
    assert state is not None and state["last"] == [7, 0, 0, 1] and state["offset"] == big.stat().st_size


def test_appended_bytes_are_tallied_block_by_block(tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    line = json.dumps({"type": "assistant", "message": {"id": "m", "model": "claude-x", "usage": {"input_tokens": 5, "output_tokens": 1}}})
    filler = json.dumps({"type": "user", "message": {"content": "y" * 4000}})
    with open(t, "w") as f:
        for _ in range(5000):  # about 20 MB: several blocks
            f.write(filler + "\n")
        f.write(line + "\n")
    peak, state = _peak_after_reading(t, tmp_path / "cache")
    assert state["last"] == [5, 0, 0, 1] and state["offset"] == t.stat().st_size
    assert peak < t.stat().st_size + (120 << 20)

"""Shared helpers for the benchmark scripts: run a command, time it, read its peak memory."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"


def run(cmd: list[str], *, stdout: int | None = subprocess.DEVNULL, env: dict[str, str] | None = None) -> tuple[float, int, int]:
    """Wall seconds, peak RSS in MiB and exit code of one run."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)  # not bench/: its inspect.py would shadow the stdlib
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return wall, usage.ru_maxrss // 1024, os.waitstatus_to_exitcode(status)


def best_of(n: int, cmd: list[str], *, ok: tuple[int, ...] = (0,), **kw: object) -> tuple[float, int]:
    """Fastest wall time of n runs (the least disturbed by other load) and the peak memory;
    an exit code outside OK stops the benchmark."""
    walls, peaks = [], []
    for _ in range(n):
        wall, peak, rc = run(cmd, **kw)  # type: ignore[arg-type]
        if rc not in ok:
            sys.exit(f"failed ({rc}): {' '.join(cmd)}")
        walls.append(wall)
        peaks.append(peak)
    return min(walls), max(peaks)


def median_of(n: int, cmd: list[str], **kw: object) -> float:
    return statistics.median(run(cmd, **kw)[0] for _ in range(n))  # type: ignore[arg-type]


def catty() -> list[str]:
    return [sys.executable, "-m", "catty_ctx"]


def env_with_project(**extra: str) -> dict[str, str]:
    """The environment of a run of the project as installed: on the path, its bytecode compiled.

    pip compiles a package's bytecode when it installs it; a run from the source tree under
    PYTHONDONTWRITEBYTECODE would compile every module on every start instead, and time that.
    The bytecode goes to bench/out/pycache, so the source tree stays clean.
    """
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=str(OUT / "pycache"), **extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "catty_ctx")], env=env, check=True, stdout=subprocess.DEVNULL)
    return env


_PEAKS = """
import os, resource, runpy, sys
sys.argv = ["catty-ctx", *sys.argv[1:]]
try:
    runpy.run_module("catty_ctx", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
finally:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    sys.stderr.write(f"{own // 1024} {workers // 1024}\\n")
"""


def peaks(args: list[str], *, env: dict[str, str] | None = None) -> tuple[int, int]:
    """Peak RSS in MiB of catty-ctx ARGS itself and of the largest process it forked (0: none).

    The wall-clock runs report one figure, the largest of the process tree; a command that
    forks a worker holds both at once, so the honest total is their sum.
    """
    proc = subprocess.run([sys.executable, "-c", _PEAKS, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT, check=True)
    own, workers = proc.stderr.split()[-2:]
    return int(own), int(workers)

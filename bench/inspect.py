"""inspect throughput and memory on a >= 500 MB session, beside `jq -c .`; CLI start-up time.

    python bench/inspect.py [--mb 500]

Prints MB/s of `catty-ctx inspect --json` and of `jq -c . >/dev/null` on the same file (and
their ratio), the peak memory of inspect (its own plus its forked worker's: they run at
once), and the start-up time of `catty-ctx --version` beside a bare `python -c pass`. Targets: >= 300 MB/s, <= 150 MB peak, start-up <= 80 ms.
"""
from __future__ import annotations

import sys

# This file's folder comes first on sys.path and its name would shadow the stdlib's inspect.
_HERE = sys.path.pop(0)

import argparse  # noqa: E402
import shutil  # noqa: E402

sys.path.append(_HERE)
from _util import OUT, best_of, catty, env_with_project, median_of, peaks
from make_session import build


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    session = OUT / f"inspect-{args.mb}mb"
    log = session / "updates.jsonl"
    if not log.exists() or log.stat().st_size < args.mb * 1_000_000:
        print(f"building a {args.mb} MB session in {session} …", file=sys.stderr)
        build(session, args.mb * 1_000_000)
    mb = log.stat().st_size / 1e6
    env = env_with_project()
    best_of(1, ["cat", str(log)])  # warm the page cache for both readers
    wall, _ = best_of(args.runs, [*catty(), "inspect", str(session), "--json"], env=env)
    print(f"file: {mb:.0f} MB")
    own, worker = peaks(["inspect", str(session), "--json"], env=env)
    print(f"catty-ctx inspect: {wall:.2f} s  {mb / wall:.0f} MB/s  peak {own + worker} MiB "
          f"({own} MiB + {worker} MiB in its worker)   (targets: >= 300 MB/s, <= 150 MiB)")
    if shutil.which("jq"):
        jq_wall, jq_peak = best_of(1, ["jq", "-c", ".", str(log)])
        print(f"jq -c .          : {jq_wall:.2f} s  {mb / jq_wall:.0f} MB/s  peak {jq_peak} MiB")
        print(f"ratio: inspect is {jq_wall / wall:.1f}x the speed of jq")
    base = median_of(15, [sys.executable, "-c", "pass"])
    start = median_of(15, [*catty(), "--version"], env=env)
    print(f"start-up: catty-ctx --version {start * 1000:.0f} ms; python -c pass {base * 1000:.0f} ms; "
          f"catty-ctx's own share {(start - base) * 1000:.0f} ms   (target: <= 80 ms)")


if __name__ == "__main__":
    main()

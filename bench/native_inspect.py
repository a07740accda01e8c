"""`inspect FILE` on a Claude Code transcript read where it lies, beside `import | inspect -`.

    python bench/native_inspect.py [--mb 50] [--runs 3]

Generates a transcript of about MB megabytes (the generator of bench/import.py), then prints
the best wall time of `catty-ctx inspect FILE --json` (the import in memory) and of the pipe
`catty-ctx import auto FILE | catty-ctx inspect - --json`, and their ratio. Target: the direct
read is not slower than the pipe (ratio <= 1.0).
"""
from __future__ import annotations

import os
import sys

# the project root replaces bench/ on the path: the benchmarks' own inspect.py would shadow the stdlib's
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[0] = os.path.dirname(_HERE)
sys.path.append(_HERE)

import argparse  # noqa: E402
import random  # noqa: E402
import shlex  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

from _util import OUT, catty, env_with_project  # noqa: E402

from importlib import import_module  # noqa: E402

write_session = import_module("import").write_session  # bench/import.py's generator


def best(runs: int, cmd: list[str], *, shell: bool = False, env: dict[str, str]) -> float:
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd if not shell else cmd[0], shell=shell, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        walls.append(time.perf_counter() - t0)
    return min(walls)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    path = OUT / "native" / "projects" / "-home-dev-shop" / f"bench-native-{args.mb}mb.jsonl"
    if not path.exists() or path.stat().st_size < args.mb * 1_000_000:
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"writing a {args.mb} MB Claude Code transcript to {path} …", file=sys.stderr)
        write_session(path, "bench-native", args.mb * 1_000_000, random.Random(7))
    env = env_with_project()
    mb = path.stat().st_size / 1e6
    cat = " ".join(shlex.quote(c) for c in catty())
    direct = best(args.runs, [*catty(), "inspect", str(path), "--json"], env=env)
    piped = best(args.runs, [f"{cat} import auto {shlex.quote(str(path))} | {cat} inspect - --json"], shell=True, env=env)
    print(f"file: {mb:.0f} MB Claude Code transcript")
    print(f"inspect FILE:              {direct:.2f} s  ({mb / direct:.0f} MB/s)")
    print(f"import auto FILE | inspect -: {piped:.2f} s  ({mb / piped:.0f} MB/s)")
    print(f"ratio direct/pipe: {direct / piped:.2f} (target <= 1.0)")


if __name__ == "__main__":
    main()

"""search across a tree of sessions, beside `grep -r` on the same tree.

    python bench/search.py [--sessions 200] [--mb 2] [--runs 5]

Builds a ROOT of N catty sessions (each about MB megabytes) with one planted string in one of
them, then prints the best wall time of `catty-ctx search ROOT NEEDLE` and of
`grep -r -F NEEDLE ROOT`, their ratio, and the same for a string no session holds (the usual
case: every file is only scanned as bytes).
"""
from __future__ import annotations

import sys

# This file's folder comes first on sys.path, and bench/inspect.py would shadow the stdlib's inspect.
_HERE = sys.path.pop(0)

import argparse  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402

sys.path.append(_HERE)
from _util import OUT, best_of, catty, env_with_project  # noqa: E402
from make_session import build  # noqa: E402

NEEDLE = "ZQ_PLANTED_NEEDLE_7731"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--mb", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    root = OUT / f"search-{args.sessions}x{args.mb}mb"
    env = env_with_project()
    if not root.is_dir():
        template = build(OUT / "search-template", int(args.mb * 1e6)).parent
        for i in range(args.sessions):
            shutil.copytree(template, root / f"s{i:04d}")
        planted = root / f"s{args.sessions // 2:04d}"
        subprocess.run([*catty(), "append", str(planted), "-q"], input=f'{{"kind":"message","id":"p1","role":"user","text":"{NEEDLE}"}}\n'.encode(),
                       check=True, env=env)
        shutil.rmtree(OUT / "search-template")
    size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) / 1e6
    print(f"tree: {args.sessions} sessions, {size:,.0f} MB")
    for label, needle in (("one match", NEEDLE), ("no match", "NOTHING_HOLDS_THIS_9Q")):
        ours, _ = best_of(args.runs, [*catty(), "search", str(root), needle], env=env, ok=(0, 1))
        grep, _ = best_of(args.runs, ["grep", "-r", "-F", "-l", needle, str(root)], ok=(0, 1))
        print(f"{label:10}  catty-ctx search {ours * 1000:7.0f} ms   grep -r {grep * 1000:7.0f} ms   ratio {ours / grep:5.2f}x")


if __name__ == "__main__":
    main()

"""Benchmark: where a cold `usage` spends its CPU, part by part, in one process.

    python bench/usage_parts.py TREE [--repeat 3]

Each part is run on its own over the whole tree (best of --repeat, CPU seconds of this
process), in the order a cold run does them: the walk, parsing the logs into records (a
Claude Code log is decoded whole when none of its lines is odd, else its marked lines one by
one; shown beside it, what the byte search for the marked lines alone costs), each file's
own copies collapsed, the hand-back of a worker's entries
(MessagePack out and in), the dedupe across files, the fold into rows, and writing the
per-file cache. The imports are timed in a fresh interpreter. With two processes the
parsing parts split between them; the rest is serial.
"""
from __future__ import annotations

import sys

_HERE = sys.path.pop(0)  # (bench/inspect.py would shadow the stdlib's)

import argparse  # noqa: E402
import mmap  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any, Callable  # noqa: E402

sys.path.append(_HERE)
from _util import ROOT, env_with_project  # noqa: E402

sys.path.insert(0, str(ROOT))
from catty_ctx.usage import claude, codex, catty, copies, filecache, ledger, records, walk  # noqa: E402
from catty_ctx.session.jsonl import marked_lines  # noqa: E402


def best(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t = time.process_time()
        out = fn()
        times.append(time.process_time() - t)
    return min(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tree")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    found = walk.survey([args.tree])
    files = [(path, kind or walk.CLAUDE) for _arg, listing in found for path, kind, *_ in listing]
    maps = []
    for path, kind in files:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size:
                maps.append((path, kind, mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)))
    module = {walk.CLAUDE: claude, walk.CODEX: codex, walk.CATTY: catty}
    marks: dict[str, Any] = {walk.CLAUDE: claude.MARK, walk.CATTY: catty.MARK, walk.CODEX: codex.PATTERN}

    def find() -> int:
        return sum(1 for _p, kind, mm in maps for _ in marked_lines(mm, 0, len(mm), marks[kind]))

    def parse() -> list[list[records.Record]]:
        out = []
        for path, kind, mm in maps:
            recs: list[records.Record] = []
            module[kind].parse(mm, 0, len(mm), path, None, recs, [])
            out.append(recs)
        return out

    parts: list[tuple[str, float]] = []
    def import_seconds(code: str) -> float:
        err = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, env=env_with_project(),
                             check=True).stderr
        return sum(int(line.split("|")[0].split(":")[1]) for line in err.splitlines()[1:]) / 1e6

    ours = ("import catty_ctx.usage.claude, catty_ctx.usage.filescan, catty_ctx.usage.ledger, catty_ctx.usage.copies, catty_ctx.usage.kept, "
            "catty_ctx.usage.prices, catty_ctx.fleet.workers, catty_ctx.cli.output")
    parts.append(("imports (msgspec, the parsers, the fold)", min(import_seconds(ours) - import_seconds("pass") for _ in range(args.repeat))))
    parts.append(("walk (list folders, stat logs)", best(args.repeat, lambda: walk.survey([args.tree]))[0]))
    t_find, lines = best(args.repeat, find)
    t_parse, per_file = best(args.repeat, parse)
    parts.append((f"parse the logs into records ({sum(map(len, per_file))})", t_parse))
    t, collapsed = best(args.repeat, lambda: [copies.collapse(r) for r in per_file])
    parts.append(("collapse each file's copies", t))
    entries = [(path, records.FileEntry(0, 0, 0, kind, recs=r), 0, None) for (path, kind, _), r in zip(maps, collapsed)]

    def hand_back() -> list[Any]:
        """As a worker sends its results (each entry its own MessagePack) and this process loads them."""
        data = records.ENCODE((0, [(p, records.ENCODE(e), n, err) for p, e, n, err in entries]))
        return [records.DECODE_ENTRY(raw) for _p, raw, _n, _err in records.DECODE_PACKED_ITEM(data)[1]]

    parts.append(("worker hand-back (MessagePack out and in)", best(args.repeat, hand_back)[0]))
    flat = [r for recs in collapsed for r in recs]
    t, kept = best(args.repeat, lambda: copies.dedupe(flat))
    parts.append((f"dedupe across files ({len(flat)} → {len(kept)} calls)", t))
    parts.append(("fold into rows (--by day)", best(args.repeat, lambda: ledger.fold_calls(kept, by="day"))[0]))
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = tmp
        parts.append(("write the per-file cache", best(args.repeat, lambda: filecache.save_cache(args.tree, {e[0]: e[1] for e in entries}))[0]))
    size = sum(len(mm) for *_, mm in maps)
    print(f"{args.tree}: {size / 2**20:.1f} MB in {len(maps)} files; CPU seconds, one process, best of {args.repeat}; "
          f"load average {os.getloadavg()[0]:.1f}")
    for name, t in parts:
        print(f"  {name:52} {t:7.3f}")
    print(f"  {'all':52} {sum(t for _n, t in parts):7.3f}")
    print(f"  {f'(the byte search alone for the {lines} marked lines)':52} {t_find:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

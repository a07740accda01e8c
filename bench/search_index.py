"""search through its index, beside `grep -r -F -l` on the same tree, in one run.

    python bench/search_index.py [--mb 1000] [--runs 11]

Builds a ROOT of about MB megabytes (catty sessions, Claude Code transcripts, Codex rollouts,
about 2 MB each, seeded) with one string planted in one file of each kind, builds the index
(`catty-ctx index`, timed, and its size: the FTS index and each session's texts), then prints
the median of RUNS in-process `search` calls through the index (the up-to-date check included: a
stat of every file and folder), of RUNS `grep -r -F -l` over the tree and of a few `search` calls
without the index, with the ratios, for a string one session of each kind holds and for one no
file holds; then
the median wall of the `catty-ctx search` command (its interpreter's start-up included), and the
update after appending to three files. The goal (docs/search.md#the-index): a query in 50 ms or
less, and 1/20 of grep's time or less.
"""
from __future__ import annotations

import sys

_HERE = sys.path.pop(0)  # bench/inspect.py would shadow the stdlib's inspect

import argparse  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import orjson  # noqa: E402

sys.path.append(_HERE)
from _util import OUT, catty, env_with_project  # noqa: E402
from make_session import WORDS, build  # noqa: E402

NEEDLE = "ZQ_PLANTED_NEEDLE_7731"
ABSENT = "NOTHING_HOLDS_THIS_9Q"
FILE_BYTES = 2_000_000


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _claude(path: Path, rng: random.Random, planted: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    sid = path.stem
    lines, size, n, parent = [], 0, 0, None
    while size < FILE_BYTES:
        n += 1
        text = _text(rng, rng.randint(20, 400)) + (f" {NEEDLE}" if planted and n == 40 else "")
        rec = {"type": "user" if n % 2 else "assistant", "uuid": f"u{n}", "parentUuid": parent, "sessionId": sid, "cwd": "/home/u/p",
               "timestamp": f"2026-11-01T10:{n // 60 % 60:02d}:{n % 60:02d}Z", "isSidechain": False,
               "message": {"role": "user", "content": text} if n % 2 else
               {"id": f"m{n}", "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": text}],
                "usage": {"input_tokens": 10, "output_tokens": 10}}}
        line = orjson.dumps(rec)
        lines.append(line)
        size += len(line) + 1
        parent = f"u{n}"
    path.write_bytes(b"\n".join(lines) + b"\n")


def _codex(path: Path, rng: random.Random, planted: bool, sid: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [orjson.dumps({"timestamp": "2026-11-01T10:00:00.000Z", "type": "session_meta",
                           "payload": {"id": sid, "timestamp": "2026-11-01T10:00:00.000Z", "cwd": "/home/u/p", "originator": "codex_cli_rs",
                                       "cli_version": "0.171.0"}})]
    size, n = 0, 0
    while size < FILE_BYTES:
        n += 1
        text = _text(rng, rng.randint(20, 400)) + (f" {NEEDLE}" if planted and n == 40 else "")
        role, kind = ("user", "input_text") if n % 2 else ("assistant", "output_text")
        line = orjson.dumps({"timestamp": "2026-11-01T10:00:01.000Z", "type": "response_item",
                             "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}})
        lines.append(line)
        size += len(line) + 1
    path.write_bytes(b"\n".join(lines) + b"\n")


def make_tree(root: Path, mb: int) -> None:
    files = max(3, mb * 1_000_000 // FILE_BYTES)
    rng = random.Random(11)
    for i in range(files):
        kind, planted = i % 3, i in (files // 2, files // 2 + 1, files // 2 + 2)
        if kind == 0:
            build(root / "catty" / f"s{i:05d}", FILE_BYTES, seed=i)
            if planted:
                subprocess.run([*catty(), "append", str(root / "catty" / f"s{i:05d}"), "-q"], check=True, env=env_with_project(),
                               input=orjson.dumps({"kind": "message", "id": "planted", "role": "user", "text": NEEDLE}) + b"\n")
        elif kind == 1:
            _claude(root / "claude" / "projects" / "-home-u-p" / f"0000{i:04d}-0000-4000-8000-000000000000.jsonl", rng, planted)
        else:
            sid = f"0199a000-0000-7000-8000-{i:012d}"
            _codex(root / "codex" / "sessions" / "2026" / "11" / "01" / f"rollout-2026-11-01T10-00-00-{sid}.jsonl", rng, planted, sid)
    (root / "claude" / "settings.json").write_text("{}")
    (root / "codex" / "config.toml").write_text("")


def median_ms(fn, runs: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    root = OUT / f"search-index-{args.mb}mb"
    index = OUT / f"search-index-{args.mb}mb.sqlite"
    os.environ["CATTY_CTX_INDEX"] = str(index)
    env = env_with_project(CATTY_CTX_INDEX=str(index))
    if not root.is_dir():
        make_tree(root, args.mb)
    size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) / 1e6
    files = sum(1 for f in root.rglob("*") if f.is_file())
    print(f"tree: {size:,.0f} MB in {files:,} files; load average (1, 5, 15 min): " + "%.2f %.2f %.2f" % os.getloadavg())
    from catty_ctx.index import Index
    from catty_ctx.search import Query, search

    t = time.perf_counter()
    roots = [str(root / "catty"), str(root / "claude"), str(root / "codex")]
    with Index() as idx:
        report = idx.update(roots)
        built = time.perf_counter() - t
        report.sessions_read = idx.keep_all(roots)
    print(f"index: built in {time.perf_counter() - t:,.1f} s (FTS {built:,.1f} s, {report.bytes_read / 1e6:,.0f} MB read; "
          f"the texts of {report.sessions_read} sessions {time.perf_counter() - t - built:,.1f} s), "
          f"{sum(p.stat().st_size for p in index.parent.glob(index.name + '*') if p.is_file()) / 1e6:,.0f} MB on disk "
          f"and {sum(p.stat().st_size for p in index.parent.glob(index.name + '.texts/*')) / 1e6:,.0f} MB of kept texts beside it")
    for label, needle in (("one match each kind", NEEDLE), ("no match", ABSENT)):
        found = list(search(roots, Query(needle)))
        ours = median_ms(lambda needle=needle: list(search(roots, Query(needle))), args.runs)  # type: ignore[misc]
        grep = median_ms(lambda needle=needle: subprocess.run(["grep", "-r", "-F", "-l", needle, str(root)], stdout=subprocess.DEVNULL,
                                                             check=False), max(3, args.runs // 2))  # type: ignore[misc]
        plain = median_ms(lambda needle=needle: list(search(roots, Query(needle), use_index=False)), 3)  # type: ignore[misc]
        assert sorted(map(repr, found)) == sorted(map(repr, search(roots, Query(needle), use_index=False)))
        print(f"{label:20} {len(found)} matches  search (library, indexed) {ours:7.1f} ms   grep -r -F -l {grep:7.1f} ms "
              f"(ratio {ours / grep:.3f}, 1/{grep / ours:.0f})   search without the index {plain:7.1f} ms "
              f"(ratio {ours / plain:.3f}, 1/{plain / ours:.0f})")
    cli = median_ms(lambda: subprocess.run([*catty(), "search", *roots, NEEDLE], stdout=subprocess.DEVNULL, env=env, check=False), 5)
    print(f"catty-ctx search (the command, start-up included): {cli:.0f} ms")
    logs = sorted((root / "claude").rglob("*.jsonl"))[:3]
    for log in logs:
        last = orjson.loads(log.read_bytes().rsplit(b"\n", 2)[-2])  # (the new record answers the last, as Claude Code links them)
        with open(log, "ab") as f:
            f.write(orjson.dumps({"type": "user", "uuid": f"late-{time.time_ns()}", "parentUuid": last["uuid"], "sessionId": log.stem,
                                  "cwd": "/home/u/p", "timestamp": "2026-11-03T00:00:00Z", "isSidechain": False,
                                  "message": {"role": "user", "content": "LATE_APPENDED_LINE"}}) + b"\n")
    t = time.perf_counter()
    with Index() as idx:
        report = idx.update(roots)
    print(f"after appending to 3 files: {len(report.files_grown)} grown, {len(report.files_read)} read whole, "
          f"{report.bytes_read:,} bytes read, {(time.perf_counter() - t) * 1000:.0f} ms")
    t = time.perf_counter()
    first = list(search(roots, Query("LATE_APPENDED_LINE")))
    first_ms = (time.perf_counter() - t) * 1000
    late = median_ms(lambda: list(search(roots, Query("LATE_APPENDED_LINE"))), args.runs)
    print(f"then a search finding the {len(first)} appended lines: the first {first_ms:.0f} ms (it reads those 3 sessions whole and "
          f"keeps their texts), then {late:.1f} ms")
    print("load average (1, 5, 15 min): %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()

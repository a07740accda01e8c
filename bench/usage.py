"""Benchmark: `catty-ctx usage` against ccusage on a generated Claude Code tree, or a mixed home.

Runs both side by side, interleaved (so background load hits both alike), and prints the
median walls and their ratios for four cases: cold (no cache), warm (unchanged files), after
appending to one file (where catty-ctx must read only that file's new bytes), and cold
`--since` a day that 90 % of the files were last written before. It also checks that both
report the same tokens per day, and shows what the command line's start-up alone costs, so
the ledger's own time can be told apart from the interpreter's (and the floor under any run
that parses: the interpreter with the decoder imported). Cold runs also show their CPU
seconds (user + system, worker processes included), steadier than walls on a shared machine.
With --mixed it also times the floor under any Python reader of those homes (bench/read_floor.py:
a bare interpreter that reads every file on all CPUs, then the same scanning every line as JSON),
so that what the ledger adds can be told from what reading the bytes alone costs.

    python bench/usage.py [--size-mb 210 | --sessions 80] [--mixed] [--runs 5] [--ccusage PATH] [--tree DIR]

--size-mb: a tree of that many MB of 100-session batches (about 1,000 files for 210 MB);
--sessions N: one batch of N long sessions (80 make about 80 MB). Each log's mtime is set to
its last record's time, as the agent writing it would have left it. --mixed: a HOME of that
many MB holding all four agents (about 62 % Claude Code, 19 % Codex, 10 % Gemini CLI, 9 %
opencode's storage and database), where catty-ctx runs `usage` with no PATH (the homes) and
ccusage its default run (which reads the four agents too): the cold case is the issue's figure.
A cold run keeps the price index (it stands for the installed price library, resolved once:
docs/usage.md); the first run after installing, without it, is timed apart. ccusage comes from
`npm install ccusage@20.0.24` (its bin/ccusage), `--ccusage PATH`, $CATTY_CTX_CCUSAGE or the
PATH. Targets: cold ≤ 0.5× ccusage, after an append ≤ 0.1×, warm ≈ 30 ms, cold --since ≤ 0.15×.
"""
from __future__ import annotations

import sys

# This file's folder comes first on sys.path, and bench/inspect.py would shadow the stdlib's.
_HERE = sys.path.pop(0)

import argparse  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import orjson  # noqa: E402

sys.path.append(_HERE)
from _util import OUT, ROOT, catty, env_with_project  # noqa: E402

sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from support.usage_trees import claude_tree, codex_rollout, gemini_home, opencode_db, opencode_sessions, opencode_storage  # noqa: E402


def tree_bytes(root: Path) -> tuple[int, int]:
    files = list(root.rglob("*.jsonl"))
    return sum(p.stat().st_size for p in files), len(files)


def make_tree(root: Path, size_mb: int, sessions: int | None) -> None:
    if sessions:
        if not any(root.rglob("*.jsonl")):
            claude_tree(root, projects=4, sessions=-(-sessions // 4), turns=48, pad=6000, seed=100)
    else:
        seed = 100
        while tree_bytes(root)[0] < size_mb << 20:
            claude_tree(root, projects=4, sessions=25, turns=40, pad=3000, seed=seed)
            seed += 1
    for log in root.rglob("*.jsonl"):  # the mtime the agent left: its last write
        last = max((orjson.loads(line).get("timestamp") or "" for line in log.read_bytes().splitlines()[-5:]), default="")
        if last:
            when = datetime.fromisoformat(last.replace("Z", "+00:00")).timestamp()
            os.utime(log, (when, when))


def tree_size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def make_mixed_home(home: Path, size_mb: int) -> None:
    """A HOME with ~/.claude, ~/.codex, ~/.gemini and ~/.local/share/opencode adding up to SIZE_MB."""
    want = size_mb << 20
    if home.exists() and tree_size(home) >= want:
        return
    shutil.rmtree(home, ignore_errors=True)
    make_tree(home / ".claude", int(size_mb * 0.62), None)
    (home / ".claude" / "settings.json").write_text("{}")
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    (home / ".codex" / "config.toml").write_text("")
    n = 0
    while tree_size(home / ".codex") < want * 0.19:
        day = datetime(2026, 2, 1 + n % 27, 9, tzinfo=timezone.utc)
        steps = [{"ts": (day.replace(hour=9 + k // 60, minute=k % 60)).strftime("%Y-%m-%dT%H:%M:%S.000Z"), "model": ("gpt-5-codex", "gpt-5.3-codex")[k % 2],
                  "last": {"input_tokens": 4000 + k, "cached_input_tokens": 3000, "output_tokens": 300 + k, "reasoning_output_tokens": 64}}
                 for k in range(120)]
        codex_rollout(home / ".codex" / "sessions" / day.strftime("%Y/%m/%d") / f"rollout-{day:%Y-%m-%dT%H-%M-%S}-{n:08d}.jsonl", steps,
                      session_id=f"0199a000-0000-7000-8000-{n:012d}", pad=2500)
        n += 1
    seed = 200
    while tree_size(home / ".gemini") < want * 0.10:
        gemini_home(home / ".gemini", projects=2, sessions=10, turns=30, pad=3000, seed=seed, form="jsonl" if seed % 2 else "json")
        seed += 1
    data = home / ".local" / "share" / "opencode"
    seed = 300
    while tree_size(data) < want * 0.05:
        docs, _truth = opencode_sessions(sessions=10, turns=20, pad=2500, seed=seed)
        opencode_storage(data, docs)
        seed += 1
    db_docs = []
    for s in range(seed, seed + 40):
        docs, _truth = opencode_sessions(sessions=10, turns=20, pad=2500, seed=s)
        db_docs.extend(docs)
        if sum(len(orjson.dumps(d)) for d in db_docs) > want * 0.04:
            break
    opencode_db(data / "opencode.db", db_docs)


def since_day(root: Path, share_older: float = 0.9) -> str:
    """The day (YYYYMMDD, UTC) that SHARE_OLDER of the logs were last written before."""
    days = sorted(datetime.fromtimestamp(p.stat().st_mtime, timezone.utc).strftime("%Y%m%d") for p in root.rglob("*.jsonl"))
    return days[min(len(days) - 1, int(len(days) * share_older))]


CPU: list[float] = []  # CPU seconds (user + system, the command and the processes it waited for) of each `timed` run


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, bytes]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT)  # not bench/: its inspect.py would shadow the stdlib
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return wall, proc.stdout


def days_of_ccusage(out: bytes) -> dict[str, tuple[int, ...]]:
    return {d.get("period") or d["date"]: (d["inputTokens"], d["outputTokens"], d["cacheReadTokens"], d["cacheCreationTokens"])
            for d in orjson.loads(out)["daily"]}


def days_of_ours(out: bytes) -> dict[str, tuple[int, ...]]:
    return {r["day"]: (r["input"], r["output"], r["cache_read"], r["cache_write"]) for r in orjson.loads(out)["rows"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=210)
    ap.add_argument("--sessions", type=int, help="instead of --size-mb: one batch of this many long sessions")
    ap.add_argument("--mixed", action="store_true", help="a HOME of all four agents, read with no PATH (see above)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ccusage", default=os.environ.get("CATTY_CTX_CCUSAGE") or shutil.which("ccusage"))
    ap.add_argument("--tree", type=Path, help="where the tree is generated (kept and reused; default bench/out/usage-claude-<size>mb)")
    args = ap.parse_args()
    if not args.ccusage:
        print("ccusage not found: npm install ccusage@20.0.24 in a scratch folder and pass --ccusage .../node_modules/.bin/ccusage")
        return 2

    if args.mixed:
        return mixed(args)
    scratch = Path(tempfile.mkdtemp(prefix="catty-usage-bench-"))
    try:
        tree = args.tree or OUT / (f"usage-claude-{args.sessions}sessions" if args.sessions else f"usage-claude-{args.size_mb}mb")
        tree.mkdir(parents=True, exist_ok=True)
        make_tree(tree, args.size_mb, args.sessions)
        size, nfiles = tree_bytes(tree)
        cache = scratch / "cache"
        env_cc = dict(os.environ, CLAUDE_CONFIG_DIR=str(tree), HOME=str(scratch), TZ="UTC")
        env_us = env_with_project(XDG_CACHE_HOME=str(cache), TZ="UTC")
        cc = [args.ccusage, "daily", "--json", "--offline", "--breakdown", "--timezone", "UTC"]
        us = [*catty(), "usage", str(tree), "--by", "day", "--json", "--timezone", "UTC"]
        empty = scratch / "empty"
        empty.mkdir()
        start_only = [*catty(), "usage", str(empty), "--json", "--no-cache", "--allow-empty"]
        # The floor under every run that parses: the interpreter, and the interpreter with the decoder imported.
        bare = [sys.executable, "-c", "pass"]
        with_decoder = [sys.executable, "-c", "import msgspec.json, msgspec.msgpack"]

        cc_walls, cold, warm, appended, starts, bares, decoders = [], [], [], [], [], [], []
        agree = True
        cc_cpu, cold_cpu = [], []
        for _ in range(args.runs):
            wall, out_cc = timed(cc, env_cc)
            cc_walls.append(wall)
            cc_cpu.append(CPU[-1])
            clear_caches(cache)
            wall, out_us = timed(us, env_us)
            cold.append(wall)
            cold_cpu.append(CPU[-1])
            agree = agree and days_of_ccusage(out_cc) == days_of_ours(out_us)
            starts.append(timed(start_only, env_us)[0])
            bares.append(timed(bare, env_us)[0])
            decoders.append(timed(with_decoder, env_us)[0])
        for _ in range(args.runs):
            warm.append(timed(us, env_us)[0])
        target = sorted(tree.rglob("*.jsonl"), key=lambda p: p.stat().st_size)[-1]
        read_back: list[dict[str, Any]] = []
        for i in range(args.runs):
            line = {"type": "assistant", "sessionId": "bench", "timestamp": "2026-03-01T12:00:00.000Z", "requestId": f"req_bench{i}",
                    "message": {"id": f"msg_bench{i}", "model": "claude-sonnet-4-20250514", "content": [],
                                "usage": {"input_tokens": 1, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}}
            with open(target, "ab") as f:
                f.write(orjson.dumps(line) + b"\n")
            wall, out = timed(us, env_us)
            appended.append(wall)
            read_back.append(orjson.loads(out))

        # "Since yesterday" on a tree that 90 % of the logs were last written before, cold.
        day = since_day(tree)
        older = sum(p.stat().st_mtime < datetime.strptime(day, "%Y%m%d").replace(tzinfo=timezone.utc).timestamp() for p in tree.rglob("*.jsonl"))
        cc_since, since = [], []
        for _ in range(args.runs):
            wall, out_cc = timed([*cc, "--since", day], env_cc)
            cc_since.append(wall)
            clear_caches(cache)
            wall, out_us = timed([*us, "--since", day], env_us)
            since.append(wall)
            agree = agree and days_of_ccusage(out_cc) == days_of_ours(out_us)

        # The library call alone (no interpreter or CLI start): unchanged files, a question not asked before.
        os.environ["XDG_CACHE_HOME"] = str(cache)
        from catty_ctx.usage import pipeline as U

        lib = []
        for by in ("model", "session", "project", "agent", "month"):
            t = time.perf_counter()
            U.usage([str(tree)], by=by, timezone_name="UTC")
            lib.append(time.perf_counter() - t)
        t = time.perf_counter()
        U.usage([str(tree)], by="month", timezone_name="UTC")
        lib_answer = time.perf_counter() - t

        med = statistics.median
        base = med(cc_walls)
        print(f"tree: {size / 2**20:.1f} MB in {nfiles} files (Claude Code layout), {args.runs} runs each, medians; {os.cpu_count()} CPUs, "
              f"load average {os.getloadavg()[0]:.1f} at the end")
        print(f"same tokens per day as ccusage: {'yes' if agree else 'NO'}")
        print(f"{'':34}{'ccusage':>10}{'catty-ctx':>11}{'ratio':>8}   target")
        print(f"{'cold (no cache)':34}{base:>9.3f}s{med(cold):>10.3f}s{med(cold) / base:>8.3f}   <= 0.50")
        print(f"{'  cold, CPU seconds (user + system)':34}{med(cc_cpu):>9.3f}s{med(cold_cpu):>10.3f}s{med(cold_cpu) / med(cc_cpu):>8.3f}")
        print(f"{'warm (unchanged files)':34}{base:>9.3f}s{med(warm):>10.3f}s{med(warm) / base:>8.3f}   ~ 30 ms")
        print(f"{'after appending to one file':34}{base:>9.3f}s{med(appended):>10.3f}s{med(appended) / base:>8.3f}   <= 0.10")
        parsed = {(d["files_parsed"], d["bytes_parsed"]) for d in read_back}
        print(f"  files and bytes read after each append: {sorted(parsed)} (one line appended each time)")
        base_since = med(cc_since)
        print(f"{'cold --since ' + day:34}{base_since:>9.3f}s{med(since):>10.3f}s{med(since) / base_since:>8.3f}   <= 0.15")
        print(f"  {older} of {nfiles} files last written before {day}")
        print(f"{'catty-ctx start-up alone (empty dir)':34}{'':>10}{med(starts):>10.3f}s{med(starts) / base:>8.3f}")
        print(f"{'  the interpreter alone':34}{'':>10}{med(bares):>10.3f}s{med(bares) / base:>8.3f}")
        print(f"{'  the interpreter + msgspec import':34}{'':>10}{med(decoders):>10.3f}s{med(decoders) / base:>8.3f}")
        print(f"{'library call, warm, new question':34}{'':>10}{med(lib):>10.3f}s{med(lib) / base:>8.3f}")
        print(f"{'library call, warm, same question':34}{'':>10}{lib_answer:>10.3f}s{lib_answer / base:>8.3f}")
        return 0 if agree else 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def clear_caches(cache: Path) -> None:
    """A cold run: no cache of any log (the price index stays: it stands for the installed library)."""
    for p in cache.glob("catty-ctx/*"):
        if not p.name.startswith("prices-index-"):
            p.unlink()


def mixed(args: Any) -> int:
    """`usage` with no PATH on a mixed HOME against ccusage's default run on it, cold and warm."""
    home = args.tree or OUT / f"usage-mixed-{args.size_mb}mb"
    make_mixed_home(home, args.size_mb)
    scratch = Path(tempfile.mkdtemp(prefix="catty-usage-bench-"))
    try:
        cache = scratch / "cache"
        parts = {name: tree_size(home / name) for name in (".claude", ".codex", ".gemini", ".local/share/opencode")}
        env_cc = dict(os.environ, HOME=str(home), TZ="UTC")
        env_cc.pop("CLAUDE_CONFIG_DIR", None)
        env_us = env_with_project(XDG_CACHE_HOME=str(cache), TZ="UTC", HOME=str(home))
        for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME"):
            env_us.pop(name, None)
        cc = [args.ccusage, "daily", "--json", "--offline", "--breakdown", "--timezone", "UTC"]
        us = [*catty(), "usage", "--by", "day", "--json", "--timezone", "UTC"]
        timed(us, env_us)  # (the price index: once per library version)
        # The floor: a bare interpreter that only reads every file of the homes (and then also scans
        # every line as JSON), on all CPUs (bench/read_floor.py).
        homes = [str(home / name) for name in parts]
        floors = {"read": [sys.executable, str(Path(_HERE) / "read_floor.py"), *homes],
                  "scan": [sys.executable, str(Path(_HERE) / "read_floor.py"), "--scan", *homes]}
        cc_walls, cold, warm, first = [], [], [], []
        cc_cpu, cold_cpu = [], []
        empty = scratch / "empty"
        empty.mkdir()
        floors["start"] = [*catty(), "usage", str(empty), "--json", "--no-cache", "--allow-empty"]  # (catty-ctx's own start-up)
        floor_walls: dict[str, list[float]] = {name: [] for name in floors}
        for _ in range(args.runs):
            wall, _out_cc = timed(cc, env_cc)
            cc_walls.append(wall)
            cc_cpu.append(CPU[-1])
            clear_caches(cache)
            wall, out_us = timed(us, env_us)
            cold.append(wall)
            cold_cpu.append(CPU[-1])
            for name, cmd in floors.items():
                floor_walls[name].append(timed(cmd, env_us if name == "start" else env_cc)[0])
        for _ in range(args.runs):
            warm.append(timed(us, env_us)[0])
        for _ in range(max(1, args.runs // 2)):
            shutil.rmtree(cache, ignore_errors=True)
            first.append(timed(us, env_us)[0])
        doc = orjson.loads(out_us)
        agents = sorted({s["agent"] for s in doc["sources"]})
        # ccusage reads all four homes too, but counts Gemini CLI's thinking tokens apart from output and
        # opencode's messages (a message's last step) instead of its steps (docs/usage.md): the
        # tokens per day are compared on the Claude Code and Codex parts, where the rules are the same.
        agree = True
        for agent, folder in (("claude", ".claude"), ("codex", ".codex")):
            _w, theirs = timed([args.ccusage, agent, "daily", "--json", "--offline", "--timezone", "UTC"], env_cc)
            _w, ours = timed([*catty(), "usage", str(home / folder), "--by", "day", "--json", "--timezone", "UTC"], env_us)
            agree = agree and days_of_ccusage(theirs) == days_of_ours(ours)
        med = statistics.median
        base = med(cc_walls)
        print(f"mixed home: {sum(parts.values()) / 2**20:.1f} MB ("
              + ", ".join(f"{n} {b / 2**20:.0f} MB" for n, b in parts.items()) + f"), {args.runs} runs each, medians; "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
        print(f"catty-ctx read the homes of: {', '.join(agents)}; {doc['totals']['calls']} calls, {doc['files']} files")
        print(f"same tokens per day as ccusage on the Claude Code and Codex parts: {'yes' if agree else 'NO'}")
        print(f"{'':34}{'ccusage':>10}{'catty-ctx':>11}{'ratio':>8}   target")
        print(f"{'cold, no PATH (no log cache)':34}{base:>9.3f}s{med(cold):>10.3f}s{med(cold) / base:>8.3f}   <= 0.50")
        print(f"{'  cold, CPU seconds (user + system)':34}{med(cc_cpu):>9.3f}s{med(cold_cpu):>10.3f}s{med(cold_cpu) / med(cc_cpu):>8.3f}")
        print(f"{'  floor: read every file':34}{base:>9.3f}s{med(floor_walls['read']):>10.3f}s{med(floor_walls['read']) / base:>8.3f}"
              "   (a bare interpreter, all CPUs)")
        print(f"{'  floor: read, scan lines as JSON':34}{base:>9.3f}s{med(floor_walls['scan']):>10.3f}s{med(floor_walls['scan']) / base:>8.3f}"
              "   (nothing built, nothing summed)")
        print(f"{'  catty-ctx start-up alone':34}{base:>9.3f}s{med(floor_walls['start']):>10.3f}s{med(floor_walls['start']) / base:>8.3f}"
              "   (usage of an empty folder)")
        print(f"{'  first run, no price index':34}{base:>9.3f}s{med(first):>10.3f}s{med(first) / base:>8.3f}   (once per library version)")
        print(f"{'warm (unchanged files)':34}{base:>9.3f}s{med(warm):>10.3f}s{med(warm) / base:>8.3f}   ~ 30 ms")
        return 0 if agree else 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

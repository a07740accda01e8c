"""Benchmark: `catty-ctx usage` against ccusage, on a generated Claude Code tree and on a mixed home, in one run.

Runs both side by side, interleaved (so background load hits both alike), and prints the
median walls and their ratios, on each of two homes: a generated Claude Code tree of 80 long
sessions (about 84 MB) and a mixed HOME of all four agents (about 245 MB: 62 % Claude Code,
19 % Codex, 10 % Gemini CLI, 9 % opencode's storage and database), where catty-ctx runs
`usage` with no PATH (the homes) and ccusage its default run (which reads the four agents too).
The cases, each against ccusage's same run:

- first run: no cache folder at all (no price index either), as right after installing;
- price index kept, `--no-cache` (no cache of any log read or written);
- warm: unchanged files, the caches of the run before;
- `--since` a day that 90 % of the logs were last written before, first run (against ccusage's
  `daily --since`): each log's mtime is its last record's time, as the agent left it.

It also checks that both report the same tokens per day (the whole tree; the Claude Code and
Codex parts of the mixed home, where the counting rules are the same, and the same parts since
the day), shows what the command line's start-up alone costs, the interpreter alone and with
the decoder imported (the floor under any run that parses), and CPU seconds beside the first
runs' walls (user + system, worker processes included: steadier on a shared machine). The
closing table has the four ratios of both homes and the load average (`os.getloadavg`) when
each was measured: on a shared machine the ratios measured in the same run are what count.

catty-ctx runs as installed from a wheel: bytecode compiled, and without the editable install's
path finder, which a development environment loads at every start (pathlib and urllib.parse,
10-40 ms): the interpreter runs with -S and the project's and the environment's package folders
on PYTHONPATH, and the floors run alike. ccusage comes from `npm install ccusage@20.0.24` (its
bin/ccusage), `--ccusage PATH`, $CATTY_CTX_CCUSAGE or the PATH.

    python bench/usage.py [--runs 5] [--only tree|mixed] [--sessions 80 | --size-mb N] [--mixed-mb 245] [--ccusage PATH]

--sessions N: the tree is one batch of N long sessions (80 make about 84 MB); --size-mb N
instead: batches of 100 sessions up to N MB (about 1,000 files for 210 MB). The trees are
generated once into bench/out and reused. Targets (issue 45): first run and `--no-cache` <= 0.5x,
`--since` <= 0.25x, warm <= 0.08x.
"""
from __future__ import annotations

import sys

# This file's folder comes first on sys.path, and bench/inspect.py would shadow the stdlib's.
_HERE = sys.path.pop(0)

import argparse  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
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
from _util import OUT, ROOT, env_with_project  # noqa: E402

sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from support import INSTALLED_PROGRAM, installed_path  # noqa: E402
from support.usage_trees import claude_tree, codex_rollout, gemini_home, opencode_db, opencode_sessions, opencode_storage  # noqa: E402

# The program as its installed script runs it, without the site module (see above).
CATTY = [sys.executable, "-S", "-c", INSTALLED_PROGRAM]
BARE = [sys.executable, "-S", "-c", "pass"]
# (msgspec as usage imports it: without typing_extensions, see catty_ctx/usage/decoder.py)
WITH_DECODER = [sys.executable, "-S", "-c", "import catty_ctx.usage.decoder, msgspec.json, msgspec.msgpack"]


def installed_env(**extra: str) -> dict[str, str]:
    """`env_with_project` for a run without the site module: the project and the environment's package folders on the path."""
    env = env_with_project(**extra)
    env["PYTHONPATH"] = installed_path()
    return env


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
    last_written(home)


_ISO = re.compile(rb'"(20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"')
_MILLIS = re.compile(rb'"(?:created|completed|updated)"\s*:\s*(1\d{12})\b')


def last_written(home: Path) -> None:
    """Each Codex rollout's, Gemini CLI chat's and opencode storage file's mtime its last record's time, as the
    agent left it (a part file without a time its message's; the Claude Code logs got theirs in `make_tree`;
    the database keeps the time it was written)."""
    storage = home / ".local" / "share" / "opencode" / "storage"
    messages: dict[str, float] = {}

    def stamp(path: Path, fallback: float | None = None) -> float | None:
        data = path.read_bytes()
        stamps = [datetime.fromisoformat(m.decode().replace("Z", "+00:00")).timestamp() for m in _ISO.findall(data)]
        stamps += [int(m) / 1000 for m in _MILLIS.findall(data)]
        when = max(stamps) if stamps else fallback
        if when is not None:
            os.utime(path, (when, when))
        return when

    for path in [*(home / ".codex").rglob("*.jsonl"), *(home / ".gemini").rglob("*.json*"), *(storage / "session").rglob("*.json")]:
        stamp(path)
    for path in (storage / "message").rglob("*.json"):
        when = stamp(path)
        if when is not None:
            messages[path.stem] = when
    for path in (storage / "part").rglob("*.json"):
        stamp(path, messages.get(path.parent.name))


def since_day(root: Path, share_older: float = 0.9, by_bytes: bool = False) -> str:
    """The day (YYYYMMDD, UTC) that SHARE_OLDER of the logs under ROOT (of their bytes, BY_BYTES) were last written before."""
    days: list[tuple[str, int]] = sorted((datetime.fromtimestamp(st.st_mtime, timezone.utc).strftime("%Y%m%d"), st.st_size if by_bytes else 1)
                                         for st in (p.stat() for p in logs_under(root)))
    total, seen = sum(w for _d, w in days), 0
    for day, weight in days:
        seen += weight
        if seen > total * share_older:
            return day
    return days[-1][0]


def logs_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.suffix in (".jsonl", ".json", ".db") and p.is_file()]


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """Wall and CPU seconds (user + system, the processes it waited for included) of one run, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT)  # not bench/: its inspect.py would shadow the stdlib
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, proc.stdout


def days_of_ccusage(out: bytes) -> dict[str, tuple[int, ...]]:
    return {d.get("period") or d["date"]: (d["inputTokens"], d["outputTokens"], d["cacheReadTokens"], d["cacheCreationTokens"])
            for d in orjson.loads(out)["daily"]}


def days_of_ours(out: bytes) -> dict[str, tuple[int, ...]]:
    return {r["day"]: (r["input"], r["output"], r["cache_read"], r["cache_write"]) for r in orjson.loads(out)["rows"]}


class Home:
    """One home to compare on: how each program is asked about it, and where catty-ctx keeps its caches."""

    def __init__(self, name: str, cc: list[str], us: list[str], env_cc: dict[str, str], env_us: dict[str, str], cache: Path,
                 day: str, agree: Any) -> None:
        self.name, self.cc, self.us, self.env_cc, self.env_us, self.cache, self.day = name, cc, us, env_cc, env_us, cache, day
        self.agree = agree  # (ccusage's output, ours, the day or None) -> the same tokens per day


def compare(home: Home, runs: int, floors: dict[str, tuple[list[str], dict[str, str]]]) -> dict[str, Any]:
    """The cases of the module's doc on HOME, RUNS times each, interleaved with ccusage's; medians and load averages."""
    walls: dict[str, list[float]] = {k: [] for k in ("cc", "first", "nocache", "cc_since", "since", "warm", *floors)}
    cpus: dict[str, list[float]] = {"cc": [], "first": [], "cc_since": [], "since": []}
    loads = []
    agree = True
    for _ in range(runs):
        wall, cpu, out_cc = timed(home.cc, home.env_cc)
        walls["cc"].append(wall)
        cpus["cc"].append(cpu)
        shutil.rmtree(home.cache, ignore_errors=True)  # (no cache folder at all: no price index either)
        wall, cpu, out_us = timed(home.us, home.env_us)
        walls["first"].append(wall)
        cpus["first"].append(cpu)
        agree = agree and home.agree(out_cc, out_us, None)
        walls["nocache"].append(timed([*home.us, "--no-cache"], home.env_us)[0])
        wall, cpu, out_cc = timed([*home.cc, "--since", home.day], home.env_cc)
        walls["cc_since"].append(wall)
        cpus["cc_since"].append(cpu)
        shutil.rmtree(home.cache, ignore_errors=True)
        wall, cpu, out_us = timed([*home.us, "--since", home.day], home.env_us)
        walls["since"].append(wall)
        cpus["since"].append(cpu)
        agree = agree and home.agree(out_cc, out_us, home.day)
        for name, (cmd, env) in floors.items():
            walls[name].append(timed(cmd, env)[0])
        loads.append(os.getloadavg()[0])
    timed(home.us, home.env_us)  # (the caches of this run: the warm runs' answer)
    for _ in range(runs):
        walls["warm"].append(timed(home.us, home.env_us)[0])
    med = statistics.median
    return {"wall": {k: med(v) for k, v in walls.items()}, "cpu": {k: med(v) for k, v in cpus.items()}, "agree": agree,
            "load": (min(loads), max(loads))}


def report(home: Home, got: dict[str, Any], floor_names: dict[str, str]) -> None:
    w, c = got["wall"], got["cpu"]
    base, base_since = w["cc"], w["cc_since"]
    lo, hi = got["load"]
    print(f"  same tokens per day as ccusage: {'yes' if got['agree'] else 'NO'}; load average {lo:.1f}-{hi:.1f} during the runs")
    print(f"  {'':40}{'ccusage':>10}{'catty-ctx':>11}{'ratio':>8}   target")
    rows = [("first run (no cache folder at all)", base, w["first"], "<= 0.50"),
            ("  CPU seconds (user + system)", c["cc"], c["first"], ""),
            ("price index kept, --no-cache", base, w["nocache"], "<= 0.50"),
            ("warm (unchanged files)", base, w["warm"], "<= 0.08"),
            (f"--since {home.day}, first run", base_since, w["since"], "<= 0.25"),
            ("  CPU seconds (user + system)", c["cc_since"], c["since"], "")]
    for label, theirs, ours, target in rows:
        print(f"  {label:40}{theirs:>9.3f}s{ours:>10.3f}s{ours / theirs:>8.3f}   {target}")
    for name, label in floor_names.items():
        print(f"  {label:40}{'':>10}{w[name]:>10.3f}s{w[name] / base:>8.3f}")


def tree_home(args: Any, scratch: Path) -> tuple[Home, str]:
    tree = args.tree or OUT / (f"usage-claude-{args.sessions}sessions" if args.sessions else f"usage-claude-{args.size_mb}mb")
    tree.mkdir(parents=True, exist_ok=True)
    make_tree(tree, args.size_mb, args.sessions)
    size, nfiles = tree_bytes(tree)
    cache = scratch / "cache-tree"
    env_cc = dict(os.environ, CLAUDE_CONFIG_DIR=str(tree), HOME=str(scratch), TZ="UTC")
    env_us = installed_env(XDG_CACHE_HOME=str(cache), TZ="UTC")
    day = since_day(tree)
    cut = datetime.strptime(day, "%Y%m%d").replace(tzinfo=timezone.utc).timestamp()
    older = sum(p.stat().st_mtime < cut for p in tree.rglob("*.jsonl"))

    def agree(theirs: bytes, ours: bytes, _day: str | None) -> bool:
        return days_of_ccusage(theirs) == days_of_ours(ours)

    home = Home("tree", [args.ccusage, "daily", "--json", "--offline", "--breakdown", "--timezone", "UTC"],
                [*CATTY, "usage", str(tree), "--by", "day", "--json", "--timezone", "UTC"], env_cc, env_us, cache, day, agree)
    return home, (f"{size / 2**20:.1f} MB in {nfiles} files (Claude Code layout); {older} of {nfiles} logs last written before {day}")


def mixed_home(args: Any, scratch: Path) -> tuple[Home, str, list[str]]:
    home_dir = args.home or OUT / f"usage-mixed-{args.mixed_mb}mb"
    make_mixed_home(home_dir, args.mixed_mb)
    parts = {name: tree_size(home_dir / name) for name in (".claude", ".codex", ".gemini", ".local/share/opencode")}
    cache = scratch / "cache-mixed"
    env_cc = dict(os.environ, HOME=str(home_dir), TZ="UTC")
    env_cc.pop("CLAUDE_CONFIG_DIR", None)
    env_us = installed_env(XDG_CACHE_HOME=str(cache), TZ="UTC", HOME=str(home_dir))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME"):
        env_us.pop(name, None)
    day = since_day(home_dir, by_bytes=True)  # (opencode's thousands of small files would make the share by count a day of them)
    logs = logs_under(home_dir)
    cut = datetime.strptime(day, "%Y%m%d").replace(tzinfo=timezone.utc).timestamp()
    older = sum(p.stat().st_mtime < cut for p in logs)
    older_bytes = sum(p.stat().st_size for p in logs if p.stat().st_mtime < cut) / sum(p.stat().st_size for p in logs)

    def agree(_theirs: bytes, _ours: bytes, since: str | None) -> bool:
        # ccusage reads all four homes too, but counts Gemini CLI's thinking tokens apart from output and
        # opencode's messages (a message's last step) instead of its steps (docs/usage.md): the tokens
        # per day are compared on the Claude Code and Codex parts, where the rules are the same.
        more = ["--since", since] if since else []
        same = True
        for agent, folder in (("claude", ".claude"), ("codex", ".codex")):
            _w, _c, theirs = timed([args.ccusage, agent, "daily", "--json", "--offline", "--timezone", "UTC", *more], env_cc)
            _w, _c, ours = timed([*CATTY, "usage", str(home_dir / folder), "--by", "day", "--json", "--timezone", "UTC", "--no-cache", *more],
                                 env_us)
            same = same and days_of_ccusage(theirs) == days_of_ours(ours)
        return same

    home = Home("mixed", [args.ccusage, "daily", "--json", "--offline", "--breakdown", "--timezone", "UTC"],
                [*CATTY, "usage", "--by", "day", "--json", "--timezone", "UTC"], env_cc, env_us, cache, day, agree)
    about = (f"{sum(parts.values()) / 2**20:.1f} MB (" + ", ".join(f"{n} {b / 2**20:.0f} MB" for n, b in parts.items())
             + f"); {older} of {len(logs)} session files, {older_bytes:.0%} of their bytes, last written before {day}")
    return home, about, [str(home_dir / name) for name in parts]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=80, help="the tree: one batch of this many long sessions")
    ap.add_argument("--size-mb", type=int, help="instead of --sessions: a tree of this many MB of 100-session batches")
    ap.add_argument("--mixed-mb", type=int, default=245, help="the mixed home's size")
    ap.add_argument("--only", choices=("tree", "mixed"), help="one of the two homes")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ccusage", default=os.environ.get("CATTY_CTX_CCUSAGE") or shutil.which("ccusage"))
    ap.add_argument("--tree", type=Path, help="where the tree is generated (kept and reused; default bench/out/usage-claude-...)")
    ap.add_argument("--home", type=Path, help="where the mixed home is generated (kept and reused; default bench/out/usage-mixed-...)")
    args = ap.parse_args()
    if args.size_mb:
        args.sessions = None
    if not args.ccusage:
        print("ccusage not found: npm install ccusage@20.0.24 in a scratch folder and pass --ccusage .../node_modules/.bin/ccusage")
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="catty-usage-bench-"))
    try:
        empty = scratch / "empty"
        empty.mkdir()
        env = installed_env(XDG_CACHE_HOME=str(scratch / "cache-floor"), TZ="UTC")
        floors = {"start": ([*CATTY, "usage", str(empty), "--json", "--no-cache", "--allow-empty"], env), "bare": (BARE, env),
                  "decoder": (WITH_DECODER, env)}
        names = {"start": "catty-ctx start-up alone (empty folder)", "bare": "  the interpreter alone", "decoder": "  the interpreter + msgspec (as usage imports it)"}
        results: list[tuple[Home, dict[str, Any]]] = []
        ok = True
        print(f"{os.cpu_count()} CPUs; {args.runs} runs of each case, medians; ccusage {args.ccusage}")
        if args.only in (None, "tree"):
            home, about = tree_home(args, scratch)
            print(f"\nthe tree: {about}")
            got = compare(home, args.runs, floors)
            report(home, got, names)
            results.append((home, got))
            ok = ok and got["agree"]
        if args.only in (None, "mixed"):
            home, about, folders = mixed_home(args, scratch)
            print(f"\nthe mixed home, no PATH (catty-ctx reads four agents' homes here, ccusage its default run): {about}")
            # The floor under any Python reader of those homes (bench/read_floor.py): a bare interpreter that reads
            # every file on all CPUs, then the same scanning every line as JSON.
            floor = Path(_HERE) / "read_floor.py"
            mixed_floors = {**floors, "read": ([sys.executable, "-S", str(floor), *folders], env),
                            "scan": ([sys.executable, "-S", str(floor), "--scan", *folders], env)}
            got = compare(home, args.runs, mixed_floors)
            report(home, got, {**names, "read": "floor: read every file (all CPUs)", "scan": "floor: read and scan lines as JSON"})
            results.append((home, got))
            ok = ok and got["agree"]
        print("\nratios to ccusage 20.0.24 (wall, medians)   first run   --no-cache   warm   --since   load average")
        for home, got in results:
            w = got["wall"]
            print(f"  {home.name:40}{w['first'] / w['cc']:>10.3f}{w['nocache'] / w['cc']:>13.3f}{w['warm'] / w['cc']:>7.3f}"
                  f"{w['since'] / w['cc_since']:>10.3f}   {got['load'][0]:.1f}-{got['load'][1]:.1f}")
        print("  targets                                      0.50         0.50   0.08      0.25")
        return 0 if ok else 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

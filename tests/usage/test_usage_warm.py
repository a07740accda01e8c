"""A `usage` question asked before, answered by the entry point before the CLI loads
(`catty_ctx.__main__`, `usage/warm.py`): it prints what the full run prints, or leaves the run to it.

Each change the answer depends on (a log appended, a new log, a log replaced under the same size
and time, the time zone, the config, another option) is made after a warm answer was served, and
the next answer must be the full run's: the same as `--no-cache` gives (less the counts of what
was read, which a cached answer reports as nothing read)."""
from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from support import INSTALLED_PROGRAM, ROOT, cli, installed_path
from support.usage_trees import claude_tree

import catty_ctx.__main__ as entry
from catty_ctx.cli import usage as cli_usage

# The program as its installed script runs it, without the site module (it may end at once, with
# os._exit: what it loaded is told by -X importtime's lines on stderr).
PROGRAM = INSTALLED_PROGRAM
FULL = PROGRAM.replace("sys.argv[0] = 'catty-ctx'", "sys.argv[0] = 'catty-ctx'\nimport catty_ctx.__main__ as m\nm._cached_usage = lambda args: False")
LEAN_CLI = {"catty_ctx.cli", "catty_ctx.cli.plain", "catty_ctx.cli.ending"}  # (what of the CLI the cached answer's path loads)


def loaded(stderr: bytes) -> tuple[bytes, set[str]]:
    """STDERR of a run under -X importtime without those lines, and the modules they name."""
    lines = stderr.splitlines(keepends=True)
    names = {ln.split(b"|")[-1].strip().decode() for ln in lines if ln.startswith(b"import time:")}
    return b"".join(ln for ln in lines if not ln.startswith(b"import time:")), names


def run(*args: str, full: bool = False, **env: str) -> tuple[int, bytes, bytes, bool]:
    """`catty-ctx ARGS` in a fresh interpreter (FULL: never answered from the cache before the CLI
    loads): exit code, stdout, stderr, and whether the CLI was loaded."""
    proc = subprocess.run([sys.executable, "-S", "-X", "importtime", "-c", FULL if full else PROGRAM, *args], capture_output=True,
                          cwd=ROOT, timeout=120, env={**installed(), **env})
    stderr, names = loaded(proc.stderr)
    return proc.returncode, proc.stdout, stderr, any(n.startswith("catty_ctx.cli") and n not in LEAN_CLI for n in names)


def installed() -> dict[str, str]:
    """The environment of the program run as installed (`-S`: the package folders on the path, no editable finder)."""
    return {**os.environ, "PYTHONPATH": installed_path()}


def answered(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record, in this process, whether each `cli()` run of usage was answered from the cache."""
    seen: list[bool] = []
    own = entry._cached_usage

    def spy(args: list[str]) -> bool:
        seen.append(own(args))
        return seen[-1]

    monkeypatch.setattr(entry, "_cached_usage", spy)
    return seen


def read_counts_dropped(out: bytes) -> Any:
    """The --json document without what a run read (a cached answer read nothing)."""
    doc = orjson.loads(out)
    for key in ("files_parsed", "bytes_parsed"):
        doc.pop(key)
    return doc


def same_as_no_cache(*args: str) -> bytes:
    """Check that `usage ARGS --json` is the full run's answer (`--no-cache`'s); that answer (less
    what was read)."""
    got = cli("usage", *args, "--json")
    fresh = cli("usage", *args, "--json", "--no-cache")
    assert (got.returncode, got.stderr) == (fresh.returncode, fresh.stderr) == (0, b"")
    assert read_counts_dropped(got.stdout) == read_counts_dropped(fresh.stdout)
    return orjson.dumps(read_counts_dropped(got.stdout))


def tree(root: Path, seed: int = 7) -> Path:
    claude_tree(root, seed=seed, projects=2, sessions=2, turns=6)
    long_ago = 1_700_000_000
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        os.utime(folder, (long_ago, long_ago))  # (listings to trust: a change shows in the folder's mtime alone)
    return root


def test_a_warm_run_loads_no_cli_and_prints_what_the_full_run_prints(tmp_path: Path) -> None:
    root = tree(tmp_path / "c")
    env = {"TZ": "UTC"}
    first = run("usage", str(root), "--by", "day", **env)
    assert first[0] == 0 and first[3]  # (nothing cached yet: the CLI)
    for form in (["--json"], []):  # (one answer, kept in both forms)
        args = ["usage", str(root), "--by", "day", *form]
        warm, full = run(*args, **env), run(*args, full=True, **env)
        assert warm[:3] == full[:3] and warm[0] == 0 and warm[2] == b"" and warm[1]
        assert warm[3] is False and full[3] is True  # answered before the CLI loads
    # Other options (--no-cache, --verbose, --help) are the CLI's, and so is a terminal (a table).
    assert run("usage", str(root), "--by", "day", "--verbose", **env)[3]
    screen, terminal = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-S", "-X", "importtime", "-c", PROGRAM, "usage", str(root), "--by", "day"], stdout=terminal,
                              stderr=subprocess.PIPE, cwd=ROOT, timeout=120, env={**installed(), **env})
    finally:
        os.close(terminal)
        os.close(screen)
    assert proc.returncode == 0 and "catty_ctx.cli.app" in loaded(proc.stderr)[1]


def test_a_log_appended_a_new_log_and_a_log_replaced_are_read_in_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree(tmp_path / "c")
    seen = answered(monkeypatch)
    before = same_as_no_cache(str(root), "--by", "day")
    assert same_as_no_cache(str(root), "--by", "day") == before and seen[-2] is True  # (warm: answered from the cache)
    since = same_as_no_cache(str(root), "--by", "day", "--since", "2026-01-30")
    logs = sorted(root.rglob("*.jsonl"))
    main_log = next(p for p in logs if "subagents" not in p.parts)
    # Appended: one more call, same file (inode) and a new size.
    line = next(ln for ln in main_log.read_bytes().splitlines() if b'"assistant"' in ln)
    with main_log.open("ab") as f:
        f.write(line.replace(b'"msg_', b'"msg_x').replace(b'"req_', b'"req_x').replace(b'"uuid":"', b'"uuid":"x') + b"\n")
    after = same_as_no_cache(str(root), "--by", "day")
    assert after != before and seen[-2] is False
    assert same_as_no_cache(str(root), "--by", "day", "--since", "2026-01-30") != since and seen[-2] is False
    # A new log in a sub-folder (a subagent's): its folder's listing is taken again.
    sub = next(p for p in logs if "subagents" in p.parts)
    (sub.parent / "agent-new.jsonl").write_bytes(sub.read_bytes().replace(b'"msg_', b'"msg_n').replace(b'"req_', b'"req_n')
                                                 .replace(b'"uuid":"', b'"uuid":"n'))
    assert same_as_no_cache(str(root), "--by", "day") != after and seen[-2] is False
    # Replaced: other counts of the same size, under the same mtime, as a new file (inode).
    newer = same_as_no_cache(str(root), "--by", "day")
    st = main_log.stat()
    data = main_log.read_bytes()
    swapped = re.sub(rb'("output_tokens":\d*)(\d)', lambda m: m[1] + bytes([48 + (m[2][0] - 47) % 10]), data)
    assert len(swapped) == len(data) and swapped != data
    (main_log.parent / "swap.tmp").write_bytes(swapped)
    os.utime(main_log.parent / "swap.tmp", ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(main_log.parent / "swap.tmp", main_log)
    os.utime(main_log.parent, (1_700_000_000, 1_700_000_000))  # (and the folder's mtime as it was)
    assert main_log.stat().st_size == st.st_size and main_log.stat().st_mtime_ns == st.st_mtime_ns
    assert same_as_no_cache(str(root), "--by", "day") != newer and seen[-2] is False


def test_a_question_the_cache_cannot_answer_walks_the_tree_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The entry point's lookup that finds no answer hands what it read and walked to the full run."""
    from catty_ctx.usage import pipeline, warm

    root = tree(tmp_path / "c")
    seen = answered(monkeypatch)
    before = same_as_no_cache(str(root), "--by", "day")
    walks: list[str] = []
    for module in (pipeline, warm):
        monkeypatch.setattr(module, "survey", lambda paths, listings, own=module.survey, name=module.__name__: walks.append(name) or own(paths, listings))
    main_log = next(p for p in sorted(root.rglob("*.jsonl")) if "subagents" not in p.parts)
    line = next(ln for ln in main_log.read_bytes().splitlines() if b'"assistant"' in ln)
    with main_log.open("ab") as f:  # (one more call: the kept answer no longer holds)
        f.write(line.replace(b'"msg_', b'"msg_w').replace(b'"req_', b'"req_w').replace(b'"uuid":"', b'"uuid":"w') + b"\n")
    got = cli("usage", str(root), "--by", "day", "--json")
    assert got.returncode == 0 and seen[-1] is False and walks == ["catty_ctx.usage.warm"]
    assert orjson.dumps(read_counts_dropped(got.stdout)) != before
    assert warm._left is None  # (nothing left behind for a later run)
    assert same_as_no_cache(str(root), "--by", "day") == orjson.dumps(read_counts_dropped(got.stdout)) and seen[-2] is True
    assert warm._left is None  # (an answer printed: no full run follows, nothing is left for one)
    # An answer kept with a warning to print (an unreadable line) is the full run's too, on the same walk.
    with main_log.open("ab") as f:
        f.write(b'{"message": {"usage": {"output_tokens": broken\n')
    assert b"1 unreadable line skipped" in cli("usage", str(root), "--by", "day", "--json").stderr
    walks.clear()
    noisy = cli("usage", str(root), "--by", "day", "--json")
    assert b"1 unreadable line skipped" in noisy.stderr and seen[-1] is False and walks == ["catty_ctx.usage.warm"]


def test_another_question_is_answered_in_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree(tmp_path / "c")
    seen = answered(monkeypatch)
    table = tmp_path / "prices.json"
    table.write_bytes(orjson.dumps({"claude-sonnet-4-20250514": {"input_cost_per_token": 1.0, "output_cost_per_token": 1.0}}))
    asked: list[bytes] = []
    for args in (["--by", "day"], ["--by", "model"], ["--by", "day", "--since", "2026-01-31"], ["--by", "day", "--until", "20260130"],
                 ["--by", "day", "--prices", str(table)], ["--by", "day", "--timezone", "Asia/Tokyo"], ["--by", "session", "-j", "1"]):
        asked.append(same_as_no_cache(str(root), *args))
        assert seen[-2] is False  # (a new question: the full run)
        assert same_as_no_cache(str(root), *args) == asked[-1] and seen[-2] is True
    assert len(set(asked)) == len(asked)  # (each option changed the answer)
    table.write_bytes(table.read_bytes().replace(b"1.0", b"2.0"))  # the price table changed: another answer
    assert same_as_no_cache(str(root), "--by", "day", "--prices", str(table)) != asked[4] and seen[-2] is False


def test_the_local_time_zone_is_part_of_the_question(tmp_path: Path) -> None:
    root = tree(tmp_path / "c")
    args = ["usage", str(root), "--by", "day", "--json"]
    answers = {}
    for zone in ("Pacific/Kiritimati", "Etc/GMT+12", "Pacific/Kiritimati"):
        run(*args, TZ=zone)
        code, out, err, loaded_cli = run(*args, TZ=zone)
        assert (code, err, loaded_cli) == (0, b"", False)
        assert read_counts_dropped(out) == read_counts_dropped(run(*args, "--no-cache", TZ=zone)[1])
        answers[zone] = out
    assert answers["Pacific/Kiritimati"] != answers["Etc/GMT+12"]


def test_a_config_that_cannot_be_used_stops_the_warm_run_as_any_run(tmp_path: Path) -> None:
    root = tree(tmp_path / "c")
    args = ["usage", str(root), "--by", "day", "--json"]
    run(*args)
    warm = run(*args)
    assert warm[0] == 0 and not warm[3]
    broken, good = tmp_path / "broken.toml", tmp_path / "good.toml"
    broken.write_text("no_such_setting = 1\n")
    good.write_text("default_threshold = 80\n")
    for config in (["--config", str(broken)], [f"--config={broken}"]):
        got = run(*args, *config)
        assert got[:3] == run(*args, *config, full=True)[:3] and got[0] == 2 and b"unknown setting" in got[2]
    assert run(*args, CATTY_CTX_CONFIG=str(tmp_path / "missing.toml"))[0] == 2
    (tmp_path / "config" / "catty-ctx").mkdir(parents=True)
    (tmp_path / "config" / "catty-ctx" / "config.toml").write_text("[broken\n")
    assert run(*args, XDG_CONFIG_HOME=str(tmp_path / "config"))[0] == 2
    # A config that changes a setting: its own answers (the same here: no setting changes a ledger).
    run(*args, "--config", str(good))
    got = run(*args, "--config", str(good))
    assert got[1] == warm[1] and not got[3]


def test_errors_and_output_that_cannot_be_written_end_as_in_the_full_run(tmp_path: Path) -> None:
    root = tree(tmp_path / "c")
    args = ["usage", str(root), "--by", "day", "--json"]
    run(*args)
    assert not run(*args)[3]
    got, full = run(*args, "--by", "block"), run(*args, "--by", "block", full=True)  # (blocks say what runs now: never kept)
    assert got[:3] == full[:3] and got[0] == 0 and got[3]
    for bad in (["--by", "nothing"], ["--jobs", "0"], ["--since", "yesterday"], ["--timezone", "No/Zone"],
                ["--prices", str(tmp_path / "none.json")], [str(tmp_path / "nowhere")], ["--by"]):
        got, full = run(*args, *bad), run(*args, *bad, full=True)
        assert got[:3] == full[:3] and got[0] != 0, bad
    env = installed()
    with open("/dev/full", "wb") as full_disk:  # (no room: exit 73, one line)
        for code in (PROGRAM, FULL):
            proc = subprocess.run([sys.executable, "-S", "-c", code, *args], stdout=full_disk, stderr=subprocess.PIPE, env=env, cwd=ROOT,
                                  timeout=120)
            assert (proc.returncode, proc.stderr) == (73, b"catty-ctx: error: cannot write output (No space left on device)\n")
    for code in (PROGRAM, FULL):  # a closed stdout: the same
        proc = subprocess.run([sys.executable, "-S", "-c", code, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                              cwd=ROOT, timeout=120, preexec_fn=lambda: os.close(1))
        assert (proc.returncode, proc.stderr) == (73, b"catty-ctx: error: cannot write output (stdout is closed)\n")


def test_unreadable_lines_are_named_by_the_full_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree(tmp_path / "c")
    log = next(p for p in sorted(root.rglob("*.jsonl")) if "subagents" not in p.parts)
    with log.open("ab") as f:
        f.write(b'{"message": {"usage": {"output_tokens": broken\n')
    seen = answered(monkeypatch)
    first = cli("usage", str(root), "--json")
    again = cli("usage", str(root), "--json")
    assert b"1 unreadable line skipped" in first.stderr and again.stderr == first.stderr and seen == [False, False]
    assert read_counts_dropped(again.stdout) == read_counts_dropped(first.stdout)


ARGVS = [
    ["--by", "day", "--json"], ["PATH", "--by=day", "--json", "OTHER"], ["--json", "PATH", "--timezone", "UTC", "--since", "2026-01-01"],
    ["--until=2026-02-01", "-j", "2", "--allow-empty", "PATH"], ["--jobs", "3", "--prices", "p.json"], ["-", "--json"], [],
    ["--by", "--json"], ["--json=1"], ["-j=2"], ["--jobs", "0"], ["--jobs", "x"], ["--by"], ["--no-cache"], ["--strict"], ["-v"],
    ["--verbose"], ["--scheduler", "local"], ["--connect-timeout", "3"], ["--help"], ["--", "PATH"], ["--unknown"], ["-x"],
]


@pytest.mark.parametrize("argv", ARGVS, ids=lambda a: " ".join(a) or "(none)")
def test_the_entry_point_reads_a_usage_line_as_the_cli_does_or_not_at_all(argv: list[str]) -> None:
    mine = entry.plain_usage(argv)
    if mine is not None:
        assert mine == cli_usage.parse_args(argv)


def test_the_plain_spellings_are_read_by_the_entry_point() -> None:
    assert [entry.plain_usage(a) is not None for a in ARGVS[:7]] == [True] * 7


def test_the_homes_read_with_no_path_follow_the_environment(tmp_path: Path) -> None:
    """With no PATH the homes are found again each run (CLAUDE_CONFIG_DIR, CODEX_HOME, HOME ...):
    another home is another question."""
    tree(tmp_path / "home" / ".claude", seed=3)
    (tmp_path / "home" / ".claude" / "settings.json").write_text("{}")
    tree(tmp_path / "other", seed=4)
    base = {"HOME": str(tmp_path / "home"), "TZ": "UTC", "CLAUDE_CONFIG_DIR": "", "CODEX_HOME": "", "XDG_DATA_HOME": str(tmp_path / "data")}
    args = ["usage", "--by", "day", "--json"]
    answers = []
    for env in (base, {**base, "CLAUDE_CONFIG_DIR": str(tmp_path / "other")}, base):
        run(*args, **env)
        code, out, err, loaded_cli = run(*args, **env)
        assert (code, err, loaded_cli) == (0, b"", False)
        assert read_counts_dropped(out) == read_counts_dropped(run(*args, "--no-cache", **env)[1])
        answers.append(read_counts_dropped(out))
    assert answers[0] == answers[2] != answers[1] and answers[1]["sources"][0]["path"] == str(tmp_path / "other")

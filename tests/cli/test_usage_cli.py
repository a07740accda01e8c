"""`catty-ctx usage`: the document, JSON Lines, bad lines, --strict, --timezone, usage errors."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from support import ROOT, cli, jsonl, typer_cli
from support.usage_trees import claude_tree, codex_rollout

ROW_FIELDS = {"input", "output", "cache_read", "cache_write", "reasoning", "calls", "cost_usd", "partial"}


def _codex(tmp_path: Path) -> Path:
    codex_rollout(tmp_path / "codex" / "sessions" / "2026" / "02" / "01" / "rollout-a.jsonl", [
        {"ts": "2026-02-01T09:00:00.000Z", "model": "gpt-5-codex",
         "last": {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 300, "reasoning_output_tokens": 120}},
        {"ts": "2026-02-01T22:30:00.000Z", "model": "gpt-5-codex",
         "last": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 1, "reasoning_output_tokens": 0}, "repeat": True},
    ])
    return tmp_path / "codex"


def test_json_prints_rows_and_totals_with_the_documented_fields(tmp_path: Path) -> None:
    claude_tree(tmp_path / "claude", seed=2, projects=1, sessions=2)
    for by in ("model", "day", "week", "month", "session", "project", "agent"):
        doc = orjson.loads(cli("usage", str(tmp_path / "claude"), str(_codex(tmp_path)), "--by", by, "--json", check=True).stdout)
        assert doc["rows"] and all(set(r) == ROW_FIELDS | {by} for r in doc["rows"])
        assert set(doc["totals"]) == ROW_FIELDS
        assert doc["totals"]["calls"] == sum(r["calls"] for r in doc["rows"])
        assert doc["totals"]["reasoning"] == 120


def test_a_pipe_gets_json_lines_one_row_each(tmp_path: Path) -> None:
    proc = cli("usage", str(_codex(tmp_path)), "--by", "day", "--timezone", "UTC", check=True)
    rows = jsonl(proc.stdout)
    assert [(r["day"], r["calls"], r["input"]) for r in rows] == [("2026-02-01", 2, 810)]


def test_dash_reads_a_log_from_stdin(tmp_path: Path) -> None:
    log = next(_codex(tmp_path).rglob("rollout-*.jsonl"))
    doc = orjson.loads(cli("usage", "-", "--json", input=log.read_bytes() + b"{torn", check=True).stdout)
    assert doc["totals"]["calls"] == 2 and doc["bad_lines"] == 1
    events = b"".join(orjson.dumps({"v": 1, "seq": i, "ts": "2026-02-01T00:00:00Z", **ev}) + b"\n" for i, ev in enumerate([
        {"kind": "session", "session_id": "piped"},
        {"kind": "usage", "model": "gpt-5", "input": 5, "output": 1}]))
    rows = jsonl(cli("usage", "-", "--by", "session", input=events, check=True).stdout)
    assert [(r["session"], r["input"]) for r in rows] == [("piped", 5)]
    proc = cli("usage", "-", "--strict", input=b'{"type":"turn_context","payload":{}}\n{"type":"turn_context", x\n')
    assert proc.returncode == 65 and b"<stdin>:2: not valid JSON" in proc.stderr


def test_timezone_moves_calls_across_days(tmp_path: Path) -> None:
    rows = jsonl(cli("usage", str(_codex(tmp_path)), "--by", "day", "--timezone", "Asia/Tokyo", check=True).stdout)
    assert [(r["day"], r["calls"]) for r in rows] == [("2026-02-01", 1), ("2026-02-02", 1)]
    env = dict(os.environ, PYTHONPATH=str(ROOT), TZ="Asia/Tokyo")
    local = subprocess.run([sys.executable, "-m", "catty_ctx", "usage", str(tmp_path / "codex"), "--by", "day"], capture_output=True, env=env, check=True)
    assert [r["day"] for r in jsonl(local.stdout)] == ["2026-02-01", "2026-02-02"]


def test_bad_lines_are_skipped_counted_and_named_with_exit_0(tmp_path: Path) -> None:
    codex = _codex(tmp_path)
    log = next(codex.rglob("rollout-*.jsonl"))
    with open(log, "ab") as f:
        f.write(b'{"type":"event_msg","payload":{"type":"token_count", oops\n{"type":"event_msg","payload":{"type":"token_count"')
    proc = cli("usage", str(codex), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = orjson.loads(proc.stdout)
    assert doc["bad_lines"] == 2 and doc["totals"]["calls"] == 2
    err = proc.stderr.decode()
    assert f"{log}:" in err and "2 unreadable lines skipped" in err and "Traceback" not in err


def test_strict_makes_bad_lines_an_error_exit_65(tmp_path: Path) -> None:
    codex = _codex(tmp_path)
    log = next(codex.rglob("rollout-*.jsonl"))
    n = len(log.read_bytes().splitlines())
    with open(log, "ab") as f:
        f.write(b'{"type":"turn_context", nope\n')
    proc = cli("usage", str(codex), "--strict")
    assert proc.returncode == 65 and proc.stdout == b""
    assert proc.stderr.decode().startswith(f"catty-ctx: error: {log}:{n + 1}: not valid JSON")
    assert cli("usage", str(codex), "--strict", "--no-cache").returncode == 65


def test_strict_counts_a_malformed_line_in_every_format(tmp_path: Path) -> None:
    claude_tree(tmp_path / "claude", seed=3, projects=1, sessions=1)
    log = next((tmp_path / "claude").rglob("*.jsonl"))
    n = len(log.read_bytes().splitlines())
    with open(log, "ab") as f:
        f.write(b'{"type":"user","message":{"role":"user","content":"hi"}\n')  # no usage marker, and not JSON
    rollout = tmp_path / "codex" / "rollout-a.jsonl"
    codex_rollout(rollout, [{"ts": "2026-02-01T09:00:00.000Z", "model": "gpt-5-codex",
                             "last": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 1, "reasoning_output_tokens": 0}}])
    with open(rollout, "ab") as f:
        f.write(b'[1, 2]\n')
    piped = tmp_path / "piped.jsonl"  # a catty log under another name, told apart by its first line
    piped.write_bytes(b'{"v":1,"seq":0,"ts":"2026-02-01T00:00:00Z","kind":"session","session_id":"p"}\n{"v":1,"seq":1,"kind": oops\n')
    for path, line, why in ((log, n + 1, "not valid JSON"), (rollout, len(rollout.read_bytes().splitlines()), "not a JSON object"),
                            (piped, 2, "not valid JSON")):
        doc = orjson.loads(cli("usage", str(path), "--json", check=True).stdout)
        assert doc["bad_lines"] == 0  # without --strict only the lines that can hold usage are read (and cached)
        proc = cli("usage", str(path), "--strict", "--json")
        assert proc.returncode == 65 and proc.stdout == b""
        assert proc.stderr.decode().startswith(f"catty-ctx: error: {path}:{line}: {why}"), proc.stderr


def test_usage_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    codex = _codex(tmp_path)
    for args in (["--by", "hour"], ["--timezone", "Mars/Olympus"], ["--since", "yesterday"], ["--jobs", "0"]):
        proc = cli("usage", str(codex), *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert b"Traceback" not in proc.stderr
    proc = cli("usage", str(tmp_path / "missing"))
    assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1 and b"missing" in proc.stderr


def test_garbage_files_never_cause_a_traceback(tmp_path: Path) -> None:
    d = tmp_path / "junk"
    d.mkdir()
    (d / "a.jsonl").write_bytes(b'\x00\xff"output_tokens"\n[1,2,3]\n"output_tokens"\n{"message":{"usage":{"input_tokens":"x","output_tokens":1}},"timestamp":"2026"}\n')
    (d / "updates.jsonl").write_bytes(b'{"v":1,"seq":0,"ts":"x","kind":"session","session_id":"s"}\n{"v":1,"kind":"usage","model":1}\n')
    proc = cli("usage", str(d), "--json")
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr
    proc = cli("usage", str(d / "a.jsonl"), "--json")
    assert proc.returncode == 0 and orjson.loads(proc.stdout)["bad_lines"] == 3


def test_an_unwritable_cache_costs_a_warning_not_the_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    codex = _codex(tmp_path)
    blocker = tmp_path / "not-a-dir"
    blocker.write_bytes(b"")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    proc = cli("usage", str(codex), "--json")
    assert proc.returncode == 0 and orjson.loads(proc.stdout)["totals"]["calls"] == 2
    assert b"cache not written" in proc.stderr and b"Traceback" not in proc.stderr


def test_help_describes_the_command_with_an_example() -> None:
    out = cli("usage", "--help", check=True).stdout.decode()
    assert "Example" in out and "--by" in out and "--prices" in out and "--strict" in out and "--timezone" in out


def test_the_fast_option_table_is_the_typer_commands() -> None:
    """`usage` parses its own argv to start without typer; both parsers are made from one table
    (`PARAMS`), and the typer command made from it has exactly the options the fast one knows."""
    from support import table_is_the_typer_commands

    table_is_the_typer_commands("usage")  # (its options, and their least and greatest values)


def test_plain_spellings_are_parsed_without_typer_and_the_rest_left_to_it() -> None:
    from catty_ctx.cli.usage import parse_args

    assert parse_args(["a", "--by=day", "-j", "2", "b", "--json", "--", "--c"]) == {
        "paths": ["a", "b", "--c"], "by": "day", "jobs": 2, "as_json": True}
    assert parse_args(["-", "--timezone", "UTC", "--since", "2026-01-01"]) == {"paths": ["-"], "tz": "UTC", "since": "2026-01-01"}
    assert parse_args([]) == {"paths": []} and parse_args(["--json"]) == {"paths": [], "as_json": True}  # (the agents' homes)
    for typer_says in (["--help"], ["a", "-h"], ["a", "--by"], ["a", "--jobs", "0"], ["a", "-j2"], ["a", "--json=1"], ["a", "--bogus"]):
        assert parse_args(typer_says) is None, typer_says


def test_both_parsers_give_the_same_output_and_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """usage's own parser and typer agree on every case, cold and then from the cached answer
    (each parser with a cache of its own), all in this process."""
    claude_tree(tmp_path / "claude", seed=4, projects=1, sessions=2)
    codex = _codex(tmp_path)
    (tmp_path / "bad.jsonl").write_bytes(b'{"type":"assistant","message":{"usage":{"output_tokens":1}}}\n{torn')
    cases = [
        [str(tmp_path / "claude"), str(codex), "--by=day", "--json"],
        [str(codex), "--by", "agent", "-j", "1", "--no-cache"],
        [str(tmp_path / "bad.jsonl"), "--json"],
        [str(tmp_path / "bad.jsonl"), "--strict"],
        [str(codex), "--by", "nope"],
        [str(tmp_path / "missing")],
        [str(codex), "--since", "yesterday"],
        [str(codex), "--connect-timeout", "2.5", "--json"],
        [str(codex), "--connect-timeout=0.05"],
        [str(codex), "--scheduler", "local:0"],
    ]
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        for n, args in enumerate(cases):
            seen = {}
            for name, run in (("fast", cli), ("typer", typer_cli)):
                monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / f"{name}{n}"))
                seen[name] = [(p.returncode, p.stdout, p.stderr) for p in (run("usage", *args), run("usage", *args))]
            assert seen["fast"] == seen["typer"], args
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_plain_usage_run_never_loads_typer_or_rich(tmp_path: Path) -> None:
    codex = _codex(tmp_path)
    code = ("import sys\nfrom catty_ctx.cli.app import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
            "print(code, sorted(m for m in ('typer', 'click', 'rich', 'dask', 'distributed', 'fsspec') if m in sys.modules), file=sys.stderr)")
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path / "cache"))
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code, "usage", str(codex), "--json"], capture_output=True, cwd=ROOT, env=env)
        assert proc.stderr.decode().strip() == "0 []" and orjson.loads(proc.stdout)["totals"]["calls"] == 2


def test_no_usage_run_loads_orjson_cold_or_after_an_append(tmp_path: Path) -> None:
    """msgspec decodes, checks and prints everything usage touches: orjson's import alone (it
    loads dataclasses, uuid and more) costs more than an incremental run's own work."""
    claude_tree(tmp_path / "claude", seed=3, projects=1, sessions=2)
    codex = _codex(tmp_path)
    code = ("import sys\nfrom catty_ctx.cli.app import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    pass\n"
            "print(sorted(m for m in ('orjson', 'msgspec') if m in sys.modules), file=sys.stderr)")
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path / "cache"))

    def run(*extra: str) -> tuple[str, dict]:
        proc = subprocess.run([sys.executable, "-c", code, "usage", str(tmp_path / "claude"), str(codex), "--json", *extra],
                              capture_output=True, cwd=ROOT, env=env, check=True)
        return proc.stderr.decode().strip().splitlines()[-1], orjson.loads(proc.stdout)

    loaded, cold = run()
    assert loaded == "['msgspec']" and cold["files_parsed"] == cold["files"] > 1
    log = max((tmp_path / "claude").rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    with open(log, "ab") as f:
        f.write(orjson.dumps({"type": "assistant", "sessionId": "s", "timestamp": "2026-03-01T12:00:00.000Z", "requestId": "req_x",
                              "message": {"id": "msg_x", "model": "claude-sonnet-4-20250514", "content": [],
                                          "usage": {"input_tokens": 7, "output_tokens": 1}}}) + b"\n")
    loaded, grown = run()
    assert loaded == "['msgspec']" and grown["files_parsed"] == 1 and grown["totals"]["input"] == cold["totals"]["input"] + 7
    loaded, pretty = run("--by", "day", "--since", "2026-01-01")
    assert loaded == "['msgspec']" and pretty["rows"]


def test_a_cold_run_imports_msgspec_without_typing_extensions_and_inspect(tmp_path: Path) -> None:
    """msgspec's own fallback takes its type-hint helpers from `typing` (usage/decoder.py): typing_extensions
    and the `inspect` it loads are a quarter of msgspec's import, on every cold run. A later import of
    typing_extensions in the same process loads it as usual."""
    claude_tree(tmp_path / "claude", seed=3, projects=1, sessions=2)
    code = ("import sys\nfrom catty_ctx.cli.app import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    pass\n"
            "print(sorted(m for m in ('msgspec', 'typing_extensions', 'inspect') if m in sys.modules), file=sys.stderr)\n"
            "import typing_extensions\nprint(typing_extensions.__name__, file=sys.stderr)")
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path / "cache"))
    for extra in ((), ("--no-cache", "--jobs", "1")):  # (the workers' way, and the one-process way)
        proc = subprocess.run([sys.executable, "-c", code, "usage", str(tmp_path / "claude"), "--json", *extra], capture_output=True, cwd=ROOT,
                              env=env, check=True)
        assert proc.stderr.decode().splitlines()[-2:] == ["['msgspec']", "typing_extensions"], extra
        assert orjson.loads(proc.stdout) == orjson.loads(cli("usage", str(tmp_path / "claude"), "--json", "--no-cache").stdout)


def test_the_program_ends_once_the_answer_is_out_without_tearing_down(tmp_path: Path) -> None:
    """Run as the program (its entry point, its own stdout and stderr), usage ends with the answer
    written instead of freeing the scan's objects one by one and tearing the interpreter down
    (cli/errors.py `end_now`): an object's finalizer left for the teardown never runs. The answer
    and the exit are those of a run in process; stdout on a full disk is still exit 73, said once."""
    codex = _codex(tmp_path)
    code = ("import sys\nclass Left:\n    def __del__(self):\n        sys.stderr.write('torn down\\n')\nleft = Left()\n"
            "sys.argv = ['catty-ctx', *sys.argv[1:]]\nfrom catty_ctx.__main__ import main\nmain()\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", code, "usage", str(codex), "--json"], capture_output=True, cwd=ROOT, env=env)
    assert (proc.returncode, proc.stderr) == (0, b"") and proc.stdout == cli("usage", str(codex), "--json", "--no-cache").stdout
    with open(os.devnull, "wb") as sink:  # (an ordinary command still ends through the teardown)
        proc = subprocess.run([sys.executable, "-c", code, "--version"], stdout=sink, stderr=subprocess.PIPE, cwd=ROOT, env=env)
    assert (proc.returncode, proc.stderr) == (0, b"torn down\n")
    if os.path.exists("/dev/full"):
        with open("/dev/full", "wb") as full:
            proc = subprocess.run([sys.executable, "-c", code, "usage", str(codex), "--json"], stdout=full, stderr=subprocess.PIPE, cwd=ROOT, env=env)
        said = [line for line in proc.stderr.decode().splitlines() if line != "torn down"]
        assert proc.returncode == 73 and said == ["catty-ctx: error: cannot write output (No space left on device)"]


def test_a_cached_answer_loads_no_decoder_and_no_scan(tmp_path: Path) -> None:
    """The cron path: an answer the cache holds is printed without msgspec, orjson or the parsers
    (each costs more start-up than the whole answer)."""
    codex = _codex(tmp_path)
    heavy = ("msgspec", "orjson", "catty_ctx.usage.records", "catty_ctx.usage.claude", "catty_ctx.usage.codex")
    code = ("import sys\nfrom catty_ctx.cli.app import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    pass\n"
            f"print(sorted(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)")
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path / "cache"))
    first, again = (subprocess.run([sys.executable, "-c", code, "usage", str(codex)], capture_output=True, cwd=ROOT, env=env) for _ in range(2))
    assert "msgspec" in first.stderr.decode()  # the cold run decodes: the probe sees modules
    assert again.stderr.decode().strip() == "[]" and again.stdout == first.stdout


def test_over_many_paths_the_exit_is_the_most_severe_refusal_whatever_their_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one exit rule of a ROOT's commands (docs/spec.md#a-root-of-sessions): a file that is no
    agent's log (65) outranks a folder holding no session (2), an unreadable line under --strict
    (65) does too, and the first PATH of that code is named."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "empty").mkdir()
    notes = tmp_path / "notes.md"
    notes.write_text("# notes\n")
    codex = _codex(tmp_path)
    torn = tmp_path / "torn"
    claude_tree(torn, seed=5, projects=1, sessions=1, turns=2)
    with open(next(torn.rglob("*.jsonl")), "ab") as f:
        f.write(b'{"type": "assistant", "message": {"usage": {"input_tokens": 1,\n')
    empty = str(tmp_path / "empty")
    for args in ([empty, str(notes)], [str(notes), empty], [empty, str(codex), str(notes)]):
        proc = cli("usage", *args)
        assert proc.returncode == 65 and f"{notes}: not a ".encode() in proc.stderr and proc.stdout == b"", (args, proc.stderr)
    for args in ([empty, str(codex)], [str(codex), empty]):
        proc = cli("usage", *args)
        assert proc.returncode == 2 and f"no session under {empty}".encode() in proc.stderr, (args, proc.stderr)
    for args in ([empty, str(torn)], [str(torn), empty]):
        assert cli("usage", *args).returncode == 2  # (an unreadable line is skipped and counted)
        proc = cli("usage", "--strict", *args)
        assert proc.returncode == 65 and b"--strict refuses to skip them" in proc.stderr, (args, proc.stderr)
    assert cli("usage", str(torn), str(codex), "--json").returncode == 0

"""`catty-ctx append`: events from stdin, --create, the lock."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from support import ROOT, cli, jsonl, plain_run, typer_cli


def test_create_then_append_from_stdin(tmp_path: Path) -> None:
    s = tmp_path / "new"
    lines = b'{"kind":"message","id":"m1","role":"user","text":"hello"}\n{"kind":"message","id":"m2","role":"assistant","text":"hi","ts":"2026-01-01T00:00:00Z"}\n'
    proc = cli("append", str(s), "--create", "--window", "1000", "--model", "m", "--cwd", "/w", input=lines, check=True)
    out = jsonl(proc.stdout)
    assert [e["seq"] for e in out] == [1, 2] and out[1]["ts"] == "2026-01-01T00:00:00Z"
    events = jsonl((s / "updates.jsonl").read_bytes())
    assert events[0]["kind"] == "session" and events[0]["window"] == 1000 and events[0]["cwd"] == "/w"
    summary = orjson.loads((s / "summary.json").read_bytes())
    assert summary["window"] == 1000 and summary["model"] == "m" and summary["events"] == 3


def test_append_without_create_refuses_a_missing_session(tmp_path: Path) -> None:
    proc = cli("append", str(tmp_path / "x"), input=b'{"kind":"message","id":"m","role":"user","text":"a"}\n')
    assert proc.returncode == 2 and b"--create" in proc.stderr
    assert not (tmp_path / "x").exists()


def test_bad_stdin_line_writes_nothing(demo: Path) -> None:
    before = (demo / "updates.jsonl").read_bytes()
    proc = cli("append", str(demo), input=b'{"kind":"message","id":"m","role":"user","text":"a"}\n{"kind":"message"}\n')
    assert proc.returncode == 65 and b"event 2" in proc.stderr
    assert (demo / "updates.jsonl").read_bytes() == before


def test_lock_busy_exits_75(demo: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import sys,time; sys.path.insert(0,{str(ROOT)!r}); from catty_ctx.session.store import Session; l=Session.open({str(demo)!r}).lock(); l.__enter__(); print('held', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline().strip() == b"held"
        proc = cli("append", str(demo), "--lock-timeout", "0.3", input=b'{"kind":"message","id":"m","role":"user","text":"a"}\n')
        assert proc.returncode == 75 and b"locked" in proc.stderr
    finally:
        holder.kill()
        holder.wait()


def test_appended_stream_is_a_valid_log(demo: Path, tmp_path: Path) -> None:
    """An event stream on stdout is always a valid updates.jsonl: pipe it into inspect."""
    proc = cli("inspect", "-", "--json", input=(demo / "updates.jsonl").read_bytes(), check=True)
    assert orjson.loads(proc.stdout)["events"] == 22


# -- the typer-free start (cli/fastpath.py) ------------------------------------------------------

def test_appends_option_table_is_the_typer_commands() -> None:
    from support import table_is_the_typer_commands

    table_is_the_typer_commands("append")  # (its options, and their least and greatest values)


def test_appends_plain_spellings_are_parsed_without_typer_and_the_rest_left_to_it() -> None:
    from catty_ctx.cli.append import parse_args

    assert parse_args(["S", "-q", "--create", "--window=1000", "--lock-timeout", "2.5"]) == {
        "session": "S", "quiet": True, "create": True, "window": 1000, "lock_timeout": 2.5}
    for typer_says in (["--help"], [], ["S", "T"], ["S", "--window", "0"], ["S", "-q=1"], ["S", "--max-user-bytes", "-1"], ["S", "--bogus"]):
        assert parse_args(typer_says) is None, typer_says


def test_appends_two_parsers_give_the_same_output_and_exit(tmp_path: Path) -> None:
    line = b'{"kind":"message","id":"m1","role":"user","text":"hi","ts":"2026-02-01T00:00:00.000Z"}\n'
    for n, (args, stdin) in enumerate([
        (["--create", "--session-id", "fixed", "--window", "5000", "--model", "m", "--cwd", "/w"], line),
        (["-q"], line.replace(b"m1", b"m2")), ([], b'{"kind": 3}\n'), ([], b"not json\n"), (["--window", "0", "--create"], line),
    ]):
        for side in ("fast", "typer"):  # (each on a session of its own: a write is not repeatable)
            (tmp_path / side).mkdir(exist_ok=True)
        fast = cli("append", str(tmp_path / "fast" / "s"), *args, input=stdin)
        slow = typer_cli("append", str(tmp_path / "typer" / "s"), *args, input=stdin)
        strip = lambda b: b.replace(str(tmp_path / "fast").encode(), b"X").replace(str(tmp_path / "typer").encode(), b"X")  # noqa: E731
        assert (fast.returncode, fast.stdout, strip(fast.stderr)) == (slow.returncode, slow.stdout, strip(slow.stderr)), (n, args)
    fast_log, typer_log = (jsonl((tmp_path / side / "s" / "updates.jsonl").read_bytes()) for side in ("fast", "typer"))
    assert [{k: v for k, v in ev.items() if k != "ts"} for ev in fast_log] == [{k: v for k, v in ev.items() if k != "ts"} for ev in typer_log]
    assert len(fast_log) == 3  # the session event and two messages


def test_a_plain_append_never_loads_typer_or_rich(tmp_path: Path) -> None:
    status, loaded, proc = plain_run("append", "--create", str(tmp_path / "s"), "-q",
                                     input=b'{"kind":"message","id":"m1","role":"user","text":"hi"}\n')
    assert (status, loaded, proc.stderr.strip()) == (0, [], b"")

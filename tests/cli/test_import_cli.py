"""`catty-ctx import`: formats, pipes, --out, --lenient and the error path, as a user runs them."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson

from support import forked_cli
from support import FIXTURES, ROOT, both_parsers, cli, jsonl, plain_run_loads, table_is_the_typer_commands, writes_below

IMP = FIXTURES / "import"
CLAUDE = IMP / "claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl"
SOURCES = {
    "claude": CLAUDE,
    "codex": IMP / "codex" / "sessions",
    "gemini": next((IMP / "gemini" / "tmp").rglob("session-*.jsonl")),
    "opencode": IMP / "opencode" / "storage",
    "openai": IMP / "openai" / "chat.json",
    "anthropic": IMP / "anthropic" / "conversation.json",
}


def _db(tmp_path: Path) -> Path:
    db = tmp_path / "opencode.db"
    con = sqlite3.connect(db)
    con.executescript((IMP / "opencode" / "opencode-db.sql").read_text())
    con.commit()
    con.close()
    return db


def _pipe(*import_args: str) -> tuple[int, int, bytes, bytes]:
    """`catty-ctx import … | catty-ctx inspect - --json` through a real OS pipe, each a process of
    its own (forked from one that imported the libraries: tests/support/forked_cli.py)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    program = forked_cli.command(forked_cli.LIBRARIES)
    producer = subprocess.Popen([*program, "import", *import_args],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    consumer = subprocess.Popen([*program, "inspect", "-", "--json"],
                                stdin=producer.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert producer.stdout is not None
    producer.stdout.close()
    out, err = consumer.communicate(timeout=120)
    return producer.wait(timeout=120), consumer.returncode, out, err


def test_import_pipes_into_inspect_for_every_format(tmp_path: Path) -> None:
    sources = {**{k: str(v) for k, v in SOURCES.items()}, "opencode.db": str(_db(tmp_path))}
    for name, source in sources.items():
        fmt = name.split(".")[0]
        rc_import, rc_inspect, out, err = _pipe(fmt, source)
        assert (rc_import, rc_inspect) == (0, 0), (name, err)
        rep = orjson.loads(out)
        assert rep["stream"] == "events" and rep["events"] > 3 and rep["turns"] >= 1, name


def test_stdout_is_a_valid_log_that_append_style_readers_accept(tmp_path: Path) -> None:
    out = cli("import", "claude", str(CLAUDE), check=True).stdout
    log = tmp_path / "updates.jsonl"
    log.write_bytes(out)
    rep = orjson.loads(cli("inspect", str(log), "--json", check=True).stdout)
    assert rep["session_id"] == "sess-0001" and rep["problems"]["invalid"] == 0


def test_importing_twice_is_byte_identical_on_stdout_and_in_out(tmp_path: Path) -> None:
    for fmt, source in SOURCES.items():
        a = cli("import", fmt, str(source), check=True).stdout
        b = cli("import", fmt, str(source), check=True).stdout
        assert a == b, fmt
    cli("import", "codex", str(SOURCES["codex"]), "--out", str(tmp_path / "one"), check=True)
    cli("import", "codex", str(SOURCES["codex"]), "--out", str(tmp_path / "two"), check=True)
    for name in ("updates.jsonl", "summary.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_auto_matches_the_named_format() -> None:
    for fmt, source in SOURCES.items():
        assert cli("import", "auto", str(source), check=True).stdout == cli("import", fmt, str(source), check=True).stdout, fmt


def test_an_invalid_middle_line_exits_65_naming_file_and_line() -> None:
    bad = IMP / "claude" / "bad" / "invalid-middle.jsonl"
    proc = cli("import", "claude", str(bad))
    assert proc.returncode == 65 and proc.stdout == b""
    err = proc.stderr.decode()
    assert f"{bad}:2:" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_lenient_imports_the_rest_and_reports_what_it_skipped() -> None:
    bad = IMP / "codex" / "bad" / "invalid-middle.jsonl"
    proc = cli("import", "codex", str(bad), "--lenient")
    assert proc.returncode == 0
    events = jsonl(proc.stdout)
    assert [e["text"] for e in events if e["kind"] == "message"] == ["hi", "hello"]
    err = proc.stderr.decode()
    assert f"{bad}:3" in err and "invalid lines 1" in err


def test_a_source_of_another_format_exits_65_saying_what_it_is_not() -> None:
    proc = cli("import", "claude", str(SOURCES["openai"]))
    assert proc.returncode == 65 and b"not a Claude Code session" in proc.stderr
    proc = cli("import", "gemini", str(CLAUDE))
    assert proc.returncode == 65 and b"not a Gemini CLI session" in proc.stderr
    proc = cli("import", "auto", str(ROOT / "README.md"))
    assert proc.returncode == 65 and b"Traceback" not in proc.stderr


def test_garbage_bytes_never_give_a_traceback(tmp_path: Path) -> None:
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"\x00\xff\xfe garbage\n{\"type\":\n")
    for fmt in ("claude", "codex", "gemini", "openai", "anthropic", "opencode", "auto"):
        proc = cli("import", fmt, str(junk))
        assert proc.returncode in (2, 65), (fmt, proc.stderr)
        assert b"Traceback" not in proc.stderr and b"internal error" not in proc.stderr, fmt


def test_unknown_format_and_missing_source_are_usage_errors() -> None:
    assert cli("import", "cursor", str(CLAUDE)).returncode == 2
    assert cli("import", "claude", "no/such/file.jsonl").returncode == 2


def test_out_makes_a_session_directory_recording_its_source(tmp_path: Path) -> None:
    out = tmp_path / "imported"
    proc = cli("import", "claude", str(CLAUDE), "--out", str(out), check=True)
    doc = orjson.loads(proc.stdout)
    assert doc["events"] > 0 and doc["out"] == str(out)
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert summary["source"] == {"format": "claude", "path": str(CLAUDE.resolve())}
    rep = orjson.loads(cli("inspect", str(out), "--json", check=True).stdout)
    assert rep["events"] == summary["events"] and rep["turns"] == 4


def test_out_never_touches_an_existing_session(demo: Path) -> None:
    before = (demo / "updates.jsonl").read_bytes()
    proc = cli("import", "claude", str(CLAUDE), "--out", str(demo))
    assert proc.returncode == 2 and b"already exists" in proc.stderr
    assert (demo / "updates.jsonl").read_bytes() == before


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "s"
    proc = cli("import", "gemini", str(SOURCES["gemini"]), "--out", str(out), "--dry-run", check=True)
    assert orjson.loads(proc.stdout)["dry_run"] is True and not out.exists()


def test_help_has_a_description_and_an_example() -> None:
    out = cli("import", "--help", check=True).stdout.decode()
    assert "Example" in out and "--lenient" in out and "--out" in out


def test_out_may_be_an_empty_directory_and_an_unwritable_place_exits_73(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    cli("import", "openai", str(SOURCES["openai"]), "--out", str(empty), check=True)
    assert (empty / "updates.jsonl").is_file() and (empty / "summary.json").is_file()
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    proc = cli("import", "openai", str(SOURCES["openai"]), "--out", str(blocker / "s"))
    assert proc.returncode == 73 and b"Traceback" not in proc.stderr


def test_kill_9_during_out_leaves_no_half_session(tmp_path: Path) -> None:
    """Whenever the import dies, DIR is either absent or a whole, valid session."""
    src = tmp_path / "big.jsonl"
    body = "x" * 20_000
    with open(src, "wb") as f:
        parent = None
        for i in range(1500):
            for role in ("user", "assistant"):
                uid = f"{role[0]}{i}"
                rec = {"type": role, "sessionId": "big", "parentUuid": parent, "uuid": uid, "timestamp": "2026-10-01T10:00:00.000Z",
                       "message": {"role": role, "id": f"msg{i}", "model": "m", "content": [{"type": "text", "text": body}]}}
                f.write(orjson.dumps(rec) + b"\n")
                parent = uid
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    argv = [sys.executable, "-m", "catty_ctx", "import", "claude", str(src), "--out"]
    began = time.monotonic()
    subprocess.run([*argv, str(tmp_path / "whole")], check=True, capture_output=True, env=env)
    took = time.monotonic() - began
    whole = orjson.loads(cli("inspect", str(tmp_path / "whole"), "--json", check=True).stdout)["events"]
    for fraction in (0.5, 0.8):
        out = tmp_path / f"killed-{fraction}"
        proc = subprocess.Popen([*argv, str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            proc.wait(timeout=took * fraction)
        except subprocess.TimeoutExpired:
            proc.kill()  # SIGKILL: no cleanup runs
            proc.wait()
        if out.exists():
            rep = orjson.loads(cli("inspect", str(out), "--json", check=True).stdout)
            assert rep["events"] == whole and rep["problems"]["invalid"] == 0
    # what a kill leaves is a hidden staging folder, never something that looks like a session
    visible = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("."))
    assert set(visible) - {"killed-0.5", "killed-0.8"} == {"big.jsonl", "whole"}


def test_out_moves_large_outputs_to_blobs_as_append_does(tmp_path: Path) -> None:
    big = "line of a long build log\n" * 4000  # 100 KB
    src = tmp_path / "big.json"
    src.write_bytes(orjson.dumps({"messages": [
        {"role": "user", "content": "build it"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": big},
    ]}))
    out = tmp_path / "s"
    cli("import", "openai", str(src), "--out", str(out), check=True)
    result = [e for e in jsonl((out / "updates.jsonl").read_bytes()) if e["kind"] == "tool_result"][0]
    assert result["bytes"] == len(big) and len(result["output"]) < 40_000
    assert cli("blob", str(out), result["blob"], check=True).stdout.decode() == big
    streamed = [e for e in jsonl(cli("import", "openai", str(src), check=True).stdout) if e["kind"] == "tool_result"][0]
    assert streamed["output"] == big and "blob" not in streamed  # a stream has no blobs/
    kept = tmp_path / "kept"
    cli("import", "openai", str(src), "--out", str(kept), "--max-tool-bytes", "0", check=True)
    assert [e["output"] for e in jsonl((kept / "updates.jsonl").read_bytes()) if e["kind"] == "tool_result"] == [big]


def test_imports_record_the_prompt_context_they_know(tmp_path: Path) -> None:
    """Issue 11: inspect --context on a Claude and a Codex import names each known part's
    source and lists the parts the source does not hold as unknown."""
    codex = next((FIXTURES / "import" / "codex" / "sessions").rglob("*.jsonl"))
    cases = {
        "claude": (FIXTURES / "import" / "claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl",
                   {"agent_version": "claude-code 2.0.14", "environment.git_branch": "main", "environment.cwd": "/home/dev/shop"}),
        "codex": (codex, {"agent_version": "codex 0.46.0", "environment.git_branch": "main", "model": "gpt-5", "approval_policy": "on-request"}),
    }
    for fmt, (source, expected) in cases.items():
        out = tmp_path / fmt
        cli("import", fmt, str(source), "--out", str(out), check=True)
        rep = orjson.loads(cli("inspect", str(out), "--context", "--json", check=True).stdout)
        for part, value in expected.items():
            assert rep["parts"][part]["value"] == value and rep["parts"][part]["source"].startswith(f"{fmt}: "), (fmt, part)
        assert "environment.os" in rep["unknown"] and "persona" in rep["unknown"]


# -- the typer-free start (cli/fastpath.py) ------------------------------------------------------

def test_imports_option_table_is_the_typer_commands() -> None:
    table_is_the_typer_commands("import", arguments=["fmt", "source"])


def test_imports_plain_spellings_are_parsed_without_typer_and_the_rest_left_to_it() -> None:
    from catty_ctx.cli.import_ import parse_args

    assert parse_args(["claude", "F"]) == {"fmt": "claude", "source": "F"}
    assert parse_args(["auto", "F", "--out", "D", "--lenient", "--session=s1"]) == {
        "fmt": "auto", "source": "F", "out": "D", "lenient": True, "session": "s1"}
    assert parse_args(["--dry-run", "codex", "--max-user-bytes", "0", "F", "--max-tool-bytes=100"]) == {
        "fmt": "codex", "source": "F", "dry_run": True, "max_user_bytes": 0, "max_tool_bytes": 100}
    assert parse_args(["claude", "--", "-F"]) == {"fmt": "claude", "source": "-F"}
    for typer_says in (["--help"], ["claude", "F", "-h"], [], ["claude"], ["claude", "F", "G"], ["claude", "F", "--max-user-bytes", "-1"],
                       ["claude", "F", "--max-tool-bytes", "1e3"], ["claude", "F", "--out"], ["claude", "F", "--lenient=1"],
                       ["claude", "F", "--bogus"], ["claude", "-F"], ["claude", "F", "--json"]):
        assert parse_args(typer_says) is None, typer_says


def test_imports_two_parsers_give_the_same_output_files_and_exit(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    big = tmp_path / "big.json"
    big.write_bytes(orjson.dumps([{"role": "user", "content": "long question " * 200}, {"role": "assistant", "content": "ok"}]))

    def fresh() -> None:  # the command writes: each parser starts without --out's folder
        shutil.rmtree(out, ignore_errors=True)

    bad = IMP / "codex" / "bad" / "invalid-middle.jsonl"
    cases = [
        ["claude", str(CLAUDE)], ["codex", str(SOURCES["codex"]), "--dry-run"], ["claude", str(CLAUDE), "--out", str(out)],
        ["auto", str(SOURCES["opencode"]), "--session", "ses_001", "--out", str(out), "--dry-run"], ["codex", str(bad)],
        ["codex", str(bad), "--lenient", "--out", str(out)], ["cursor", str(CLAUDE)], ["claude", str(tmp_path / "missing.jsonl")],
        ["claude", str(CLAUDE), "--out", str(demo)], ["claude", str(CLAUDE), "--max-user-bytes", "-1"], ["claude"],
        ["openai", str(big), "--out", str(out), "--max-user-bytes", "100", "--max-tool-bytes=0"],
    ]
    for args in cases:
        both_parsers("import", *args, setup=fresh, outcome=writes_below(tmp_path))
    assert len(list((out / "blobs").rglob("*"))) >= 1  # the last case, run by typer, did import (its long message to blobs/)


def test_a_plain_import_never_loads_typer_or_rich(tmp_path: Path) -> None:
    for args, status in ((["claude", str(CLAUDE)], 0), (["auto", str(SOURCES["codex"]), "--out", str(tmp_path / "s")], 0),
                         (["gemini", str(SOURCES["gemini"]), "--dry-run"], 0), (["claude", str(IMP / "claude" / "bad" / "invalid-middle.jsonl")], 65),
                         (["cursor", str(CLAUDE)], 2)):
        assert plain_run_loads("import", *args) == (status, []), args
    assert orjson.loads(cli("inspect", str(tmp_path / "s"), "--json", check=True).stdout)["events"] > 3  # the plain run did import

"""`catty-ctx inspect`: the report, pipes, ROOTs and the error path."""
from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from support import FIXTURES, both_parsers, cli, jsonl, msg, plain_run, session_event, write_log


def test_stdin_stream_equals_the_session(demo: Path) -> None:
    by_dir = orjson.loads(cli("inspect", str(demo), "--json", check=True).stdout)
    by_pipe = orjson.loads(cli("inspect", "-", "--json", input=(demo / "updates.jsonl").read_bytes(), check=True).stdout)
    for key in ("session_id", "events", "kinds", "roles", "turns", "items", "tokens", "window", "percent", "fp", "problems", "largest"):
        assert by_dir[key] == by_pipe[key], key


def test_report_has_the_spec_keys(demo: Path) -> None:
    rep = orjson.loads(cli("inspect", str(demo), "--json", check=True).stdout)
    assert {"session_id", "events", "kinds", "roles", "turns", "tokens", "window", "percent", "fp", "problems"} <= rep.keys()
    assert set(rep["problems"]) == {"dangling", "orphan", "duplicate", "torn", "invalid"}
    assert rep["events"] == 22 and rep["turns"] == 2 and rep["kinds"]["tool_call"] == 4
    assert rep["window"] == 200_000 and rep["percent"] == round(rep["tokens"] * 100 / 200_000, 2)


def test_a_pipe_gets_json_lines(demo: Path) -> None:
    rows = jsonl(cli("inspect", str(demo), check=True).stdout)
    assert len(rows) == 1 and rows[0]["session_id"] == "demo-0001"


def test_item_stream_on_stdin_reports_on_the_request(demo: Path) -> None:
    items = orjson.loads(cli("inspect", str(demo), "--items", "--json", check=True).stdout)["items"]
    stream = b"".join(orjson.dumps(r["item"]) + b"\n" for r in items)
    rep = orjson.loads(cli("inspect", "-", "--json", input=stream, check=True).stdout)
    assert rep["stream"] == "items" and rep["items"] == len(items)
    assert rep["fp"] == items[-1]["fp"]


def test_dangling_call_is_detected(tmp_path: Path) -> None:
    d = tmp_path / "d"
    shutil.copytree(FIXTURES / "sessions" / "dangling", d)
    rep = orjson.loads(cli("inspect", str(d), "--json", check=True).stdout)
    assert rep["problems"]["dangling"] == 1 and rep["problems"]["orphan"] == 0


def test_orphan_and_duplicate_results_are_detected(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "go"), msg("assistant", ""),
                                   {"kind": "tool_call", "call_id": "c1", "name": "t", "args": {}},
                                   {"kind": "tool_result", "call_id": "c1", "output": "a", "is_error": False},
                                   {"kind": "tool_result", "call_id": "c1", "output": "b", "is_error": False},
                                   {"kind": "tool_result", "call_id": "zz", "output": "c", "is_error": False}])
    rep = orjson.loads(cli("inspect", str(d), "--json", check=True).stdout)
    assert rep["problems"] | {} == {"dangling": 0, "orphan": 1, "duplicate": 1, "torn": 0, "invalid": 0}


def test_invalid_line_exits_65_with_one_line_naming_file_and_line(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "a"), msg("user", "b")])
    lines = (d / "updates.jsonl").read_bytes().splitlines(keepends=True)
    lines[1] = b'{"v":1,"seq":1,\n'
    (d / "updates.jsonl").write_bytes(b"".join(lines))
    proc = cli("inspect", str(d))
    assert proc.returncode == 65
    err = proc.stderr.decode().strip().splitlines()
    assert len(err) == 1 and f"{d / 'updates.jsonl'}:2:" in err[0]
    assert "Traceback" not in proc.stderr.decode() and proc.stdout == b""


def test_torn_tail_works_with_a_warning(tmp_path: Path) -> None:
    d = tmp_path / "t"
    shutil.copytree(FIXTURES / "sessions" / "torn", d)
    before = (d / "updates.jsonl").read_bytes()
    proc = cli("inspect", str(d), "--json")
    assert proc.returncode == 0
    assert "torn" in proc.stderr.decode() and ":9:" in proc.stderr.decode()
    assert orjson.loads(proc.stdout)["problems"]["torn"] == 1
    assert (d / "updates.jsonl").read_bytes() == before  # inspect never writes


def test_root_lists_a_row_per_session(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "sessions", tmp_path / "root")
    doc = orjson.loads(cli("inspect", str(tmp_path / "root"), "--json", check=True).stdout)
    assert sorted(r["session_id"] for r in doc["sessions"]) == ["dangling-0001", "demo-0001", "torn-0001"]


def test_seq_prints_one_event(demo: Path) -> None:
    ev = orjson.loads(cli("inspect", str(demo), "--seq", "4", check=True).stdout)
    assert ev["seq"] == 4 and ev["kind"] == "tool_call"


def test_a_seq_the_log_does_not_hold_is_a_usage_error_naming_the_range(demo: Path) -> None:
    proc = cli("inspect", str(demo), "--seq", "999")
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"no event with seq 999" in proc.stderr and b"0.." in proc.stderr


def test_missing_session_is_a_usage_error(tmp_path: Path) -> None:
    proc = cli("inspect", str(tmp_path / "nope"))
    assert proc.returncode == 2 and b"no such session" in proc.stderr


def test_version_and_module_entry() -> None:
    proc = cli("--version", check=True)
    assert proc.stdout.decode().startswith("catty-ctx ")


# -- the typer-free start (cli/fastpath.py) ------------------------------------------------------

def test_inspects_option_table_is_the_typer_commands() -> None:
    from support import table_is_the_typer_commands

    table_is_the_typer_commands("inspect")  # (its options, and their least and greatest values)


def test_inspects_plain_spellings_are_parsed_without_typer_and_the_rest_left_to_it() -> None:
    from catty_ctx.cli.inspect import parse_args

    assert parse_args(["S", "--items", "--json"]) == {"target": "S", "items": True, "as_json": True}
    assert parse_args(["--seq=3", "-"]) == {"target": "-", "seq": 3}
    assert parse_args(["--connect-timeout", "2.5", "R", "--allow-empty"]) == {"target": "R", "connect_timeout": 2.5, "allow_empty": True}
    for typer_says in (["--help"], ["S", "-h"], [], ["S", "T"], ["--items"], ["S", "--seq"], ["S", "--seq", "-1"], ["S", "--seq", "x"],
                       ["S", "--json=1"], ["S", "--bogus"], ["S", "--connect-timeout", "0"]):
        assert parse_args(typer_says) is None, typer_says


def test_inspects_two_parsers_give_the_same_output_and_exit(demo: Path, tmp_path: Path) -> None:
    (tmp_path / "root" / "a").mkdir(parents=True)
    shutil.copytree(demo, tmp_path / "root" / "a" / "demo")
    stream = (demo / "updates.jsonl").read_bytes()
    cases: list[tuple[list[str], bytes | None]] = [
        ([str(demo), "--json"], None), ([str(demo)], None), ([str(demo), "--items", "--json"], None), ([str(demo), "--seq", "3"], None),
        ([str(demo), "--seq=999"], None), ([str(demo), "--context", "--json"], None), (["-", "--json"], stream),
        ([str(tmp_path / "root"), "--json"], None), ([str(tmp_path / "root"), "--context"], None), ([str(tmp_path / "missing")], None),
        ([str(tmp_path / "empty-root"), "--allow-empty"], None), ([str(demo), "--scheduler", "local:0"], None),
    ]
    (tmp_path / "empty-root").mkdir()
    for args, stdin in cases:
        both_parsers("inspect", *args, input=stdin)


def test_a_plain_inspect_never_loads_typer_or_rich(demo: Path) -> None:
    for args in (["--json"], [], ["--items", "--json"]):
        status, loaded, proc = plain_run("inspect", str(demo), *args)
        assert (status, loaded, proc.stderr.strip()) == (0, [], b"") and proc.stdout, args

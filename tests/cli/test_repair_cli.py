"""`catty-ctx repair`: --check, --dry-run, ROOTs, pipes and the error path."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from catty_ctx.repair.plan import analyse
from catty_ctx.session.store import Session
from support import FIXTURES, both_parsers, cli, jsonl, plain_run_loads, table_is_the_typer_commands

sys.path.append(str(FIXTURES / "bad"))
from make_bad import CORPUS, build  # noqa: E402  (the data-error corpus)

BROKEN = ["duplicate", "orphan", "snapshot", "invalid", "stale-summary", "no-summary"]


def _copy(name: str, tmp_path: Path, where: str = "broken") -> Path:
    dest = tmp_path / name
    shutil.copytree(FIXTURES / where / name, dest)
    return dest


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", BROKEN)
def test_check_and_dry_run_exit_as_documented_and_leave_the_files_byte_identical(name: str, tmp_path: Path) -> None:
    d = _copy(name, tmp_path)
    before = _snapshot(d)
    check = cli("repair", str(d), "--check")
    assert check.returncode == 1 and jsonl(check.stdout)
    dry = cli("repair", str(d), "--dry-run", "--json")
    assert dry.returncode == 0 and orjson.loads(dry.stdout)["applied"] is False
    assert _snapshot(d) == before


@pytest.mark.parametrize("name", BROKEN)
def test_repair_then_check_exits_0(name: str, tmp_path: Path) -> None:
    d = _copy(name, tmp_path)
    doc = orjson.loads(cli("repair", str(d), "--json", check=True).stdout)
    assert doc["applied"] and doc["found"] >= 1 and doc["actions"]
    assert cli("repair", str(d), "--check").returncode == 0
    assert cli("inspect", str(d), "--json", check=True).returncode == 0


def test_torn_fixture_is_found_and_fixed(tmp_path: Path) -> None:
    d = _copy("torn", tmp_path, "sessions")
    proc = cli("repair", str(d), "--check", "--json")
    assert proc.returncode == 1 and orjson.loads(proc.stdout)["problems"] == {"torn_line": 1}
    cli("repair", str(d), check=True)
    assert cli("repair", str(d), "--check").returncode == 0 and list((d / "quarantine").glob("*.bin"))


def test_a_clean_session_checks_0_and_says_so_on_stderr(demo: Path) -> None:
    proc = cli("repair", str(demo), "--check")
    assert proc.returncode == 0 and proc.stdout == b"" and b"nothing to repair" in proc.stderr


def test_a_root_repairs_every_session(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / "broken", root / "broken")
    shutil.copytree(FIXTURES / "sessions", root / "good")
    check = cli("repair", str(root), "--check", "--json")
    assert check.returncode == 1
    rows = orjson.loads(check.stdout)["sessions"]
    assert len(rows) == len(BROKEN) + 3 and sum(1 for r in rows if r["found"]) == len(BROKEN) + 2
    cli("repair", str(root), check=True)
    assert cli("repair", str(root), "--check").returncode == 0


def test_repair_dash_sits_in_a_pipe(tmp_path: Path) -> None:
    data = (FIXTURES / "sessions" / "dangling" / "updates.jsonl").read_bytes()
    out = cli("repair", "-", input=data, check=True)
    assert out.stdout.startswith(data)
    added = jsonl(out.stdout[len(data):])
    assert [(e["kind"], e["action"], e["call_id"], e["seq"]) for e in added] == [("repair", "answer", "c2", 8)]
    rep = orjson.loads(cli("inspect", "-", "--json", input=out.stdout, check=True).stdout)
    assert rep["problems"]["dangling"] == 0
    items = cli("resume", "-", input=out.stdout, check=True).stdout
    assert orjson.loads(cli("inspect", "-", "--json", input=items, check=True).stdout)["stream"] == "items"


def test_repair_prune_inspect_compose_through_pipes() -> None:
    data = (FIXTURES / "sessions" / "dangling" / "updates.jsonl").read_bytes()
    repaired = cli("repair", "-", input=data, check=True).stdout
    request = cli("prune", "-", input=repaired, check=True).stdout
    rep = orjson.loads(cli("inspect", "-", "--json", input=request, check=True).stdout)
    assert rep["stream"] == "items" and rep["problems"]["dangling"] == 0 and rep["roles"]["tool"] == 2


def test_repair_dash_drops_a_torn_tail_with_a_warning() -> None:
    data = (FIXTURES / "sessions" / "torn" / "updates.jsonl").read_bytes()
    proc = cli("repair", "-", input=data, check=True)
    assert proc.stdout == data[: data.rindex(b"\n") + 1] and b"torn" in proc.stderr


def test_bad_input_gets_one_line_exit_65_and_nothing_written(tmp_path: Path) -> None:
    data = (FIXTURES / "broken" / "invalid" / "updates.jsonl").read_bytes()
    proc = cli("repair", "-", input=data)
    err = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 65 and proc.stdout == b""
    assert len(err) == 1 and "<stdin>:4:" in err[0] and "Traceback" not in err[0]


def test_a_missing_session_is_a_usage_error(tmp_path: Path) -> None:
    proc = cli("repair", str(tmp_path / "nope"))
    assert proc.returncode == 2 and len(proc.stderr.decode().strip().splitlines()) == 1


def test_lock_busy_exits_75_and_writes_nothing(tmp_path: Path) -> None:
    d = _copy("duplicate", tmp_path)
    before = _snapshot(d)
    with Session.open(d).lock():
        proc = cli("repair", str(d), "--lock-timeout", "0.2")
    assert proc.returncode == 75 and len(proc.stderr.decode().strip().splitlines()) == 1
    after = _snapshot(d)
    after.pop("updates.jsonl.lock", None)
    before.pop("updates.jsonl.lock", None)
    assert after == before


@pytest.mark.parametrize("name", sorted(set(CORPUS) - {"empty"}))
def test_every_corrupt_log_is_checked_then_made_loadable_without_losing_a_line(name: str, tmp_path: Path) -> None:
    d = build(name, tmp_path / name)
    before = _snapshot(d)
    assert cli("repair", str(d), "--check").returncode == 1 and _snapshot(d) == before
    cli("repair", str(d), check=True)
    assert list(Session.open(d).events(warn=None))  # loadable
    assert not analyse(Session.open(d)).found  # what --check reports
    kept = (d / "updates.jsonl").read_bytes() + b"".join(p.read_bytes() for p in (d / "quarantine").glob("*.bin"))
    for line in before["updates.jsonl"].splitlines(keepends=True):
        assert line in kept


def test_an_empty_log_is_bad_input_for_repair(tmp_path: Path) -> None:
    d = build("empty", tmp_path / "empty")
    proc = cli("repair", str(d))
    assert proc.returncode == 65 and b"no events" in proc.stderr
    assert {k: v for k, v in _snapshot(d).items() if not k.endswith(".lock")} == {"updates.jsonl": b""}


def test_resume_refuses_an_invalid_line_naming_it(tmp_path: Path) -> None:
    d = _copy("invalid", tmp_path)
    proc = cli("resume", str(d))
    err = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 65 and len(err) == 1 and "updates.jsonl:4:" in err[0] and proc.stdout == b""


# -- the typer-free start (cli/fastpath.py) ------------------------------------------------------

def test_repairs_option_table_is_the_typer_commands() -> None:
    command = table_is_the_typer_commands("repair")
    assert [p.name for p in command.params if p.param_type_name == "argument"] == ["target"] and command.params[0].required


def test_repairs_plain_spellings_are_parsed_without_typer_and_the_rest_left_to_it() -> None:
    from catty_ctx.cli.repair import parse_args

    assert parse_args(["S", "--check", "--json"]) == {"target": "S", "check": True, "as_json": True}
    assert parse_args(["--lock-timeout=2.5", "-", "--dry-run", "--force"]) == {"target": "-", "lock_timeout": 2.5, "dry_run": True, "force": True}
    assert parse_args(["R", "--scheduler", "local:2", "--connect-timeout", "3", "--allow-remote-writes", "--allow-empty"]) == {
        "target": "R", "scheduler": "local:2", "connect_timeout": 3.0, "allow_remote_writes": True, "allow_empty": True}
    for typer_says in (["--help"], ["S", "-h"], [], ["S", "T"], ["--check"], ["S", "--lock-timeout"], ["S", "--lock-timeout", "-1"],
                       ["S", "--lock-timeout", "x"], ["S", "--check=1"], ["S", "--bogus"], ["S", "--connect-timeout", "0"], ["S", "--no-check"]):
        assert parse_args(typer_says) is None, typer_says


def test_repairs_two_parsers_give_the_same_output_and_exit(demo: Path, tmp_path: Path) -> None:
    dangling = _copy("dangling", tmp_path, "sessions")
    torn = tmp_path / "torn"
    root = tmp_path / "root"
    shutil.copytree(demo, root / "a" / "demo")
    shutil.copytree(dangling, root / "b" / "dangling")
    (tmp_path / "empty-root").mkdir()

    def fresh(name: str) -> Any:
        def setup() -> None:  # the command writes: each parser starts from the fixture
            shutil.rmtree(tmp_path / name, ignore_errors=True)
            shutil.copytree(FIXTURES / "sessions" / name, tmp_path / name)
        return setup

    cases: list[tuple[list[str], bytes | None, Any]] = [
        ([str(demo), "--check"], None, None), ([str(dangling), "--check"], None, None),
        ([str(dangling), "--check", "--json"], None, None), ([str(dangling), "--dry-run", "--lock-timeout", "1"], None, None),
        ([str(dangling), "--json"], None, fresh("dangling")), ([str(torn)], None, fresh("torn")),
        (["-", "--check", "--json"], (FIXTURES / "sessions" / "dangling" / "updates.jsonl").read_bytes(), None),
        ([str(root), "--check", "--json"], None, None), ([str(tmp_path / "missing"), "--check"], None, None),
        ([str(tmp_path / "empty-root")], None, None), ([str(tmp_path / "empty-root"), "--allow-empty", "--json"], None, None),
        ([str(root), "--check", "--scheduler", "local:0"], None, None),
    ]
    for args, stdin, setup in cases:
        both_parsers("repair", *args, input=stdin, setup=setup)
    assert cli("repair", str(tmp_path / "dangling"), "--check").returncode == 0  # the last run repaired it


def test_a_plain_repair_never_loads_typer_or_rich(demo: Path, tmp_path: Path) -> None:
    dangling = _copy("dangling", tmp_path, "sessions")
    for args, status in (([str(demo), "--check"], 0), ([str(dangling), "--check", "--json"], 1), ([str(dangling)], 0),
                         ([str(tmp_path / "missing")], 2)):
        assert plain_run_loads("repair", *args) == (status, []), args
    assert cli("repair", str(dangling), "--check").returncode == 0  # the plain run did repair it

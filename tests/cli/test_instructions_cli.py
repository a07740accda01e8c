"""`catty-ctx instructions`: discovery with sources, and the idempotent --append."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from support import both_parsers, cli, jsonl, plain_run_loads, table_is_the_typer_commands, writes_below


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "CLAUDE.md").write_text("user-level rule\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    r = tmp_path / "repo"
    (r / "app" / ".claude" / "rules").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    (r / ".gitignore").write_text("local.md\n")
    (r / "AGENTS.md").write_text("root rule\n")
    (r / "app" / "AGENTS.md").write_text("app rule\n")
    (r / "app" / ".claude" / "rules" / "local.md").write_text("ignored\n")
    (r / "app" / ".claude" / "rules" / "z.md").write_text("---\npaths: app\n---\nlast rule\n")
    return r


def test_lists_instructions_in_order_with_their_sources(repo: Path) -> None:
    doc = orjson.loads(cli("instructions", str(repo / "app"), "--json", check=True).stdout)
    assert [(i["scope"], i["text"]) for i in doc["instructions"]] == [
        ("global", "user-level rule"), ("repo", "root rule"), ("dir", "app rule"), ("dir", "last rule"),
    ]
    assert doc["instructions"][1]["path"] == str((repo / "AGENTS.md").resolve())
    assert any(s["reason"] == "ignored by git" for s in doc["skipped"])
    rows = jsonl(cli("instructions", str(repo / "app"), "--no-global", check=True).stdout)
    assert [r["order"] for r in rows] == [1, 2, 3] and rows[0]["text"] == "root rule"


def test_append_records_the_instructions_state_once(repo: Path, tmp_path: Path) -> None:
    s = tmp_path / "s"
    cli("append", str(s), "--create", check=True)
    first = cli("instructions", str(repo / "app"), "--append", str(s))
    assert first.returncode == 0 and b"appended at seq 1" in first.stderr
    again = cli("instructions", str(repo / "app"), "--append", str(s), "--json", check=True)
    assert orjson.loads(again.stdout)["appended_seq"] is None
    events = jsonl((s / "updates.jsonl").read_bytes())
    assert len(events) == 2 and events[1]["facet"] == "instructions"
    assert [i["text"] for i in events[1]["value"]] == ["user-level rule", "root rule", "app rule", "last rule"]
    (repo / "app" / "AGENTS.md").write_text("app rule, changed\n")
    third = cli("instructions", str(repo / "app"), "--append", str(s), "--json", check=True)
    assert orjson.loads(third.stdout)["appended_seq"] == 2


def test_a_missing_dir_is_a_usage_error(tmp_path: Path) -> None:
    proc = cli("instructions", str(tmp_path / "nope"))
    assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1


def test_append_to_a_missing_session_is_a_usage_error(repo: Path, tmp_path: Path) -> None:
    proc = cli("instructions", str(repo), "--append", str(tmp_path / "none"))
    assert proc.returncode == 2 and not (tmp_path / "none").exists()
    assert os.path.exists(repo / "AGENTS.md")


def test_concurrent_appends_record_the_state_once(repo: Path, tmp_path: Path) -> None:
    import sys

    from support import ROOT

    s = tmp_path / "s"
    cli("append", str(s), "--create", check=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [
        subprocess.Popen([sys.executable, "-m", "catty_ctx", "instructions", str(repo), "--append", str(s), "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        for _ in range(4)
    ]
    seqs = [orjson.loads(p.communicate(timeout=60)[0])["appended_seq"] for p in procs]
    assert sorted(seqs, key=lambda x: x is not None) == [None, None, None, 1]
    assert [e["kind"] for e in jsonl((s / "updates.jsonl").read_bytes())] == ["session", "state"]


# -- the typer-free start (cli/fastpath.py) ------------------------------------------------------

def test_instructions_option_table_is_the_typer_commands() -> None:
    command = table_is_the_typer_commands("instructions")
    assert [(p.name, p.required, p.default) for p in command.params if p.param_type_name == "argument"] == [("directory", False, ".")]


def test_instructions_plain_spellings_are_parsed_without_typer_and_the_rest_left_to_it() -> None:
    from catty_ctx.cli.instructions import parse_args

    assert parse_args([]) == {}  # (DIR: here, run's default)
    assert parse_args(["src/app", "--json"]) == {"directory": "src/app", "as_json": True}
    assert parse_args(["--append", "S", "--no-global", "--lock-timeout=0"]) == {"append": "S", "no_global": True, "lock_timeout": 0.0}
    assert parse_args(["--append=-", "-"]) == {"append": "-", "directory": "-"}
    for typer_says in (["--help"], ["-h"], ["a", "b"], ["--append"], ["--lock-timeout", "-1"], ["--lock-timeout", "x"], ["--json=yes"],
                       ["--no-global=1"], ["--bogus"], ["-x"], ["--global"]):
        assert parse_args(typer_says) is None, typer_says


def test_instructions_two_parsers_give_the_same_output_files_and_exit(repo: Path, tmp_path: Path) -> None:
    blank, recorded, s = tmp_path / "blank", tmp_path / "recorded", tmp_path / "s"
    cli("append", str(blank), "--create", "-q", check=True)
    shutil.copytree(blank, recorded)
    cli("instructions", str(repo / "app"), "--append", str(recorded), check=True)

    def fresh(template: Path) -> Any:
        def setup() -> None:  # the command may append: each parser starts from the same session
            shutil.rmtree(s, ignore_errors=True)
            shutil.copytree(template, s)
        return setup

    cases: list[tuple[list[str], Any]] = [
        ([str(repo / "app"), "--json"], None), ([str(repo / "app"), "--no-global"], None), ([str(repo), "--json", "--no-global"], None),
        (["--json"], None), ([str(tmp_path / "nope")], None), ([str(repo / "app"), "--append", str(s)], fresh(blank)),
        ([str(repo / "app"), "--append", str(s), "--json", "--lock-timeout", "2"], fresh(blank)),
        ([str(repo / "app"), "--append", str(s)], fresh(recorded)), ([str(repo), "--append", str(tmp_path / "none")], None),
        ([str(repo), "--lock-timeout", "-1"], None), ([str(repo), str(repo / "app")], None), ([str(repo), "--append"], None),
    ]
    for args, setup in cases:
        both_parsers("instructions", *args, setup=setup, outcome=writes_below(tmp_path))
    assert [e["kind"] for e in jsonl((s / "updates.jsonl").read_bytes())] == ["session", "state"]


def test_a_plain_instructions_never_loads_typer_or_rich(repo: Path, tmp_path: Path) -> None:
    s = tmp_path / "s"
    cli("append", str(s), "--create", "-q", check=True)
    for args, status in (([str(repo / "app")], 0), ([str(repo), "--json", "--no-global"], 0), ([str(repo / "app"), "--append", str(s)], 0),
                         ([str(tmp_path / "nope")], 2)):
        assert plain_run_loads("instructions", *args) == (status, []), args
    assert [e["kind"] for e in jsonl((s / "updates.jsonl").read_bytes())] == ["session", "state"]  # the plain --append did append

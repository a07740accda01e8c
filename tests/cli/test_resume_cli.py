"""`catty-ctx resume`: formats, repair at the boundary, the resumable rule."""
from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from support import FIXTURES, cli, jsonl


def test_resume_repairs_in_memory_says_so_and_leaves_the_log(tmp_path: Path) -> None:
    d = tmp_path / "d"
    shutil.copytree(FIXTURES / "sessions" / "dangling", d)
    before = (d / "updates.jsonl").read_bytes()
    proc = cli("resume", str(d), "--format", "openai", check=True)
    doc = orjson.loads(proc.stdout)
    assert [m["role"] for m in doc["messages"]] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert "not executed" in doc["messages"][4]["content"]
    assert b"1 dangling call" in proc.stderr
    assert (d / "updates.jsonl").read_bytes() == before


def test_resume_items_is_json_lines_of_the_view(demo: Path) -> None:
    items = jsonl(cli("resume", str(demo), check=True).stdout)
    view = orjson.loads(cli("inspect", str(demo), "--items", "--json", check=True).stdout)["items"]
    assert items == [r["item"] for r in view]


def test_anthropic_puts_results_in_the_next_user_message(tmp_path: Path) -> None:
    d = tmp_path / "d"
    shutil.copytree(FIXTURES / "sessions" / "dangling", d)
    doc = orjson.loads(cli("resume", str(d), "--format", "anthropic", check=True).stdout)
    assert doc["system"] == "You are a coding agent."
    last = doc["messages"][-1]
    assert last["role"] == "user" and [b["type"] for b in last["content"]] == ["tool_result", "tool_result", "text"]


def test_a_directory_without_summary_is_not_resumable(tmp_path: Path) -> None:
    d = tmp_path / "d"
    shutil.copytree(FIXTURES / "broken" / "no-summary", d)
    proc = cli("resume", str(d))
    err = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1 and "summary.json" in err[0] and "catty-ctx repair" in err[0]
    assert proc.stdout == b""


def test_an_unknown_format_is_a_usage_error(demo: Path) -> None:
    proc = cli("resume", str(demo), "--format", "xml")
    assert proc.returncode == 2 and b"unknown format" in proc.stderr


def test_resume_starts_without_typer_and_both_parsers_agree(demo: Path) -> None:
    """`resume` parses its plain spellings itself (cli/fastpath.py); anything else goes to typer, with the same answers."""
    from catty_ctx.cli.resume import parse_args
    from support import both_parsers, plain_run, table_is_the_typer_commands

    table_is_the_typer_commands("resume")  # (its options, and their least and greatest values)
    assert parse_args([str(demo), "-f", "openai"]) == {"session": str(demo), "fmt": "openai"}
    for typer_says in ([], [str(demo), "-f=openai"], [str(demo), "--format"], ["--help"], [str(demo), "x"]):
        assert parse_args(typer_says) is None, typer_says
    for args in ([str(demo)], [str(demo), "--format", "anthropic"], [str(demo), "-f", "openai"], [str(demo), "--format=nope"],
                 [str(demo / "missing")]):
        both_parsers("resume", *args)
    status, loaded, proc = plain_run("resume", str(demo), "-f", "openai")
    assert (status, loaded) == (0, []) and orjson.loads(proc.stdout)["messages"]

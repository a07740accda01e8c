"""`catty-ctx segment list|show|grep`: the typer-free start of its subcommands (cli/fastpath.py).

What the subcommands answer is held by tests/test_segments.py; here, that both parsers give
the same answers and a plain spelling never loads the CLI framework."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from support import both_parsers, cli, plain_run_loads, table_is_the_typer_commands

SUBCOMMANDS = ("list", "show", "grep")


def _archived(s: Path) -> Path:
    """S (a new session) with three turns compacted into segment_000 and a fourth after it."""
    cli("append", "--create", str(s), "--session-id", "seg-1", "-q", check=True)
    for n, word in enumerate(["alpha", "bravo", "charlie", "delta"], 1):
        lines = [{"kind": "message", "id": f"u{n}", "role": "user", "text": f"turn {n}: tell me about {word}"},
                 {"kind": "message", "id": f"a{n}", "role": "assistant", "text": f"{word.upper()} is the answer of turn {n}"}]
        cli("append", str(s), "-q", input=b"".join(orjson.dumps(x) + b"\n" for x in lines), check=True)
        if n == 3:
            cli("compact", str(s), "--force", "--mode", "segments", check=True)
    return s


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_each_subcommands_option_table_is_the_typer_commands(sub: str) -> None:
    from catty_ctx.cli.segment import POSITIONAL

    table_is_the_typer_commands(f"segment {sub}", arguments=list(POSITIONAL[sub]))


def test_plain_spellings_are_parsed_without_typer_and_the_rest_left_to_it() -> None:
    from catty_ctx.cli.segment import parse_args

    assert parse_args(["list", "S"]) == {"subcommand": "list", "session": "S"}
    assert parse_args(["list", "--json", "S"]) == {"subcommand": "list", "session": "S", "as_json": True}
    assert parse_args(["show", "S", "0"]) == {"subcommand": "show", "session": "S", "number": "0"}
    assert parse_args(["grep", "S", "TEXT"]) == {"subcommand": "grep", "session": "S", "pattern": "TEXT"}
    assert parse_args(["grep", "-i", "S", "--regex", "a|b", "--json"]) == {
        "subcommand": "grep", "session": "S", "pattern": "a|b", "ignore_case": True, "regex": True, "as_json": True}
    assert parse_args(["grep", "S", "-E", "--ignore-case", "--", "-x"]) == {
        "subcommand": "grep", "session": "S", "pattern": "-x", "regex": True, "ignore_case": True}
    for typer_says in ([], ["--help"], ["-h"], ["bogus", "S"], ["--", "list", "S"], ["list"], ["list", "S", "T"], ["list", "S", "-h"],
                       ["list", "S", "--json=1"], ["list", "S", "-i"], ["show", "S"], ["show", "S", "-1"], ["show", "S", "0", "--json"],
                       ["grep", "S"], ["grep", "S", "x", "-iE"], ["grep", "S", "x", "-i=1"], ["grep", "S", "x", "--regex=yes"],
                       ["grep", "S", "x", "--bogus"]):
        assert parse_args(typer_says) is None, typer_says


def test_both_parsers_give_the_same_output_and_exit(tmp_path: Path, demo: Path) -> None:
    s = str(_archived(tmp_path / "s"))
    cases = [
        ["list", s], ["list", s, "--json"], ["list", str(demo)], ["list", str(tmp_path / "missing")], ["show", s, "0"], ["show", s, "000"],
        ["show", s, "7"], ["show", s, "../summary.json"], ["grep", s, "bravo"], ["grep", "--json", s, "-i", "CHARLIE"],
        ["grep", s, "-E", "turn [12]:", "--json"], ["grep", s, "delta"], ["grep", s, "-E", "("], ["list", s, "--bogus"], ["grep", s],
        ["bogus", s],
    ]
    for args in cases:
        both_parsers("segment", *args)
    both_parsers("segment", "list", "-", input=(demo / "updates.jsonl").read_bytes())


def test_a_plain_segment_subcommand_never_loads_typer_or_rich(tmp_path: Path) -> None:
    s = str(_archived(tmp_path / "s"))
    for args, status in ((["list", s], 0), (["list", s, "--json"], 0), (["show", s, "0"], 0), (["show", s, "9"], 2), (["grep", s, "alpha"], 0),
                         (["grep", s, "-i", "-E", "ALPHA|BRAVO", "--json"], 0), (["grep", s, "delta"], 1), (["list", str(tmp_path / "no")], 2)):
        assert plain_run_loads("segment", *args) == (status, []), args

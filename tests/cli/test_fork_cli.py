"""`catty-ctx fork`: the child, --dry-run and refusals."""
from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from support import FIXTURES, both_parsers, cli, plain_run_loads, table_is_the_typer_commands, writes_below


def test_fork_at_turn_prints_the_child(demo: Path, tmp_path: Path) -> None:
    doc = orjson.loads(cli("fork", str(demo), str(tmp_path / "c"), "--at-turn", "1", "--json", check=True).stdout)
    assert doc["forked_from_seq"] == 14 and doc["turns"] == 1 and doc["parent_session_id"] == "demo-0001"
    rep = orjson.loads(cli("inspect", str(tmp_path / "c"), "--json", check=True).stdout)
    assert rep["turns"] == 1 and rep["session_id"] == doc["session_id"]


def test_dry_run_writes_nothing(demo: Path, tmp_path: Path) -> None:
    doc = orjson.loads(cli("fork", str(demo), str(tmp_path / "c"), "--dry-run", "--json", check=True).stdout)
    assert doc["dry_run"] and doc["events"] == 22
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]


def test_a_non_empty_dest_exits_2(demo: Path, tmp_path: Path) -> None:
    proc = cli("fork", str(demo), str(demo))
    assert proc.returncode == 2 and len(proc.stderr.decode().strip().splitlines()) == 1


def test_fork_needs_a_directory(demo: Path, tmp_path: Path) -> None:
    proc = cli("fork", "-", str(tmp_path / "c"), input=(demo / "updates.jsonl").read_bytes())
    assert proc.returncode == 2 and b"needs a session directory" in proc.stderr
    assert not (tmp_path / "c").exists()


def test_an_invalid_parent_exits_65_with_one_line_and_no_dest(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "broken" / "invalid", tmp_path / "p")
    proc = cli("fork", str(tmp_path / "p"), str(tmp_path / "c"))
    err = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 65 and len(err) == 1 and "updates.jsonl:4:" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p"]


def _turn(s: Path, n: int, word: str) -> None:
    """One turn: a user question and an assistant answer, each naming WORD."""
    lines = [{"kind": "message", "id": f"u{n}", "role": "user", "text": f"turn {n}: tell me about {word}"},
             {"kind": "message", "id": f"a{n}", "role": "assistant", "text": f"{word} is the answer of turn {n}"}]
    cli("append", str(s), "-q", input=b"".join(orjson.dumps(x) + b"\n" for x in lines), check=True)


def _compact_segments(s: Path) -> None:
    cli("compact", str(s), "--force", "--mode", "segments", check=True)


def _grep(s: Path, word: str) -> list[dict[str, object]]:
    proc = cli("segment", "grep", str(s), word)
    assert proc.returncode in (0, 1), proc.stderr
    return [orjson.loads(line) for line in proc.stdout.splitlines()]


def test_a_fork_never_copies_a_segment_reaching_past_the_fork_point(tmp_path: Path) -> None:
    s = tmp_path / "s"
    cli("append", "--create", str(s), "-q", check=True)
    for n, word in enumerate(["alpha", "bravo", "charlie"], 1):
        _turn(s, n, word)
    _compact_segments(s)  # segment_000 covers all three turns
    assert _grep(s, "charlie")
    doc = orjson.loads(cli("fork", str(s), str(tmp_path / "d"), "--at-turn", "1", "--json", check=True).stdout)
    d = tmp_path / "d"
    assert _grep(d, "charlie") == [] and _grep(d, "bravo") == []  # nothing from after the fork
    assert doc["segments"] == 0 and doc["segments_left_out"] == 1
    assert not (d / "segments" / "segment_000.md").exists()
    assert orjson.loads((d / "segments" / "index.json").read_bytes()) == {"segments": []}  # rebuilt, not copied
    listed = cli("segment", "list", str(d), "--json", check=True).stdout
    assert b"segment_000" not in listed
    assert b"alpha" in (d / "updates.jsonl").read_bytes()  # the turn kept is whole in the child's log


def test_a_fork_keeps_the_segments_it_holds_and_counts_segment_files_only(tmp_path: Path) -> None:
    s = tmp_path / "s"
    cli("append", "--create", str(s), "-q", check=True)
    _turn(s, 1, "alpha")
    _turn(s, 2, "bravo")
    _compact_segments(s)  # segment_000: turns 1-2, its compaction before turn 3
    _turn(s, 3, "charlie")
    _turn(s, 4, "delta")
    _compact_segments(s)  # segment_001: turns 3-4, past the fork point below
    doc = orjson.loads(cli("fork", str(s), str(tmp_path / "d"), "--at-turn", "3", "--json", check=True).stdout)
    d = tmp_path / "d"
    assert doc["segments"] == 1 and doc["segments_left_out"] == 1  # not 3: index.json and INDEX.md are not segments
    assert sorted(p.name for p in (d / "segments").iterdir()) == ["INDEX.md", "index.json", "segment_000.md"]
    assert [r["file"] for r in orjson.loads((d / "segments" / "index.json").read_bytes())["segments"]] == ["segment_000.md"]
    assert "segment_001" not in (d / "segments" / "INDEX.md").read_text()
    assert _grep(d, "bravo") and _grep(d, "delta") == []
    assert cli("repair", str(d), "--check").returncode == 0
    whole = orjson.loads(cli("fork", str(s), str(tmp_path / "all"), "--json", check=True).stdout)
    assert whole["segments"] == 2 and whole["segments_left_out"] == 0


# -- the typer-free start (cli/fastpath.py) ------------------------------------------------------

def test_forks_option_table_is_the_typer_commands() -> None:
    command = table_is_the_typer_commands("fork")
    # DEST may be left out with --to (the agent's own folder); `run` refuses its absence without it.
    assert [(p.name, p.required) for p in command.params if p.param_type_name == "argument"] == [("session", True), ("dest", False)]


def test_forks_plain_spellings_are_parsed_without_typer_and_the_rest_left_to_it() -> None:
    from catty_ctx.cli.fork import parse_args

    assert parse_args(["S", "D"]) == {"session": "S", "dest": "D"}
    assert parse_args(["S", "--to", "claude", "--max-bytes", "9"]) == {"session": "S", "to": "claude", "max_bytes": 9}
    assert parse_args(["S", "D", "--at-turn", "3", "--json"]) == {"session": "S", "dest": "D", "at_turn": 3, "as_json": True}
    assert parse_args(["--model=m", "S", "--cwd", "/w", "D", "--dry-run", "--at-turn=0"]) == {
        "session": "S", "dest": "D", "model": "m", "cwd": "/w", "dry_run": True, "at_turn": 0}
    assert parse_args(["--", "S", "-D"]) == {"session": "S", "dest": "-D"}
    for typer_says in (["--help"], ["S", "D", "-h"], [], ["S", "D", "E"], ["S", "D", "--at-turn", "-1"], ["S", "D", "--at-turn", "1.5"],
                       ["S", "D", "--at-turn"], ["S", "D", "--json=1"], ["S", "D", "--bogus"], ["S", "-D"], ["S", "D", "--lock-timeout", "1"]):
        assert parse_args(typer_says) is None, typer_says


def test_forks_two_parsers_give_the_same_output_files_and_exit(demo: Path, tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "broken" / "invalid", tmp_path / "invalid")
    child, full = tmp_path / "child", tmp_path / "full"

    def fresh() -> None:  # the command writes: each parser starts without the child
        shutil.rmtree(child, ignore_errors=True)
        full.mkdir(exist_ok=True)
        (full / "taken").write_text("x")

    cases: list[tuple[list[str], bytes | None]] = [
        ([str(demo), str(child)], None), ([str(demo), str(child), "--at-turn", "1", "--json"], None),
        ([str(demo), str(child), "--dry-run", "--at-turn=0"], None), ([str(demo), str(full)], None), ([str(demo), str(demo), "--json"], None),
        ([str(tmp_path / "missing"), str(child)], None), ([str(tmp_path / "invalid"), str(child)], None),
        ([str(demo), str(child), "--at-turn", "9"], None), ([str(demo), str(child), "--at-turn", "-1"], None), ([str(demo)], None),
        (["-", str(child)], (demo / "updates.jsonl").read_bytes()), ([str(demo), str(child), "--model", "m2", "--cwd", "/w", "--json"], None),
    ]
    for args, stdin in cases:
        both_parsers("fork", *args, input=stdin, setup=fresh, outcome=writes_below(tmp_path))
    summary = orjson.loads((child / "summary.json").read_bytes())  # the last case, run by typer, did fork
    assert (summary["session_kind"], summary["model"], summary["cwd"]) == ("fork", "m2", "/w")


def test_a_plain_fork_never_loads_typer_or_rich(demo: Path, tmp_path: Path) -> None:
    for args, status in (([str(demo), str(tmp_path / "a")], 0), ([str(demo), str(tmp_path / "b"), "--at-turn", "1", "--json"], 0),
                         ([str(demo), str(tmp_path / "c"), "--dry-run"], 0), ([str(demo), str(demo)], 2),
                         ([str(tmp_path / "missing"), str(tmp_path / "d")], 2)):
        assert plain_run_loads("fork", *args) == (status, []), args
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "demo"]  # the plain runs did fork (not --dry-run)
    assert orjson.loads(cli("inspect", str(tmp_path / "b"), "--json", check=True).stdout)["turns"] == 1


def test_a_fork_of_a_session_without_segments_never_loads_the_compact_package(demo: Path, tmp_path: Path) -> None:
    heavy = ("typer", "click", "rich", "catty_ctx.compact.pipeline")
    assert plain_run_loads("fork", str(demo), str(tmp_path / "a"), heavy=heavy) == (0, [])
    assert (tmp_path / "a" / "summary.json").is_file() and not (tmp_path / "a" / "segments").exists()
    s = tmp_path / "s"
    cli("append", "--create", str(s), "-q", check=True)
    _turn(s, 1, "alpha")
    _compact_segments(s)
    assert plain_run_loads("fork", str(s), str(tmp_path / "b"), heavy=heavy) == (0, [])  # its segments are copied by the session wing
    assert (tmp_path / "b" / "segments" / "segment_000.md").is_file()


def test_fork_without_dest_or_to_is_a_usage_error(demo: Path) -> None:
    proc = cli("fork", str(demo))
    assert proc.returncode == 2 and b"needs DEST" in proc.stderr
    proc = cli("fork", str(demo), "D", "--max-bytes", "5")
    assert proc.returncode == 2 and b"--max-bytes needs --to" in proc.stderr

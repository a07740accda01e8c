"""`catty-ctx prune`: the request on stdout, reports on stderr, the log never touched."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson

from support import FIXTURES, both_parsers, call, cli, jsonl, msg, plain_run, result, session_event, write_log


def long_session(path: Path, turns: int = 16, size: int = 6000, window: int = 20_000) -> Path:
    evs: list[dict[str, Any]] = [session_event(window=window)]
    for n in range(1, turns + 1):
        evs += [msg("user", f"turn {n}", f"u{n}"), msg("assistant", "", f"a{n}"), call(f"c{n}", "read_file", {"path": f"f{n}"}),
                result(f"c{n}", f"{n} " + "v" * size)]
    evs.append(msg("user", "and now?", "last"))
    return write_log(path, evs)


def snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_the_log_is_byte_identical_after_prune(tmp_path: Path) -> None:
    d = long_session(tmp_path / "s")
    before = snapshot(d)
    for strategy in ("cache-aware", "tiered"):
        proc = cli("prune", str(d), "--strategy", strategy, "--stats", "--clear-inputs", check=True)
        assert b"omitted" in proc.stdout or b"cleared" in proc.stdout
    assert snapshot(d) == before  # no file changed, none added (not even a lock file)


def test_prints_items_one_a_line_with_placeholders_naming_seq_and_command(tmp_path: Path) -> None:
    d = long_session(tmp_path / "s")
    items = jsonl(cli("prune", str(d), check=True).stdout)
    assert all("role" in it and "kind" not in it for it in items)
    cleared = [it for it in items if it.get("pruned")]
    assert cleared and all(f"catty-ctx inspect {d} --seq {it['seq']}`" in it["output"] for it in cleared)
    shown = orjson.loads(cli("inspect", str(d), "--seq", str(cleared[0]["seq"]), "--json", check=True).stdout)
    assert shown["kind"] == "tool_result" and shown["output"].startswith(f"{cleared[0]['call_id'][1:]} vvv")


def test_prune_dash_reads_an_event_stream(tmp_path: Path) -> None:
    d = long_session(tmp_path / "s")
    by_dir = cli("prune", str(d), "--session-ref", "S", check=True).stdout
    by_pipe = cli("prune", "-", "--session-ref", "S", input=(d / "updates.jsonl").read_bytes(), check=True).stdout
    assert by_pipe == by_dir and by_dir


def test_prune_dash_also_takes_an_item_stream(tmp_path: Path) -> None:
    d = long_session(tmp_path / "s", window=200_000)
    items = cli("inspect", str(d), "--items", check=True).stdout
    stream = b"".join(orjson.dumps(r["item"]) + b"\n" for r in jsonl(items))
    out = jsonl(cli("prune", "-", "--window", "20000", "--strategy", "tiered", input=stream, check=True).stdout)
    assert len(out) == len(jsonl(items)) and any(it.get("pruned") for it in out)


def test_stats_report_tokens_before_after_and_what_was_cleared(tmp_path: Path) -> None:
    d = long_session(tmp_path / "s")
    proc = cli("prune", str(d), "--stats", check=True)
    st = orjson.loads(proc.stderr.splitlines()[-1])["stats"]
    assert st["strategy"] == "cache-aware" and st["window"] == 20_000
    assert st["request_tokens_before"] > 20_000 > st["request_tokens_after"] > 0
    assert st["tool_uses_cleared"] > 0 and st["tokens_cleared"] == st["request_tokens_before"] - st["request_tokens_after"]
    inspected = orjson.loads(cli("inspect", str(d), "--json", check=True).stdout)
    assert st["request_tokens_before"] == inspected["tokens"]  # SPEC token estimates, as inspect counts them


def test_stats_follow_usage_events(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "hi", "u1"), msg("assistant", "hello", "a1"),
                                   {"kind": "usage", "model": "m", "input": 900, "output": 50, "cache_read": 4000, "cache_write": 0, "reasoning": 0},
                                   msg("user", "again", "u2")])
    st = orjson.loads(cli("prune", str(d), "--stats", check=True).stderr)["stats"]
    # the last usage's context size (4,950) plus the estimate of the one item after it
    assert st["request_tokens_before"] == orjson.loads(cli("inspect", str(d), "--json", check=True).stdout)["tokens"]
    assert 4950 < st["request_tokens_before"] < 4950 + 20


def test_previous_reports_the_unchanged_prefix(tmp_path: Path) -> None:
    d = long_session(tmp_path / "s", turns=6, window=200_000)
    first = tmp_path / "req1.jsonl"
    first.write_bytes(cli("prune", str(d), check=True).stdout)
    with open(d / "updates.jsonl", "ab") as f:
        f.write(orjson.dumps({"v": 1, "seq": 26, "ts": "2026-11-01T00:01:00.000Z", **msg("assistant", "done", "a7")}) + b"\n")
    proc = cli("prune", str(d), "--previous", str(first), check=True)
    rep = orjson.loads(proc.stderr)["previous"]
    n_prev = len(first.read_bytes().splitlines())
    assert rep["items"] == n_prev and rep["request_items"] == n_prev + 1
    assert rep["tokens"] < rep["request_tokens"] and 0.9 < rep["reuse"] < 1
    assert rep["first_change_index"] == n_prev


def test_output_pipes_into_inspect(tmp_path: Path) -> None:
    d = long_session(tmp_path / "s")
    pruned = cli("prune", str(d), check=True).stdout
    rep = orjson.loads(cli("inspect", "-", "--json", input=pruned, check=True).stdout)
    assert rep["stream"] == "items" and rep["problems"]["orphan"] == 0 and rep["problems"]["dangling"] == 0


def test_bad_options_exit_2_and_bad_data_exit_65(tmp_path: Path) -> None:
    d = long_session(tmp_path / "s")
    assert cli("prune", str(d), "--strategy", "fastest").returncode == 2
    assert cli("prune", str(d), "--high", "20", "--low", "50").returncode == 2
    assert cli("prune", str(tmp_path / "nope")).returncode == 2
    bad = tmp_path / "b"
    shutil.copytree(d, bad)
    with open(bad / "updates.jsonl", "ab") as f:
        f.write(b'{"v":1,"seq":"x"}\n')
    proc = cli("prune", str(bad))
    assert proc.returncode == 65 and len(proc.stderr.decode().strip().splitlines()) == 1
    assert "updates.jsonl:" in proc.stderr.decode() and b"Traceback" not in proc.stderr


def test_torn_tail_warns_once(tmp_path: Path) -> None:
    d = tmp_path / "t"
    shutil.copytree(FIXTURES / "sessions" / "torn", d)
    proc = cli("prune", str(d), check=True)
    assert proc.stderr.decode().count("warning:") == 1 and "torn final line" in proc.stderr.decode()


def test_previous_that_is_not_an_item_stream_exits_65_naming_the_line(tmp_path: Path) -> None:
    d = long_session(tmp_path / "s", turns=2)
    prev = tmp_path / "prev.jsonl"
    prev.write_bytes(b'{"role":"user","text":"a"}\n{"kind":"message"}\n')
    proc = cli("prune", str(d), "--previous", str(prev))
    assert proc.returncode == 65 and f"{prev}:2:" in proc.stderr.decode() and proc.stdout == b""
    assert cli("prune", str(d), "--previous", str(tmp_path / "missing")).returncode == 2


def test_below_the_marks_the_output_is_the_view_itself_rewinds_applied(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "one", "u1"), msg("assistant", "a", "a1"),
                                   msg("user", "two", "u2"), msg("assistant", "b", "a2"), {"kind": "rewind", "to_turn": 1},
                                   msg("user", "two again", "u3")])
    pruned = jsonl(cli("prune", str(d), check=True).stdout)
    view = [r["item"] for r in orjson.loads(cli("inspect", str(d), "--items", "--json", check=True).stdout)["items"]]
    assert pruned == view and [it["text"] for it in pruned] == ["one", "a", "two again"]


def test_stats_item_tokens_agree_with_inspect_of_the_same_request(tmp_path: Path) -> None:
    """`inspect -` of an item stream counts the items' estimates: so do item_tokens_before
    (the request unpruned, as resume prints it) and item_tokens_after (prune's output)."""
    d = long_session(tmp_path / "s")
    with open(d / "updates.jsonl", "ab") as f:  # a usage event: the request size then includes provider overhead
        last = orjson.loads((d / "updates.jsonl").read_bytes().splitlines()[-1])["seq"]
        f.write(orjson.dumps({"v": 1, "seq": last + 1, "ts": "2026-11-01T01:00:00.000Z", "kind": "usage", "model": "m", "input": 40_000,
                              "output": 10, "cache_read": 0, "cache_write": 0, "reasoning": 0}) + b"\n")
    proc = cli("prune", str(d), "--stats", check=True)
    st = orjson.loads(proc.stderr.splitlines()[-1])["stats"]
    pruned = orjson.loads(cli("inspect", "-", "--json", input=proc.stdout, check=True).stdout)["tokens"]
    unpruned_items = cli("resume", "-", "--format", "items", input=(d / "updates.jsonl").read_bytes(), check=True).stdout
    unpruned = orjson.loads(cli("inspect", "-", "--json", input=unpruned_items, check=True).stdout)["tokens"]
    assert st["item_tokens_after"] == pruned and st["item_tokens_before"] == unpruned
    assert st["request_tokens_before"] > st["item_tokens_before"]  # the overhead the usage showed
    assert "tokens_before" not in st and "tokens_after" not in st  # no field whose name hides what it counts


# -- the typer-free start (cli/fastpath.py) ------------------------------------------------------

def test_prunes_option_table_is_the_typer_commands() -> None:
    from support import table_is_the_typer_commands

    table_is_the_typer_commands("prune")  # (its options, and their least and greatest values)


def test_prunes_plain_spellings_are_parsed_without_typer_and_the_rest_left_to_it() -> None:
    from catty_ctx.cli.prune import parse_args

    assert parse_args(["S", "--stats", "--omit-age", "8", "--high=70.5"]) == {"session": "S", "stats": True, "omit_age": 8, "high": 70.5}
    for typer_says in (["--help"], [], ["S", "T"], ["S", "--window", "0"], ["S", "--keep", "-1"], ["S", "--low", "x"], ["S", "--stats=1"],
                       ["S", "--window"], ["S", "--bogus"]):
        assert parse_args(typer_says) is None, typer_says


def test_prunes_two_parsers_give_the_same_output_and_exit(tmp_path: Path) -> None:
    s = long_session(tmp_path / "s")
    first = cli("prune", str(s), check=True).stdout
    (tmp_path / "prev.jsonl").write_bytes(first)
    cases: list[tuple[list[str], bytes | None]] = [
        ([str(s)], None), ([str(s), "--stats", "--strategy", "tiered", "--omit-age", "2"], None),
        ([str(s), "--previous", str(tmp_path / "prev.jsonl"), "--keep", "1", "--clear-inputs"], None),
        ([str(s), "--exclude-tools=read_file", "--window", "5000"], None), (["-", "--stats"], (s / "updates.jsonl").read_bytes()),
        (["-"], first), ([str(s), "--strategy", "nope"], None), ([str(s), "--low", "90", "--high", "10"], None),
        ([str(tmp_path / "missing")], None),
    ]
    for args, stdin in cases:
        both_parsers("prune", *args, input=stdin)


def test_a_plain_prune_never_loads_typer_or_rich(tmp_path: Path) -> None:
    s = long_session(tmp_path / "s")
    status, loaded, proc = plain_run("prune", str(s), "--stats")
    assert (status, loaded) == (0, []) and proc.stdout


def test_stats_on_a_terminal_is_a_small_table_and_one_json_line_in_a_pipe(demo: Path) -> None:
    from support import cli_on_a_terminal

    code, _out, shown = cli_on_a_terminal("prune", str(demo), "--stats")
    assert code == 0 and b'{"stats"' not in shown
    assert b"request_tokens_after" in shown and b"strategy" in shown and b"cache-aware" in shown
    piped = cli("prune", str(demo), "--stats")
    assert orjson.loads(piped.stderr.splitlines()[-1])["stats"]["strategy"] == "cache-aware"

"""`inspect` says what its numbers are: where the total comes from, how close it is to the
threshold (the names `compact` uses), what a request stream counts, and a ROOT's sessions are
the same objects as one session's report (issue 32 items 5 and 6; docs/json.md)."""
from __future__ import annotations

import shutil
from pathlib import Path

import orjson
from support import FIXTURES, cli, cli_on_a_terminal, msg, session_event, write_log


def _type_names(doc: dict[str, object]) -> dict[str, str]:
    return {k: type(v).__name__ for k, v in doc.items()}


def test_a_roots_sessions_are_the_objects_of_inspect_s(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / "sessions", root)
    listed = orjson.loads(cli("inspect", str(root), "--json").stdout)["sessions"]
    assert [Path(r["path"]).name for r in listed] == ["dangling", "demo", "torn"]
    for row in listed:
        alone = orjson.loads(cli("inspect", row["path"], "--json").stdout)
        assert row.keys() == alone.keys()
        # the same types: `problems` an object, `compactions` a list, in both
        assert _type_names(row) == _type_names(alone), row["path"]
        assert row == alone


def test_the_total_says_it_comes_from_provider_usage(demo: Path) -> None:
    rep = orjson.loads(cli("inspect", str(demo), "--json", check=True).stdout)
    assert rep["tokens_from"] == "provider_usage"
    seqs = [orjson.loads(line)["seq"] for line in (demo / "updates.jsonl").read_bytes().splitlines()
            if orjson.loads(line)["kind"] == "usage"]
    assert rep["usage_seq"] == seqs[-1]
    # the figure is the provider's context plus the estimates after it, not the estimates' sum
    assert rep["estimated_tokens"] != rep["tokens"] and rep["pending_tokens"] >= 0
    code, _err, shown = cli_on_a_terminal("inspect", str(demo), stream="stdout", columns=120)
    assert code == 0
    assert f"provider usage at seq {seqs[-1]}".encode() in shown and b"estimated after it" in shown


def test_without_usage_the_total_is_an_estimate(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", [session_event(), msg("user", "hello " * 50), msg("assistant", "hi")])
    rep = orjson.loads(cli("inspect", str(s), "--json", check=True).stdout)
    assert rep["tokens_from"] == "estimate" and rep["usage_seq"] is None
    assert rep["tokens"] == rep["estimated_tokens"] and rep["pending_tokens"] == 0
    _code, _err, shown = cli_on_a_terminal("inspect", str(s), stream="stdout", columns=120)
    assert b"estimated from the items" in shown


def test_the_threshold_status_uses_compacts_names(tmp_path: Path) -> None:
    small = write_log(tmp_path / "small", [session_event(window=1000), msg("user", "x" * 400)])
    big = write_log(tmp_path / "big", [session_event(window=1000), msg("user", "x" * 4000)])
    for path, status in ((small, "below_threshold"), (big, "over_threshold")):
        rep = orjson.loads(cli("inspect", str(path), "--json", check=True).stdout)
        checked = orjson.loads(cli("compact", str(path), "--check", "--json").stdout)
        assert rep["status"] == status
        assert checked["status"] == status, checked


def test_a_request_stream_says_it_counts_items(demo: Path, tmp_path: Path) -> None:
    items = orjson.loads(cli("inspect", str(demo), "--items", "--json", check=True).stdout)["items"]
    stream = tmp_path / "request.jsonl"
    stream.write_bytes(b"".join(orjson.dumps(r["item"]) + b"\n" for r in items))
    code, _err, shown = cli_on_a_terminal("inspect", "-", stream="stdout", columns=120, stdin=stream)
    assert code == 0
    assert b"counts are of items, not events" in shown
    assert b"events  " not in shown  # no "events 0" row


def test_every_table_groups_thousands(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / "sessions", root)
    tokens = orjson.loads(cli("inspect", str(root / "demo"), "--json").stdout)["tokens"]
    assert tokens >= 1000
    _code, _err, alone = cli_on_a_terminal("inspect", str(root / "demo"), stream="stdout", columns=120)
    _code, _err, listed = cli_on_a_terminal("inspect", str(root), stream="stdout", columns=120)
    assert f"{tokens:,}".encode() in alone and f"{tokens:,}".encode() in listed
    assert f" {tokens} ".encode() not in listed

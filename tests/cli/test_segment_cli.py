"""`catty-ctx segment list|show|grep` and `compact --mode segments` on the command line."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from conftest import call, cli, jsonl, msg, result, session_event, write_log


def _segmented(path: Path, detail: str = "balanced") -> Path:
    s = write_log(path, [
        session_event(),
        msg("user", "Find the flaky test.", "u1"),
        msg("assistant", "Running it.", "a1"),
        call("c1", "run_terminal_cmd", {"command": "pytest -x tests/test_net.py"}),
        result("c1", "FAILED tests/test_net.py::test_timeout - TimeoutError", is_error=True),
    ])
    cli("compact", str(s), "--force", "--mode", "segments", "--detail", detail, check=True)
    return s


def test_segment_list_json_shape(tmp_path: Path) -> None:
    s = _segmented(tmp_path / "s")
    out = orjson.loads(cli("segment", "list", str(s), "--json", check=True).stdout)
    (seg,) = out["segments"]
    assert {k: seg[k] for k in ("segment", "file", "seq_from", "seq_to", "turns")} == {"segment": 0, "file": "segment_000.md", "seq_from": 0, "seq_to": 4, "turns": 1}
    assert seg["bytes"] > 0 and isinstance(seg["keywords"], list)


@pytest.mark.parametrize("detail", ["none", "minimal", "balanced", "verbose"])
def test_segment_show_prints_the_file_at_every_detail_level(tmp_path: Path, detail: str) -> None:
    s = _segmented(tmp_path / "s", detail)
    proc = cli("segment", "show", str(s), "0", check=True)
    assert proc.stdout == (s / "segments" / "segment_000.md").read_bytes() and f"- detail: {detail}".encode() in proc.stdout
    turns = proc.stdout.partition(b"## Turns")[2]
    assert (b"TimeoutError" in turns) == (detail != "none")


def test_segment_grep_gives_segment_seq_role_and_line(tmp_path: Path) -> None:
    s = _segmented(tmp_path / "s")
    rows = jsonl(cli("segment", "grep", str(s), "timeouterror", "-i", check=True).stdout)
    turn = [r for r in rows if r["seq"] is not None]
    assert turn and turn[0]["segment"] == 0 and turn[0]["seq"] == 4 and turn[0]["role"] == "tool" and "TimeoutError" in turn[0]["line"]
    doc = orjson.loads(cli("segment", "grep", str(s), "-E", r"pytest -x \S+", "--json", check=True).stdout)
    assert {m["seq"] for m in doc["matches"]} >= {2}
    assert cli("segment", "grep", str(s), "no such text anywhere").returncode == 1


def test_traversal_is_refused_with_exit_2(tmp_path: Path) -> None:
    s = _segmented(tmp_path / "s")
    for name in ("../updates.jsonl", "/etc/passwd", "9"):
        proc = cli("segment", "show", str(s), name)
        assert proc.returncode == 2 and proc.stderr.startswith(b"catty-ctx: error:") and not proc.stdout, name


def test_segment_needs_a_session_directory(tmp_path: Path) -> None:
    s = _segmented(tmp_path / "s")
    proc = cli("segment", "list", "-", input=(s / "updates.jsonl").read_bytes())
    assert proc.returncode == 2 and b"needs a session directory" in proc.stderr


def test_every_segment_command_has_help_and_an_example() -> None:
    for sub in ("list", "show", "grep", None):
        out = cli("segment", *([sub] if sub else []), "--help", check=True).stdout.decode()
        assert "Example" in out, sub

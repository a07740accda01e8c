"""The segments archive (reference 3.4): files, index, detail levels, reading and confinement."""
from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from catty_ctx.session.segments import DETAILS, list_segments, render_segment, segment_path, write_segment
from catty_ctx.errors import UsageError
from catty_ctx.session.store import Session
from support import cli, jsonl

SUMMARY = "## Current Work\nFixing parse_header in src/parse.py so ParseError is raised for empty input."


def _events(demo: Path) -> list[dict]:
    return [e for e in Session.open(demo).events() if e["kind"] in ("message", "tool_call", "tool_result")]


@pytest.mark.parametrize("detail", DETAILS)
def test_each_detail_level_renders_banner_metadata_stats_summary(demo: Path, detail: str) -> None:
    text, info = render_segment(0, _events(demo), SUMMARY, detail=detail, created_at="2026-11-01T00:00:00Z")
    assert text.startswith("# Segment 000") and "Historical record, read-only" in text
    assert "- seq: 1..21" in text and "read_file (1)" in text and "run_terminal_cmd (2)" in text
    assert "src/parse.py" in text and "- tool errors: 1" in text and SUMMARY in text
    assert info.turns == 2 and info.tools == {"run_terminal_cmd": 2, "read_file": 1, "edit_file": 1}
    if detail == "none":
        assert "## Turns" not in text
    else:
        assert "#### [seq 2] user" in text
    if detail == "minimal":
        assert '#### [seq 4] tool_call read_file(path="tests/test_parse.py")' in text
    if detail == "verbose":
        assert "AssertionError: assert None == []" in text


def test_balanced_clips_long_texts_and_verbose_keeps_them(demo: Path) -> None:
    evs = _events(demo)
    evs.append({"v": 1, "seq": 99, "ts": "t", "kind": "tool_result", "call_id": "cx", "output": "x" * 5000, "is_error": False})
    balanced, _ = render_segment(0, evs, SUMMARY, detail="balanced")
    verbose, _ = render_segment(0, evs, SUMMARY, detail="verbose")
    assert "x" * 5000 in verbose and "x" * 5000 not in balanced and "x" * 500 in balanced


def test_a_segment_is_capped_at_whole_items_with_a_notice(demo: Path) -> None:
    evs = [{"v": 1, "seq": i, "ts": "t", "kind": "tool_result", "call_id": f"c{i}", "output": "y" * 1000, "is_error": False} for i in range(1, 200)]
    text, info = render_segment(0, evs, SUMMARY, cap=20_000)
    assert info.truncated and len(text.encode()) <= 20_000 and "Segment capped at 20000 bytes" in text
    assert text.count("y" * 1000) == text.count("tool_result (")  # no item is cut in half


def test_keywords_come_from_current_work(demo: Path) -> None:
    _, info = render_segment(0, _events(demo), SUMMARY)
    assert "parse_header" in info.keywords and "src/parse.py" in info.keywords and "the" not in info.keywords


def test_write_numbers_from_zero_and_keeps_both_indexes(demo: Path) -> None:
    evs = _events(demo)
    a = write_segment(demo, evs[:6], SUMMARY, compaction_id="k1")
    b = write_segment(demo, evs[6:], "second", detail="minimal", compaction_id="k2")
    assert (a.segment, a.file, b.segment, b.file) == (0, "segment_000.md", 1, "segment_001.md")
    index = orjson.loads((demo / "segments" / "index.json").read_bytes())["segments"]
    assert [r["segment"] for r in index] == [0, 1] and index[0]["seq_from"] == 1 and index[1]["seq_to"] == 21
    md = (demo / "segments" / "INDEX.md").read_text()
    assert "| Segment | File | Turns | Approx bytes | Keywords |" in md and "| 001 | segment_001.md |" in md
    assert [r["segment"] for r in list_segments(demo)] == [0, 1]


def test_segment_commands_list_show_grep(demo: Path) -> None:
    write_segment(demo, _events(demo), SUMMARY)
    listed = orjson.loads(cli("segment", "list", str(demo), "--json", check=True).stdout)
    row = listed["segments"][0]
    assert {"segment", "file", "seq_from", "seq_to", "turns", "bytes", "keywords"} <= row.keys()
    shown = cli("segment", "show", str(demo), "0", check=True).stdout.decode()
    assert shown == (demo / "segments" / "segment_000.md").read_text()
    matches = jsonl(cli("segment", "grep", str(demo), "assertionerror", "-i", check=True).stdout)
    assert matches and matches[0]["segment"] == 0 and matches[0]["seq"] == 7 and matches[0]["role"] == "tool_result"
    regex = orjson.loads(cli("segment", "grep", str(demo), "-E", r"pytest (tests|-q)", "--json", check=True).stdout)
    assert {m["seq"] for m in regex["matches"]} >= {5, 17}
    assert cli("segment", "grep", str(demo), "no such text anywhere").returncode == 1


@pytest.mark.parametrize("name", ["../summary.json", "/etc/passwd", "segment_000.md/../../x", "-1", "0x1", "..", "segment_0.md"])
def test_names_that_are_not_segments_are_refused(demo: Path, name: str) -> None:
    write_segment(demo, _events(demo), SUMMARY)
    with pytest.raises(UsageError):
        segment_path(demo, name)
    proc = cli("segment", "show", str(demo), name)
    assert proc.returncode == 2 and b"Traceback" not in proc.stderr and proc.stdout == b""


def test_a_symlink_out_of_the_session_is_refused(demo: Path, tmp_path: Path) -> None:
    (demo / "segments").mkdir()
    secret = tmp_path / "secret.md"
    secret.write_text("secret")
    os.symlink(secret, demo / "segments" / "segment_000.md")
    with pytest.raises(UsageError, match="symbolic link"):
        segment_path(demo, 0)
    assert b"secret" not in cli("segment", "show", str(demo), "0").stdout
    assert b"secret" not in cli("segment", "grep", str(demo), "secret").stdout


def test_segments_need_a_directory(demo: Path) -> None:
    proc = cli("segment", "list", "-", input=(demo / "updates.jsonl").read_bytes())
    assert proc.returncode == 2 and b"needs a session directory" in proc.stderr

"""Segments mode of the compaction pipeline: the span archived, numbered under the lock,
written before the event, and pointed at by the summary carrier."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from catty_ctx.compact.pipeline import compact_session
from catty_ctx.session.segments import DETAILS, list_segments
from catty_ctx.session.store import Session
from catty_ctx.view.fold import view
from support import ROOT, call, msg, result, session_event, write_log


def _session(path: Path) -> Path:
    return write_log(path, [
        session_event(),
        msg("system", "sys"),
        msg("user", "Port the tokenizer; keep `tokenize_line` signature.", "u1"),
        msg("assistant", "Reading it. " + "A" * 3000, "a1"),
        call("c1", "read_file", {"path": "src/tok.py"}), result("c1", "def tokenize_line(s):\n    return s.split()\n"),
        call("c2", "run_terminal_cmd", {"command": "pytest -q"}), result("c2", "Error: ImportError: no module named tok", is_error=True),
        msg("assistant", "Fixed the import.", "a2"),
    ])


def _compact(s: Path, detail: str = "verbose") -> dict:
    res = compact_session(Session.open(s), force=True, mode="segments", detail=detail)
    assert res.status == "compacted" and res.segment
    return orjson.loads((s / "updates.jsonl").read_bytes().splitlines()[-1])


@pytest.mark.parametrize("detail", DETAILS)
def test_the_span_is_archived_at_the_chosen_detail_before_the_event(tmp_path: Path, detail: str) -> None:
    s = _session(tmp_path / "s")
    ev = _compact(s, detail)
    text = (s / "segments" / ev["segment"]).read_text()
    assert ev["segment"] == "segment_000.md" and f"- detail: {detail}" in text and f"- compaction: {ev['id']}" in text
    assert "- seq: 1..8" in text and ev["summary"].splitlines()[0] in text
    assert ("pytest -q" in text.partition("## Turns")[2]) == (detail != "none")
    (row,) = list_segments(s)
    assert row["compaction_id"] == ev["id"] and row["seq_to"] == 8


def test_the_carrier_points_at_the_segment_and_the_index(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    _compact(s)
    carrier = next(i for i in view(s) if i.get("synthetic") == "compaction_summary")
    assert "segments/ (this one: segment_000.md)" in carrier["text"] and "INDEX.md" in carrier["text"]


def test_the_next_segment_holds_only_the_new_span(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    _compact(s)
    Session.open(s).append([msg("user", "second span only", "u2"), msg("assistant", "ok", "a3")])
    ev = _compact(s, "minimal")
    turns = (s / "segments" / "segment_001.md").read_text().partition("## Turns")[2]
    assert ev["segment"] == "segment_001.md" and "second span only" in turns and "Port the tokenizer" not in turns
    assert [(r["segment"], r["seq_from"], r["seq_to"]) for r in list_segments(s)] == [(0, 1, 8), (1, 10, 11)]


def test_numbering_continues_from_the_highest_on_disk(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    (s / "segments").mkdir()
    (s / "segments" / "segment_004.md").write_text("older")
    assert _compact(s)["segment"] == "segment_005.md"


def test_dry_run_names_the_segment_it_would_write(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    res = compact_session(Session.open(s), force=True, mode="segments", dry_run=True)
    assert res.segment == "segment_000.md" and not (s / "segments").exists()


def test_two_compactions_at_once_never_share_a_segment_number(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    Session.open(s).append([msg("user", f"filler {i} " + "f" * 300, f"f{i}") for i in range(3000)])
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "from catty_ctx.compact.pipeline import compact_session\nfrom catty_ctx.errors import LockBusy\nfrom catty_ctx.session.store import Session\n"
        f"try:\n    compact_session(Session.open({str(s)!r}), force=True, mode='segments')\n"
        "except LockBusy:\n    sys.exit(75)\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(3)]
    codes = sorted(p.wait(timeout=60) for p in procs)
    assert codes[0] == 0 and set(codes) <= {0, 75}  # the losers are told to try again
    events = [orjson.loads(line) for line in (s / "updates.jsonl").read_bytes().splitlines()]
    named = [e["segment"] for e in events if e["kind"] == "compaction"]
    assert 1 <= len(named) <= codes.count(0) and len(set(named)) == len(named)  # a late starter may find nothing new
    assert [r["file"] for r in list_segments(s)] == named

"""The segments archive: segment files at every detail level, the indexes, numbering under
the lock, reading and searching, and refusing anything that is not a segment."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from catty_ctx.compact import compact_session
from catty_ctx.compact.segments import (
    DETAILS,
    Span,
    grep_segments,
    keywords,
    list_segments,
    render_segment,
    resolve_segment,
    write_segment,
)
from catty_ctx.errors import UsageError
from catty_ctx.store import Session
from catty_ctx.view import view
from conftest import call, msg, result, session_event, write_log


def _session(path: Path) -> Path:
    return write_log(path, [
        session_event(),
        msg("system", "sys"),
        msg("user", "Port the tokenizer; keep `tokenize_line` signature.", "u1"),
        msg("assistant", "Reading it. " + "A" * 3000, "a1"),
        call("c1", "read_file", {"path": "src/tok.py"}), result("c1", "def tokenize_line(s):\n    return s.split()\n" + "B" * 900),
        call("c2", "run_terminal_cmd", {"command": "pytest -q"}), result("c2", "Error: ImportError: no module named tok", is_error=True),
        msg("assistant", "Fixed the import.", "a2"),
    ])


def _compact(s: Path, detail: str = "verbose") -> dict:
    res = compact_session(Session.open(s), force=True, mode="segments", detail=detail)
    assert res.status == "compacted" and res.segment
    return orjson.loads((s / "updates.jsonl").read_bytes().splitlines()[-1])


def test_segment_file_banner_metadata_statistics_summary_and_turns(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    ev = _compact(s)
    text = (s / "segments" / "segment_000.md").read_text()
    assert ev["segment"] == "segment_000.md"
    assert "read-only" in text and "segment grep" in text  # the banner says what it is and how to search it
    assert f"- compaction: {ev['id']}" in text and "- seq: 0..8" in text and "- turns: 1" in text
    assert "- roles: assistant 2, system 1, tool 2, user 1" in text
    assert "- tools used: read_file (1), run_terminal_cmd (1)" in text and "- files: src/tok.py" in text
    assert "- tool errors: 1" in text and "### 1. Primary Request and Intent" in text
    assert "### [seq 5] tool c1\ndef tokenize_line(s):" in text and "A" * 3000 in text


def test_detail_levels(tmp_path: Path) -> None:
    sizes = {}
    for detail in DETAILS:
        s = _session(tmp_path / detail)
        _compact(s, detail)
        text = (s / "segments" / "segment_000.md").read_text()
        sizes[detail] = len(text)
        if detail == "none":
            assert "## Turns" not in text and "tokenize_line" in text  # the summary still names it
        elif detail == "minimal":
            assert '- [seq 3] assistant: Reading it.' in text and 'read_file(path="src/tok.py")' in text
            assert "- [seq 7] tool c2: error: Error: ImportError" in text and "B" * 200 not in text
        elif detail == "balanced":
            assert "A" * 1988 + " […1012 more characters…]" in text and "B" * 900 not in text
        else:
            assert "A" * 3000 in text and "B" * 900 in text
    assert sizes["none"] < sizes["minimal"] < sizes["balanced"] < sizes["verbose"]


def test_segments_are_capped_at_whole_items_with_a_notice() -> None:
    items = [{"seq": i, "role": "assistant", "text": "x" * 1000} for i in range(100)]
    data, _ = render_segment(0, Span("s", "k", 0, 99, items, "S", "verbose"), cap=20_000)
    text = data.decode()
    assert len(data) <= 20_000 and text.rstrip().endswith("in updates.jsonl)]")
    shown = text.count("### [seq ")
    assert f"{100 - shown} later items are not shown (seq {shown}..99" in text
    assert text.count("x" * 1000) == shown  # no item is cut in half


def test_index_md_and_index_json(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    _compact(s)
    Session.open(s).append([msg("user", "now the parser", "u2"), msg("assistant", "Working on parse_block in src/parse.py", "a3")])
    ev = _compact(s, "minimal")
    index = orjson.loads((s / "segments" / "index.json").read_bytes())["segments"]
    assert [(e["segment"], e["file"], e["seq_from"], e["seq_to"], e["turns"]) for e in index] == [
        (0, "segment_000.md", 0, 8, 1), (1, "segment_001.md", 9, 11, 1)]
    assert index[1]["compaction"] == ev["id"] and index[1]["bytes"] == (s / "segments" / "segment_001.md").stat().st_size
    assert index[0]["tools"] == {"read_file": 1, "run_terminal_cmd": 1} and index[0]["files"] == ["src/tok.py"] and index[0]["errors"] == 1
    md = (s / "segments" / "INDEX.md").read_text()
    assert "| Segment | File | Turns | Approx bytes | Keywords |" in md and "| 1 | segment_001.md | 1 |" in md
    assert "parse_block" in index[1]["keywords"]


def test_the_second_segment_holds_only_the_new_span(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    _compact(s)
    Session.open(s).append([msg("user", "second span only", "u2")])
    _compact(s)
    text = (s / "segments" / "segment_001.md").read_text()
    turns = text.split("## Turns", 1)[1]
    assert "second span only" in turns and "Port the tokenizer" not in turns


def test_keywords_come_from_current_work_without_stopwords() -> None:
    summary = "## 7. Pending Tasks\n- zebra_task\n\n## 8. Current Work\nThe assistant was fixing `parse_block` in src/parse.py and the tests.\n\n## 9. Optional Next Step\nx"
    assert keywords(summary) == ["fixing", "parse_block", "src/parse.py", "tests"]


def test_carrier_points_at_the_segment_and_index(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    _compact(s)
    carrier = next(i for i in view(s) if i.get("synthetic") == "compaction_summary")
    assert "segments/ (this one: segment_000.md)" in carrier["text"] and "INDEX.md" in carrier["text"]


def test_numbering_continues_from_the_highest_on_disk(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    (s / "segments").mkdir()
    (s / "segments" / "segment_004.md").write_text("older")
    assert _compact(s)["segment"] == "segment_005.md"


def test_an_uncommitted_segment_is_not_listed(tmp_path: Path) -> None:
    """A crash after the segment but before the event: the index entry does not count."""
    s = _session(tmp_path / "s")
    write_segment(s, s / "updates.jsonl", Span("x", "never-committed", 0, 8, view(s), "S", "none"))
    assert list_segments(s, s / "updates.jsonl") == []
    _compact(s)
    listed = list_segments(s, s / "updates.jsonl")
    assert [e["file"] for e in listed] == ["segment_001.md"]
    assert "never-committed" not in (s / "segments" / "index.json").read_text()


def test_grep_fixed_string_regex_and_ignore_case(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    _compact(s)
    hits = list(grep_segments(s, s / "updates.jsonl", "ImportError"))
    turn_hits = [h for h in hits if h["seq"] is not None]
    assert turn_hits == [{"segment": 0, "file": "segment_000.md", "line_no": turn_hits[0]["line_no"], "seq": 7, "role": "tool", "line": "Error: ImportError: no module named tok"}]
    assert list(grep_segments(s, s / "updates.jsonl", "tokenize_line(s)"))  # a fixed string by default
    assert not list(grep_segments(s, s / "updates.jsonl", "tokenize_line(s)", regex=True))  # as a regex: a group
    assert not list(grep_segments(s, s / "updates.jsonl", "importerror"))
    assert list(grep_segments(s, s / "updates.jsonl", "importerror", ignore_case=True))
    assert [h["seq"] for h in grep_segments(s, s / "updates.jsonl", r"def \w+_line", regex=True)] == [5]
    with pytest.raises(UsageError):
        list(grep_segments(s, s / "updates.jsonl", "(", regex=True))


@pytest.mark.parametrize("name", ["../summary.json", "/etc/passwd", "..", "segment_000.md/../../x", "-1", "segment_0.md", ""])
def test_names_that_are_not_segments_are_refused(tmp_path: Path, name: str) -> None:
    s = _session(tmp_path / "s")
    _compact(s)
    with pytest.raises(UsageError):
        resolve_segment(s, name)


def test_symlinks_out_of_the_folder_are_refused(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    _compact(s)
    secret = tmp_path / "secret.md"
    secret.write_text("secret")
    os.symlink(secret, s / "segments" / "segment_007.md")
    with pytest.raises(UsageError):
        resolve_segment(s, "7")
    assert resolve_segment(s, "0") == s / "segments" / "segment_000.md"
    assert resolve_segment(s, "segment_000.md") == s / "segments" / "segment_000.md"


def test_a_copied_session_reads_its_own_segments(tmp_path: Path) -> None:
    """A fork copies the segments folder: its reads never reach back into the parent."""
    s = _session(tmp_path / "s")
    _compact(s)
    child = tmp_path / "child"
    shutil.copytree(s, child)
    (s / "segments" / "segment_000.md").write_text("parent changed")
    assert [h["file"] for h in grep_segments(child, child / "updates.jsonl", "ImportError")]
    assert resolve_segment(child, "0").parent == child / "segments"


def test_two_compactions_at_once_never_share_a_segment_number(tmp_path: Path) -> None:
    import subprocess
    import sys

    from conftest import ROOT

    s = _session(tmp_path / "s")
    Session.open(s).append([msg("user", f"filler {i} " + "f" * 300, f"f{i}") for i in range(3000)])
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "from catty_ctx.compact import compact_session\nfrom catty_ctx.errors import LockBusy\nfrom catty_ctx.store import Session\n"
        f"try:\n    compact_session(Session.open({str(s)!r}), force=True, mode='segments')\n"
        "except LockBusy:\n    sys.exit(75)\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(3)]
    codes = sorted(p.wait(timeout=60) for p in procs)
    assert codes[0] == 0 and set(codes) <= {0, 75}  # the losers are told to try again
    events = [orjson.loads(line) for line in (s / "updates.jsonl").read_bytes().splitlines()]
    named = [e["segment"] for e in events if e["kind"] == "compaction"]
    assert 1 <= len(named) <= codes.count(0) and len(set(named)) == len(named)  # a late starter may find nothing new
    assert [e["file"] for e in list_segments(s, s / "updates.jsonl")] == named
    assert all((s / "segments" / n).is_file() for n in named)

"""The one grown-file cursor (catty_ctx.session.cursor): a rule a test, and its three readers
(the hooks' transcript mirror, the status line's tally, the usage scan's per-file cache) going
through it."""
from __future__ import annotations

import ast
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import ROOT

from catty_ctx.agents import mirror
from catty_ctx.agents.transcript_tally import read_transcript
from catty_ctx.session.cursor import GROWN, NEW, UNCHANGED, WINDOW, Cursor, Reading, line_end, look
from catty_ctx.usage.filescan import scan_file

SID = "5b1c0d2e-0000-4000-8000-00000000c0de"


def _read(path: Path) -> tuple[os.stat_result, bytes]:
    return path.stat(), path.read_bytes()


def _look(path: Path, cursor: Cursor | None) -> tuple[Reading, bytes]:
    st, data = _read(path)
    return look(cursor, st, lambda at, n: data[at : at + n]), data


def _cursor(path: Path, cursor: Cursor | None = None) -> Cursor:
    """PATH read on from CURSOR to the end of its complete lines."""
    reading, data = _look(path, cursor)
    return reading.advance(line_end(data, reading.start, len(data)), lambda at, n: data[at : at + n])


def _lines(n: int, start: int = 0, width: int = 300) -> bytes:
    return b"".join(b'{"n": %d, "text": "%s"}\n' % (i, b"x" * width) for i in range(start, start + n))


def _rewrite_in_place(path: Path, at: int) -> None:
    """One byte at AT changed, the file's size and inode kept (as an editor writing in place)."""
    with open(path, "r+b") as f:
        f.seek(at)
        old = f.read(1)
        f.seek(at)
        f.write(b"y" if old != b"y" else b"z")


def test_a_grown_file_resumes_at_the_offset_and_reads_no_byte_before_it(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(_lines(40))
    first = _cursor(path)
    assert first.offset == path.stat().st_size > 2 * WINDOW
    with open(path, "ab") as f:
        f.write(_lines(3, 40))
    reading, data = _look(path, first)
    assert (reading.verdict, reading.start) == (GROWN, first.offset)
    asked: list[int] = []

    def read(at: int, n: int) -> bytes:
        asked.append(at)
        return data[at : at + n]

    after = reading.advance(len(data), read)
    assert asked and min(asked) >= first.offset  # the windows before the offset are the ones look read
    assert after == _cursor(path)  # the same cursor as a read of the whole file
    assert _look(path, after)[0].verdict == UNCHANGED


def test_a_file_rewritten_with_the_same_size_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(_lines(40))
    ino = path.stat().st_ino
    for at in (5, path.stat().st_size - 20):  # in the head window, in the window before the offset
        cursor = _cursor(path)
        _rewrite_in_place(path, at)
        reading, _ = _look(path, cursor)
        assert path.stat().st_ino == ino and (reading.verdict, reading.start) == (NEW, 0)


def test_a_truncated_file_starts_over(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(_lines(40))
    cursor = _cursor(path)
    with open(path, "r+b") as f:
        f.truncate(cursor.offset - 1)
    assert _look(path, cursor)[0].verdict == NEW
    # cut back, then grown past the old offset again with other bytes: still another file
    path.write_bytes(_lines(39) + _lines(2, 100))
    reading, _ = _look(path, cursor)
    assert path.stat().st_size > cursor.offset and (reading.verdict, reading.start) == (NEW, 0)


def test_another_inode_or_device_starts_over(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(_lines(40))
    cursor = _cursor(path)
    copy = tmp_path / "log.new"
    copy.write_bytes(path.read_bytes() + _lines(1, 40))  # the same bytes and more: a grown copy renamed over it
    os.replace(copy, path)
    assert path.stat().st_ino != cursor.ino and _look(path, cursor)[0].verdict == NEW
    moved = _cursor(path)
    assert _look(path, moved)[0].verdict == UNCHANGED
    elsewhere = Cursor(moved.dev + 1, moved.ino, moved.offset, moved.head, moved.tail)
    assert _look(path, elsewhere)[0].verdict == NEW


def test_bytes_appended_within_the_last_incomplete_line_resume_at_its_start(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"n": 0}\n{"n": 1, "te')  # a line still being written
    cursor = _cursor(path)
    assert cursor.offset == len(b'{"n": 0}\n')
    with open(path, "ab") as f:
        f.write(b'xt": "done"}\n')
    reading, data = _look(path, cursor)
    assert (reading.verdict, reading.start) == (GROWN, cursor.offset)
    assert data[reading.start : line_end(data, reading.start, len(data))] == b'{"n": 1, "text": "done"}\n'


def test_the_cursor_round_trips_through_json_and_refuses_what_it_did_not_write(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    for data in (b"", b'{"n": 0}\n', _lines(40)):
        path.write_bytes(data)
        cursor = _cursor(path)
        doc = json.loads(json.dumps({"mine": 1, **cursor.as_json()}))
        assert Cursor.from_json(doc) == cursor and doc["head"][0] == doc["tail"][0] == min(WINDOW, len(data))
    other_window = {**doc, "head": [WINDOW // 2, doc["head"][1]]}
    for bad in (None, [], {}, {**doc, "inode": "1"}, {**doc, "offset": -1}, {**doc, "tail": [WINDOW]}, other_window):
        assert Cursor.from_json(bad) is None


# -- the three readers of a grown file go through the cursor


CALLERS = ("catty_ctx/agents/mirror.py", "catty_ctx/agents/transcript_tally.py", "catty_ctx/usage/filescan.py")
# A comparison holding one of these decides "the same file" itself: a stat's identity anywhere,
# and in the three readers the kept fingerprints too.
_IDENTITY = {"st_ino", "st_dev", "inode"}
_FINGERPRINTS = {"fp", "head", "tail"}
# Modules that compare a file's identity for a reason of their own.
_OWN_REASON = {
    "catty_ctx/session/cursor.py": "the cursor",
    "catty_ctx/session/batch.py": "the record of a batch being written names the log it was written for (catty's own, under its lock)",
    "catty_ctx/session/event_ids.py": "the id index's header names the log it was written for (catty's own, under its lock)",
    "catty_ctx/index/store.py": "the search index asks only whether a file changed since it was indexed (size, mtime, inode), to read it again whole: no resume",
}


def _compares(tree: ast.AST, names: set[str]) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            held = {n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else n.value
                    for n in ast.walk(node) if isinstance(n, (ast.Attribute, ast.Name)) or (isinstance(n, ast.Constant) and type(n.value) is str)}
            if held & names:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_but_the_cursor_decides_whether_a_file_is_the_one_it_read() -> None:
    for path in sorted((ROOT / "catty_ctx").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text())
        if name in CALLERS:
            imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "session.cursor" for a in n.names}
            assert "look" in imported, name
            assert _compares(tree, _FINGERPRINTS) == [], name
        if name not in _OWN_REASON:
            assert _compares(tree, _IDENTITY) == [], name


def _transcript(path: Path, start: int, n: int) -> None:
    """N Claude Code user records from START, appended."""
    with open(path, "ab") as f:
        for i in range(start, start + n):
            rec = {"type": "user", "uuid": f"u-{i:04d}", "parentUuid": f"u-{i - 1:04d}" if i else None, "sessionId": SID,
                   "timestamp": f"2026-12-01T10:00:{i % 60:02d}Z", "cwd": "/home/dev/proj", "isSidechain": False,
                   "message": {"role": "user", "content": f"Step {i}: " + "x" * 300}}
            f.write(json.dumps(rec).encode() + b"\n")


def _mirror(tmp_path: Path, path: Path, _kept: dict[str, Any]) -> Cursor | None:
    mirror.sync(tmp_path / "m", str(path), "claude", SID)
    return Cursor.from_json(mirror.read_cursor(tmp_path / "m"))


def _tally(tmp_path: Path, path: Path, _kept: dict[str, Any]) -> Cursor | None:
    return Cursor.from_json(read_transcript(str(path), str(tmp_path / "cache")))


def _usage(_tmp_path: Path, path: Path, kept: dict[str, Any]) -> Cursor | None:
    _path, entry, nbytes, _error = scan_file((str(path), None, kept.get("entry"), False, None))
    assert entry is not None
    kept["entry"], kept["read"] = entry, nbytes
    return Cursor(entry.dev, entry.ino, entry.off, entry.head, entry.tail)


@pytest.mark.parametrize("reader", [_mirror, _tally, _usage], ids=["mirror", "tally", "usage"])
def test_each_reader_keeps_the_cursor_of_the_file_it_read(tmp_path: Path, reader: Callable[..., Cursor | None]) -> None:
    """Its state holds the cursor as `session.cursor` writes it; grown, it is carried on from
    there; rewritten before its offset (the same size and inode), the file is read again."""
    path = tmp_path / "t.jsonl"
    kept: dict[str, Any] = {}
    _transcript(path, 0, 30)
    assert reader(tmp_path, path, kept) == _cursor(path)
    old = _cursor(path)
    _transcript(path, 30, 2)
    assert reader(tmp_path, path, kept) == _cursor(path, old) == _cursor(path)
    if kept:
        assert kept["read"] == path.stat().st_size - old.offset  # the usage scan read on from the offset
    _rewrite_in_place(path, path.stat().st_size - 50)  # inside the last record's text
    assert reader(tmp_path, path, kept) == _cursor(path)
    if kept:
        assert kept["read"] == path.stat().st_size

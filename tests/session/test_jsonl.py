"""The one JSON Lines reader: line numbers and offsets, the torn-tail rule in its three forms,
the line-length limit, the file:line problem text, file objects as sources, and the
byte-marker prefilter."""
from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from catty_ctx.session import jsonl
from catty_ctx.errors import DataError, ExitCode


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "log.jsonl"
    path.write_bytes(data)
    return path


def test_lines_come_with_their_number_and_offset(tmp_path: Path) -> None:
    path = write(tmp_path, b'{"a":1}\n{"b":22}\n\n{"c":3}\n')
    assert [(r.lineno, r.offset, r.data) for r in jsonl.raw_lines(path)] == [
        (1, 0, b'{"a":1}'), (2, 8, b'{"b":22}'), (3, 17, b""), (4, 18, b'{"c":3}'),
    ]
    assert list(jsonl.numbered_lines(path)) == [(1, b'{"a":1}\n'), (2, b'{"b":22}\n'), (3, b"\n"), (4, b'{"c":3}\n')]


def test_a_torn_tail_of_a_log_is_warned_about_and_skipped_even_when_it_parses(tmp_path: Path) -> None:
    path = write(tmp_path, b'{"a":1}\n{"b":2}')
    warnings: list[str] = []
    assert list(jsonl.records(path, "LOG", warn=warnings.append)) == [{"a": 1}]
    assert warnings == ["LOG:2: torn final line (7 bytes, no newline) ignored; 'catty-ctx repair' quarantines it"]
    torn: list[tuple[int, int]] = []
    assert [n for n, _ in jsonl.numbered_lines(path, on_torn=lambda *t: torn.append(t))] == [1]
    assert torn == [(2, 7)]


def test_another_programs_last_line_without_newline_is_taken_when_it_parses(tmp_path: Path) -> None:
    torn: list[tuple[int, int]] = []
    ok = write(tmp_path, b'{"a":1}\n{"b":2}')
    assert [line for _, line in jsonl.numbered_lines(ok, final="parses", on_torn=lambda *t: torn.append(t))] == [b'{"a":1}\n', b'{"b":2}']
    cut = write(tmp_path, b'{"a":1}\n{"b":')
    assert [n for n, _ in jsonl.numbered_lines(cut, final="parses", on_torn=lambda *t: torn.append(t))] == [1]
    assert torn == [(2, 5)]


def test_a_stream_that_must_be_valid_keeps_its_last_line_for_the_caller_to_judge(tmp_path: Path) -> None:
    cut = write(tmp_path, b'{"a":1}\n{"b":')
    assert list(jsonl.numbered_lines(cut, final="kept")) == [(1, b'{"a":1}\n'), (2, b'{"b":')]


def test_an_invalid_line_of_a_log_is_one_problem_naming_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, b'{"a":1}\n{"b":2}\nnot json\n{"c":3}\n')
    values = jsonl.records(path, "LOG")
    assert next(values) == {"a": 1} and next(values) == {"b": 2}
    with pytest.raises(DataError) as err:
        next(values)
    assert str(err.value).startswith("LOG:3: invalid JSON: ") and "\n" not in str(err.value)
    assert err.value.exit_code == ExitCode.DATA == 65


def test_a_blank_line_in_a_log_is_invalid(tmp_path: Path) -> None:
    path = write(tmp_path, b'{"a":1}\n\n')
    with pytest.raises(DataError, match="^LOG:2: invalid JSON"):
        list(jsonl.records(path, "LOG"))


def test_a_line_over_the_limit_is_refused_without_being_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl, "LIMIT", 33)  # the rule, at a size a test can write
    path = write(tmp_path, b'{"a":1}\n' + b'{"b":"' + b"x" * 100 + b'"}\n{"c":3}\n')
    for final in ("torn", "parses", "kept"):
        with pytest.raises(DataError, match=f"^LOG:2: {jsonl.TOO_LONG}$"):
            list(jsonl.numbered_lines(path, "LOG", final=final))
    with pytest.raises(DataError, match="^LOG:2: line longer than"):
        list(jsonl.records(path, "LOG"))


def test_a_file_object_is_read_from_where_it_stands_and_left_open() -> None:
    f = io.BufferedReader(io.BytesIO(b'skip\n{"a":1}\n{"b":2}\n'))  # type: ignore[arg-type]
    f.readline()
    assert list(jsonl.records(f, "STREAM")) == [{"a": 1}, {"b": 2}]
    assert not f.closed
    f.seek(5)
    assert [(r.lineno, r.offset) for r in jsonl.raw_lines(f, "STREAM", offset=5)] == [(1, 5), (2, 13)]


def test_a_missing_log_or_a_folder_is_a_data_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="^LOG: cannot read"):
        list(jsonl.records(tmp_path / "absent.jsonl", "LOG"))
    with pytest.raises(DataError, match="^DIR: is a directory"):
        list(jsonl.numbered_lines(tmp_path, "DIR"))


def test_progress_is_reported_in_steps_of_bytes_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl, "PROGRESS_STEP", 100)
    path = write(tmp_path, b"".join(b'{"n":%d,"pad":"%s"}\n' % (i, b"y" * 40) for i in range(20)))
    seen: list[int] = []
    assert len(list(jsonl.records(path, progress=seen.append))) == 20
    assert seen and seen == sorted(seen) and all(b - a >= 100 for a, b in zip(seen, seen[1:]))


def test_the_marker_prefilter_yields_each_marked_line_once_with_its_offset() -> None:
    buf = b'{"kind":"message"}\n{"kind":"compaction","x":"compaction"}\n{"kind":"tool"}\n{"kind":"compaction"}'
    hits = list(jsonl.marked_lines(buf, 0, len(buf), b'"compaction"'))
    assert hits == [(19, b'{"kind":"compaction","x":"compaction"}'), (74, b'{"kind":"compaction"}')]
    assert list(jsonl.marked_lines(buf, 0, len(buf), re.compile(rb'"(?:tool|message)"'))) == [
        (0, b'{"kind":"message"}'), (58, b'{"kind":"tool"}'),
    ]
    assert list(jsonl.marked_lines(buf, 19, 58, b"message")) == []  # only [start, end) is searched
    assert list(jsonl.marked_lines(memoryview(buf).tobytes(), 0, 18, b"kind")) == [(0, b'{"kind":"message"}')]


def test_a_marker_scan_of_a_file_leaves_out_a_torn_tail_and_reads_past_its_chunk_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl, "SCAN_CHUNK", 64)
    long = b'{"kind":"compaction","pad":"' + b"z" * 200 + b'"}\n'
    lines = [b'{"kind":"message"}\n', long, b'{"kind":"compaction"}\n', b'{"kind":"message"}\n']
    path = write(tmp_path, b"".join(lines) + b'{"kind":"compaction"')
    assert list(jsonl.scan_marked(path, b"compaction")) == [
        (len(lines[0]), long[:-1]), (len(lines[0]) + len(long), b'{"kind":"compaction"}'),
    ]
    mid = jsonl.line_start(path, len(lines[0]) + 5)
    assert mid == len(lines[0]) + len(long)
    assert [off for off, _ in jsonl.scan_marked(path, b"kind", start=mid)] == [mid, mid + len(lines[2])]
    assert [off for off, _ in jsonl.scan_marked(path, b"kind", stop=mid)] == [0, len(lines[0])]

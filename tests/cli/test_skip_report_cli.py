"""What an import left out, as stderr says it: routine skips in a note, never `None`."""
from __future__ import annotations

import re
from pathlib import Path

import orjson

from support import cli


def _claude_file(path: Path, *extra: dict) -> Path:
    base = {"sessionId": "c-1", "cwd": "/w", "isSidechain": False}
    records = [
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}},
        {**base, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2026-11-01T00:00:00Z", "message": {"role": "user", "content": "hi"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-11-01T00:00:01Z", "requestId": "r1",
         "message": {"id": "msg_1", "role": "assistant", "model": "m", "content": [{"type": "text", "text": "hello"}]}},
        {**base, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2026-11-01T00:00:00Z", "message": {"role": "user", "content": "hi"}},
        *extra,
    ]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def test_a_routine_skip_is_a_note_not_a_warning(tmp_path: Path) -> None:
    proc = cli("import", "claude", str(_claude_file(tmp_path / "c.jsonl")), check=True)
    [line] = proc.stderr.decode().splitlines()
    assert re.fullmatch(rf"catty-ctx: claude import of {re.escape(str(tmp_path))}/c.jsonl: \d+ events; left out as usual: file-history-snapshot 1, replayed 1", line), line


def test_skip_reports_never_print_none(tmp_path: Path) -> None:
    src = _claude_file(tmp_path / "c.jsonl", {"uuid": "x1", "parentUuid": "a1"}, {"note": "no type, no uuid"})
    err = cli("import", "claude", str(src), check=True).stderr.decode()
    assert "None" not in err and "(no type) " in err and "warning:" in err, err
    doc = orjson.loads(cli("import", "claude", str(src), "--out", str(tmp_path / "out"), check=True).stdout)
    assert "None" not in doc["skipped"] and "(no type)" in doc["skipped"]

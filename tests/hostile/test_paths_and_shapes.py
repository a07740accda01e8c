"""Hostile io: ids from data are never paths, links are never followed, bad shapes are data
errors (issue 29 items 1 and 5; docs/reliability.md "Confinement", "Validation")."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest
from support import cli, write_log

from catty_ctx.session.store import new_summary

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
OPENCODE = FIXTURES / "import" / "opencode" / "storage"
CODEX_LEGACY = next((FIXTURES / "import" / "codex" / "wild" / "legacy-header-and-bare-items").glob("*.jsonl"))


def _storage_with_session_id(tmp_path: Path, sid: str) -> Path:
    storage = tmp_path / "storage"
    shutil.copytree(OPENCODE, storage)
    f = storage / "session" / "prj_1" / "ses_001.json"
    doc = orjson.loads(f.read_bytes())
    doc["id"] = sid
    f.write_bytes(orjson.dumps(doc))
    return f


@pytest.mark.parametrize("sid", ["../../outside/message/ses_001", "/etc", "..", "a/b"])
def test_an_opencode_session_id_is_never_joined_into_a_path(tmp_path: Path, sid: str) -> None:
    outside = tmp_path / "outside" / "message" / "ses_001"
    outside.mkdir(parents=True)
    (outside / "msg_001.json").write_text('{"id": "msg_x", "role": "user", "text": "SECRET-OUTSIDE"}')
    f = _storage_with_session_id(tmp_path, sid)
    proc = cli("import", "opencode", str(f))
    assert proc.returncode == 65 and b"never made a path" in proc.stderr, proc.stderr
    assert b"SECRET-OUTSIDE" not in proc.stdout


def test_an_opencode_message_id_is_never_joined_into_a_path(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    shutil.copytree(OPENCODE, storage)
    m = storage / "message" / "ses_001" / "msg_001.json"
    doc = orjson.loads(m.read_bytes())
    doc["id"] = "../../../outside"
    m.write_bytes(orjson.dumps(doc))
    proc = cli("import", "opencode", str(storage / "session" / "prj_1" / "ses_001.json"))
    assert proc.returncode == 65 and b"never made a path" in proc.stderr and b"msg_001.json" in proc.stderr


@pytest.mark.parametrize("content", [5, 1.5, True])
def test_a_legacy_codex_item_with_numeric_content_is_a_data_error(tmp_path: Path, content: object) -> None:
    lines = CODEX_LEGACY.read_bytes().splitlines()
    at = next(i for i, line in enumerate(lines) if b'"content"' in line)
    rec = orjson.loads(lines[at])
    rec["content"] = content
    lines[at] = orjson.dumps(rec)
    f = tmp_path / CODEX_LEGACY.name
    f.write_bytes(b"\n".join(lines) + b"\n")
    proc = cli("import", "codex", str(f))
    assert proc.returncode == 65 and f"{f.name}:{at + 1}:".encode() in proc.stderr, proc.stderr
    assert cli("import", "codex", "--lenient", str(f)).returncode == 0


BASE = [
    {"kind": "session", "session_id": "s"},
    {"kind": "message", "id": "u1", "role": "user", "text": "hello"},
    {"kind": "message", "id": "a1", "role": "assistant", "text": "ok"},
    {"kind": "compaction", "id": "k", "mode": "summary", "through_seq": 2, "summary": "sum"},
    {"kind": "message", "id": "u2", "role": "user", "text": "again"},
]


@pytest.mark.parametrize("summary", [None, 5, [], {"a": 1}])
def test_a_compaction_whose_summary_is_not_a_string_is_a_data_error_repair_quarantines(tmp_path: Path, summary: object) -> None:
    events = [dict(e) for e in BASE]
    events[3]["summary"] = summary
    s = write_log(tmp_path / "s", events)
    (s / "summary.json").write_bytes(orjson.dumps(new_summary(events[0])))
    for args in (("inspect", str(s)), ("prune", str(s)), ("resume", str(s)), ("report", str(s), "-o", str(tmp_path / "r.html")),
                 ("segment", "list", str(s)), ("compact", str(s), "--force")):
        proc = cli(*args)
        assert proc.returncode in (0, 65), (args, proc.stderr)
        if proc.returncode == 65:
            assert b"updates.jsonl:4:" in proc.stderr, (args, proc.stderr)
    assert cli("repair", str(s)).returncode == 0
    assert cli("inspect", str(s)).returncode == 0
    assert list((s / "quarantine").glob("*.bin"))


def test_repair_never_copies_a_summary_that_is_a_link(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", BASE[:3])
    secret = tmp_path / "secret"
    secret.write_text("not json: a private key")
    os.chmod(secret, 0o600)
    (s / "summary.json").symlink_to(secret)
    proc = cli("repair", str(s))
    assert proc.returncode == 73 and b"symbolic link" in proc.stderr
    assert not (s / "quarantine").exists() or not list((s / "quarantine").glob("summary-*"))
    assert secret.read_text() == "not json: a private key"


def test_repair_never_writes_through_a_planted_quarantine_link(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", BASE[:3])
    (s / "summary.json").write_text("{broken")
    os.utime(s / "summary.json", (1_700_000_000, 1_700_000_000))
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (s / "quarantine").mkdir()
    (s / "quarantine" / "summary-1700000000.json").symlink_to(victim)
    assert cli("repair", str(s)).returncode == 0
    assert victim.read_text() == "precious"
    copies = [p for p in (s / "quarantine").glob("summary-*.json") if not p.is_symlink()]
    assert [p.read_text() for p in copies] == ["{broken"]


def test_the_quarantined_summary_keeps_the_mode_of_the_original(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", BASE[:3])
    (s / "summary.json").write_text("{broken")
    os.chmod(s / "summary.json", 0o600)
    assert cli("repair", str(s)).returncode == 0
    (copy,) = (s / "quarantine").glob("summary-*.json")
    assert copy.stat().st_mode & 0o777 == 0o600

"""Nothing foreign is ever rewritten: every writer refuses another agent's file before any change.

A Claude Code transcript, a Codex rollout, a Gemini or opencode session or a messages document,
given to `repair` as a FILE or sitting as a session folder's updates.jsonl, is left byte for byte
as it was: exit 65 and one stderr line naming the format and the `import` command to use.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from support import FIXTURES, cli, msg, session_event, write_log

IMP = FIXTURES / "import"
_DOCUMENTS = [
    IMP / "anthropic" / "conversation.json",
    IMP / "openai" / "chat.json",
    IMP / "openai" / "bare-array.json",
    *sorted((IMP / "gemini" / "legacy").glob("*.json")),
    *sorted((IMP / "opencode" / "storage" / "session").rglob("*.json")),
]
# Every session file of fixtures/import (JSONL transcripts and JSON documents), and opencode.db.
SOURCES = sorted(str(p.relative_to(IMP)) for p in IMP.rglob("*.jsonl")) + [str(p.relative_to(IMP)) for p in _DOCUMENTS] + ["opencode/opencode.db"]
ONE_PER_FORMAT = [
    "claude/projects/-home-dev-shop/sess-0001.jsonl",
    "codex/sessions/2026/10/02/rollout-2026-10-02T10-00-00-5f0c1c2a-0000-4000-8000-00000000c0de.jsonl",
    "gemini/tmp/9f3e/chats/session-2026-10-03T11-00-abcd1234.jsonl",
    "opencode/opencode.db",
    "openai/chat.json",
    "anthropic/conversation.json",
]


def _source_bytes(rel: str, tmp_path: Path) -> bytes:
    if rel == "opencode/opencode.db":
        db = tmp_path / "built-opencode.db"
        con = sqlite3.connect(db)
        con.executescript((IMP / "opencode" / "opencode-db.sql").read_text())
        con.commit()
        con.close()
        data = db.read_bytes()
        db.unlink()
        return data
    return (IMP / rel).read_bytes()


def _format(rel: str) -> str:
    return rel.split("/", 1)[0]


def _session_with(rel: str, tmp_path: Path) -> Path:
    d = tmp_path / "s"
    d.mkdir()
    (d / "updates.jsonl").write_bytes(_source_bytes(rel, tmp_path))
    return d


def _tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _refused(proc: object, fmt: str) -> None:
    err = proc.stderr.decode()  # type: ignore[attr-defined]
    assert proc.returncode == 65, err  # type: ignore[attr-defined]
    assert proc.stdout == b""  # type: ignore[attr-defined]
    lines = err.splitlines()
    assert len(lines) == 1 and "catty-ctx: error:" in lines[0], err
    assert f"catty-ctx import {fmt} " in lines[0] and "not a catty-ctx log" in lines[0], err
    assert "Traceback" not in err


@pytest.mark.parametrize("rel", SOURCES)
def test_repair_of_another_agents_file_leaves_it_byte_identical_and_names_import(rel: str, tmp_path: Path) -> None:
    folder = tmp_path / "given"
    folder.mkdir()
    source = folder / Path(rel).name
    source.write_bytes(_source_bytes(rel, tmp_path))
    before = _tree(folder)
    _refused(cli("repair", str(source)), _format(rel))
    assert _tree(folder) == before  # the file, and no quarantine or lock file beside it


@pytest.mark.parametrize("rel", SOURCES)
@pytest.mark.parametrize("command", ["repair", "compact", "append"])
def test_writers_on_a_session_folder_holding_another_agents_log_change_nothing(rel: str, command: str, tmp_path: Path) -> None:
    d = _session_with(rel, tmp_path)
    before = _tree(d)
    if command == "append":
        line = orjson.dumps({"kind": "message", "role": "user", "text": "x" * 200_000})  # would go to blobs/
        proc = cli("append", str(d), input=line + b"\n")
    elif command == "compact":
        proc = cli("compact", str(d), "--force")
    else:
        proc = cli("repair", str(d))
    _refused(proc, _format(rel))
    assert _tree(d) == before


@pytest.mark.parametrize("rel", ONE_PER_FORMAT)
@pytest.mark.parametrize(
    "args",
    [
        ["repair", "{S}", "--check"],
        ["repair", "{S}", "--dry-run"],
        ["repair", "{S}", "--force"],
        ["compact", "{S}", "--check"],
        ["compact", "{S}", "--dry-run", "--force"],
        ["compact", "{S}", "--prefire"],
        ["append", "{S}", "--create"],
        ["fork", "{S}", "{D}"],
        ["instructions", "--append", "{S}"],
    ],
    ids=lambda a: " ".join(a[2:]) if a[1] == "{S}" else " ".join(a[:2]),
)
def test_check_dry_run_and_the_other_writers_say_the_same_without_writing(rel: str, args: list[str], tmp_path: Path) -> None:
    d = _session_with(rel, tmp_path)
    (tmp_path / "AGENTS.md").write_text("Use tabs.\n")
    before = _tree(d)
    argv = [a.replace("{S}", str(d)).replace("{D}", str(tmp_path / "child")) for a in args]
    line = orjson.dumps({"kind": "message", "role": "user", "text": "hi"}) + b"\n"
    _refused(cli(*argv, input=line, cwd=tmp_path), _format(rel))
    assert _tree(d) == before
    assert not (tmp_path / "child").exists()


def test_a_transcript_without_its_final_newline_is_not_truncated_by_append(tmp_path: Path) -> None:
    """append quarantines a torn tail of its own logs; another agent's last line is not one."""
    d = tmp_path / "s"
    d.mkdir()
    data = (IMP / "claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl").read_bytes().rstrip(b"\n")
    (d / "updates.jsonl").write_bytes(data)
    _refused(cli("append", str(d), input=b'{"kind":"message","role":"user","text":"hi"}\n'), "claude")
    assert (d / "updates.jsonl").read_bytes() == data and sorted(p.name for p in d.iterdir()) == ["updates.jsonl"]


def _log_files(d: Path) -> dict[str, bytes]:
    """The session's files but its lock file (which a writer of our own logs may leave)."""
    return {k: v for k, v in _tree(d).items() if not k.endswith(".lock")}


def _mostly_invalid(tmp_path: Path) -> Path:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "hi")])
    with open(d / "updates.jsonl", "ab") as f:
        f.write(b"garbage 1\ngarbage 2\ngarbage 3\n")  # 3 of 5 lines invalid
    return d


def test_repair_refuses_a_log_mostly_invalid_unless_forced(tmp_path: Path) -> None:
    d = _mostly_invalid(tmp_path)
    before = _log_files(d)
    for extra in ([], ["--check"], ["--dry-run"]):
        proc = cli("repair", str(d), *extra)
        err = proc.stderr.decode()
        assert proc.returncode == 65 and len(err.splitlines()) == 1, err
        assert "3 of 5 lines are not valid catty-ctx events" in err and "--force" in err and "catty-ctx import auto" in err
        assert _log_files(d) == before
    assert cli("repair", str(d), "--check", "--force").returncode == 1  # reported, not refused
    assert _log_files(d) == before
    done = orjson.loads(cli("repair", str(d), "--force", "--json", check=True).stdout)
    assert done["applied"] and done["problems"]["invalid_line"] == 3
    assert len(list((d / "quarantine").glob("offset-*.bin"))) == 3
    assert cli("repair", str(d), "--check").returncode == 0


def test_half_invalid_is_still_repaired_without_force(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "hi")])
    with open(d / "updates.jsonl", "ab") as f:
        f.write(b"garbage 1\ngarbage 2\n")  # 2 of 4: not more than half
    assert orjson.loads(cli("repair", str(d), "--json", check=True).stdout)["problems"]["invalid_line"] == 2


def test_a_catty_log_with_a_damaged_first_line_is_still_ours(tmp_path: Path) -> None:
    """Ownership looks past lines that are not JSON objects to the first record."""
    d = write_log(tmp_path / "s", [session_event(), msg("user", "hi"), msg("assistant", "hello", "m2")])
    log = d / "updates.jsonl"
    log.write_bytes(b"\x00\x00 not json\n" + log.read_bytes())
    proc = cli("repair", str(d), "--dry-run")
    assert proc.returncode == 0 and "would repair" in proc.stderr.decode()


@pytest.mark.parametrize("rel", ONE_PER_FORMAT)
def test_the_refusal_names_the_format_import_auto_detects(rel: str, tmp_path: Path) -> None:
    """The hint is a command that works: the import it names reads the file."""
    log = tmp_path / Path(rel).name
    log.write_bytes(_source_bytes(rel, tmp_path))
    proc = cli("repair", str(log))
    _refused(proc, _format(rel))
    hint = proc.stderr.decode().split("import it first: ", 1)[1].rstrip(")\n").split()
    assert hint[:2] == ["catty-ctx", "import"]
    out = tmp_path / "imported"
    imported = cli(*hint[1:-1], str(out))
    assert imported.returncode == 0, imported.stderr.decode()
    assert cli("repair", str(out)).returncode == 0  # the imported session is ours: writers take it


@pytest.mark.parametrize("args", [["repair"], ["repair", "--check"], ["compact", "--force"], ["inspect"]], ids=" ".join)
def test_a_root_walk_refuses_the_foreign_session_and_goes_on(args: list[str], tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    foreign = _session_with("claude/projects/-home-dev-shop/sess-0001.jsonl", root)
    ours = write_log(root / "t", [session_event(), msg("user", "hi"), msg("assistant", "hello", "m2")])
    before = _tree(foreign)
    proc = cli(args[0], str(root), *args[1:], "--json")
    assert proc.returncode == 65, proc.stderr
    rows = orjson.loads(proc.stdout)["sessions"]
    assert [r["path"] for r in rows] == [str(ours)]  # the other session is still handled
    assert "catty-ctx import claude" in proc.stderr.decode() or args[0] == "inspect"
    assert _tree(foreign) == before

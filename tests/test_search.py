"""`search`: one pattern across catty sessions, their archives and the agents' own files."""
from __future__ import annotations

import os
import time
from pathlib import Path

import orjson
from support import cli, msg, session_event, write_log

from catty_ctx.compact.pipeline import compact_session
from catty_ctx.search import Query, search
from catty_ctx.session.store import Session

CLAUDE_ID = "11111111-2222-3333-4444-555555555555"
CODEX_ID = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _root(tmp_path: Path) -> Path:
    """A ROOT holding a catty session, a Claude Code home and a Codex home, each with a planted string."""
    root = tmp_path / "root"
    recent = {"ts": "2026-11-30T09:00:00.000Z"}
    write_log(root / "sessions" / "mine", [{**session_event("catty-1", cwd="/p/web"), **recent}, {**msg("user", "deploy says ZQ_PLANTED in catty", "u1"), **recent},
                                          {**msg("assistant", "on it", "a1"), **recent}])
    base = {"sessionId": CLAUDE_ID, "cwd": "/p/shop"}
    _jsonl(root / ".claude" / "projects" / "-p-shop" / f"{CLAUDE_ID}.jsonl", [
        {**base, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2026-11-20T10:00:00.000Z",
         "message": {"role": "user", "content": "the build fails with ZQ_PLANTED in claude"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-11-20T10:00:01.000Z",
         "message": {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "Looking."}],
                     "usage": {"input_tokens": 10, "output_tokens": 5}}}])
    _jsonl(root / ".codex" / "sessions" / "2026" / "11" / "20" / f"rollout-2026-11-20T10-00-00-{CODEX_ID}.jsonl", [
        {"timestamp": "2026-11-20T10:00:00.000Z", "type": "session_meta", "payload": {"id": CODEX_ID, "timestamp": "2026-11-20T10:00:00.000Z", "cwd": "/p/api"}},
        {"timestamp": "2026-11-20T10:00:01.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "why does ZQ_PLANTED show in codex"}]}},
        {"timestamp": "2026-11-20T10:00:02.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]}}])
    return root


def test_a_planted_string_is_found_in_a_catty_session_a_claude_file_and_a_codex_rollout(tmp_path: Path) -> None:
    root = _root(tmp_path)
    found = {m.agent: m for m in search([str(root)], Query("ZQ_PLANTED"))}
    assert set(found) == {"catty", "claude", "codex"}
    assert found["claude"].session == CLAUDE_ID and found["codex"].session == CODEX_ID and found["catty"].session == "catty-1"
    assert found["claude"].cwd == "/p/shop" and found["codex"].cwd == "/p/api" and all(m.role == "user" for m in found.values())
    for m in found.values():  # the seq is the one `inspect PATH --seq N` prints
        ev = orjson.loads(cli("inspect", m.path, "--seq", str(m.seq), "--json", check=True).stdout)
        assert "ZQ_PLANTED" in ev["text"]


def test_since_leaves_older_sessions_unread_and_agent_and_project_narrow(tmp_path: Path) -> None:
    root = _root(tmp_path)
    old = time.time() - 40 * 86_400
    claude = next((root / ".claude").rglob("*.jsonl"))
    os.utime(claude, (old, old))
    codex = next((root / ".codex").rglob("*.jsonl"))
    os.utime(codex, (old, old))
    # The Claude and Codex sessions speak on 2026-11-20 and were last written 40 days ago.
    assert {m.agent for m in search([str(root)], Query("ZQ_PLANTED", since="2026-11-25"))} == {"catty"}
    assert {m.agent for m in search([str(root)], Query("ZQ_PLANTED", until="2026-11-21"))} == {"claude", "codex"}
    assert {m.agent for m in search([str(root)], Query("ZQ_PLANTED", agent="codex"))} == {"codex"}
    assert {m.agent for m in search([str(root)], Query("ZQ_PLANTED", project="shop"))} == {"claude"}


def test_regex_ignore_case_limit_and_the_segments_archive(tmp_path: Path) -> None:
    root = _root(tmp_path)
    assert {m.agent for m in search([str(root)], Query("zq_pl.nted( show)? in (claude|codex)", regex=True, ignore_case=True))} == {"claude", "codex"}
    assert len(list(search([str(root)], Query("ZQ_PLANTED", limit=2)))) == 2
    s = root / "sessions" / "mine"
    compact_session(Session.open(s), force=True, mode="segments")
    roles = {m.role for m in search([str(s)], Query("ZQ_PLANTED"))}
    assert "user" in roles and any(r.startswith("segment 0") for r in roles)  # the archive is searched too


def test_the_command_prints_json_lines_in_a_pipe_and_exits_1_on_no_match(tmp_path: Path) -> None:
    root = _root(tmp_path)
    proc = cli("search", str(root), "ZQ_PLANTED")
    rows = [orjson.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 0 and {r["agent"] for r in rows} == {"catty", "claude", "codex"}
    doc = orjson.loads(cli("search", str(root), "ZQ_PLANTED", "--json", "--agent", "claude", check=True).stdout)
    assert [m["session"] for m in doc["matches"]] == [CLAUDE_ID]
    none = cli("search", str(root), "NOTHING_LIKE_THIS")
    assert none.returncode == 1 and none.stdout == b""
    bad = cli("search", str(root), "-E", "(unclosed")
    assert bad.returncode == 2 and b"bad regular expression" in bad.stderr
    assert not any(p.name.endswith(".lock") for p in root.rglob("*"))  # nothing written beside the sources

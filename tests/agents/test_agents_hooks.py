"""`hook claude pre-compact|session-start`: the incremental mirror, a segment per compaction, the
continuation reminder, and the fail-open policy."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support import FIXTURES, cli

from catty_ctx.agents import mirror as mirror_mod
from catty_ctx.agents.mirror import sync
from catty_ctx.session.cursor import WINDOW
from catty_ctx.session.store import Session

TRANSCRIPT = FIXTURES / "import" / "claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl"
SID = "5b1c0d2e-0000-4000-8000-00000000c0de"
ERROR = "FAIL test_parse: expected 3, got 4 (E-4711 in parse.py:12)"
CONSTRAINT = "Never use the word banana in any file name."
TODOS = ["Fix the parser edge case", "Add a test for empty input", "Update the changelog"]


class Transcript:
    """A Claude Code transcript written record by record (uuid/parentUuid chain, one response
    per assistant record, tool results as user records)."""

    def __init__(self, path: Path, cwd: str = "/home/dev/proj") -> None:
        self.path = path
        self.cwd = cwd
        self.n = 0
        self.parent: str | None = None
        path.write_bytes(b"")

    def _write(self, rec: dict[str, Any]) -> str:
        self.n += 1
        uid = f"u-{self.n:04d}"
        rec = {"uuid": uid, "parentUuid": self.parent, "sessionId": SID, "timestamp": f"2026-12-01T10:{self.n // 60:02d}:{self.n % 60:02d}Z",
               "cwd": self.cwd, "isSidechain": False, **rec}
        with open(self.path, "ab") as f:
            f.write(json.dumps(rec).encode() + b"\n")
        self.parent = uid
        return uid

    def user(self, text: str) -> None:
        self._write({"type": "user", "message": {"role": "user", "content": text}})

    def call(self, name: str, args: dict[str, Any], output: str, is_error: bool = False, text: str = "") -> None:
        n = self.n + 1
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content.append({"type": "tool_use", "id": f"toolu_{n:04d}", "name": name, "input": args})
        self._write({"type": "assistant", "requestId": f"req_{n:04d}", "message": {
            "id": f"msg_{n:04d}", "role": "assistant", "model": "claude-test", "content": content,
            "usage": {"input_tokens": 1000 + n, "output_tokens": 20}}})
        self._write({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{n:04d}", "content": output, "is_error": is_error}]}})

    def say(self, text: str) -> None:
        n = self.n + 1
        self._write({"type": "assistant", "requestId": f"req_{n:04d}", "message": {
            "id": f"msg_{n:04d}", "role": "assistant", "model": "claude-test", "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 1000 + n, "output_tokens": 20}}})

    def compaction(self, summary: str) -> None:
        previous = self.parent
        self.parent = None
        self._write({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted", "logicalParentUuid": previous,
                     "compactMetadata": {"trigger": "auto", "preTokens": 990_000}})
        self._write({"type": "user", "isCompactSummary": True, "message": {"role": "user", "content": summary}})


def planted(t: Transcript) -> None:
    """The facts an automatic compaction makes Claude Code forget."""
    t.user(f"Make the parser robust. {CONSTRAINT} Keep the public API as it is.")
    t.call("TodoWrite", {"todos": [{"content": TODOS[0], "status": "in_progress", "activeForm": "Fixing"},
                                   {"content": TODOS[1], "status": "pending", "activeForm": "Adding"},
                                   {"content": TODOS[2], "status": "pending", "activeForm": "Updating"},
                                   {"content": "Read the parser", "status": "completed", "activeForm": "Reading"}]},
           "Todos have been modified successfully.")
    t.call("Edit", {"file_path": "/home/dev/proj/parse.py", "old_string": "return 4", "new_string": "return 3"},
           "The file /home/dev/proj/parse.py has been updated.")
    t.call("Write", {"file_path": "/home/dev/proj/tests/test_empty.py", "content": "def test_empty(): pass\n"},
           "File created successfully at: /home/dev/proj/tests/test_empty.py")
    t.call("Edit", {"file_path": "/home/dev/proj/never_touched.py", "old_string": "xyz", "new_string": "abc"},
           "<tool_use_error>String to replace not found in file.</tool_use_error>", is_error=True)
    t.call("Bash", {"command": "pytest -q", "description": "run the tests"}, f"Exit code 1\n{ERROR}\n1 failed", is_error=True)
    t.call("Bash", {"command": "npm run watch", "run_in_background": True},
           "Command running in background with ID: bg7x1. Output is being written to: /tmp/bg7x1.output")
    t.say("The parser still fails on the edge case; continuing.")


@pytest.fixture
def mirrors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "mirrors"
    monkeypatch.setenv("CATTY_CTX_MIRRORS", str(root))
    return root


def _hook(name: str, payload: object) -> tuple[int, bytes, bytes]:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    proc = cli("hook", "claude", name, input=data)
    return proc.returncode, proc.stdout, proc.stderr


def _pre_compact(t: Path, cwd: Path) -> dict[str, Any]:
    return {"session_id": SID, "transcript_path": str(t), "cwd": str(cwd), "hook_event_name": "PreCompact", "trigger": "auto",
            "custom_instructions": ""}


def _context(out: bytes) -> str:
    doc = json.loads(out)
    assert doc["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return doc["hookSpecificOutput"]["additionalContext"]


def test_a_compaction_keeps_the_planted_facts_and_the_exact_error(tmp_path: Path, mirrors: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text("Use tabs.\n")
    t = Transcript(tmp_path / f"{SID}.jsonl")
    planted(t)
    assert _hook("pre-compact", _pre_compact(t.path, tmp_path)) == (0, b"", b"")
    mirror = mirrors / "claude" / SID
    assert (mirror / "segments" / "segment_000.md").is_file()
    # Claude Code compacts, then asks SessionStart with source compact
    t.compaction("This session is being continued from a previous conversation. Summary: the parser was being fixed.")
    code, out, err = _hook("session-start", {"session_id": SID, "transcript_path": str(t.path), "source": "compact",
                                             "hook_event_name": "SessionStart", "cwd": str(tmp_path)})
    assert (code, err) == (0, b"")
    context = _context(out)
    assert len(context) <= 10_000
    for todo in TODOS:
        assert todo in context
    assert "Read the parser" not in context  # completed
    assert "/home/dev/proj/parse.py" in context and "/home/dev/proj/tests/test_empty.py" in context
    assert "never_touched.py" not in context  # its only edit failed
    assert CONSTRAINT in context and ERROR in context and "bg7x1" in context
    assert str(tmp_path / "CLAUDE.md") in context
    assert "mcp__catty-recall__recall_search" in context
    assert context.endswith(f"catty-ctx segment grep {mirror} 'PATTERN'")
    for source in ("startup", "clear"):
        assert _hook("session-start", {"session_id": SID, "transcript_path": str(t.path), "source": source}) == (0, b"", b"")
    # the transcript cut back to its first lines: the mirror keeps all, segment grep finds the error
    events_before = (mirror / "updates.jsonl").read_bytes()
    lines = t.path.read_bytes().splitlines(keepends=True)
    t.path.write_bytes(b"".join(lines[:2]))
    code, out, err = _hook("pre-compact", _pre_compact(t.path, tmp_path))
    assert code == 0 and out == b"" and err.count(b"\n") == 1 and b"rewritten or cut back" in err
    assert (mirror / "updates.jsonl").read_bytes() == events_before
    found = cli("segment", "grep", str(mirror), ERROR)
    assert found.returncode == 0 and ERROR.encode() in found.stdout
    # deleted: the mirror still answers
    t.path.unlink()
    code, out, err = _hook("session-start", {"session_id": SID, "transcript_path": str(t.path), "source": "resume"})
    assert code == 0 and CONSTRAINT in _context(out)
    assert (mirror / "updates.jsonl").read_bytes() == events_before


def test_each_pre_compact_archives_the_span_since_the_previous_one(tmp_path: Path, mirrors: Path) -> None:
    t = Transcript(tmp_path / "t.jsonl")
    planted(t)
    assert _hook("pre-compact", _pre_compact(t.path, tmp_path))[0] == 0
    t.compaction("This session is being continued from a previous conversation. Summary.")
    t.user("Now the second part: rename parse_all to parse_many.")
    t.call("Bash", {"command": "grep -rn parse_all"}, "src/x.py:3: parse_all(SECOND-SPAN-MARK)")
    assert _hook("pre-compact", _pre_compact(t.path, tmp_path))[0] == 0
    mirror = mirrors / "claude" / SID
    index = json.loads((mirror / "segments" / "index.json").read_text())["segments"]
    assert [r["segment"] for r in index] == [0, 1]
    assert index[0]["seq_to"] < index[1]["seq_from"] and index[0]["keywords"]
    second = (mirror / "segments" / "segment_001.md").read_text()
    turns = second.split("## Turns", 1)[1]  # the span itself; its summary carries the state (the last error too)
    assert "SECOND-SPAN-MARK" in turns and ERROR not in turns and "[seq 0]" not in turns
    assert ERROR in (mirror / "segments" / "segment_000.md").read_text()
    # nothing new: no empty segment
    assert _hook("pre-compact", _pre_compact(t.path, tmp_path))[0] == 0
    assert len(json.loads((mirror / "segments" / "index.json").read_text())["segments"]) == 2


def _ids(mirror: Path) -> list[str]:
    with Session.open(mirror) as s:
        return [str(ev.get("id") or ev.get("call_id") or ev["kind"]) for ev in s.events(warn=None)]


def test_a_second_run_reads_only_the_appended_bytes(tmp_path: Path) -> None:
    t = Transcript(tmp_path / "t.jsonl")
    planted(t)
    mirror = tmp_path / "m"
    first = sync(mirror, str(t.path), "claude", SID)
    size = t.path.stat().st_size
    assert first.mode == "first" and first.bytes_read == size
    before = _ids(mirror)
    # the bytes already mirrored, past the fingerprint windows, made unreadable garbage
    data = bytearray(t.path.read_bytes())
    data[WINDOW + 10: size - WINDOW - 10] = b"\xff" * (size - 2 * WINDOW - 20)
    t.path.write_bytes(bytes(data))
    t.user("One more thing: APPENDED-MARK.")
    second = sync(mirror, str(t.path), "claude", SID)
    appended = t.path.stat().st_size - size
    assert second.mode == "append" and second.bytes_read == appended + 2 * WINDOW
    after = _ids(mirror)
    assert after[: len(before)] == before and after[len(before):] == [f"u-{t.n:04d}"]
    # unchanged: only the windows are read
    third = sync(mirror, str(t.path), "claude", SID)
    assert third.mode == "unchanged" and third.appended == 0 and third.bytes_read == 2 * WINDOW


def test_a_rewritten_transcript_keeps_the_mirror_and_adds_only_the_new(tmp_path: Path) -> None:
    t = Transcript(tmp_path / "t.jsonl")
    planted(t)
    mirror = tmp_path / "m"
    sync(mirror, str(t.path), "claude", SID)
    before = _ids(mirror)
    # rewritten in place (a tool that rewrites the file whole): the last records dropped, one new
    lines = t.path.read_bytes().splitlines(keepends=True)
    t.path.write_bytes(b"".join(lines[:-3]))
    t.parent = "u-0012"
    t.user("After the rewrite: REWRITE-MARK")
    again = sync(mirror, str(t.path), "claude", SID)
    assert again.mode == "rewritten" and again.warning and again.appended == 1
    after = _ids(mirror)
    assert after[: len(before)] == before and after[len(before):] == [f"u-{t.n:04d}"]
    # another inode at the same path (a copy renamed over it) is a rewrite too
    copy = t.path.with_suffix(".new")
    copy.write_bytes(t.path.read_bytes())
    copy.replace(t.path)
    assert sync(mirror, str(t.path), "claude", SID).mode == "rewritten"
    assert _ids(mirror) == after


def test_the_cursor_records_offset_and_fingerprints(tmp_path: Path) -> None:
    t = Transcript(tmp_path / "t.jsonl")
    t.user("short")
    mirror = tmp_path / "m"
    sync(mirror, str(t.path), "claude", SID)
    with open(t.path, "ab") as f:
        f.write(b'{"type": "user", "torn')  # a line being written: left for the next run
    sync(mirror, str(t.path), "claude", SID)
    cursor = mirror_mod.read_cursor(mirror)
    assert cursor is not None and cursor["offset"] == t.path.read_bytes().rindex(b"\n") + 1
    assert cursor["head"][0] == cursor["tail"][0] == cursor["offset"] < WINDOW


def test_the_old_fixture_still_mirrors(tmp_path: Path, mirrors: Path) -> None:
    t = tmp_path / "t.jsonl"
    shutil.copy(TRANSCRIPT, t)
    code, out, err = _hook("pre-compact", {"session_id": "sess-0001", "transcript_path": str(t), "trigger": "manual"})
    assert (code, out, err) == (0, b"", b"")
    code, out, err = _hook("session-start", {"session_id": "sess-0001", "source": "compact"})
    assert code == 0 and err == b"" and "/home/dev/shop/cart.py" in _context(out)


def test_a_long_state_is_cut_to_the_limit_and_keeps_its_ending(tmp_path: Path, mirrors: Path) -> None:
    t = Transcript(tmp_path / "t.jsonl")
    t.user("Start. " + " ".join(f"Never do thing number {i} at all." for i in range(40)))
    for i in range(400):
        t.call("Write", {"file_path": f"/home/dev/proj/{'deep/' * 10}file_{i}.py", "content": "x"}, "ok")
    assert _hook("pre-compact", _pre_compact(t.path, tmp_path))[0] == 0
    out = _hook("session-start", {"session_id": SID, "source": "compact"})[1]
    context = _context(out)
    assert len(context) <= 10_000 and context.endswith("'PATTERN'") and "Never do thing number 39" in context


@pytest.mark.parametrize("payload", [b"garbage", b"[1]", {"session_id": "../../etc", "transcript_path": "/x", "source": "compact"},
                                     {"session_id": "a/b", "source": "compact"}, {"transcript_path": "/x", "source": "compact"},
                                     {"session_id": "abc", "transcript_path": "/nonexistent/t.jsonl", "source": "compact"}])
def test_every_error_is_one_line_a_log_line_and_exit_0(mirrors: Path, payload: object) -> None:
    for name in ("pre-compact", "session-start"):
        code, out, err = _hook(name, payload)
        assert code == 0 and out == b"" and err.count(b"\n") == 1 and err.startswith(b"catty-ctx: warning: hook claude ")
    assert len((mirrors / "hooks.log").read_text().splitlines()) == 2
    assert not (mirrors / "claude").exists() or list((mirrors / "claude").iterdir()) == []


def test_a_long_transcript_is_read_in_steps_each_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = Transcript(tmp_path / "t.jsonl")
    planted(t)
    whole = tmp_path / "whole"
    sync(whole, str(t.path), "claude", SID)
    monkeypatch.setattr(mirror_mod, "STEP", 1500)
    stepped = tmp_path / "stepped"
    runs = [sync(stepped, str(t.path), "claude", SID, budget=0) for _ in range(40)]
    assert runs[0].warning and "within the time budget" in runs[0].warning and runs[0].bytes_read < t.path.stat().st_size
    assert runs[-1].mode == "unchanged"
    # the same events as one whole read (a response cut between steps may be two messages: ids of the whole read kept)
    assert set(_ids(whole)) <= set(_ids(stepped))
    # a rewrite read in steps adds nothing the mirror holds
    before = _ids(stepped)
    copy = t.path.with_suffix(".new")
    copy.write_bytes(t.path.read_bytes())
    copy.replace(t.path)
    again = [sync(stepped, str(t.path), "claude", SID, budget=0) for _ in range(40)]
    assert again[0].mode == "rewritten" and _ids(stepped) == before
    state = json.loads((stepped / "continuation.json").read_text())
    assert [x["text"] for x in state["todos"]] == TODOS and "/home/dev/proj/never_touched.py" in state["failed_edits"]

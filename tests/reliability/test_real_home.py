"""A HOME as the agents leave it, odd files included, read by every reading command: each exits 0
(a check: 1 where something could not be read), prints valid JSON under --json, never an
internal error, and leaves every file byte for byte as it was (issue "right answers on real homes").

The odd files are those Claude Code, Codex and Gemini CLI write themselves: a Claude Code file
holding one `summary` record, a rollout of its `session_meta` header alone (a session started and
left), Gemini CLI's `logs.json` (the prompts typed, no conversation), a line that is JSON but no
object; and a file and a folder the user cannot read. Run unprivileged, as test_hostile_files.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support import FIXTURES, ROOT, forked_cli
from test_hostile_files import _unprivileged, tree

AGENTS = FIXTURES / "agents"


def home(at: Path, *, hostile: bool = True, bad_line: bool = True) -> Path:
    """The HOME: every agent's recorded sessions, plus the files of no conversation; HOSTILE: also a
    line of JSON that is no object, and a file and a folder that cannot be read."""
    claude = at / ".claude/projects"
    shutil.copytree(AGENTS / "claude-2.1.332/tools-resume-compactions/projects", claude)
    (at / ".claude/settings.json").write_text("{}")
    project = claude / "-home-user-project"
    (project / "0a0a0a0a-0000-4000-8000-000000000000.jsonl").write_text(
        '{"type":"summary","summary":"Fix the failing parser test","leafUuid":"5c1e9a10-0000-4000-8000-000000000001"}\n')
    wild = FIXTURES / "import/claude/wild/old-subagents/wild-old-0010.jsonl"
    (project / wild.name).write_bytes(wild.read_bytes() + (b"[1, 2]\n" if hostile and bad_line else b""))
    codex = at / ".codex/sessions"
    shutil.copytree(AGENTS / "codex-0.171.0/tools-resume-compactions/sessions", codex)
    (at / ".codex/config.toml").write_text("")
    rollout = next(codex.rglob("rollout-*.jsonl"))
    header = rollout.read_bytes().split(b"\n", 1)[0] + b"\n"
    (rollout.parent / "rollout-2026-12-01T23-00-00-0000aaaa-0000-7000-8000-000000000001.jsonl").write_bytes(header)
    gemini = at / ".gemini"
    shutil.copytree(FIXTURES / "import/gemini/tmp", gemini / "tmp")
    (gemini / "settings.json").write_text("{}")
    chats = next((gemini / "tmp").iterdir())
    (chats / "logs.json").write_text(json.dumps([{"sessionId": "x", "messageId": 0, "type": "user", "message": "hi",
                                                   "timestamp": "2026-10-01T10:00:00.000Z"}]))
    shutil.copytree(FIXTURES / "import/opencode/storage", at / ".local/share/opencode/storage")
    shutil.copytree(AGENTS / "grok-1.0.41/tools-compactions-subagent-fork-cancel-rewind/.grok", at / ".grok")
    if not hostile:
        return at
    locked_file = project / "1b1b1b1b-0000-4000-8000-000000000000.jsonl"
    shutil.copyfile(next(project.glob("18b212c6-*.jsonl")), locked_file)
    locked_dir = claude / "-home-user-locked"
    locked_dir.mkdir()
    shutil.copyfile(next(project.glob("18b212c6-*.jsonl")), locked_dir / "2c2c2c2c-0000-4000-8000-000000000000.jsonl")
    locked_rollout = rollout.parent / LOCKED_ROLLOUT
    shutil.copyfile(rollout, locked_rollout)
    locked_file.chmod(0)
    locked_dir.chmod(0)
    locked_rollout.chmod(0)
    return at


LOCKED_ROLLOUT = "rollout-2026-12-01T23-30-00-3c3c3c3c-0000-7000-8000-000000000001.jsonl"


def run(args: list[str], at: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*forked_cli.command(forked_cli.LIBRARIES, under=_unprivileged()), *args], capture_output=True,
                          cwd=at, env=dict(os.environ, PYTHONPATH=str(ROOT), HOME=str(at / "home"), XDG_CACHE_HOME=str(at / "cache")),
                          timeout=120, check=False)


def commands(target: str, out: Path) -> list[tuple[list[str], bool]]:
    """Each reading command over TARGET, and whether it is a check."""
    return [(["usage", target, "--json"], False), (["usage", target], False), (["inspect", target, "--json"], False),
            (["repair", target, "--check", "--json"], True), (["search", "--json", target, "the"], False),
            (["search", "--json", "-E", target, "te.t"], False), (["report", target, "-o", str(out)], False),
            (["inspect", target, "--stats", "--json"], False), (["compact", target, "--check", "--json"], True),
            (["eval", "--native", target, "--json"], False)]


def unlock(at: Path) -> None:
    for locked in (at / ".claude/projects/-home-user-locked", at / ".claude/projects/-home-user-project/1b1b1b1b-0000-4000-8000-000000000000.jsonl",
                   *(at / ".codex/sessions").rglob(LOCKED_ROLLOUT)):
        if locked.exists():
            locked.chmod(0o700)


def each_run(at: Path, where: str, out: Path) -> list[tuple[list[str], bool, subprocess.CompletedProcess[bytes]]]:
    runs = []
    for args, check in commands(str(at / where) if where else str(at), out):
        shutil.rmtree(out, ignore_errors=True)
        proc = run(args, at.parent)
        err = proc.stderr.decode("utf-8", "replace")
        assert "Traceback" not in err and "internal error" not in err and proc.returncode != 70, (args, err)
        if "--json" in args and proc.returncode in (0, 1):
            json.loads(proc.stdout)
        runs.append((args, check, proc))
    return runs


@pytest.mark.parametrize("where", ["", ".claude", ".codex"])
def test_files_of_no_conversation_are_skipped_with_a_note(tmp_path: Path, where: str) -> None:
    """A summary-only Claude Code file, a header-only rollout, Gemini CLI's logs.json: no session, one
    line at most each, the exit as without them; valid JSON; every file as it was."""
    at = home(tmp_path / "home", hostile=False)
    before = tree(at)
    for args, check, proc in each_run(at, where, tmp_path / "pages"):
        err = proc.stderr.decode("utf-8", "replace")
        # (a check may find something in the recorded sessions: 1 then, never for the files skipped)
        assert proc.returncode in ((0, 1) if check else (0,)), (args, err)
        assert b"0a0a0a0a-" not in proc.stdout and b"0000aaaa-" not in proc.stdout, args
        assert err.count("0a0a0a0a-") <= 1 and err.count("0000aaaa-") <= 1 and "logs.json" not in err, (args, err)
    assert tree(at) == before


@pytest.mark.parametrize("where", ["", ".claude", ".codex"])
def test_a_hostile_home_is_never_an_internal_error_and_stays_as_it_was(tmp_path: Path, where: str) -> None:
    at = home(tmp_path / "home")
    try:
        before = tree(at)
        each_run(at, where, tmp_path / "pages")
        assert tree(at) == before
    finally:
        unlock(at)


@pytest.mark.parametrize("where", ["", ".claude"])
def test_what_a_root_cannot_read_is_named_and_a_check_is_no_fine(tmp_path: Path, where: str) -> None:
    """A file and a folder the user cannot read: each named on stderr by every ROOT command, which
    reads the rest (exit 0); a check over them exits 1, never "all fine"."""
    at = home(tmp_path / "home", bad_line=False)
    try:
        for args, check, proc in each_run(at, where, tmp_path / "pages"):
            err = proc.stderr.decode("utf-8", "replace")
            assert proc.returncode == (1 if check else 0), (args, proc.returncode, err)
            assert "1b1b1b1b" in err and "-home-user-locked: cannot read (Permission denied)" in err, (args, err)
    finally:
        unlock(at)


@pytest.mark.parametrize("where", ["", ".claude", ".codex"])
def test_every_reading_command_reads_a_hostile_home_whole(tmp_path: Path, where: str) -> None:
    at = home(tmp_path / "home")
    try:
        for args, check, proc in each_run(at, where, tmp_path / "pages"):
            err = proc.stderr.decode("utf-8", "replace")
            # (a check over what it could not read is no "fine"; the rest exit 0, naming what they skipped)
            assert proc.returncode == (1 if check else 0), (args, proc.returncode, err)
            if where != ".codex":
                assert "1b1b1b1b" in err and "-home-user-locked: cannot read" in err, (args, err)
            if where != ".claude":
                assert f"{LOCKED_ROLLOUT}: cannot read" in err, (args, err)
    finally:
        unlock(at)


@pytest.mark.parametrize("command", [["inspect"], ["repair", "--check"], ["prune"], ["resume"], ["export"], ["compact", "--check"],
                                     ["segment", "list"]])
def test_a_session_folder_that_cannot_be_read_is_named_not_an_internal_error(tmp_path: Path, command: list[str]) -> None:
    folder = tmp_path / "sess"
    shutil.copytree(FIXTURES / "sessions" / next(p.name for p in (FIXTURES / "sessions").iterdir() if (p / "updates.jsonl").is_file()),
                    folder)
    folder.chmod(0)
    try:
        proc = run([*command, str(folder)], tmp_path)
    finally:
        folder.chmod(0o700)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 65, err
    assert err.splitlines() == [f"catty-ctx: error: {folder}: cannot read (Permission denied)"]


def test_repair_of_a_root_holding_another_agents_file_refuses_that_file(tmp_path: Path) -> None:
    """A writer refuses another agent's file (as when it is named alone), never an internal error."""
    at = tmp_path / "root"
    shutil.copytree(AGENTS / "claude-2.1.332/tools-resume-compactions/projects", at / "projects")
    before = tree(at)
    proc = run(["repair", str(at)], tmp_path)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 65, err
    assert "another agent's session (Claude Code transcript)" in err and "internal error" not in err
    assert tree(at) == before

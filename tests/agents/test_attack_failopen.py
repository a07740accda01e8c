"""Issue 43, fail-open is total: a hook or the status line under a bad, unreadable or
out-of-range config says so in one line (stderr and the hooks' log), uses the defaults and
exits 0; every other command refuses it in one line naming the file (exit 2). And
the smaller findings of the hooks: a session id with a final newline, terminal escapes in a
warning, a line separator in the status line."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support import cli
from support import forked_process as run  # a process of its own: the defaults read the config file when they load

from agents.test_agents_hooks import SID, Transcript, planted

BAD = {
    "unknown key": "bogus = 1\n",
    "wrong type": 'default_threshold = "high"\n',
    "broken file": "[[[\n",
    "negative deadline": "hook_deadline = -1\n",
    "nan deadline": "hook_deadline = nan\n",
    "inf deadline": "hook_deadline = inf\n",
    "zero deadline": "hook_deadline = 0\n",
    "threshold over 100": "default_threshold = 150.0\n",
    "not a mode": 'compact_mode = "everything"\n',
    "not UTF-8": b"hook_deadline = 5 # \xff\n",
}


def _config(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "config.toml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_hook_under_a_bad_config_warns_once_uses_the_defaults_and_exits_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                           case: str) -> None:
    mirrors = tmp_path / "mirrors"
    monkeypatch.setenv("CATTY_CTX_MIRRORS", str(mirrors))
    monkeypatch.setenv("CATTY_CTX_CONFIG", str(_config(tmp_path, BAD[case])))
    t = Transcript(tmp_path / f"{SID}.jsonl")
    planted(t)
    payload = {"session_id": SID, "transcript_path": str(t.path), "cwd": str(tmp_path), "trigger": "auto"}
    proc = run("hook", "claude", "pre-compact", input=json.dumps(payload).encode())
    assert proc.returncode == 0 and proc.stdout == b""
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and "config" in lines[0] and "defaults" in lines[0], lines
    assert (mirrors / "claude" / SID / "segments" / "segment_000.md").is_file()  # the hook did its work, with the defaults
    assert "config" in (mirrors / "hooks.log").read_text()
    if case in ("unknown key", "nan deadline"):
        start = run("hook", "codex", "session-start", input=json.dumps({"session_id": "x", "source": "startup"}).encode())
        assert start.returncode == 0 and len(start.stderr.splitlines()) == 1
    status = run("statusline", input=b'{"model": {"display_name": "Opus"}}')
    assert status.returncode == 0 and status.stdout.startswith(b"Opus") and len(status.stderr.splitlines()) == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000")
def test_an_unreadable_config_fails_open_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _config(tmp_path, "hook_deadline = 5.0\n")
    path.chmod(0)
    monkeypatch.setenv("CATTY_CTX_MIRRORS", str(tmp_path / "mirrors"))
    monkeypatch.setenv("CATTY_CTX_CONFIG", str(path))
    proc = run("statusline", input=b"{}")
    assert proc.returncode == 0 and len(proc.stderr.splitlines()) == 1


@pytest.mark.parametrize("case", sorted(BAD))
def test_any_other_command_refuses_a_bad_config_in_one_line(tmp_path: Path, case: str) -> None:
    path = _config(tmp_path, BAD[case])
    for argv in (["config", "show"], ["hook", "install", "claude", "--settings", str(tmp_path / "settings.json")]):
        proc = run("--config", str(path), *argv)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert len(proc.stderr.splitlines()) == 1 and b"Traceback" not in proc.stderr and f"{path}:1: ".encode() in proc.stderr
    assert not (tmp_path / "settings.json").exists()


def test_a_session_id_ending_in_a_newline_is_not_an_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mirrors = tmp_path / "mirrors"
    monkeypatch.setenv("CATTY_CTX_MIRRORS", str(mirrors))
    t = Transcript(tmp_path / "t.jsonl")
    planted(t)
    proc = cli("hook", "claude", "pre-compact", input=json.dumps({"session_id": "abc\n", "transcript_path": str(t.path)}).encode())
    assert proc.returncode == 0 and b"session_id" in proc.stderr
    assert not (mirrors / "claude").exists() or list((mirrors / "claude").iterdir()) == []


def test_a_warning_shows_a_paths_terminal_escapes_not_obeys_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mirrors = tmp_path / "mirrors"
    monkeypatch.setenv("CATTY_CTX_MIRRORS", str(mirrors))
    hostile = str(tmp_path / "\x1b]0;owned\x07\x1b[2J\u202egone.jsonl")
    proc = cli("hook", "claude", "pre-compact", input=json.dumps({"session_id": SID, "transcript_path": hostile}).encode())
    assert proc.returncode == 0
    for data in (proc.stderr, (mirrors / "hooks.log").read_bytes()):
        assert b"\x1b" not in data and b"\x07" not in data and "\u202e".encode() not in data
        assert "\u241b]0;owned".encode() in data


def test_a_line_separator_never_reaches_the_status_line() -> None:
    for sep in ("\u2028", "\u2029", "\x85"):
        proc = cli("statusline", input=json.dumps({"model": {"display_name": f"Opus{sep}FORGED"}}).encode())
        line = proc.stdout.decode()
        assert proc.returncode == 0 and sep not in line and line.count("\n") == 1 and "FORGED" in line

"""Issue 43, private stays private: backups, temp files and mirrors are never wider than what
they copy, and the recall server never answers about another project's session."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from support import cli

from agents.test_agents_hooks import SID, Transcript, planted
from agents.test_agents_install import home  # noqa: F401 - the fixture: HOME a folder of the test's own
from catty_ctx.agents import recall
from catty_ctx.session.files import write_file


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("home")
def test_the_backup_of_a_private_settings_file_is_private(tmp_path: Path) -> None:
    user_home = Path(os.environ["HOME"])
    f = tmp_path / "settings.json"
    f.write_text('{"env": {"ANTHROPIC_API_KEY": "sk-ant-secret"}}\n')
    f.chmod(0o600)
    assert cli("hook", "install", "claude", "--settings", str(f), "--mcp").returncode == 0
    assert _mode(f) == 0o600
    assert _mode(tmp_path / "settings.json.catty-ctx.bak") == 0o600
    claude_json = user_home / ".claude.json"
    claude_json.write_text('{"oauthAccount": {"token": "secret"}}\n')
    claude_json.chmod(0o600)
    assert cli("hook", "install", "claude", "--settings", str(f), "--mcp").returncode == 0
    assert _mode(user_home / ".claude.json.catty-ctx.bak") == 0o600


@pytest.mark.usefixtures("home")
def test_the_backups_of_codex_files_keep_their_mode(tmp_path: Path) -> None:
    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / "hooks.json").write_text('{"hooks": {}}\n')
    (codex / "config.toml").write_text('model = "x"\n')
    for name in ("hooks.json", "config.toml"):
        (codex / name).chmod(0o600)
    assert cli("hook", "install", "codex", "--codex-home", str(codex), "--mcp").returncode == 0
    for name in ("hooks.json", "config.toml"):
        assert _mode(codex / f"{name}.catty-ctx.bak") == 0o600, name


def test_a_temp_file_is_private_while_it_is_written(tmp_path: Path) -> None:
    """What a kill -9 leaves before the rename shows nothing: the temp is 0600 until its final mode."""
    seen: list[int] = []
    target = tmp_path / "wide.json"
    target.write_text("{}")
    target.chmod(0o644)
    write_file(target, lambda f: seen.append(stat.S_IMODE(os.fstat(f.fileno()).st_mode)))
    assert seen == [0o600] and _mode(target) == 0o644


def test_a_hook_mirror_of_a_private_transcript_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mirrors = tmp_path / "mirrors"
    monkeypatch.setenv("CATTY_CTX_MIRRORS", str(mirrors))
    t = Transcript(tmp_path / f"{SID}.jsonl")
    planted(t)
    t.call("Bash", {"command": "cat big"}, "x" * 60_000)  # a blob
    t.path.chmod(0o600)
    umask = os.umask(0o022)
    try:
        proc = cli("hook", "claude", "pre-compact", input=json.dumps(
            {"session_id": SID, "transcript_path": str(t.path), "cwd": str(tmp_path), "trigger": "auto"}).encode())
    finally:
        os.umask(umask)
    assert (proc.returncode, proc.stderr) == (0, b"")
    mirror = mirrors / "claude" / SID
    assert (mirror / "segments").is_dir() and any((mirror / "blobs").rglob("*"))
    wide = [str(p) for p in [mirror.parent, mirror, *mirror.rglob("*")] if _mode(p) & 0o077]
    assert wide == []
    assert os.umask(0o022) == 0o022  # the hook gave the process its umask back


def test_an_existing_wide_mirror_folder_is_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mirrors = tmp_path / "mirrors"
    monkeypatch.setenv("CATTY_CTX_MIRRORS", str(mirrors))
    mirror = mirrors / "claude" / SID
    mirror.mkdir(parents=True)
    for folder in (mirror.parent, mirror):
        folder.chmod(0o755)
    t = Transcript(tmp_path / f"{SID}.jsonl")
    planted(t)
    cli("hook", "claude", "pre-compact", input=json.dumps({"session_id": SID, "transcript_path": str(t.path)}).encode())
    assert _mode(mirror) == 0o700 and _mode(mirror.parent) == 0o700


def test_recall_finds_the_session_of_its_own_long_project_not_anothers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code cuts a project folder name over 200 characters and suffixes it: two projects
    sharing the first 200 characters share the prefix; the transcripts' cwd tells them apart."""
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    base = tmp_path / ("p" * 210)
    mine, other = Path(f"{base}-mine"), Path(f"{base}-other")
    for n, cwd in enumerate((mine, other)):
        cwd.mkdir(parents=True)
        name = recall.project_folder_name(str(cwd))
        folder = claude / "projects" / f"{name[:200]}-{n}abc"
        folder.mkdir(parents=True)
        t = Transcript(folder / f"s{n}.jsonl", cwd=str(cwd))
        t.user(f"hello from {cwd.name[-5:]}")
        os.utime(t.path, (1_000 + n * 100, 1_000 + n * 100))  # the other project's is newer
    assert recall.newest_session(mine).name == "s0.jsonl"
    assert recall.newest_session(other).name == "s1.jsonl"

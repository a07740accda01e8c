"""`hook install|uninstall claude`: our entries merged into the user's own settings, and taken out again."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support import both_parsers, cli, plain_run_loads, table_is_the_typer_commands

USERS_OWN = """{
  "model": "opus",
  "permissions": {"allow": ["Bash(ls:*)"], "deny": []},
  "hooks": {
    "PreCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command": "~/bin/my-precompact.sh"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
  },
  "env": {"FOO": "1"},
  "zeta": [1, 2.5, null, true]
}
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return h


def _settings(tmp_path: Path, text: str = USERS_OWN) -> Path:
    f = tmp_path / "settings.json"
    f.write_text(text)
    return f


def test_install_keeps_the_users_keys_and_hooks_in_order_and_adds_ours(tmp_path: Path, home: Path) -> None:
    f = _settings(tmp_path)
    proc = cli("hook", "install", "claude", "--settings", str(f), "--statusline")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(f.read_text())
    original = json.loads(USERS_OWN)
    assert list(doc) == [*original, "statusLine"]
    assert list(doc["hooks"]) == ["PreCompact", "Stop", "SessionStart"]
    assert doc["hooks"]["PreCompact"][0] == original["hooks"]["PreCompact"][0]
    assert doc["hooks"]["Stop"] == original["hooks"]["Stop"]
    assert doc["hooks"]["PreCompact"][1]["hooks"][0]["command"] == "catty-ctx hook claude pre-compact"
    assert doc["hooks"]["SessionStart"] == [{"matcher": "compact|resume", "hooks": [
        {"type": "command", "command": "catty-ctx hook claude session-start", "timeout": 30}]}]
    assert doc["statusLine"]["command"] == "catty-ctx statusline"
    for key in ("model", "permissions", "env", "zeta"):
        assert doc[key] == original[key]
    # the previous bytes, kept
    assert (tmp_path / "settings.json.catty-ctx.bak").read_text() == USERS_OWN


def test_a_second_install_leaves_the_bytes_unchanged_and_uninstall_gives_the_original_back(tmp_path: Path, home: Path) -> None:
    f = _settings(tmp_path)
    cli("hook", "install", "claude", "--settings", str(f), "--statusline", check=True)
    once = f.read_bytes()
    stat_once = f.stat()
    proc = cli("hook", "install", "claude", "--settings", str(f), "--statusline")
    assert proc.returncode == 0 and b"nothing to change" in proc.stderr
    assert f.read_bytes() == once and f.stat().st_ino == stat_once.st_ino  # not even rewritten
    cli("hook", "uninstall", "claude", "--settings", str(f), check=True)
    assert json.loads(f.read_text()) == json.loads(USERS_OWN)
    assert list(json.loads(f.read_text())["hooks"]) == ["PreCompact", "Stop"]
    # and from nothing: a file that only held ours is empty again, not left with empty containers
    g = tmp_path / "new.json"
    cli("hook", "install", "claude", "--settings", str(g), check=True)
    assert not (tmp_path / "new.json.catty-ctx.bak").exists()  # there were no previous bytes
    cli("hook", "uninstall", "claude", "--settings", str(g), check=True)
    assert json.loads(g.read_text()) == {}


def test_uninstall_removes_only_ours_even_beside_the_users_handler_in_one_group(tmp_path: Path, home: Path) -> None:
    mixed = {"hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": "mine"},
                                                  {"type": "command", "command": "catty-ctx hook claude pre-compact"}]}]},
             "statusLine": {"type": "command", "command": "my-own-status"}}
    f = tmp_path / "s.json"
    f.write_text(json.dumps(mixed))
    cli("hook", "uninstall", "claude", "--settings", str(f), check=True)
    assert json.loads(f.read_text()) == {"hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": "mine"}]}]},
                                         "statusLine": {"type": "command", "command": "my-own-status"}}
    # install sees no entry of ours for SessionStart/PreCompact beside the user's; a statusLine of theirs is refused, file untouched
    before = f.read_bytes()
    proc = cli("hook", "install", "claude", "--settings", str(f), "--statusline")
    assert proc.returncode == 65 and proc.stderr.count(b"\n") == 1 and b"statusLine" in proc.stderr
    assert f.read_bytes() == before


@pytest.mark.parametrize("text", ['{\n  // a comment\n  "model": "opus"\n}\n', '{"a": 1,}', '{"a": 1, "a": 2}', "[1, 2]", '{"a": NaN}',
                                  '{"hooks": []}', b'\xff\xfe{}'])
def test_a_file_that_is_not_plain_json_is_refused_with_one_line_and_left_unchanged(tmp_path: Path, home: Path, text: str | bytes) -> None:
    f = tmp_path / "settings.json"
    data = text if isinstance(text, bytes) else text.encode()
    f.write_bytes(data)
    proc = cli("hook", "install", "claude", "--settings", str(f))
    assert proc.returncode == 65, proc.stderr
    assert proc.stderr.count(b"\n") == 1 and proc.stderr.startswith(b"catty-ctx: error: " + str(f).encode())
    assert f.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "settings.json"]  # no backup, no temp file left


def test_a_link_is_not_written_through(tmp_path: Path, home: Path) -> None:
    target = _settings(tmp_path)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    proc = cli("hook", "install", "claude", "--settings", str(link))
    assert proc.returncode == 65 and b"symbolic link" in proc.stderr
    assert link.is_symlink() and target.read_text() == USERS_OWN


def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path: Path, home: Path) -> None:
    f = _settings(tmp_path)
    proc = cli("hook", "install", "claude", "--settings", str(f), "--dry-run")
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert out.startswith(f"--- {f} (now)") and '+            "command": "catty-ctx hook claude session-start",' in out
    assert f.read_text() == USERS_OWN and not (tmp_path / "settings.json.catty-ctx.bak").exists()


def test_scopes_name_claude_codes_own_files(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    project.mkdir()
    cli("hook", "install", "claude", cwd=project, check=True)
    assert "PreCompact" in json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    cli("hook", "install", "claude", "--scope", "project", cwd=project, check=True)
    assert (project / ".claude" / "settings.json").exists()
    cli("hook", "install", "claude", "--scope", "local", cwd=project, check=True)
    assert (project / ".claude" / "settings.local.json").exists()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    cli("hook", "install", "claude", cwd=project, check=True)
    assert (tmp_path / "cfg" / "settings.json").exists()
    proc = cli("hook", "install", "claude", "--scope", "everywhere", cwd=project)
    assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1


def test_mcp_registers_the_recall_server_where_claude_code_reads_it(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    users = {"numStartups": 3, "projects": {str(project.resolve()): {"allowedTools": []}}, "mcpServers": {"theirs": {"command": "x"}}}
    (home / ".claude.json").write_text(json.dumps(users, indent=2))
    cli("hook", "install", "claude", "--scope", "project", "--mcp", "--command", "python3 -m catty_ctx", cwd=project, check=True)
    assert json.loads((project / ".mcp.json").read_text()) == {
        "mcpServers": {"catty-recall": {"type": "stdio", "command": "python3", "args": ["-m", "catty_ctx", "mcp"]}}}
    cli("hook", "install", "claude", "--mcp", cwd=project, check=True)
    doc = json.loads((home / ".claude.json").read_text())
    assert list(doc["mcpServers"]) == ["theirs", "catty-recall"] and doc["numStartups"] == 3
    cli("hook", "install", "claude", "--scope", "local", "--mcp", cwd=project, check=True)
    doc = json.loads((home / ".claude.json").read_text())
    assert doc["projects"][str(project.resolve())] == {"allowedTools": [], "mcpServers": {"catty-recall": {
        "type": "stdio", "command": "catty-ctx", "args": ["mcp"]}}}
    for scope in ("user", "local", "project"):
        cli("hook", "uninstall", "claude", "--scope", scope, cwd=project, check=True)
    assert json.loads((home / ".claude.json").read_text()) == users
    assert json.loads((project / ".mcp.json").read_text()) == {}


def test_hook_install_starts_without_typer_and_both_parsers_agree(tmp_path: Path) -> None:
    f = _settings(tmp_path)
    status, loaded = plain_run_loads("hook", "install", "claude", "--settings", str(f), "--dry-run")
    assert status in (0, None) and loaded == []
    both_parsers("hook", "install", "claude", "--settings", str(f), "--dry-run")
    both_parsers("hook", "install", "nobody", "--settings", str(f))
    table_is_the_typer_commands("hook install", arguments=["agent"])
    assert os.path.exists(f)

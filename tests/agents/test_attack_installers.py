"""Issue 43, installers that only ever add or remove their own: a lock around read-change-replace,
numbers JSON readers cannot hold refused, uninstall matching exactly what install wrote, no
write through a link, the user's bytes kept, no internal error on any parseable input."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import cli

from agents.test_agents_install import home  # noqa: F401 - the fixture: HOME a folder of the test's own

pytestmark = pytest.mark.usefixtures("home")


@pytest.mark.parametrize("number", ["1e400", "-1e400", "12345678901234567890", "9007199254740993"])
def test_a_number_json_readers_cannot_hold_is_refused_not_rewritten(tmp_path: Path, number: str) -> None:
    f = tmp_path / "settings.json"
    text = f'{{"cleanupPeriodDays": {number}}}\n'
    f.write_text(text)
    for verb in ("install", "uninstall"):
        proc = cli("hook", verb, "claude", "--settings", str(f))
        assert proc.returncode == 65, proc.stderr
        assert b"Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1
        assert f.read_text() == text


def test_uninstall_keeps_the_users_hooks_that_merely_mention_our_command(tmp_path: Path) -> None:
    users = [{"type": "command", "command": "echo 'see: catty-ctx hook claude pre-compact'"},
             {"type": "command", "command": "~/bin/backup.sh && catty-ctx hook claude pre-compact"},
             {"type": "command", "command": "catty-ctx hook claude pre-compact --mirrors ~/elsewhere"},
             {"type": "command", "command": "catty-ctx hook claude pre-compact", "statusMessage": "mine, edited"}]
    f = tmp_path / "settings.json"
    f.write_text(json.dumps({"hooks": {"PreCompact": [{"hooks": users}]}, "statusLine": {"type": "command", "command": "my-statusline | catty-ctx statusline"}}, indent=2) + "\n")
    assert cli("hook", "install", "claude", "--settings", str(f)).returncode == 0
    assert cli("hook", "uninstall", "claude", "--settings", str(f)).returncode == 0
    doc = json.loads(f.read_text())
    assert doc["hooks"] == {"PreCompact": [{"hooks": users}]}
    assert doc["statusLine"]["command"] == "my-statusline | catty-ctx statusline"


def test_uninstall_takes_out_what_install_wrote_with_another_command(tmp_path: Path) -> None:
    f = tmp_path / "settings.json"
    for command in ("/opt/tools/bin/catty-ctx", "python3 -m catty_ctx"):
        f.write_text('{"model": "opus"}\n')
        assert cli("hook", "install", "claude", "--settings", str(f), "--statusline", "--command", command).returncode == 0
        assert cli("hook", "uninstall", "claude", "--settings", str(f), "--statusline").returncode == 0
        assert json.loads(f.read_text()) == {"model": "opus"}


def test_project_scope_does_not_write_through_a_linked_claude_folder(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / ".claude").symlink_to(elsewhere)
    for scope in ("project", "local"):
        proc = cli("hook", "install", "claude", "--scope", scope, cwd=project)
        assert proc.returncode == 65 and b"symbolic link" in proc.stderr, proc.stderr
    assert list(elsewhere.iterdir()) == []


def test_a_lone_surrogate_escape_is_kept_not_an_internal_error(tmp_path: Path) -> None:
    f = tmp_path / "settings.json"
    f.write_text('{"note": "half a pair: \\ud800"}\n')
    assert cli("hook", "install", "claude", "--settings", str(f)).returncode == 0
    assert '"half a pair: \\ud800"' in f.read_text()
    assert json.loads(f.read_text())["note"] == "half a pair: \ud800"
    assert cli("hook", "uninstall", "claude", "--settings", str(f)).returncode == 0
    assert f.read_text() == '{"note": "half a pair: \\ud800"}\n'  # (the user's bytes back: the escape, the one line)


@pytest.mark.parametrize("depth", [900, 100_000])
def test_deep_nesting_is_refused_in_one_line(tmp_path: Path, depth: int) -> None:
    f = tmp_path / "settings.json"
    text = '{"deep": ' + "[" * depth + "]" * depth + "}\n"
    f.write_text(text)
    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / "hooks.json").write_text(text)
    for args in (["claude", "--settings", str(f)], ["codex", "--codex-home", str(codex)]):
        proc = cli("hook", "install", *args)
        assert proc.returncode in (0, 65) and b"Traceback" not in proc.stderr and len(proc.stderr.splitlines()) <= 1, proc.stderr[-300:]
    assert f.read_text() == text or json.loads(f.read_text())["deep"]


def test_codex_config_without_a_final_newline_gets_its_bytes_back(tmp_path: Path) -> None:
    codex = tmp_path / "codex"
    codex.mkdir()
    config = codex / "config.toml"
    for text in ('model = "o3"', 'model = "o3"\r\n[tools]\nweb = true', "# only a comment"):
        config.write_bytes(text.encode())
        assert cli("hook", "install", "codex", "--codex-home", str(codex), "--mcp").returncode == 0
        assert cli("hook", "uninstall", "codex", "--codex-home", str(codex), "--mcp").returncode == 0
        assert config.read_bytes() == text.encode()


def test_an_install_waits_for_another_ones_read_change_replace(tmp_path: Path) -> None:
    """Two installs at once: the second reads the file only once the first has replaced it (a
    lock on the file's folder; nothing written for it), so neither's change is lost."""
    f = tmp_path / "conf" / "settings.json"
    f.parent.mkdir()
    f.write_text("{}\n")
    fd = os.open(f.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        proc = subprocess.Popen([sys.executable, "-m", "catty_ctx", "hook", "install", "claude", "--settings", str(f), "--statusline"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
        time.sleep(1.5)
        assert proc.poll() is None and json.loads(f.read_text()) == {}  # waiting, nothing written
        f.write_text('{"model": "opus"}\n')  # another writer's change, made while it waits
    finally:
        os.close(fd)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    doc = json.loads(f.read_text())
    assert doc["model"] == "opus" and "statusLine" in doc and "PreCompact" in doc["hooks"]
    assert sorted(p.name for p in f.parent.iterdir()) == ["settings.json", "settings.json.catty-ctx.bak"]


def test_a_file_changed_between_plan_and_write_is_left_unchanged(tmp_path: Path) -> None:
    from catty_ctx.agents import settings
    from catty_ctx.errors import DataError

    f = tmp_path / "settings.json"
    f.write_text("{}\n")
    changes = settings.plan_claude(True, settings=str(f))
    f.write_text('{"model": "opus"}\n')
    with pytest.raises(DataError, match="changed while"):
        settings.apply(changes)
    assert f.read_text() == '{"model": "opus"}\n'


@pytest.mark.slow
def test_kill_9_campaign_on_install(tmp_path: Path) -> None:
    """Installs (with --mcp and --statusline) killed at random moments until 400 were killed,
    each followed by a normal one: the settings file is always the user's bytes or ours whole
    (our entries spliced into theirs), the backup the user's bytes, no entry of ours twice, no
    key of the user's lost, nothing left behind, nothing wider than the user's 0600 files. The
    kill times spread over a normal run's length, and every other kill waits for the first temp
    file or backup to show, so a share lands while it writes."""
    import random
    import signal
    import statistics

    rng = random.Random(43)
    folder = tmp_path / "conf"
    folder.mkdir()
    f, claude_json = folder / "settings.json", tmp_path / "home" / ".claude.json"
    users = '{\n\t"env": {"KEY": "secret"},\n\t"model": "opus"\n}'  # (tabs, no final newline: kept byte for byte)
    env = dict(os.environ, HOME=str(tmp_path / "home"), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    argv = [sys.executable, "-m", "catty_ctx", "hook", "install", "claude", "--settings", str(f), "--mcp", "--statusline"]
    ours = ("hook claude pre-compact", "hook claude session-start", "catty-ctx statusline")
    installed: dict[str, bytes] = {}
    figures = dict.fromkeys(("runs", "kills", "before_write", "backup_only", "after_write", "temps_after_kill", "torn", "duplicates",
                             "lost", "left", "wide"), 0)
    normal: list[float] = [0.5]
    while figures["kills"] < 400:
        figures["runs"] += 1
        assert figures["runs"] < 1500
        for path in (f, claude_json):
            path.write_text(users if path == f else "{}\n")
            path.chmod(0o600)
        for p in list(folder.iterdir()) + list(claude_json.parent.iterdir()):
            if p.name.endswith(".catty-ctx.bak"):
                p.unlink()
        proc = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if figures["runs"] % 2:
            time.sleep(rng.uniform(0.0, 1.1 * statistics.median(normal[-20:])))
        else:  # every other run: killed the moment its first temp file or backup shows (it is writing)
            while proc.poll() is None and not any(n.endswith((".tmp", ".bak")) for n in [*os.listdir(folder), *os.listdir(claude_json.parent)]):
                pass
        killed = proc.poll() is None
        if killed:
            proc.send_signal(signal.SIGKILL)
            figures["kills"] += 1
        proc.wait()
        now, backup = f.read_bytes(), folder / "settings.json.catty-ctx.bak"
        if killed:
            stage = "after_write" if now != users.encode() else "backup_only" if backup.exists() else "before_write"
            figures[stage] += 1
            figures["temps_after_kill"] += len([p for p in [*folder.iterdir(), *claude_json.parent.iterdir()] if p.name.endswith(".tmp")])
        figures["torn"] += now not in (users.encode(), installed.get("settings", now))
        figures["torn"] += backup.exists() and backup.read_text() != users
        started = time.monotonic()
        assert subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, timeout=60).returncode == 0
        normal.append(time.monotonic() - started)
        text = f.read_text()
        installed.setdefault("settings", text.encode())
        figures["torn"] += text.encode() != installed["settings"]
        figures["duplicates"] += sum(text.count(c) > 1 for c in ours) + (claude_json.read_text().count('"catty-recall"') > 1)
        figures["lost"] += not text.startswith(users[:-2]) or json.loads(text)["env"] != {"KEY": "secret"}
        figures["left"] += len([p for p in [*folder.iterdir(), *claude_json.parent.iterdir()] if p.name.endswith(".tmp")])
        figures["wide"] += len([p for p in [*folder.iterdir(), claude_json, *claude_json.parent.glob("*.bak")] if p.stat().st_mode & 0o077])
    print(f"install kill -9 campaign: {figures}")
    assert figures["torn"] == figures["duplicates"] == figures["lost"] == figures["left"] == figures["wide"] == 0, figures
    assert figures["after_write"] + figures["backup_only"] > 0, figures  # (some kills landed while it wrote)

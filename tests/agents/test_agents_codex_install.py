"""`hook install|uninstall codex`: our hooks merged into CODEX_HOME/hooks.json, their trust and
the recall server added to config.toml as text (the user's bytes and comments kept), and
taken out again."""
from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from support import both_parsers, cli, plain_run_loads, table_is_the_typer_commands

from catty_ctx.agents import codex_install

USERS_TOML = """# my Codex settings: keep this comment
model = "o3"   # aligned on purpose
approval_policy = 'on-request'

[projects."/home/u/proj"]
trust_level = "trusted"

# the docs server
[mcp_servers.docs]
command = "docs-server"
args = ["--stdio"]   # trailing comment

[[profiles.fast.rules]]
x = 1
"""
USERS_HOOKS = """{
  "hooks": {
    "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
  },
  "note": "mine"
}
"""


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    home = tmp_path / ".codex"
    home.mkdir()
    (home / "config.toml").write_text(USERS_TOML)
    (home / "hooks.json").write_text(USERS_HOOKS)
    return home


def _install(home: Path, *more: str, verb: str = "install") -> tuple[int, str, str]:
    proc = cli("hook", verb, "codex", "--codex-home", str(home), *more)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def test_install_adds_our_hooks_their_trust_and_the_server_and_keeps_every_byte_of_the_users(codex_home: Path) -> None:
    rc, out, err = _install(codex_home, "--mcp")
    assert rc == 0, err
    text = (codex_home / "config.toml").read_text()
    assert text.startswith(USERS_TOML)  # the user's bytes, comments and all, untouched
    config = tomllib.loads(text)
    assert config["model"] == "o3" and config["mcp_servers"]["docs"] == {"command": "docs-server", "args": ["--stdio"]}
    assert config["mcp_servers"]["catty-recall"] == {"command": "catty-ctx", "args": ["mcp", "--codex-home", os.path.realpath(codex_home)]}
    hooks = json.loads((codex_home / "hooks.json").read_text())
    original = json.loads(USERS_HOOKS)
    assert hooks["note"] == "mine" and hooks["hooks"]["Stop"] == original["hooks"]["Stop"]
    assert hooks["hooks"]["SessionStart"][0] == original["hooks"]["SessionStart"][0]
    ours = hooks["hooks"]["SessionStart"][1]
    assert ours == {"matcher": "compact|resume", "hooks": [{"type": "command", "command": "catty-ctx hook codex session-start",
                                                            "timeout": 30, "additionalContextLimit": 10_000}]}
    assert hooks["hooks"]["PreCompact"] == [{"hooks": [{"type": "command", "command": "catty-ctx hook codex pre-compact", "timeout": 30}]}]
    # each of our handlers trusted under Codex's key: the hooks.json path, the event, the group and handler index
    source = os.path.realpath(codex_home / "hooks.json")
    state = config["hooks"]["state"]
    assert set(state) == {f"{source}:session_start:1:0", f"{source}:pre_compact:0:0"}
    assert state[f"{source}:session_start:1:0"]["trusted_hash"] == codex_install.trust_hash("SessionStart", "compact|resume", ours["hooks"][0])
    assert (codex_home / "config.toml.catty-ctx.bak").read_text() == USERS_TOML
    assert (codex_home / "hooks.json.catty-ctx.bak").read_text() == USERS_HOOKS
    assert "config.toml: added" in out and "hooks.json: added" in out


def test_a_second_install_changes_nothing_and_uninstall_gives_the_original_back(codex_home: Path) -> None:
    assert _install(codex_home, "--mcp")[0] == 0
    config, hooks = (codex_home / "config.toml").read_bytes(), (codex_home / "hooks.json").read_bytes()
    rc, out, err = _install(codex_home, "--mcp")
    assert rc == 0 and out == "" and "nothing to change" in err
    assert (codex_home / "config.toml").read_bytes() == config and (codex_home / "hooks.json").read_bytes() == hooks
    rc, out, err = _install(codex_home, verb="uninstall")
    assert rc == 0, err
    assert (codex_home / "config.toml").read_text() == USERS_TOML  # byte for byte
    assert json.loads((codex_home / "hooks.json").read_text()) == json.loads(USERS_HOOKS)
    assert _install(codex_home, verb="uninstall")[2].strip().endswith("nothing to change")


def test_install_without_mcp_then_with_it_keeps_one_block(codex_home: Path) -> None:
    assert _install(codex_home)[0] == 0
    assert "catty-recall" not in (codex_home / "config.toml").read_text()
    assert _install(codex_home, "--mcp")[0] == 0
    text = (codex_home / "config.toml").read_text()
    assert text.count(codex_install.BLOCK_BEGIN) == 1 and "[mcp_servers.catty-recall]" in text
    assert _install(codex_home, verb="uninstall")[0] == 0
    assert (codex_home / "config.toml").read_text() == USERS_TOML


def test_a_new_home_gets_both_files_and_uninstall_leaves_nothing_of_ours(tmp_path: Path) -> None:
    home = tmp_path / "fresh"
    assert _install(home)[0] == 0
    config = tomllib.loads((home / "config.toml").read_text())
    assert len(config["hooks"]["state"]) == 2
    assert _install(home, verb="uninstall")[0] == 0
    assert (home / "config.toml").read_text() == "" and json.loads((home / "hooks.json").read_text()) == {}


def test_a_table_of_ours_with_other_contents_is_refused_with_one_line(codex_home: Path) -> None:
    text = USERS_TOML + '\n[mcp_servers.catty-recall]\ncommand = "something-else"\n'
    (codex_home / "config.toml").write_text(text)
    rc, out, err = _install(codex_home, "--mcp")
    assert rc == 65 and len(err.strip().splitlines()) == 1 and "[mcp_servers.catty-recall] is already there" in err
    assert (codex_home / "config.toml").read_text() == text and (codex_home / "hooks.json").read_text() == USERS_HOOKS


@pytest.mark.parametrize("bad", ['model = "o3"\nmodel = "o4"\n', "[broken\n", "x = \n"])
def test_a_config_that_is_not_toml_is_refused_with_its_line_and_nothing_written(codex_home: Path, bad: str) -> None:
    (codex_home / "config.toml").write_text(bad)
    rc, out, err = _install(codex_home)
    assert rc == 65 and len(err.strip().splitlines()) == 1 and "config.toml:" in err and "not TOML" in err
    assert (codex_home / "config.toml").read_text() == bad and (codex_home / "hooks.json").read_text() == USERS_HOOKS


def test_keys_the_user_put_after_our_block_make_uninstall_refuse_rather_than_move_them(codex_home: Path) -> None:
    assert _install(codex_home)[0] == 0
    with open(codex_home / "config.toml", "a") as f:
        f.write('model_reasoning_effort = "high"\n')  # in TOML this now belongs to our last table
    before = (codex_home / "config.toml").read_bytes()
    rc, out, err = _install(codex_home, verb="uninstall")
    assert rc == 65 and "left unchanged" in err and (codex_home / "config.toml").read_bytes() == before


def test_a_table_codex_wrote_into_our_block_stays_on_uninstall(codex_home: Path) -> None:
    assert _install(codex_home)[0] == 0
    text = (codex_home / "config.toml").read_text()
    foreign = '[hooks.state."/elsewhere/hooks.json:stop:0:0"]\nenabled = false\n'
    text = text.replace(codex_install.BLOCK_END, foreign + codex_install.BLOCK_END)
    (codex_home / "config.toml").write_text(text)
    assert _install(codex_home, verb="uninstall")[0] == 0
    after = tomllib.loads((codex_home / "config.toml").read_text())
    assert after["hooks"]["state"] == {"/elsewhere/hooks.json:stop:0:0": {"enabled": False}}
    assert (codex_home / "config.toml").read_text().startswith(USERS_TOML)


def test_dry_run_prints_both_diffs_and_writes_nothing(codex_home: Path) -> None:
    rc, out, err = _install(codex_home, "--mcp", "--dry-run")
    assert rc == 0 and "+[mcp_servers.catty-recall]" in out and "+            \"command\": \"catty-ctx hook codex pre-compact\"," in out
    assert (codex_home / "config.toml").read_text() == USERS_TOML and (codex_home / "hooks.json").read_text() == USERS_HOOKS
    assert not (codex_home / "config.toml.catty-ctx.bak").exists()


def test_a_linked_config_is_not_written_through(codex_home: Path, tmp_path: Path) -> None:
    target = tmp_path / "real.toml"
    target.write_text(USERS_TOML)
    (codex_home / "config.toml").unlink()
    (codex_home / "config.toml").symlink_to(target)
    rc, out, err = _install(codex_home)
    assert rc == 65 and "symbolic link" in err and target.read_text() == USERS_TOML
    assert (codex_home / "hooks.json").read_text() == USERS_HOOKS


def test_the_command_and_codex_home_come_from_the_options_and_the_environment(codex_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    proc = cli("hook", "install", "codex", "--mcp", "--command", "/opt/py -m catty_ctx")
    assert proc.returncode == 0, proc.stderr
    config = tomllib.loads((codex_home / "config.toml").read_text())
    assert config["mcp_servers"]["catty-recall"] == {"command": "/opt/py", "args": ["-m", "catty_ctx", "mcp", "--codex-home",
                                                                               os.path.realpath(codex_home)]}
    assert '"/opt/py -m catty_ctx hook codex pre-compact"' in (codex_home / "hooks.json").read_text()


@pytest.mark.parametrize("flag", [["--statusline"], ["--scope", "project"], ["--settings", "x.json"]])
def test_claude_only_options_are_usage_errors_for_codex(codex_home: Path, flag: list[str]) -> None:
    rc, out, err = _install(codex_home, *flag)
    assert rc == 2 and "not for codex" in err and (codex_home / "config.toml").read_text() == USERS_TOML


def test_the_trust_hash_is_codexs_normalised_identity() -> None:
    # timeout made explicit (600 unset), the matcher dropped where Codex ignores it, the
    # context limit kept only off its default and only where it applies
    plain = {"type": "command", "command": "x"}
    assert codex_install.trust_hash("PreCompact", None, plain) == codex_install.trust_hash("PreCompact", None, {**plain, "timeout": 600})
    assert codex_install.trust_hash("Stop", "m", plain) == codex_install.trust_hash("Stop", None, plain)
    assert codex_install.trust_hash("PreCompact", "auto", plain) != codex_install.trust_hash("PreCompact", None, plain)
    assert codex_install.trust_hash("SessionStart", None, {**plain, "additionalContextLimit": 2500}) == \
        codex_install.trust_hash("SessionStart", None, plain)
    assert codex_install.trust_hash("SessionStart", None, {**plain, "additionalContextLimit": 9}) != \
        codex_install.trust_hash("SessionStart", None, plain)
    assert codex_install.trust_hash("PreCompact", None, {**plain, "additionalContextLimit": 9}) == \
        codex_install.trust_hash("PreCompact", None, plain)


def test_hook_install_codex_starts_without_typer_and_both_parsers_agree(codex_home: Path) -> None:
    status, loaded = plain_run_loads("hook", "install", "codex", "--codex-home", str(codex_home), "--dry-run")
    assert status == 0 and "typer" not in loaded
    both_parsers("hook", "install", "codex", "--codex-home", str(codex_home), "--dry-run")
    both_parsers("hook", "codex", "session-start", input=b'{"session_id": "s", "source": "startup"}')
    table_is_the_typer_commands("hook install", arguments=["agent"])


def test_when_our_group_moves_install_moves_its_trust_and_uninstall_still_takes_all_of_ours(codex_home: Path) -> None:
    assert _install(codex_home)[0] == 0
    hooks = json.loads((codex_home / "hooks.json").read_text())
    hooks["hooks"]["PreCompact"].insert(0, {"hooks": [{"type": "command", "command": "my-precompact"}]})  # the user adds one before ours
    (codex_home / "hooks.json").write_text(json.dumps(hooks, indent=2) + "\n")
    rc, out, err = _install(codex_home)
    assert rc == 0, err
    source = os.path.realpath(codex_home / "hooks.json")
    state = tomllib.loads((codex_home / "config.toml").read_text())["hooks"]["state"]
    assert set(state) == {f"{source}:session_start:1:0", f"{source}:pre_compact:1:0"}  # the stale :0:0 gone
    assert "no longer in place" in out
    assert _install(codex_home, verb="uninstall")[0] == 0
    assert (codex_home / "config.toml").read_text() == USERS_TOML

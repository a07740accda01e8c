"""The plugins of the repository as files: both marketplaces list the one plugin folder, its
hooks are the hook points `hook install` writes (with --plugin), and a hook whose catty-ctx is
not on PATH says so in one line and exits 0."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support import ROOT

from catty_ctx._version import __version__
from catty_ctx.agents.codex_install import CODEX_HOOKS, CONTEXT_LIMIT, codex_plugin_trust
from catty_ctx.agents.plugin import PLUGIN
from catty_ctx.agents.settings import CLAUDE_HOOKS, HOOK_TIMEOUT

FOLDER = ROOT / "plugins" / PLUGIN
HOOK_FILES = {"claude": (FOLDER / "hooks" / "hooks.json", CLAUDE_HOOKS), "codex": (FOLDER / "hooks" / "codex.json", CODEX_HOOKS)}


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_both_marketplaces_list_the_plugin_folder_and_the_manifests_agree() -> None:
    claude = _load(ROOT / ".claude-plugin" / "marketplace.json")
    codex = _load(ROOT / ".agents" / "plugins" / "marketplace.json")
    assert [(p["name"], p["source"]) for p in claude["plugins"]] == [(PLUGIN, f"./plugins/{PLUGIN}")]
    assert [(p["name"], p["source"]) for p in codex["plugins"]] == [(PLUGIN, {"source": "local", "path": f"./plugins/{PLUGIN}"})]
    manifests = [_load(FOLDER / ".claude-plugin" / "plugin.json"), _load(FOLDER / ".codex-plugin" / "plugin.json")]
    assert {(m["name"], m["version"]) for m in manifests} == {(PLUGIN, __version__)}
    codex_manifest = manifests[1]
    assert (FOLDER / codex_manifest["hooks"]).resolve() == HOOK_FILES["codex"][0]
    servers = [_load(FOLDER / ".mcp.json"), _load(FOLDER / codex_manifest["mcpServers"])]
    assert [s["mcpServers"]["catty-recall"]["args"] for s in servers] == [["mcp"], ["mcp"]]


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_the_plugin_hooks_are_the_hook_points_of_hook_install(agent: str) -> None:
    path, points = HOOK_FILES[agent]
    hooks = _load(path)["hooks"]
    assert list(hooks) == [event for event, _, _ in points]
    for event, matcher, hook in points:
        (group,) = hooks[event]
        assert group.get("matcher") == matcher
        (handler,) = group["hooks"]
        assert f"catty-ctx hook {agent} {hook} --plugin; exit 0" in handler["command"] and handler["timeout"] == HOOK_TIMEOUT
        assert handler.get("additionalContextLimit") == (CONTEXT_LIMIT if agent == "codex" and event == "SessionStart" else None)


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_plugin_hook_without_catty_ctx_on_path_says_so_in_one_line_and_exits_0(agent: str, tmp_path: Path) -> None:
    path, _ = HOOK_FILES[agent]
    for groups in _load(path)["hooks"].values():
        command = groups[0]["hooks"][0]["command"]
        ran = subprocess.run(["/bin/sh", "-c", command], input=b'{"session_id": "s", "source": "compact"}', capture_output=True,
                             env={"PATH": str(tmp_path), "HOME": str(tmp_path)}, check=False)
        assert ran.returncode == 0 and ran.stdout == b""
        assert ran.stderr.count(b"\n") == 1 and ran.stderr.startswith(b"catty-ctx: not on PATH")


def test_a_plugin_hook_whose_catty_ctx_fails_still_exits_0(tmp_path: Path) -> None:
    """An exit 2 of a PreCompact hook would stop Claude Code's compaction: never passed on."""
    fake = tmp_path / "catty-ctx"
    fake.write_text("#!/bin/sh\necho 'usage: no such option' >&2\nexit 2\n")
    fake.chmod(0o755)
    command = _load(HOOK_FILES["claude"][0])["hooks"]["PreCompact"][0]["hooks"][0]["command"]
    ran = subprocess.run(["/bin/sh", "-c", command], input=b"{}", capture_output=True, env={"PATH": f"{tmp_path}{os.pathsep}/usr/bin:/bin"},
                         check=False)
    assert ran.returncode == 0 and b"no such option" in ran.stderr


def test_codex_trust_of_the_plugin_is_read_from_its_installed_copy(tmp_path: Path) -> None:
    home = tmp_path / ".codex"
    copy = home / "plugins" / "cache" / "market" / PLUGIN / __version__
    (copy / "hooks").mkdir(parents=True)
    (copy / ".codex-plugin").mkdir()
    (copy / ".codex-plugin" / "plugin.json").write_bytes((FOLDER / ".codex-plugin" / "plugin.json").read_bytes())
    (copy / "hooks" / "codex.json").write_bytes(HOOK_FILES["codex"][0].read_bytes())
    assert codex_plugin_trust(home) is None  # installed but not enabled
    (home / "config.toml").write_text(f'[plugins."{PLUGIN}@market"]\nenabled = true\n')
    plugin_id, trust = codex_plugin_trust(home)
    assert plugin_id == f"{PLUGIN}@market"
    assert sorted(trust) == [f"{PLUGIN}@market:hooks/codex.json:pre_compact:0:0", f"{PLUGIN}@market:hooks/codex.json:session_start:0:0"]
    (home / "config.toml").write_text(f'[plugins."{PLUGIN}@market"]\nenabled = false\n')
    assert codex_plugin_trust(home) is None

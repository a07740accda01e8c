"""The catty-ctx plugin (plugins/catty-ctx of the repository) and `hook install`'s own entries:
one of the two runs, never both (docs/agents.md#the-plugin).

The plugin's hooks call `catty-ctx hook AGENT HOOK --plugin`: such a run first looks for the
entries `hook install` writes in the agent's settings and, when they are there, leaves the
work to them (one line in the hooks log). `hook install` looks for the plugin enabled in the
agent's settings and then leaves our hooks and the recall server out (for Codex it trusts the
plugin's hooks instead: codex_install.codex_plugin_trust). The look-ups read small settings
files and never fail: a file that cannot be read counts as holding nothing.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .settings import claude_config_dir, codex_home, is_our_hook

PLUGIN = "catty-ctx"  # the plugin's name in both marketplaces (`catty-ctx@<marketplace>`)
PLUGIN_FLAG = "--plugin"


def plugin_json(path: Path) -> dict[str, Any]:
    """The JSON object in PATH, {} when it cannot be read or is not an object."""
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def claude_settings_files(cwd: Path | None) -> list[Path]:
    """The settings files Claude Code reads hooks and enabled plugins from: the user's, and with
    CWD the project's shared and local ones."""
    files = [claude_config_dir() / "settings.json"]
    if cwd is not None:
        files += [cwd / ".claude" / "settings.json", cwd / ".claude" / "settings.local.json"]
    return files


def claude_plugin_enabled(cwd: Path | None) -> Path | None:
    """The settings file that enables the catty-ctx plugin (`enabledPlugins`), or None."""
    for path in claude_settings_files(cwd):
        enabled = plugin_json(path).get("enabledPlugins")
        if isinstance(enabled, dict) and any(isinstance(k, str) and k.split("@", 1)[0] == PLUGIN and v is True for k, v in enabled.items()):
            return path
    return None


def holds_installed_hooks(doc: dict[str, Any]) -> bool:
    """DOC (settings.json, hooks.json) holds a hook handler of `hook install`'s, not a plugin's."""
    hooks = doc.get("hooks")
    groups = [g for v in hooks.values() if isinstance(v, list) for g in v] if isinstance(hooks, dict) else []
    handlers = [h for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list) for h in g["hooks"]]
    return any(is_our_hook(h) and PLUGIN_FLAG not in h["command"].split() for h in handlers)


def installed_instead(agent: str, payload: dict[str, Any]) -> Path | None:
    """For a plugin hook of AGENT: the file whose `hook install` entries run instead, or None.
    Claude Code: the user's, the project's and the local settings (the project is the hook's
    `cwd`); Codex: CODEX_HOME/hooks.json."""
    if agent == "codex":
        files = [codex_home(None) / "hooks.json"]
    else:
        cwd = payload.get("cwd")
        files = claude_settings_files(Path(cwd) if isinstance(cwd, str) and os.path.isabs(cwd) else None)
    return next((p for p in files if holds_installed_hooks(plugin_json(p))), None)

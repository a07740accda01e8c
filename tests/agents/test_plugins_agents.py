"""The plugins of the repository inside the real agents: added as a marketplace from the
repository's folder and installed by each agent's own plugin command, offline; the plugin's
hooks and recall server run the installed catty-ctx (here a `catty-ctx` on PATH that runs this
checkout), and never together with the hooks `hook install` writes."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from support import ROOT

from agents.anthropic_fake import text, tool_results, tool_use
from agents.http_fake import Until
from agents.openai_fake import exec_command, function_call, message
from agents.runner import Claude, Codex
from agents.scenarios import CLAUDE_WINDOW_NEAR, ERROR
from catty_ctx.agents.hooks import PLUGIN_RECALL_TOOLS
from catty_ctx.agents.recall import CODEX_NAMESPACE

PLUGIN = "catty-ctx@catty-ctx"


def installed_catty_ctx(folder: Path) -> Path:
    """A folder holding a `catty-ctx` program that runs this checkout, as the installed one would."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "catty-ctx"
    exe.write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(ROOT))} exec {shlex.quote(sys.executable)} -m catty_ctx \"$@\"\n")
    exe.chmod(0o755)
    return folder


def _with_plugin(claude: Claude, tmp_path: Path) -> Path:
    claude.env["PATH"] = f"{installed_catty_ctx(tmp_path / 'bin')}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
    mirrors = tmp_path / "mirrors"
    claude.env["CATTY_CTX_MIRRORS"] = str(mirrors)
    added = claude.run("plugin", "marketplace", "add", str(ROOT))
    assert "catty-ctx" in added.stdout, added.stdout
    installed = claude.run("plugin", "install", PLUGIN)
    assert PLUGIN in installed.stdout, installed.stdout
    return mirrors


def _tool_names(body: Any) -> list[Any]:
    return [t.get("name") for t in (body or {}).get("tools") or []]


def _compacted_session(claude: Claude) -> str:
    s = claude.server
    s.push(tool_use("Bash", {"command": f"echo '{ERROR}'", "description": "run the tests"}), text("The tests fail."))
    sid = claude.prompt("Run the tests").session_id
    s.push(tool_use("Bash", {"command": "echo fixing", "description": "fix"}, input_tokens=CLAUDE_WINDOW_NEAR),
           text("<summary>The user ran the tests; one failed; a fix is under way.</summary>"), text("Fixed."))
    claude.prompt("Fix it", resume=sid, env={"ENABLE_TOOL_SEARCH": "false"})
    assert any(r.get("subtype") == "compact_boundary" for r in claude.records(sid)), "no automatic compaction"
    return sid


@pytest.mark.long
@pytest.mark.agents("claude")
def test_claude_plugin_validates_installs_offline_and_its_hooks_and_server_run(claude, tmp_path: Path) -> None:
    for target in (ROOT, ROOT / "plugins" / "catty-ctx"):
        checked = claude.run("plugin", "validate", "--strict", str(target))
        assert "Validation passed" in checked.stdout, checked.stdout
    mirrors = _with_plugin(claude, tmp_path)
    s = claude.server
    sid = _compacted_session(claude)
    # the plugin's PreCompact hook mirrored and archived the session, its SessionStart hook put
    # the reminder into the next request, naming the plugin's recall tool
    mirror = mirrors / "claude" / sid
    assert ERROR in (mirror / "segments" / "segment_000.md").read_text()
    tool = PLUGIN_RECALL_TOOLS["claude"]
    context = orjson.dumps(s.bodies()[-1]["messages"]).decode()
    assert f"catty-ctx segment grep {mirror}" in context and tool in context and ERROR not in context
    # the model calls the plugin's server: the exact error the compaction dropped (short commands
    # first, until its requests list the tool: the server's start, the MCP SDK's import, may
    # outlast the first request on a loaded machine)
    before = len(s.bodies())
    s.push(Until(lambda req: tool in _tool_names(req.json), lambda: tool_use("Bash", {"command": "sleep 0.3", "description": "wait"})),
           tool_use(tool, {"pattern": "expected 3, got 4"}, id="toolu_recall_the_error"), text("Found."))
    claude.prompt("What exactly did the test print?", resume=sid, env={"ENABLE_TOOL_SEARCH": "false"})
    assert s.unscripted == 0 and s.errors == [], (s.unscripted, s.errors)
    *_waits, asked, answered_body = s.bodies()[before:]
    assert tool in _tool_names(asked)
    (result,) = tool_results(answered_body)
    assert result["tool_use_id"] == "toolu_recall_the_error"
    words = result["content"] if isinstance(result["content"], str) else "".join(b.get("text", "") for b in result["content"])
    assert not result.get("is_error"), words
    found = orjson.loads(words)
    assert found["session"]["session_id"] == sid and any(m["line"] == ERROR for m in found["matches"])


@pytest.mark.long
@pytest.mark.agents("claude")
def test_claude_plugin_hooks_leave_the_work_to_hook_installs_and_install_leaves_out_the_plugins(claude, tmp_path: Path) -> None:
    mirrors = _with_plugin(claude, tmp_path)
    settings = claude.config_dir / "settings.json"
    env = {**claude.environment(), "PATH": claude.env["PATH"]}
    # install sees the plugin enabled: our hooks are left out, the status line still goes in
    ran = subprocess.run(["catty-ctx", "hook", "install", "claude", "--statusline"], env=env, cwd=claude.cwd, capture_output=True, text=True,
                         check=False)
    assert ran.returncode == 0, ran.stderr
    written = orjson.loads(settings.read_bytes())
    assert "hooks" not in written and "catty-ctx statusline" in written["statusLine"]["command"] and written["enabledPlugins"][PLUGIN]
    assert "plugin" in ran.stderr and str(settings) in ran.stderr
    # hook install's own hooks written by hand beside the plugin (an older install): the plugin's
    # hooks leave the work to them, so each hook runs once
    log = tmp_path / "ran.log"
    written["hooks"] = {"PreCompact": [{"hooks": [{"type": "command", "command": f"echo pre >> {log}; catty-ctx hook claude pre-compact"}]}],
                        "SessionStart": [{"matcher": "compact|resume", "hooks": [{"type": "command",
                                                                                  "command": "catty-ctx hook claude session-start"}]}]}
    settings.write_bytes(orjson.dumps(written))
    sid = _compacted_session(claude)
    assert log.read_text() == "pre\n"
    kept = (mirrors / "hooks.log").read_text()
    assert "pre-compact --plugin: left to the hooks `hook install` wrote" in kept and "session-start --plugin: left to" in kept
    context = orjson.dumps(claude.server.bodies()[-1]["messages"]).decode()
    assert context.count(f"catty-ctx segment grep {mirrors / 'claude' / sid}") == 1


def _kept(codex: Codex, *argv: str, run: Any = None) -> None:
    """Run ARGV (codex's own, or RUN's) and keep what it added to config.toml: the runner writes
    the file afresh before each run."""
    base = codex.config_text()
    (run or codex.run)(*argv)
    now = codex.config_path.read_text()
    assert now.startswith(base), now
    codex.extra_toml += now[len(base):]


@pytest.mark.long
@pytest.mark.agents("codex")
def test_codex_plugin_installs_offline_and_its_hooks_run_after_the_trust_step(codex, tmp_path: Path) -> None:
    codex.env["PATH"] = f"{installed_catty_ctx(tmp_path / 'bin')}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
    mirrors = tmp_path / "mirrors"
    codex.env["CATTY_CTX_MIRRORS"] = str(mirrors)
    codex.features["plugins"] = True
    _kept(codex, "plugin", "marketplace", "add", str(ROOT))
    _kept(codex, "plugin", "add", PLUGIN)
    assert f'[plugins."{PLUGIN}"]' in codex.extra_toml

    def trust_step(*argv: str) -> None:
        env = {**codex.environment(), "PATH": codex.env["PATH"]}
        ran = subprocess.run(["catty-ctx", *argv], env=env, cwd=codex.cwd, capture_output=True, text=True, check=False)
        assert ran.returncode == 0 and "trusts its hooks" in ran.stderr, ran.stderr

    _kept(codex, "hook", "install", "codex", run=trust_step)
    assert not (codex.codex_home / "hooks.json").exists()
    codex.config["model_auto_compact_token_limit"] = 50_000
    s = codex.server
    s.push(exec_command(f"echo '{ERROR}'", input_tokens=60_000), message("SUMMARY: echoed"),
           Until(lambda req: CODEX_NAMESPACE in _tool_names(req.json), lambda: exec_command("sleep 0.3")),
           function_call("recall_search", {"pattern": "expected 3, got 4"}, namespace=CODEX_NAMESPACE), message("Done."))
    ran = codex.exec("Run the tests")
    mirror = mirrors / "codex" / ran.session_id
    assert ERROR in (mirror / "segments" / "segment_000.md").read_text()
    assert s.unscripted == 0 and s.errors == [], (s.unscripted, s.errors)
    *_, asked, answered = s.bodies()
    sent = orjson.dumps(asked["input"]).decode()
    assert f"catty-ctx segment grep {mirror}" in sent and PLUGIN_RECALL_TOOLS["codex"] in sent
    # the plugin's recall server, in the namespace the reminder names
    assert CODEX_NAMESPACE in _tool_names(asked)
    output = [i for i in answered["input"] if i.get("type") == "function_call_output"][-1]["output"]
    blocks = [output] if isinstance(output, str) else [b["text"] for b in output if isinstance(b, dict) and "text" in b]
    found = orjson.loads(next(b for b in blocks if b.startswith("{")))
    assert found["session"]["session_id"] == ran.session_id and any(m["line"] == ERROR for m in found["matches"]), blocks

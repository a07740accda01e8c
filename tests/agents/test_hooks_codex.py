"""The real Codex CLI with `catty-ctx hook install codex` done in its home — and no
`--dangerously-bypass-hook-trust`: the trust entries the installer writes are what lets
Codex run our hooks. A scripted session plants facts (an exact error, a file written, an
edit that failed, the user's constraint), then an automatic compaction: our PreCompact
builds the mirror from the rollout, our SessionStart(compact) answer reaches the next request."""
from __future__ import annotations

import os
import shlex
import sys
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from support import cli

from agents.openai_fake import Turn, exec_command, function_call, message
from agents.runner import ROOT
from agents.scenarios import CODEX_COMPACT_LIMIT, ERROR
from catty_ctx.agents.settings import RECALL_SERVER

MODEL = "gpt-5.5"  # a model of the release's own catalog: its tools include apply_patch (freeform)
CONSTRAINT = "Never touch the vendored folder third_party/."
NAMESPACE = "mcp__" + RECALL_SERVER.replace("-", "_")  # Codex lists a server's tools under its name, '-' made '_'


def apply_patch(patch: str, **usage: Any) -> Turn:
    """Codex's freeform apply_patch call (a custom tool: its input is the patch text)."""
    return Turn([{"type": "custom_tool_call", "id": f"ctc_{uuid.uuid4().hex[:24]}", "call_id": f"call_{uuid.uuid4().hex[:24]}",
                  "name": "apply_patch", "input": patch, "status": "completed"}], usage=usage)


def install(codex: Any, *more: str, command: str = shlex.join([sys.executable, "-m", "catty_ctx"])) -> None:
    """`hook install codex` into the runner's home, its hooks calling this checkout's catty-ctx.
    The runner rewrites config.toml before each run: what install appended is kept as its
    extra_toml, so each run finds the file exactly as install left it."""
    codex.codex_home.mkdir(parents=True, exist_ok=True)
    base = codex.config_text()
    codex.config_path.write_text(base)
    proc = cli("hook", "install", "codex", "--codex-home", str(codex.codex_home), "--command", command, *more)
    assert proc.returncode == 0, proc.stderr
    text = codex.config_path.read_text()
    assert text.startswith(base)
    codex.extra_toml = text[len(base):]


def installed(codex: Any, tmp_path: Path) -> Path:
    """The runner set up for an automatic compaction, with install done; the mirrors folder."""
    mirrors = tmp_path / "mirrors"
    codex.env["CATTY_CTX_MIRRORS"] = str(mirrors)
    codex.model = MODEL
    codex.config["model_auto_compact_token_limit"] = CODEX_COMPACT_LIMIT
    install(codex)
    return mirrors


def request_text(body: dict[str, Any]) -> str:
    return orjson.dumps(body).decode()


@pytest.mark.agents("codex")
def test_codex_runs_our_trusted_hooks_through_an_automatic_compaction(codex: Any, tmp_path: Path) -> None:
    mirrors = installed(codex, tmp_path)
    s = codex.server
    s.push(exec_command(f"echo '{ERROR}'"),
           apply_patch("*** Begin Patch\n*** Add File: parse.py\n+def parse():\n+    return 3\n*** End Patch\n"),
           apply_patch("*** Begin Patch\n*** Update File: missing.py\n@@\n-old\n+new\n*** End Patch\n",
                       input_tokens=CODEX_COMPACT_LIMIT + 10_000),
           message("SUMMARY: tests were run and parse.py was written."),
           message("Done."))
    ran = codex.exec(f"{CONSTRAINT} Run the tests, then write parse.py.")
    assert s.unscripted == 0 and s.errors == [], (s.unscripted, s.errors)
    assert (codex.cwd / "parse.py").exists() and not (codex.cwd / "missing.py").exists()
    sid = ran.session_id
    assert sid
    # PreCompact ran: the mirror of the rollout holds the span's exact error, and the failed patch as a failure
    mirror = mirrors / "codex" / sid
    log = mirror / "updates.jsonl"
    assert log.is_file(), sorted(p.name for p in mirrors.rglob("*"))
    events = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    assert any(ERROR in str(ev.get("output")) for ev in events if ev["kind"] == "tool_result")
    results = {ev["call_id"]: ev for ev in events if ev["kind"] == "tool_result"}
    patches = {str(ev["args"]): results[ev["call_id"]]["is_error"] for ev in events if ev["kind"] == "tool_call" and ev["name"] == "apply_patch"}
    assert sorted(patches.values()) == [False, True] and patches[next(k for k in patches if "missing.py" in k)] is True
    assert not (mirrors / "hooks.log").exists(), (mirrors / "hooks.log").read_text()
    # the first request after the compaction carries our reminder (as Codex's developer message); none before it does
    bodies = [request_text(b) for b in s.bodies()]
    after = next(i for i, b in enumerate(bodies) if "SUMMARY: tests were run" in b)
    assert all("Files edited in this session" not in b for b in bodies[:after])
    ours = next(i["content"][0]["text"] for i in s.bodies()[after]["input"]
                if i.get("role") == "developer" and "catty-ctx kept the continuation state" in request_text(i))
    assert 'Files edited in this session: "parse.py"\n' in ours  # the failed patch's file left out
    assert CONSTRAINT in ours.split("The user's standing instructions", 1)[1]
    assert "apply_patch verification failed" in ours  # the last tool error
    assert f"recall_search (namespace {NAMESPACE})" in ours and f"catty-ctx segment grep {mirror}" in ours


@pytest.mark.agents("codex")
def test_without_the_trust_entries_codex_skips_our_hooks_silently(codex: Any, tmp_path: Path) -> None:
    # the control: the same hooks.json, config.toml without install's block — nothing runs
    mirrors = installed(codex, tmp_path)
    assert "trusted_hash" in codex.extra_toml
    codex.extra_toml = ""
    codex.server.push(exec_command(f"echo '{ERROR}'", input_tokens=CODEX_COMPACT_LIMIT + 10_000),
                      message("SUMMARY: tests were run."), message("Done."))
    ran = codex.exec("Run the tests.")
    assert ran.returncode == 0 and codex.server.unscripted == 0
    assert not mirrors.exists()
    assert all("Files edited in this session" not in request_text(b) and "updates.jsonl" not in request_text(b)
               for b in codex.server.bodies())


@pytest.mark.agents("codex")
def test_a_linked_codex_home_is_trusted_under_the_path_codex_resolves(codex: Any, tmp_path: Path) -> None:
    # Codex resolves CODEX_HOME's links before it names hooks.json in its trust keys
    real = Path(os.path.realpath(tmp_path)) / "real-codex-home"
    real.mkdir()
    codex.home.mkdir(parents=True, exist_ok=True)
    codex.codex_home.symlink_to(real)
    mirrors = installed(codex, tmp_path)
    assert f'"{real / "hooks.json"}:pre_compact:0:0"' in codex.extra_toml
    codex.server.push(exec_command(f"echo '{ERROR}'", input_tokens=CODEX_COMPACT_LIMIT + 10_000),
                      message("SUMMARY: tests were run."), message("Done."))
    sid = codex.exec("Run the tests.").session_id
    assert ERROR in (mirrors / "codex" / str(sid) / "updates.jsonl").read_text()


@pytest.mark.agents("codex")
def test_codex_recalls_the_exact_error_through_the_server_install_registered(codex: Any, tmp_path: Path) -> None:
    # `hook install codex --mcp`: Codex starts `catty-ctx mcp --codex-home …` in the session's folder
    # (with only HOME, PATH and a few more set: this checkout is named on the command line)
    codex.env["CATTY_CTX_MIRRORS"] = str(tmp_path / "mirrors")
    codex.config["model_auto_compact_token_limit"] = CODEX_COMPACT_LIMIT
    # Codex lists an optional MCP server's tools only if it starts within a grace of 1 s (the
    # default); on a loaded machine the SDK's import alone takes longer: wait for it (docs/agents.md#codex)
    codex.config["mcp_optional_startup_grace_ms"] = 0
    install(codex, "--mcp", command=shlex.join(["env", f"PYTHONPATH={ROOT}", sys.executable, "-m", "catty_ctx"]))
    s = codex.server
    s.push(exec_command(f"echo '{ERROR}'"),
           exec_command("echo fixing", input_tokens=CODEX_COMPACT_LIMIT + 10_000),
           message("SUMMARY: a test failed; a fix is under way."),
           function_call("recall_search", {"pattern": "expected 3, got 4"}, namespace=NAMESPACE),
           message("The exact error was found."))
    ran = codex.exec("Run the tests, then fix them.")
    sid = ran.session_id
    assert s.unscripted == 0 and s.errors == [], (s.unscripted, s.errors)
    bodies = s.bodies()
    spaces = [t for t in bodies[0]["tools"] if t.get("type") == "namespace" and t.get("name") == NAMESPACE]
    assert spaces and "recall_search" in [t["name"] for t in spaces[0]["tools"]]
    asked, answered = bodies[-2], bodies[-1]
    assert ERROR not in request_text(asked)  # out of the context after the compaction
    (output,) = [i for i in answered["input"] if i.get("type") == "function_call_output"][-1:]
    parts = [output["output"]] if isinstance(output["output"], str) else [p["text"] for p in output["output"] if p.get("type") == "input_text"]
    found = orjson.loads(next(p for p in parts if p.startswith("{")))  # after Codex's own "Wall time: …" part
    assert found["session"]["session_id"] == sid
    hit = next(m for m in found["matches"] if m["line"] == ERROR)
    assert hit["seq"] <= found["compacted_through_seq"]

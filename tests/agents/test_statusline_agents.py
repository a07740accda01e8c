"""The real Claude Code runs `catty-ctx statusline` as its statusLine: the JSON it really sends,
and the line our command makes of it, against the transcript it really writes."""
from __future__ import annotations

import json
import os
import pty
import select
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.anthropic_fake import text, tool_use
from agents.runner import catty_ctx_command

# A statusLine command that keeps what Claude Code hands it, then runs ours on the same bytes.
TEE = """import subprocess, sys
data = sys.stdin.buffer.read()
with open(sys.argv[1], "ab") as f:
    f.write(data.strip().replace(b"\\n", b" ") + b"\\n")
line = subprocess.run(sys.argv[3:], input=data, capture_output=True).stdout
with open(sys.argv[2], "ab") as f:
    f.write(line)
sys.stdout.buffer.write(line)
"""


def _interactive(claude, prompt: str, until, timeout: float = 90) -> bytes:
    """Run Claude Code's interactive UI on a pseudo-terminal with PROMPT until UNTIL() holds."""
    argv = claude.ns.wrap([str(claude.exe), "--dangerously-skip-permissions", prompt])
    env = claude.environment(TERM="xterm-256color", COLUMNS="160", LINES="40")
    env.pop("NO_COLOR", None)
    pid, fd = pty.fork()
    if pid == 0:  # the child: Claude Code on the terminal
        os.chdir(claude.cwd)
        os.execvpe(argv[0], argv, env)
    screen = b""
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end and not until():
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                try:
                    screen += os.read(fd, 65536)
                except OSError:
                    break
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    return screen


@pytest.mark.agents("claude")
def test_real_claude_code_status_json_gives_our_line(claude, tmp_path: Path) -> None:
    sent, shown = tmp_path / "status.jsonl", tmp_path / "lines.txt"
    tee = tmp_path / "tee.py"
    tee.write_text(TEE)
    command = shlex.join([sys.executable, str(tee), str(sent), str(shown), *shlex.split(catty_ctx_command("statusline", "--json"))])
    claude.write_settings({"statusLine": {"type": "command", "command": command, "padding": 0},
                           "skipDangerousModePermissionPrompt": True})
    (claude.home / ".claude.json").write_text(json.dumps({"hasCompletedOnboarding": True, "theme": "dark", "bypassPermissionsModeAccepted": True,
                                                          "customApiKeyResponses": {"approved": ["sk-ant-fake"[-20:]], "rejected": []},
                                                          "projects": {str(claude.cwd): {"hasTrustDialogAccepted": True}}}))
    claude.server.push(tool_use("Bash", {"command": "echo hi", "description": "echo"}, input_tokens=1200,
                                cache_read_input_tokens=30_000, cache_creation_input_tokens=500),
                       text("Done.", input_tokens=1300, cache_read_input_tokens=31_000, cache_creation_input_tokens=700))

    def shown_for_the_answer() -> bool:  # the status line after the last response, as our command made it
        try:
            return any(json.loads(line)["tokens"] == 33_000 for line in shown.read_text().splitlines())
        except (OSError, ValueError):  # not yet written, or a line half written
            return False

    screen = _interactive(claude, "echo hi please", shown_for_the_answer)
    docs = [json.loads(line) for line in sent.read_text().splitlines() if line.strip()]
    last = [d for d in docs if (d.get("context_window") or {}).get("total_input_tokens") == 33_000][-1]
    assert last["session_id"] and Path(last["transcript_path"]).exists() and last["version"] == "2.1.332", last
    assert shown_for_the_answer(), screen[-3000:]
    proc = subprocess.run(shlex.split(catty_ctx_command("statusline", "--json")), input=json.dumps(last).encode(), capture_output=True, check=False)
    mine = json.loads(proc.stdout)
    ctx = last["context_window"]
    assert proc.returncode == 0 and mine["source"] == "transcript"  # read from the transcript it wrote, not the JSON
    assert mine["tokens"] == ctx["total_input_tokens"] == 1300 + 31_000 + 700
    assert mine["window"] == ctx["context_window_size"] and round(mine["percent"]) == ctx["used_percentage"]
    assert mine["cached_percent"] == round(31_000 * 100 / 33_000, 2) and mine["compactions"] == 0
    assert mine["model_id"] == last["model"]["id"] and mine["session_id"] == last["session_id"]
    # the same JSON with the transcript gone: the JSON's own figures
    gone = dict(last, transcript_path=str(tmp_path / "gone.jsonl"))
    proc = subprocess.run(shlex.split(catty_ctx_command("statusline", "--json")), input=json.dumps(gone).encode(), capture_output=True, check=False)
    fallback = json.loads(proc.stdout)
    assert proc.returncode == 0 and fallback["source"] == "status" and fallback["tokens"] == mine["tokens"]

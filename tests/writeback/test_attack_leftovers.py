"""Issue 43: what a killed `fork --to` or a stopped recall server leaves in the temporary folder
is cleared by the next run (a full copy of a session, kept private but kept), and a write that
fails (a full disk) leaves no empty DEST folder behind."""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from support import FIXTURES, ROOT, cli


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _left_by_a_killed_run(kind: str) -> Path:
    spool = Path(tempfile.gettempdir()) / f"catty-ctx-{kind}-{_dead_pid()}-x1y2z3"
    spool.mkdir()
    (spool / "updates.jsonl").write_bytes(b"{}\n" * 1000)
    return spool


def test_fork_to_clears_the_working_copy_a_killed_fork_left(tmp_path: Path) -> None:
    left = _left_by_a_killed_run("writeback")
    cli("fork", str(FIXTURES / "sessions" / "demo"), str(tmp_path / "dest"), "--to", "claude", check=True)
    assert not left.exists()


def test_the_recall_server_clears_a_stopped_ones_copy_and_its_own_on_sigterm(tmp_path: Path) -> None:
    left = _left_by_a_killed_run("native")
    transcript = FIXTURES / "import" / "claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl"
    before = set(os.listdir(tempfile.gettempdir()))
    proc = subprocess.Popen([sys.executable, "-m", "catty_ctx", "mcp", "--session", str(transcript)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stdin is not None and proc.stdout is not None
    for doc in ({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                                               "clientInfo": {"name": "t", "version": "1"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "context_status", "arguments": {}}}):
        proc.stdin.write(json.dumps(doc).encode() + b"\n")
        proc.stdin.flush()
    answered = 0
    while answered < 2:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        answered += b'"id":' in line or b'"id": ' in line
    assert not left.exists()
    opened = [n for n in set(os.listdir(tempfile.gettempdir())) - before if n.startswith("catty-ctx-native-")]
    assert opened  # the server's own copy of the transcript, while it runs
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    time.sleep(0.1)
    assert not [n for n in opened if (Path(tempfile.gettempdir()) / n).exists()]


def test_a_write_that_fails_leaves_no_empty_dest_folder(tmp_path: Path) -> None:
    """The new session file is the last write of `fork --to`: the disk full there (a file size
    limit of 1 KiB, each write past it refused) leaves no DEST folder it made."""
    dest = tmp_path / "new" / "project"

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    code = ("import sys; from pathlib import Path; from catty_ctx.writeback.pipeline import place_new_file\n"
            "from catty_ctx.errors import WriteError\n"
            f"try: place_new_file(Path({str(dest)!r}) / 's.jsonl', b'x' * 100_000)\n"
            "except WriteError as e: print(e, file=sys.stderr); sys.exit(73)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          preexec_fn=small_files, timeout=120)
    assert proc.returncode == 73 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert not (tmp_path / "new").exists()


@pytest.mark.slow
def test_kill_9_campaign_on_fork_to(tmp_path: Path) -> None:
    """60 `fork --to claude` killed at random moments, each followed by a normal one: DEST holds
    no half file and no temp, the temporary folder no working copy once the next fork ran."""
    import random

    rng = random.Random(43)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    kills = 0
    for n in range(60):
        dest = tmp_path / f"d{n}"
        proc = subprocess.Popen([sys.executable, "-m", "catty_ctx", "fork", str(FIXTURES / "sessions" / "demo"), str(dest), "--to", "claude"],
                                env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 1.0))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        files = list(dest.iterdir()) if dest.exists() else []
        assert all(not p.name.startswith(".") for p in files)  # no temp beside the new file
        for p in files:  # a file there is whole: the loader's lines, each JSON
            assert all(json.loads(line) for line in p.read_text().splitlines())
        cli("fork", str(FIXTURES / "sessions" / "demo"), str(tmp_path / f"e{n}"), "--to", "claude", check=True)
        left = [name for name in os.listdir(tempfile.gettempdir()) if name.startswith("catty-ctx-writeback-")]
        assert left == []
    print(f"fork --to: {kills} of 60 runs killed")

"""`catty-ctx append`: events from stdin, --create, the lock."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from conftest import ROOT, cli, jsonl


def test_create_then_append_from_stdin(tmp_path: Path) -> None:
    s = tmp_path / "new"
    lines = b'{"kind":"message","id":"m1","role":"user","text":"hello"}\n{"kind":"message","id":"m2","role":"assistant","text":"hi","ts":"2026-01-01T00:00:00Z"}\n'
    proc = cli("append", str(s), "--create", "--window", "1000", "--model", "m", "--cwd", "/w", input=lines, check=True)
    out = jsonl(proc.stdout)
    assert [e["seq"] for e in out] == [1, 2] and out[1]["ts"] == "2026-01-01T00:00:00Z"
    events = jsonl((s / "updates.jsonl").read_bytes())
    assert events[0]["kind"] == "session" and events[0]["window"] == 1000 and events[0]["cwd"] == "/w"
    summary = orjson.loads((s / "summary.json").read_bytes())
    assert summary["window"] == 1000 and summary["model"] == "m" and summary["events"] == 3


def test_append_without_create_refuses_a_missing_session(tmp_path: Path) -> None:
    proc = cli("append", str(tmp_path / "x"), input=b'{"kind":"message","id":"m","role":"user","text":"a"}\n')
    assert proc.returncode == 2 and b"--create" in proc.stderr
    assert not (tmp_path / "x").exists()


def test_bad_stdin_line_writes_nothing(demo: Path) -> None:
    before = (demo / "updates.jsonl").read_bytes()
    proc = cli("append", str(demo), input=b'{"kind":"message","id":"m","role":"user","text":"a"}\n{"kind":"message"}\n')
    assert proc.returncode == 65 and b"event 2" in proc.stderr
    assert (demo / "updates.jsonl").read_bytes() == before


def test_lock_busy_exits_75(demo: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import sys,time; sys.path.insert(0,{str(ROOT)!r}); from catty_ctx.store import Session; l=Session.open({str(demo)!r}).lock(); l.__enter__(); print('held', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline().strip() == b"held"
        proc = cli("append", str(demo), "--lock-timeout", "0.3", input=b'{"kind":"message","id":"m","role":"user","text":"a"}\n')
        assert proc.returncode == 75 and b"locked" in proc.stderr
    finally:
        holder.kill()
        holder.wait()


def test_appended_stream_is_a_valid_log(demo: Path, tmp_path: Path) -> None:
    """An event stream on stdout is always a valid updates.jsonl: pipe it into inspect."""
    proc = cli("inspect", "-", "--json", input=(demo / "updates.jsonl").read_bytes(), check=True)
    assert orjson.loads(proc.stdout)["events"] == 22

"""`catty-ctx instructions`: discovery with sources, and the idempotent --append."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson
import pytest

from conftest import cli, jsonl


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "CLAUDE.md").write_text("user-level rule\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    r = tmp_path / "repo"
    (r / "app" / ".claude" / "rules").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    (r / ".gitignore").write_text("local.md\n")
    (r / "AGENTS.md").write_text("root rule\n")
    (r / "app" / "AGENTS.md").write_text("app rule\n")
    (r / "app" / ".claude" / "rules" / "local.md").write_text("ignored\n")
    (r / "app" / ".claude" / "rules" / "z.md").write_text("---\npaths: app\n---\nlast rule\n")
    return r


def test_lists_instructions_in_order_with_their_sources(repo: Path) -> None:
    doc = orjson.loads(cli("instructions", str(repo / "app"), "--json", check=True).stdout)
    assert [(i["scope"], i["text"]) for i in doc["instructions"]] == [
        ("global", "user-level rule"), ("repo", "root rule"), ("dir", "app rule"), ("dir", "last rule"),
    ]
    assert doc["instructions"][1]["path"] == str((repo / "AGENTS.md").resolve())
    assert any(s["reason"] == "ignored by git" for s in doc["skipped"])
    rows = jsonl(cli("instructions", str(repo / "app"), "--no-global", check=True).stdout)
    assert [r["order"] for r in rows] == [1, 2, 3] and rows[0]["text"] == "root rule"


def test_append_records_the_instructions_state_once(repo: Path, tmp_path: Path) -> None:
    s = tmp_path / "s"
    cli("append", str(s), "--create", check=True)
    first = cli("instructions", str(repo / "app"), "--append", str(s))
    assert first.returncode == 0 and b"appended at seq 1" in first.stderr
    again = cli("instructions", str(repo / "app"), "--append", str(s), "--json", check=True)
    assert orjson.loads(again.stdout)["appended_seq"] is None
    events = jsonl((s / "updates.jsonl").read_bytes())
    assert len(events) == 2 and events[1]["facet"] == "instructions"
    assert [i["text"] for i in events[1]["value"]] == ["user-level rule", "root rule", "app rule", "last rule"]
    (repo / "app" / "AGENTS.md").write_text("app rule, changed\n")
    third = cli("instructions", str(repo / "app"), "--append", str(s), "--json", check=True)
    assert orjson.loads(third.stdout)["appended_seq"] == 2


def test_a_missing_dir_is_a_usage_error(tmp_path: Path) -> None:
    proc = cli("instructions", str(tmp_path / "nope"))
    assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1


def test_append_to_a_missing_session_is_a_usage_error(repo: Path, tmp_path: Path) -> None:
    proc = cli("instructions", str(repo), "--append", str(tmp_path / "none"))
    assert proc.returncode == 2 and not (tmp_path / "none").exists()
    assert os.path.exists(repo / "AGENTS.md")


def test_concurrent_appends_record_the_state_once(repo: Path, tmp_path: Path) -> None:
    import sys

    from conftest import ROOT

    s = tmp_path / "s"
    cli("append", str(s), "--create", check=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [
        subprocess.Popen([sys.executable, "-m", "catty_ctx", "instructions", str(repo), "--append", str(s), "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        for _ in range(4)
    ]
    seqs = [orjson.loads(p.communicate(timeout=60)[0])["appended_seq"] for p in procs]
    assert sorted(seqs, key=lambda x: x is not None) == [None, None, None, 1]
    assert [e["kind"] for e in jsonl((s / "updates.jsonl").read_bytes())] == ["session", "state"]

"""Hostile io: the small items (issue 29 items 5 and 8; docs/reliability.md)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from catty_ctx.session.files import clear_dead_temps
from support import cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DEMO = FIXTURES / "sessions" / "demo"
CODEX_ZST = next((FIXTURES / "import" / "codex" / "compressed").glob("*.jsonl.zst"))


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    d = tmp_path / "d"
    shutil.copytree(DEMO, d)
    return d


def test_fork_into_a_non_empty_dest_is_a_usage_error(demo_copy: Path, tmp_path: Path) -> None:
    dest = tmp_path / "full"
    dest.mkdir()
    (dest / "x").write_text("mine")
    proc = cli("fork", str(demo_copy), str(dest))
    assert proc.returncode == 2 and b"not empty" in proc.stderr
    assert (dest / "x").read_text() == "mine"


@pytest.mark.parametrize("command", ["fork", "import"])
def test_a_300_character_destination_is_a_usage_error(demo_copy: Path, tmp_path: Path, command: str) -> None:
    dest = tmp_path / ("a" * 300)
    args = ("fork", str(demo_copy), str(dest)) if command == "fork" else ("import", "codex", str(CODEX_ZST), "--out", str(dest))
    proc = cli(*args)
    assert proc.returncode == 2 and b"too long" in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_a_failed_import_out_a_b_leaves_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    proc = cli("import", "claude", str(bad), "--out", str(tmp_path / "a" / "b" / "c"))
    assert proc.returncode == 65
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def _segmented(demo_copy: Path) -> Path:
    cli("compact", str(demo_copy), "--force", "--mode", "segments", check=True)
    index = demo_copy / "segments" / "index.json"
    doc = orjson.loads(index.read_bytes())
    doc["segments"][0]["segment"] = "zero"  # a row of the wrong type
    index.write_bytes(orjson.dumps(doc))
    return demo_copy


def test_segment_commands_on_a_broken_index_are_data_errors(demo_copy: Path) -> None:
    s = _segmented(demo_copy)
    for args in (("segment", "grep", str(s), "the"), ("segment", "list", str(s))):
        proc = cli(*args)
        assert proc.returncode == 65 and b"index.json: row 1" in proc.stderr, (args, proc.stderr)


def test_compact_refuses_a_broken_index_before_writing_its_segment(demo_copy: Path) -> None:
    s = _segmented(demo_copy)
    cli("append", str(s), "-q", input=b'{"kind":"message","id":"more","role":"user","text":"and then?"}\n', check=True)
    before = sorted(p.name for p in (s / "segments").iterdir())
    log = (s / "updates.jsonl").read_bytes()
    proc = cli("compact", str(s), "--force", "--mode", "segments")
    assert proc.returncode == 65, proc.stderr
    assert sorted(p.name for p in (s / "segments").iterdir()) == before  # no orphan segment
    assert (s / "updates.jsonl").read_bytes() == log


@pytest.mark.parametrize("args", [("append",), ("repair",), ("compact", "--force")])
def test_a_writer_given_a_codex_zst_creates_no_lock_beside_it(tmp_path: Path, args: tuple[str, ...]) -> None:
    rollout = tmp_path / CODEX_ZST.name
    shutil.copy(CODEX_ZST, rollout)
    proc = cli(args[0], str(rollout), *args[1:], input=b'{"kind":"message","id":"x","role":"user","text":"x"}\n')
    assert proc.returncode == 65 and b"import codex" in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [rollout.name]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_temp_left_by_a_killed_compaction_is_cleared_by_the_next(demo_copy: Path) -> None:
    requests = demo_copy / "compaction_requests"
    requests.mkdir(exist_ok=True)
    dead = requests / f".c-1.json.0123456789ab-{_dead_pid()}.tmp"
    dead.write_text("{half")
    cli("compact", str(demo_copy), "--force", check=True)
    assert not dead.exists()
    assert not [p for p in requests.iterdir() if p.name.endswith(".tmp")]


def test_a_live_writers_temp_is_left_alone(tmp_path: Path) -> None:
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        mine = tmp_path / f".x.json.0123456789ab-{live.pid}.tmp"
        mine.write_text("in flight")
        other = tmp_path / "notes.tmp"
        other.write_text("not a temp of ours")
        assert clear_dead_temps(tmp_path) == 0 and mine.exists() and other.exists()
    finally:
        live.kill()
        live.wait()


def test_a_lone_surrogate_is_kept_as_u_fffd_counted_and_reported(tmp_path: Path) -> None:
    src = FIXTURES / "import" / "claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl"
    lines = src.read_bytes().split(b"\n")  # (its torn last line stays torn)
    at = next(i for i, line in enumerate(lines) if b'"type":"user"' in line.replace(b" ", b"") and b'"content":"' in line.replace(b" ", b""))
    lines[at] = lines[at].replace(b'"content":"', b'"content":"cut emoji \\ud83d here: ', 1).replace(b'"content": "', b'"content": "cut emoji \\ud83d here: ', 1)
    f = tmp_path / src.name
    f.write_bytes(b"\n".join(lines))
    proc = cli("import", "claude", str(f))
    assert proc.returncode == 0, proc.stderr
    assert f"{f.name}: 1 lone surrogate escape kept as U+FFFD".encode() in proc.stderr
    assert "cut emoji \ufffd here".encode() in proc.stdout

"""`catty-ctx fork`: the child, --dry-run and refusals."""
from __future__ import annotations

from pathlib import Path

import orjson

from conftest import cli


def test_fork_at_turn_prints_the_child(demo: Path, tmp_path: Path) -> None:
    doc = orjson.loads(cli("fork", str(demo), str(tmp_path / "c"), "--at-turn", "1", "--json", check=True).stdout)
    assert doc["forked_from_seq"] == 14 and doc["turns"] == 1 and doc["parent_session_id"] == "demo-0001"
    rep = orjson.loads(cli("inspect", str(tmp_path / "c"), "--json", check=True).stdout)
    assert rep["turns"] == 1 and rep["session_id"] == doc["session_id"]


def test_dry_run_writes_nothing(demo: Path, tmp_path: Path) -> None:
    doc = orjson.loads(cli("fork", str(demo), str(tmp_path / "c"), "--dry-run", "--json", check=True).stdout)
    assert doc["dry_run"] and doc["events"] == 22
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]


def test_a_non_empty_dest_exits_73(demo: Path, tmp_path: Path) -> None:
    proc = cli("fork", str(demo), str(demo))
    assert proc.returncode == 73 and len(proc.stderr.decode().strip().splitlines()) == 1


def test_fork_needs_a_directory(demo: Path, tmp_path: Path) -> None:
    proc = cli("fork", "-", str(tmp_path / "c"), input=(demo / "updates.jsonl").read_bytes())
    assert proc.returncode == 2 and b"needs a session directory" in proc.stderr
    assert not (tmp_path / "c").exists()


def test_an_invalid_parent_exits_65_with_one_line_and_no_dest(tmp_path: Path) -> None:
    import shutil

    from conftest import FIXTURES

    shutil.copytree(FIXTURES / "broken" / "invalid", tmp_path / "p")
    proc = cli("fork", str(tmp_path / "p"), str(tmp_path / "c"))
    err = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 65 and len(err) == 1 and "updates.jsonl:4:" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p"]

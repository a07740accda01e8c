"""The one whole-file writer: a reader sees the old file or the new, the mode is kept, and a
write that fails leaves the old file and no temp file behind."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from catty_ctx.session.files import replace_file, write_file


def test_a_streamed_rewrite_replaces_the_file_and_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "updates.jsonl"
    path.write_bytes(b"old\n")
    os.chmod(path, 0o640)
    write_file(path, lambda f: [f.write(b"line %d\n" % i) for i in range(3)])
    assert path.read_bytes() == b"line 0\nline 1\nline 2\n"
    assert path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["updates.jsonl"]


def test_a_write_that_fails_half_way_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    replace_file(path, b"{}\n")

    def fill(f: object) -> None:
        f.write(b"half")  # type: ignore[attr-defined]
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        write_file(path, fill)
    assert path.read_bytes() == b"{}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_one_exclusive_create_serves_the_marker_and_the_durable_new_file(tmp_path: Path) -> None:
    """files.create_exclusive is the one exclusive create: a marker (first caller wins) and, with
    `durable`, fork --to's new session file (writeback.place_new_file goes through it)."""
    import ast

    from catty_ctx.session.files import create_exclusive

    marker = tmp_path / "m"
    assert create_exclusive(marker, b"1") and not create_exclusive(marker, b"2")
    assert marker.read_bytes() == b"1"
    made = tmp_path / "new.jsonl"
    assert create_exclusive(made, b"x\n", durable=True, mode=0o600)
    assert made.read_bytes() == b"x\n" and made.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "new.jsonl"]  # no temp left
    package = Path(__file__).resolve().parents[2] / "catty_ctx"
    linkers = sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py")
                     if any(isinstance(n, ast.Attribute) and n.attr == "link" for n in ast.walk(ast.parse(p.read_text()))))
    assert linkers == ["session/files.py"]

"""Confinement: every path a user or a file can name (segment names, blob handles, fork DEST,
import --out, the session's own folders: segments/, blobs/, quarantine/,
compaction_requests/, the lock file) is tried with `../`, absolute-path and symlink escapes.
No attempt reads a byte outside the session or writes one there. Real processes, real files."""
from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import orjson
import pytest

from catty_ctx.session.layout import blob_handle
from support import FIXTURES, cli

SECRET = b"SECRET-OUTSIDE-THE-SESSION\n"
HANDLE = blob_handle(SECRET)  # an outside file whose content matches the handle it is reached by
SEGMENT = b"# Segment 000\n\nSECRET-OUTSIDE-THE-SESSION\n"
BIG = orjson.dumps({"kind": "message", "id": "big", "role": "user", "text": "payload " * 10_000}) + b"\n"


@dataclass
class Place:
    session: Path  # a copy of the demo session
    outside: Path  # a folder next to it that nothing may read or write
    secret: Path  # outside/secret.txt


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        h.update(str(p.relative_to(folder)).encode())
        if p.is_symlink():
            h.update(b"->" + os.readlink(p).encode())
        elif p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def _link(path: Path, target: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    path.symlink_to(target)


def _torn(p: Place) -> None:
    with open(p.session / "updates.jsonl", "ab") as f:
        f.write(b'{"v":1,"seq":99,"ts":"2026')


def _segments_link(p: Place) -> None:
    (p.outside / "segment_000.md").write_bytes(SEGMENT)
    _link(p.session / "segments", p.outside)


def _segment_file_link(p: Place) -> None:
    (p.outside / "segment_000.md").write_bytes(SEGMENT)
    _link(p.session / "segments" / "segment_000.md", p.outside / "segment_000.md")


def _segment_index_points_out(p: Place) -> None:
    (p.session / "segments").mkdir()
    row = {"segment": 0, "file": "../../outside/secret.txt", "bytes": 10, "keywords": []}
    (p.session / "segments" / "index.json").write_bytes(orjson.dumps({"segments": [row]}))


def _blobs_link(p: Place) -> None:
    (p.outside / HANDLE).write_bytes(SECRET)
    _link(p.session / "blobs", p.outside)


def _blob_file_link(p: Place) -> None:
    (p.outside / HANDLE).write_bytes(SECRET)
    _link(p.session / "blobs" / HANDLE, p.outside / HANDLE)


def _prefire_link(p: Place) -> None:
    note = {"created_at": SECRET.decode().strip(), "prefix_len": SECRET.decode().strip(), "note1": SECRET.decode()}
    (p.outside / "prefire.json").write_bytes(orjson.dumps(note))
    _link(p.session / "compaction_requests", p.outside)


def _nonempty_dest(p: Place) -> None:
    (p.outside / "keep.txt").write_text("mine")


# (name, setup, argv with {s} session, {o} outside, {h} handle; stdin)
ESCAPES: list[tuple[str, Callable[[Place], None] | None, list[str], bytes]] = [
    # segment names
    ("segment ../ name", None, ["segment", "show", "{s}", "../../outside/secret.txt"], b""),
    ("segment absolute name", None, ["segment", "show", "{s}", "{o}/secret.txt"], b""),
    ("segment file symlink: show", _segment_file_link, ["segment", "show", "{s}", "0"], b""),
    ("segment file symlink: grep", _segment_file_link, ["segment", "grep", "{s}", "SECRET"], b""),
    ("segments/ symlink: show", _segments_link, ["segment", "show", "{s}", "0"], b""),
    ("segments/ symlink: grep", _segments_link, ["segment", "grep", "{s}", "SECRET"], b""),
    ("segments/ symlink: list", _segments_link, ["segment", "list", "{s}", "--json"], b""),
    ("segment index names a file outside", _segment_index_points_out, ["segment", "grep", "{s}", "SECRET"], b""),
    ("segments/ symlink: compact writes a segment", _segments_link, ["compact", "{s}", "--force", "--mode", "segments"], b""),
    # blob handles
    ("blob ../ handle", None, ["blob", "{s}", "../../outside/secret.txt"], b""),
    ("blob absolute handle", None, ["blob", "{s}", "{o}/secret.txt"], b""),
    ("blob file symlink", _blob_file_link, ["blob", "{s}", "{h}"], b""),
    ("blobs/ symlink: read", _blobs_link, ["blob", "{s}", "{h}"], b""),
    ("blobs/ symlink: append stores a blob", _blobs_link, ["append", "{s}", "-q"], BIG),
    ("blobs/ symlink: fork copies blobs", _blobs_link, ["fork", "{s}", "{s}-child"], b""),
    # fork DEST
    ("fork DEST existing non-empty", _nonempty_dest, ["fork", "{s}", "{o}"], b""),
    ("fork DEST inside the source session", None, ["fork", "{s}", "{s}/child"], b""),
    ("fork DEST under a symlink into the source", lambda p: _link(p.outside / "in", p.session), ["fork", "{s}", "{o}/in/child"], b""),
    ("fork DEST is a symlink to an empty folder", lambda p: _link(p.session.parent / "dest", p.outside / "empty"), ["fork", "{s}", "{s}/../dest"], b""),
    # import --out
    ("import --out existing non-empty", _nonempty_dest, ["import", "openai", "{fixtures}/import/openai/bare-array.json", "--out", "{o}"], b""),
    ("import --out is a symlink to an empty folder", lambda p: _link(p.session.parent / "dest", p.outside / "empty"),
     ["import", "openai", "{fixtures}/import/openai/bare-array.json", "--out", "{s}/../dest"], b""),
    ("import --out inside a session", None, ["import", "openai", "{fixtures}/import/openai/bare-array.json", "--out", "{s}/imported"], b""),
    # quarantine paths and the session's other folders
    ("quarantine/ symlink: repair", lambda p: (_torn(p), _link(p.session / "quarantine", p.outside)), ["repair", "{s}"], b""),
    ("quarantine/ symlink: append", lambda p: (_torn(p), _link(p.session / "quarantine", p.outside)), ["append", "{s}", "-q"],
     b'{"kind":"message","id":"x","role":"user","text":"x"}\n'),
    ("quarantine index symlink: repair", lambda p: (_torn(p), _link(p.session / "quarantine" / "index.jsonl", p.secret)), ["repair", "{s}"], b""),
    ("quarantine index symlink: read", lambda p: _link(p.session / "quarantine" / "index.jsonl", p.secret), ["inspect", "{s}", "--json"], b""),
    ("compaction_requests/ symlink: compact", lambda p: _link(p.session / "compaction_requests", p.outside), ["compact", "{s}", "--force"], b""),
    # the report reads the archive, the blobs and the prefire note
    ("segments/ symlink: report", _segments_link, ["report", "{s}"], b""),
    ("compaction_requests/ symlink: report", _prefire_link, ["report", "{s}"], b""),
    ("lock file symlink: append", lambda p: _link(p.session / "updates.jsonl.lock", p.secret), ["append", "{s}", "-q"],
     b'{"kind":"message","id":"x","role":"user","text":"x"}\n'),
]


# Escapes the command survives by leaving the link alone: the payload stays an inline preview
# (the event says the blob could not be stored), or the fork copies no blob through it.
DONE_WITHOUT_THE_LINK = {"blobs/ symlink: fork copies blobs", "compaction_requests/ symlink: report"}


@pytest.fixture
def place(tmp_path: Path) -> Place:
    session = tmp_path / "s"
    shutil.copytree(FIXTURES / "sessions" / "demo", session)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "empty").mkdir()
    secret = outside / "secret.txt"
    secret.write_bytes(SECRET)
    return Place(session, outside, secret)


@pytest.mark.parametrize("name, setup, argv, stdin", ESCAPES, ids=[e[0] for e in ESCAPES])
def test_no_escape_reads_or_writes_outside_the_session(place: Place, name: str, setup: Callable[[Place], None] | None, argv: list[str], stdin: bytes) -> None:
    if setup is not None:
        setup(place)
    before = _digest(place.outside)
    log_before = (place.session / "updates.jsonl").read_bytes()
    args = [a.format(s=place.session, o=place.outside, h=HANDLE, fixtures=FIXTURES) for a in argv]
    proc = cli(*args, input=stdin)
    err = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err and len(err.splitlines()) <= 3, err
    assert b"SECRET-OUTSIDE" not in proc.stdout + proc.stderr  # nothing read from outside
    assert _digest(place.outside) == before  # nothing written there
    if name in DONE_WITHOUT_THE_LINK:
        assert proc.returncode == 0, err
    else:  # refused, changing no event of the session either
        assert proc.returncode in (2, 65, 73), err
        assert (place.session / "updates.jsonl").read_bytes() == log_before
        assert not (place.session / "child").exists() and not (place.session / "imported").exists()


def test_append_refuses_a_payload_whose_blobs_folder_is_a_link(place: Place) -> None:
    _blobs_link(place)
    log_before = (place.session / "updates.jsonl").read_bytes()
    proc = cli("append", str(place.session), "-q", input=BIG)
    assert proc.returncode == 73 and b"symbolic link" in proc.stderr
    assert (place.session / "updates.jsonl").read_bytes() == log_before  # the payload is not cut to a preview


def test_every_kind_of_named_path_is_tried() -> None:
    kinds = {"segment", "blob", "fork", "import", "quarantine", "compaction_requests", "lock"}
    assert {k for k in kinds if any(k in name for name, *_ in ESCAPES)} == kinds
    assert len(ESCAPES) >= 25

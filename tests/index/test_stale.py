"""Kept texts and index rows never stale: after a session's file is appended to, cut back,
replaced (even by one of the same size and mtime), rewritten in place or deleted, or a
subagent's transcript appears, the indexed search answers as reading every file does
(docs/search.md#the-index)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from support import FIXTURES, cli
from support.search_oracle import oracle
from support.usage_trees import claude_tree

from catty_ctx.formats.roots import NativeSource
from catty_ctx.index import Index
from catty_ctx.index import texts as texts_module
from catty_ctx.index.texts import texts_key
from catty_ctx.search import Query, search


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CATTY_CTX_INDEX", str(tmp_path / "index.sqlite"))
    top = tmp_path / "root"
    claude_tree(top / "claude", seed=4, projects=1, sessions=3, turns=4, subagents=False)
    shutil.copytree(FIXTURES / "sessions" / "demo", top / "catty" / "demo")
    with Index() as idx:
        idx.update([str(top)])
        assert idx.keep_all([str(top)]) == 4  # every session's texts kept
    return top


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sessions read whole (the kept texts not used)."""
    seen: list[str] = []
    real = texts_module.open_session

    def counting(unit: Any, **kw: Any) -> Any:
        seen.append(str(getattr(unit, "path", unit)))
        return real(unit, **kw)

    monkeypatch.setattr(texts_module, "open_session", counting)
    return seen


def same(root: Path, pattern: str) -> list[dict[str, Any]]:
    """The indexed search's matches, checked equal to reading every file's."""
    query = Query(pattern)
    got = [m.row() for m in search([str(root)], query)]
    assert sorted(orjson.dumps(r).decode() for r in got) == oracle(root, query)
    return got


def _logs(root: Path) -> list[Path]:
    return sorted((root / "claude").rglob("*.jsonl"))


def _append(log: Path, text: str) -> bytes:
    last = orjson.loads(log.read_bytes().splitlines()[-1])
    line = orjson.dumps({"type": "user", "uuid": f"new-{text}", "parentUuid": last["uuid"], "sessionId": last["sessionId"],
                         "cwd": last.get("cwd"), "timestamp": "2026-02-03T00:00:00Z", "isSidechain": False,
                         "message": {"role": "user", "content": text}}) + b"\n"
    with open(log, "ab") as f:
        f.write(line)
    return line


def test_unchanged_sessions_are_not_read_again(root: Path, reads: list[str]) -> None:
    assert same(root, "the") and same(root, "e")
    assert reads == []


def test_an_appended_file_reads_its_new_lines_and_its_session_again(root: Path, reads: list[str]) -> None:
    log = _logs(root)[1]
    line = _append(log, "FRESH-APPENDED-1")
    with Index() as idx:
        report = idx.update([str(root)])
    assert report.files_grown == [str(log)] and report.bytes_read == len(line) and report.files_read == []
    assert len(same(root, "FRESH-APPENDED-1")) == 1 and reads == [str(log)]
    assert len(same(root, "FRESH-APPENDED-1")) == 1 and reads == [str(log)]  # kept again: not read a third time


def test_a_file_cut_back_no_longer_answers_what_it_lost(root: Path, reads: list[str]) -> None:
    log = _logs(root)[0]
    _append(log, "SOON-GONE-7")
    assert len(same(root, "SOON-GONE-7")) == 1
    log.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[:-1]))
    assert same(root, "SOON-GONE-7") == []


def test_a_file_replaced_by_one_of_the_same_size_and_mtime(root: Path) -> None:
    log = _logs(root)[2]
    _append(log, "VERSION-AAAA")
    assert len(same(root, "VERSION-AAAA")) == 1
    st = log.stat()
    other = log.with_name("replacement.tmp")
    other.write_bytes(log.read_bytes().replace(b"VERSION-AAAA", b"VERSION-BBBB"))
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(other, log)
    assert log.stat().st_size == st.st_size and log.stat().st_mtime_ns == st.st_mtime_ns
    assert same(root, "VERSION-AAAA") == [] and len(same(root, "VERSION-BBBB")) == 1


def test_a_file_rewritten_in_place_with_its_mtime_put_back(root: Path) -> None:
    log = _logs(root)[2]
    _append(log, "INPLACE-CCCC")
    assert len(same(root, "INPLACE-CCCC")) == 1
    st = log.stat()
    with open(log, "r+b") as f:  # the same inode, size and mtime: only the ctime tells
        data = f.read()
        f.seek(0)
        f.write(data.replace(b"INPLACE-CCCC", b"INPLACE-DDDD"))
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (log.stat().st_ino, log.stat().st_mtime_ns) == (st.st_ino, st.st_mtime_ns)
    assert same(root, "INPLACE-CCCC") == [] and len(same(root, "INPLACE-DDDD")) == 1


def test_a_deleted_file_answers_nothing(root: Path) -> None:
    log = _logs(root)[0]
    _append(log, "DELETED-EEEE")
    assert len(same(root, "DELETED-EEEE")) == 1
    log.unlink()
    assert same(root, "DELETED-EEEE") == []


def test_a_catty_session_appended_to(root: Path) -> None:
    demo = root / "catty" / "demo"
    event = {"kind": "message", "id": "late-1", "role": "user", "text": "CATTY-LATE-FFFF"}
    assert cli("append", str(demo), "-q", input=orjson.dumps(event) + b"\n").returncode == 0
    assert [(m["role"], m["line"]) for m in same(root, "CATTY-LATE-FFFF")] == [("user", "CATTY-LATE-FFFF")]


def test_a_subagent_transcript_appearing_changes_the_key(root: Path) -> None:
    log = _logs(root)[0]
    unit = NativeSource("claude", log, None)
    before = texts_key(unit)
    sub = log.with_suffix("") / "subagents" / "agent-a1.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_text("")
    assert before is not None and texts_key(unit) != before


def test_a_kept_body_changed_or_gone_is_read_again(root: Path, reads: list[str]) -> None:
    folder = Path(os.environ["CATTY_CTX_INDEX"] + ".texts")
    bodies = sorted(folder.iterdir())
    assert len(bodies) == 4 and all(b.stat().st_mode & 0o777 == 0o600 for b in bodies)  # the sessions' text: private
    bodies[0].write_bytes(bodies[0].read_bytes()[::-1])
    bodies[1].unlink()
    assert same(root, "the") and len(reads) == 2

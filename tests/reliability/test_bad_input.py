"""Bad input: every reading command on every corrupt log exits 65 (a check 1) with a short
stderr naming file:line, prints no traceback and leaves the input byte-identical."""
from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import orjson
import pytest

from support import FIXTURES, cli

sys.path.append(str(FIXTURES / "bad"))
from make_bad import CORPUS, TRICKY, build  # noqa: E402

# Commands that read a whole log. Later commands join this list as they land.
READERS: list[list[str]] = [
    ["inspect", "{s}"],
    ["inspect", "{s}", "--items", "--json"],
    ["inspect", "{s}/updates.jsonl", "--json"],
    ["prune", "{s}"],
    ["prune", "{s}", "--strategy", "tiered", "--stats"],
    ["resume", "-", "--format", "openai"],  # "-": the log arrives on stdin
    ["fork", "{s}", "{s}-fork"],
    ["compact", "{s}", "--check"],
    ["compact", "{s}", "--force"],
    ["usage", "{s}", "--strict"],
    ["repair", "{s}", "--check"],
    ["repair", "{s}", "--dry-run"],
    ["report", "{s}"],  # the page is written too, saying what is wrong
    ["report", "{s}", "-o", "{s}.html"],
]

# A check that finds problems exits 1, and a dry run that shows the fix exits 0; neither
# writes. An empty log has no session event to repair from: a data error for them too.
NOT_REFUSED = {("repair", "--check"): 1, ("repair", "--dry-run"): 0}

# Damage that `resume` repairs in memory (and says so on stderr) instead of refusing.
RESUME_REPAIRS = {"missing-seq", "not-session-first"}


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        h.update(str(p.relative_to(path)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def _check_refused(proc, session: Path | str, code: int = 65) -> None:  # type: ignore[no-untyped-def]
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == code, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert 1 <= len(lines) <= 3, err
    assert str(session) in lines[-1]
    assert lines[-1].startswith("catty-ctx: error: ") == (code == 65)


@pytest.mark.parametrize("name", sorted(CORPUS))
@pytest.mark.parametrize("command", READERS, ids=lambda c: " ".join(c[:1] + c[2:]))
def test_every_reader_refuses_every_corrupt_log(tmp_path: Path, name: str, command: list[str]) -> None:
    if command[0] == "resume" and name in RESUME_REPAIRS:
        pytest.skip("resume works on a repaired view: a lost seq is repaired in memory, not refused")
    session = build(name, tmp_path / name)
    before = _digest(session)
    stdin = (session / "updates.jsonl").read_bytes() if "-" in command and (session / "updates.jsonl").is_file() else None
    proc = cli(*[part.format(s=session) for part in command], input=stdin)
    code = 65 if name == "empty" else NOT_REFUSED.get((command[0], command[-1]), 65)
    _check_refused(proc, "<stdin>" if stdin is not None else session, code)
    assert _digest(session) == before


@pytest.mark.parametrize("name", sorted(set(CORPUS) - {"empty"}))
def test_the_error_names_the_line(tmp_path: Path, name: str) -> None:
    session = build(name, tmp_path / name)
    err = cli("inspect", str(session)).stderr.decode()
    assert f"{session / 'updates.jsonl'}:" in err and err.split("updates.jsonl:")[1].split(":")[0].isdigit()


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_line_separators_and_crlf_read_back_unchanged(tmp_path: Path, name: str) -> None:
    session = build(name, tmp_path / name)
    proc = cli("inspect", str(session), "--seq", "1", "--json", check=True)
    expected = orjson.loads(session.joinpath("updates.jsonl").read_bytes().splitlines()[1])
    assert orjson.loads(proc.stdout) == expected


def test_a_line_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    session = build("huge-line", tmp_path / "huge")
    proc = cli("inspect", str(session))
    _check_refused(proc, session)
    assert "longer than 67108864 bytes" in proc.stderr.decode()


def test_100000_deep_nesting_is_refused(tmp_path: Path) -> None:
    session = build("very-deep-nesting", tmp_path / "deep")
    _check_refused(cli("inspect", str(session)), session)


def test_a_directory_where_the_log_should_be(tmp_path: Path) -> None:
    session = build("directory-log", tmp_path / "dirlog")
    proc = cli("inspect", str(session))
    assert proc.returncode == 65 and "not a regular file" in proc.stderr.decode()


def test_committed_corpus_matches_its_generator(tmp_path: Path) -> None:
    for name in [*CORPUS, *TRICKY]:
        assert (FIXTURES / "bad" / name / "updates.jsonl").read_bytes() == build(name, tmp_path / name).joinpath("updates.jsonl").read_bytes()


def test_a_corrupt_log_is_not_made_worse_by_append(tmp_path: Path) -> None:
    """append is O(1): it reads only the last line. A bad middle line stays as it was; the
    new event lands after it with the next seq, and nothing else changes."""
    session = tmp_path / "s"
    shutil.copytree(FIXTURES / "bad" / "torn-middle", session)
    before = (session / "updates.jsonl").read_bytes()
    cli("append", str(session), "-q", input=b'{"kind":"message","id":"x","role":"user","text":"later"}\n', check=True)
    after = (session / "updates.jsonl").read_bytes()
    assert after.startswith(before) and orjson.loads(after[len(before):])["seq"] == 3

"""The search index: the same matches as the unindexed search on random patterns, only changed
files read again (of one that grew, its new lines), and nothing of it needed for an answer."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import FIXTURES, cli
from support.search_oracle import oracle
from support.usage_trees import claude_tree

from catty_ctx.index import Index, needles
from catty_ctx.search import Query, plan, search


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ROOT of catty sessions (one compacted: its segments archive), a Claude Code home and a Codex home."""
    root = tmp_path_factory.mktemp("index") / "root"
    shutil.copytree(FIXTURES / "sessions" / "demo", root / "catty" / "demo")
    shutil.copytree(FIXTURES / "sessions" / "demo", root / "catty" / "compacted")
    assert cli("compact", str(root / "catty" / "compacted"), "--force", "--mode", "segments").returncode == 0
    claude_tree(root / "claude", seed=5, projects=1, sessions=2, turns=5, subagents=False)
    shutil.copytree(FIXTURES / "import" / "codex" / "sessions", root / "codex" / "sessions")
    (root / "codex" / "config.toml").write_text("")
    return root


@pytest.fixture
def index_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "index.sqlite"
    monkeypatch.setenv("CATTY_CTX_INDEX", str(path))
    return path


def matches(root: Path, query: Query, use_index: bool | None) -> list[str]:
    return sorted(orjson.dumps(m.row()).decode() for m in search([str(root)], query, use_index=use_index))


def _words(root: Path) -> list[str]:
    text = " ".join(p.read_text("utf-8", "replace") for p in root.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".md"))
    return sorted({w for w in text.replace('"', " ").split() if 3 <= len(w) <= 40})


SAMPLES: dict[str, list[str]] = {}


def _sample(root: Path) -> list[str]:
    if "words" not in SAMPLES:
        SAMPLES["words"] = _words(root)
    return SAMPLES["words"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(pick=st.integers(0, 10**6), cut=st.integers(0, 12), kind=st.sampled_from(["word", "piece", "random", "regex", "case", "inline"]),
       junk=st.text(min_size=1, max_size=6))
def test_the_index_gives_the_same_matches_as_reading_every_file(tree: Path, index_file: Path, pick: int, cut: int, kind: str,
                                                               junk: str) -> None:
    words = _sample(tree)
    word = words[pick % len(words)]
    if kind == "word":
        query = Query(word)
    elif kind == "piece":
        query = Query(word[cut % len(word):][:max(1, cut)] or word)
    elif kind == "random":
        query = Query(junk)
    elif kind == "case":
        query = Query(word.swapcase(), ignore_case=True)
    elif kind == "inline":
        safe = "".join(c for c in word if c.isalnum()) or "abc"
        query = Query(f"(?i){safe.swapcase()}", regex=True)
    else:
        safe = "".join(c for c in word if c.isalnum())[:8] or "abc"
        query = Query(f"{safe[:3]}.?{safe[3:]}" if cut % 2 else f"(?:{safe}|{(junk.isalnum() and junk) or 'zz'})", regex=True)
    got = matches(tree, query, True)
    assert got == matches(tree, query, False) == oracle(tree, query)


def test_only_changed_files_are_read_again_and_of_a_grown_one_its_new_lines(tmp_path: Path, index_file: Path) -> None:
    root = tmp_path / "root"
    claude_tree(root, seed=9, projects=2, sessions=3, turns=4, subagents=False)
    query = Query("APPENDED-MARK-42")
    first = plan([str(root)], query, use_index=True)
    assert first is not None and first.report.files_read and not first.report.files_grown
    assert matches(root, query, None) == []
    logs = sorted(root.rglob("*.jsonl"))[:3]
    appended = 0
    for i, log in enumerate(logs):
        line = orjson.dumps({"type": "user", "uuid": f"new-{i}", "parentUuid": None, "sessionId": log.stem, "timestamp": "2026-02-03T00:00:00Z",
                             "message": {"role": "user", "content": f"APPENDED-MARK-42 in file {i}"}}) + b"\n"
        with open(log, "ab") as f:
            f.write(line)
        appended += len(line)
    again = plan([str(root)], query)  # the index is there: used, brought up to date first
    assert again is not None and sorted(again.report.files_grown) == sorted(map(str, logs)) and again.report.files_read == []
    assert again.report.bytes_read == appended and again.report.walked == []
    found = matches(root, query, None)
    assert len(found) == 3 and found == matches(root, query, False)
    # a file cut back is read again whole: what it no longer holds is no longer found
    logs[0].write_bytes(logs[0].read_bytes().splitlines(keepends=True)[0])
    cut = plan([str(root)], query)
    assert cut is not None and cut.report.files_read == [str(logs[0])]
    assert len(matches(root, query, None)) == 2
    # a new session: its folder changed, the ROOT is walked again
    shutil.copy(logs[1], logs[1].with_name("0000-new-copy.jsonl"))
    walked = plan([str(root)], query)
    assert walked is not None and walked.report.walked == [os.path.abspath(root)] and walked.report.files_read == [str(logs[1].with_name("0000-new-copy.jsonl"))]
    # deleting the index changes no answer
    with_index = matches(root, query, None)
    for suffix in ("", "-wal", "-shm"):
        index_file.with_name(index_file.name + suffix).unlink(missing_ok=True)
    assert plan([str(root)], query) is None and matches(root, query, None) == with_index


def test_ranked_best_first_and_every_filter_kept(tree: Path, index_file: Path) -> None:
    Index().update([str(tree)])
    for query in (Query("Bash", agent="claude"), Query("the", project="proj0"), Query("parse", since="2026-01-01"), Query("user", limit=3)):
        got = [m.row() for m in search([str(tree)], query)]
        unindexed = [m.row() for m in search([str(tree)], query, use_index=False)]
        if query.limit is None:
            assert sorted(map(repr, got)) == sorted(map(repr, unindexed))
        else:
            assert len(got) == len(unindexed) == 3


@pytest.mark.parametrize(("pattern", "regex", "want"), [
    ("TimeoutError", False, ["TimeoutError"]),
    ('say "hi"', False, ['say \\"hi\\"']),  # as JSON writes it
    (r"KeyError: .?user_id", True, ["KeyError: ", "user_id"]),
    (r"(a|b)cdef", True, ["cdef"]),
    (r"ab?c", True, None),
    (r"x/y\d+", True, None),  # '/' may be written escaped: not asked
])
def test_the_strings_asked_of_the_index(pattern: str, regex: bool, want: list[str] | None) -> None:
    q = Query(pattern, regex=regex)
    assert needles(q.pattern, regex=q.regex, ignore_case=q.ignore_case, needle=q.needle()) == want


def test_index_from_the_command_line(tmp_path: Path, index_file: Path) -> None:
    root = tmp_path / "root"
    claude_tree(root, seed=3, projects=1, sessions=2, turns=3, subagents=False)
    first = orjson.loads(cli("index", str(root), "--json").stdout)
    assert first["index"] == str(index_file) and first["files"] == len(first["files_read"]) > 0 and first["sessions_read"] == 2
    second = orjson.loads(cli("index", str(root), "--json").stdout)
    assert second["files_read"] == [] and second["bytes_read"] == 0 and second["sessions_read"] == 0
    assert cli("search", str(root), "NOT-THERE-7").returncode == 1
    dropped = cli("index", "--drop")
    assert dropped.returncode == 0 and not index_file.exists() and not index_file.with_name(index_file.name + ".texts").exists()
    assert cli("index").returncode == 2


@pytest.mark.parametrize("pattern", [r"[[:digit:]]]abc", r"(?:quota){e<=1}x"])
def test_spellings_the_regex_engine_reads_as_its_own_syntax_ask_nothing_of_them(pattern: str) -> None:
    import regex

    text = {r"[[:digit:]]]abc": "5]abc", r"(?:quota){e<=1}x": "qotax"}[pattern]
    assert regex.search(pattern, text, regex.VERSION0) is not None  # the engine `search -E` runs matches it ...
    q = Query(pattern, regex=True)
    asked = needles(q.pattern, regex=True, ignore_case=False, needle=None) or []
    assert all(n in text for n in asked)  # ... so no string asked of the index may be missing from it

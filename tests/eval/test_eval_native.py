"""`eval --native ROOT`: each compaction an agent recorded, scored on its summary alone and with
the reminder our hooks give, on a generated corpus whose summaries drop planted facts."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import orjson
import pytest
from support import cli, cli_on_a_terminal
from support.native_corpus import FAILED_PATH, Session, write_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Session]]:
    root = tmp_path_factory.mktemp("native") / "home"
    return root, write_corpus(root, sessions=6, seed=11)


def _tree(root: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def _report(*args: str) -> dict:
    r = cli("eval", "--native", *args, "--json")
    assert r.returncode == 0, r.stderr
    return orjson.loads(r.stdout)["native"]


def test_our_reminder_recalls_what_the_summaries_dropped(corpus: tuple[Path, list[Session]]) -> None:
    root, sessions = corpus
    before = _tree(root)
    doc = _report(str(root))
    total = doc["total"]
    assert total["compactions"] == sum(len(s.compactions) for s in sessions) and total["sessions"] == len(sessions)
    assert total["failed"] == 0
    assert total["reminder_recall"] >= 0.9
    assert total["reminder_recall"] > total["summary_recall"]
    assert _tree(root) == before  # the agents' files are only read

    by_session: dict[str, list[dict]] = {}
    for e in doc["compactions"]:
        by_session.setdefault(e["session"], []).append(e)
    pooled = {"summary": 0, "reminder": 0, "facts": 0}
    for s in sessions:
        entries = sorted(by_session[str(s.path)], key=lambda e: e["compaction"])
        assert [e["agent"] for e in entries] == [s.agent] * len(s.compactions)
        for planted, e in zip(s.compactions, entries):
            missed_summary = {(f["kind"], f["text"]) for f in e["missed"]["summary"]}
            missed_reminder = {(f["kind"], f["text"]) for f in e["missed"]["reminder"]}
            assert e["facts"] == sum(v["facts"] for v in e["by_kind"].values())
            assert ("state", FAILED_PATH) not in {(f["kind"], f["text"]) for f in e["derived"]}
            for p in planted:
                # every planted fact is derived, and the summary column follows what the summary kept
                assert ((p.kind, p.text) in missed_summary) is (not p.in_summary), (s.path, p)
                if p.kind in ("state", "detail"):  # todos and files ride in the reminder; details in its mirror
                    assert (p.kind, p.text) not in missed_reminder, (s.path, p)
            assert missed_reminder <= missed_summary  # the reminder only adds
            assert e["summary_recall"] == round((e["facts"] - len(missed_summary)) / e["facts"], 4)
            assert e["reminder_recall"] == round((e["facts"] - len(missed_reminder)) / e["facts"], 4)
            assert 0 < e["reminder_chars"] <= 10_000
            pooled["facts"] += e["facts"]
            pooled["summary"] += e["facts"] - len(missed_summary)
            pooled["reminder"] += e["facts"] - len(missed_reminder)
    assert total["facts"] == pooled["facts"]
    assert total["summary_recall"] == round(pooled["summary"] / pooled["facts"], 4)
    assert total["reminder_recall"] == round(pooled["reminder"] / pooled["facts"], 4)


def test_a_span_holds_its_own_constraints_and_errors_and_the_state_so_far(corpus: tuple[Path, list[Session]]) -> None:
    root, sessions = corpus
    doc = _report(str(root))
    twice = [s for s in sessions if len(s.compactions) == 2]
    assert twice
    for s in twice:
        first, second = sorted((e for e in doc["compactions"] if e["session"] == str(s.path)), key=lambda e: e["compaction"])
        assert second["seq_from"] == first["through_seq"] + 1
        for planted, e in zip(s.compactions, (first, second)):
            derived = {(f["kind"], f["text"]) for f in e["derived"]}
            assert {(p.kind, p.text) for p in planted} <= derived
            assert ("state", FAILED_PATH) not in derived  # only a failed edit touched it, though the agent's list names it
            assert len(derived) == e["facts"]
        span2 = {(p.kind, p.text) for p in s.compactions[1]}
        derived2 = {(f["kind"], f["text"]) for f in second["derived"]}
        # the first span's constraint is no fact of the second (unless the user said it again) ...
        constraint1 = next((p.kind, p.text) for p in s.compactions[0] if p.kind == "instruction")
        assert (constraint1 in derived2) is (constraint1 in span2)
        # ... but a file edited in the first span is still state at the second compaction
        file1 = next(p.text for p in s.compactions[0] if p.kind == "state" and "/" in p.text)
        assert ("state", file1) in derived2


def test_out_keeps_the_cut_transcript_and_the_mirror(corpus: tuple[Path, list[Session]], tmp_path: Path) -> None:
    root, _sessions = corpus
    out = tmp_path / "out"
    doc = _report(str(root), "--out", str(out))
    for e in doc["compactions"]:
        folder = Path(e["folder"])
        assert folder.is_relative_to(out)
        source = Path(e["session"])
        cut = folder / source.name
        data = source.read_bytes()
        kept = cut.read_bytes()
        assert data.startswith(kept) and kept.endswith(b"\n") and len(kept) < len(data)
        records = [orjson.loads(line) for line in kept.splitlines()]
        # the transcript as the agent left it at its SessionStart hook: this compaction's records last
        assert records[-1].get("type") == "compacted" or records[-1].get("isCompactSummary") is True
        marks = [i for i, r in enumerate(records, 1) if r.get("type") == "compacted" or r.get("subtype") == "compact_boundary"]
        assert len(marks) == e["compaction"]
        assert e["id"] in (records[marks[-1] - 1].get("uuid"), f"line-{marks[-1]}")
        mirrors = folder / "mirrors" / e["agent"]
        assert [p.name for p in mirrors.iterdir() if p.is_dir()] and any(mirrors.rglob("updates.jsonl"))
    assert cli("eval", "--native", str(root), "--out", str(out)).returncode == 2  # not empty: refused


def test_the_table_shows_both_columns_and_the_total(corpus: tuple[Path, list[Session]]) -> None:
    root, sessions = corpus
    code, _err, shown = cli_on_a_terminal("eval", "--native", str(root), stream="stdout", columns=160)
    assert code == 0
    screen = shown.decode()
    assert "summary" in screen and "+reminder" in screen and f"total ({len(sessions)} sessions)" in screen
    doc = _report(str(root))
    assert f"{doc['total']['reminder_recall']:.2f}" in screen and f"{doc['total']['summary_recall']:.2f}" in screen


def test_progress_moves_per_compaction(corpus: tuple[Path, list[Session]]) -> None:
    root, sessions = corpus
    n = sum(len(s.compactions) for s in sessions)
    code, _out, shown = cli_on_a_terminal("eval", "--native", str(root), "--json", stream="stderr", columns=160)
    assert code == 0
    assert f"/{n}".encode() in shown  # the bar counts compactions, not sessions


def test_refusals(corpus: tuple[Path, list[Session]], tmp_path: Path) -> None:
    root, _ = corpus
    for extra in (("--summarizer", "extractive"), ("--mode", "summary"), ("--two-pass",), ("--facts", "auto"), ("--jobs", "2")):
        r = cli("eval", "--native", str(root), *extra)
        assert r.returncode == 2 and r.stderr.count(b"\n") == 1 and extra[0].encode() in r.stderr, (extra, r.stderr)
    empty = tmp_path / "empty"
    (empty / ".claude" / "projects" / "-x").mkdir(parents=True)
    (empty / ".claude" / "projects" / "-x" / "a.jsonl").write_bytes(
        b'{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"a","cwd":"/x","timestamp":"2026-11-20T10:00:00.000Z",'
        b'"message":{"role":"user","content":"hi"}}\n')
    r = cli("eval", "--native", str(empty))
    assert r.returncode == 2 and b"no compaction" in r.stderr and r.stderr.count(b"\n") == 1
    r = cli("eval", "--native", str(tmp_path / "nothing-here"))
    assert r.returncode == 2 and r.stderr.count(b"\n") == 1


def test_min_recall_applies_to_the_reminder_column(corpus: tuple[Path, list[Session]]) -> None:
    root, _ = corpus
    doc = _report(str(root))
    value = doc["total"]["reminder_recall"]
    assert cli("eval", "--native", str(root), "--min-recall", str(value)).returncode == 0
    if value < 1.0:
        r = cli("eval", "--native", str(root), "--min-recall", str(min(1.0, value + 0.001)))
        assert r.returncode == 1 and b"below --min-recall" in r.stderr
    # the summary column is not what --min-recall holds: a threshold above it but not above the reminder's passes
    assert doc["total"]["summary_recall"] < value
    between = round((doc["total"]["summary_recall"] + value) / 2, 4)
    assert cli("eval", "--native", str(root), "--min-recall", str(between)).returncode == 0


def test_one_session_file_is_a_root(corpus: tuple[Path, list[Session]]) -> None:
    _root, sessions = corpus
    s = next(s for s in sessions if s.agent == "codex" and len(s.compactions) == 2)
    doc = _report(str(s.path))
    assert [e["compaction"] for e in doc["compactions"]] == [1, 2] and doc["total"]["sessions"] == 1
    assert os.path.samefile(doc["compactions"][0]["session"], s.path)


def test_the_compactions_the_real_agents_recorded(tmp_path: Path) -> None:
    """The files the pinned Claude Code, Codex and Grok Build wrote themselves: every compaction
    found, cut and followed by the hooks (grok's: its `compaction_checkpoint` lines)."""
    from support import FIXTURES

    root = FIXTURES / "agents"
    expected = 0
    for f in root.rglob("*.jsonl"):
        for line in f.read_bytes().splitlines():
            rec = orjson.loads(line)
            update = (rec.get("params") or {}).get("update") or {} if f.name == "updates.jsonl" else {}
            expected += rec.get("subtype") == "compact_boundary" or rec.get("type") == "compacted" \
                or update.get("sessionUpdate") == "compaction_checkpoint"
    doc = _report(str(root), "--out", str(tmp_path / "out"))
    assert doc["total"]["compactions"] == expected >= 2 and doc["total"]["failed"] == 0
    assert {e["agent"] for e in doc["compactions"]} == {"claude", "codex", "grok"}
    assert all(e["reminder_chars"] > 0 for e in doc["compactions"])


def _claude_file(root: Path, first: list[dict]) -> Path:
    sid = "0b9c0c0c-0000-4000-8000-000000000001"
    base = {"sessionId": sid, "cwd": "/x", "timestamp": "2026-11-20T10:00:00.000Z"}
    records = [*first,
               {**base, "type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None, "content": "Conversation compacted"},
               {**base, "type": "user", "isCompactSummary": True, "uuid": "s1", "parentUuid": "b1",
                "message": {"role": "user", "content": "This session is being continued from a previous conversation. Summary: none."}},
               {**base, "type": "user", "uuid": "u1", "parentUuid": "s1", "message": {"role": "user", "content": "Go on."}}]
    path = root / ".claude" / "projects" / "-x" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def test_a_file_that_opens_with_its_compaction_has_no_span_to_score(tmp_path: Path) -> None:
    _claude_file(tmp_path / "home", [])
    doc = _report(str(tmp_path / "home"))
    (entry,) = doc["compactions"]
    assert entry["facts"] == 0 and entry["error"] is None and doc["total"]["failed"] == 0


def test_a_compaction_that_cannot_be_followed_is_that_compactions_error(corpus: tuple[Path, list[Session]], tmp_path: Path) -> None:
    from catty_ctx.eval.native import find_cases, score

    _root, sessions = corpus
    copy = tmp_path / "home" / "s.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(sessions[0].path.read_bytes())
    cases, _n = find_cases(str(copy))
    copy.unlink()  # gone between the walk and the scoring
    for kept in (False, True):
        outcome = score(cases[0], tmp_path / f"work-{kept}", kept=kept)
        assert outcome.error is not None and outcome.error.startswith(f"{copy}: compaction 1: ")
        assert "No such file" in outcome.error
        assert outcome.missed.get("reminder") is None

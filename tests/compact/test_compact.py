"""The compaction pipeline: trigger, commit protocol, artifacts, the compacted view, and
state that survives any number of rounds."""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from catty_ctx.compact.measure import checked_head, measure
from catty_ctx.compact.pipeline import compact_session, compact_target
from catty_ctx.compact.artifacts import load_artifact, replay
from catty_ctx.view.head import HeadState, build_head
from catty_ctx.session.segments import list_segments
from catty_ctx.errors import CattyError, LockBusy, UsageError
from catty_ctx.view.fingerprint import prefix_fp
from catty_ctx.session.store import Session
from catty_ctx.view.fold import view
from support import ROOT, call, jsonl, msg, result, session_event, write_log

CONSTRAINT = "Never push to the main branch; all work stays on feature/parser."


def planted(path: Path, window: int = 200_000) -> Path:
    """A session holding every kind of state a resumed agent must not forget."""
    return write_log(path, [
        session_event(window=window),
        msg("system", "You are a coding agent."),
        {"kind": "state", "facet": "instructions", "value": [{"path": "AGENTS.md", "text": "Run ruff before committing."}]},
        msg("user", f"Refactor the parser. {CONSTRAINT}", "u1"),
        msg("assistant", "Starting.", "a1"),
        call("c1", "edit_file", {"path": "src/parse.py", "old": "a", "new": "b"}), result("c1", "edited"),
        call("c2", "write_file", {"file_path": "src/new_module.py", "content": "x"}), result("c2", "written"),
        call("c3", "edit_file", {"path": "src/broken.py"}), result("c3", "Error: no such file", is_error=True),
        {"kind": "state", "facet": "todos", "value": [
            {"text": "split tokenizer out", "status": "in_progress"},
            {"text": "write docs", "status": "pending"},
            {"text": "rename module", "status": "completed"}]},
        {"kind": "state", "facet": "jobs", "value": [{"id": "j7", "command": "npm run watch", "status": "running"}, {"id": "j1", "command": "make", "status": "done"}]},
        {"kind": "state", "facet": "subagents", "value": [{"id": "sa2", "type": "explorer", "description": "map call sites", "status": "running"}]},
        {"kind": "state", "facet": "memory", "value": ["user prefers small commits"]},
        msg("assistant", "Tokenizer split half done.", "a2"),
    ])


def _more(session: Path, round_no: int) -> None:
    Session.open(session).append([
        msg("user", f"round {round_no}: keep going", f"u-r{round_no}"),
        msg("assistant", f"worked in round {round_no}", f"a-r{round_no}"),
        call(f"r{round_no}", "read_file", {"path": f"src/r{round_no}.py"}), result(f"r{round_no}", "content"),
    ])


def _log(p: Path) -> bytes:
    return (p / "updates.jsonl").read_bytes()


def _assert_state_survives(items: list[dict]) -> None:
    text = "\n".join(i.get("text", "") for i in items)
    assert CONSTRAINT in text
    assert "Run ruff before committing." in text  # the instructions
    assert "[in_progress] split tokenizer out" in text and "[pending] write docs" in text
    assert "src/parse.py" in text and "src/new_module.py" in text
    assert "Background job j7 running: npm run watch" in text and "j1" not in text.split("<system-reminder>")[-1]
    assert "Subagent sa2 (explorer) running: map call sites" in text
    assert "user prefers small commits" in text


def test_below_threshold_writes_nothing(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    before = _log(s)
    res = compact_session(Session.open(s))
    assert res.status == "below_threshold" and _log(s) == before and not (s / "compaction_requests").exists()


def test_threshold_compares_with_greater_or_equal(tmp_path: Path) -> None:
    s = planted(tmp_path / "s", window=1000)
    tokens = measure(Session.open(s)).tokens
    assert compact_session(Session.open(s), threshold=tokens * 100 / 1000 + 0.01).status == "below_threshold"
    assert compact_session(Session.open(s), threshold=tokens * 100 / 1000).status == "compacted"


def test_force_ignores_the_threshold_but_not_an_empty_span(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    assert compact_session(Session.open(s), force=True).status == "compacted"
    after = _log(s)
    again = compact_session(Session.open(s), force=True)
    assert again.status == "nothing_to_compact" and _log(s) == after


def test_event_fields_and_prefix_fingerprint_of_the_summarised_view(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    before_view = view(s)
    res = compact_session(Session.open(s), force=True)
    ev = jsonl(_log(s))[-1]
    assert ev["kind"] == "compaction" and ev["id"] == res.id and ev["mode"] == "summary"
    assert ev["through_seq"] == ev["seq"] - 1 and ev["summarizer"] == "extractive" and ev["trigger"] == "manual"
    assert ev["prefix_fp"] == prefix_fp(before_view)
    assert ev["tokens_after"] > 0
    assert ev["artifact"] == f"compaction_requests/{ev['id']}.json"
    after = view(s)
    assert ev["tokens_after"] == sum(len(orjson.dumps(i, option=orjson.OPT_SORT_KEYS)) // 4 for i in after)


def test_compaction_shrinks_a_large_view(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    Session.open(s).append([m for i in range(200) for m in (msg("assistant", "w" * 2000, f"w{i}"),)])
    res = compact_session(Session.open(s), force=True)
    assert res.tokens_after is not None and res.tokens_after * 20 < res.tokens_before
    assert measure(Session.open(s)).tokens == res.tokens_after


def test_log_before_is_a_byte_identical_prefix_of_the_log_after(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    before = _log(s)
    compact_session(Session.open(s), force=True)
    after = _log(s)
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1


def test_artifact_holds_the_exact_input_and_matches_the_event(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    items = view(s)
    res = compact_session(Session.open(s), force=True)
    doc = load_artifact(s / res.artifact)
    ev = jsonl(_log(s))[-1]
    assert doc["id"] == ev["id"] and doc["schema_version"] == 1 and doc["created_at"]
    assert doc["input"]["items"] == items and "Optional Next Step" in doc["input"]["instruction"]
    assert doc["summary"] == ev["summary"] and doc["trigger"] == "manual" and doc["summarizer"] == "extractive"
    assert doc["tokens_before"] == ev["tokens_before"] and doc["tokens_after"] == ev["tokens_after"]
    assert doc["attempts"][0]["outcome"] == "success" and doc["error"] is None and "total_ms" in doc["timings"]
    assert doc["input"]["state"]["version"] == 1


def test_compacted_view_order(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    compact_session(Session.open(s), force=True)
    items = view(s)
    assert [(i["role"], i.get("synthetic")) for i in items] == [
        ("system", None), ("user", "instructions"), ("user", None), ("user", "compaction_summary"), ("user", "continuation_state"),
    ]
    assert items[2]["text"].endswith(CONSTRAINT)  # the last real user query


def test_edited_files_come_from_edit_and_write_calls_but_not_failed_ones(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    compact_session(Session.open(s), force=True)
    reminder = view(s)[-1]["text"]
    assert "Files edited in this session: src/parse.py, src/new_module.py" in reminder and "broken.py" not in reminder


@pytest.mark.parametrize("rounds", [1, 5])
def test_planted_state_survives_successive_compactions(tmp_path: Path, rounds: int) -> None:
    s = planted(tmp_path / "s")
    for r in range(rounds):
        if r:
            _more(s, r)
        assert compact_session(Session.open(s), force=True).status == "compacted"
    items = view(s)
    _assert_state_survives(items)
    summary = next(i["text"] for i in items if i.get("synthetic") == "compaction_summary")
    for r in range(1, rounds):
        assert f"round {r}: keep going" in summary  # every user message, every round
        assert f"src/r{r}.py" in summary
    assert summary.count(CONSTRAINT) == 2 and summary.count("## 6. All User Messages") == 1


def test_events_after_the_compaction_follow_its_head(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    compact_session(Session.open(s), force=True)
    _more(s, 9)
    items = view(s)
    assert [i.get("text") for i in items[-3:-1]] == ["round 9: keep going", "worked in round 9"] and items[-1]["role"] == "tool"


def test_transcript_mode_points_at_the_log(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    res = compact_session(Session.open(s), force=True, mode="transcript")
    carrier = next(i for i in view(s) if i.get("synthetic") == "compaction_summary")
    assert carrier["text"].endswith(f"in updates.jsonl, seq 1..{res.through_seq}.")  # seq 0 is the session event
    # A second compaction names the events it newly folds, and says where the rest is.
    _more(s, 1)
    res2 = compact_session(Session.open(s), force=True, mode="transcript")
    carrier = next(i for i in view(s) if i.get("synthetic") == "compaction_summary")
    assert carrier["text"].endswith(
        f"in updates.jsonl, seq {res.through_seq + 1}..{res2.through_seq} (the events before it, summarised earlier, are in the same file)."
    )


def test_dry_run_writes_nothing_but_reports(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    before = sorted(os.listdir(s)), _log(s)
    res = compact_session(Session.open(s), force=True, dry_run=True)
    assert res.status == "would_compact" and res.summary and (sorted(os.listdir(s)), _log(s)) == before


def test_check_reports_over_and_under_without_writing(tmp_path: Path) -> None:
    s = planted(tmp_path / "s", window=200)
    before = _log(s)
    assert compact_session(Session.open(s), check=True).status == "over_threshold"
    assert compact_session(Session.open(s), check=True, threshold=100).status == "below_threshold"
    assert _log(s) == before


def test_a_root_compacts_each_session_over_its_threshold(tmp_path: Path) -> None:
    planted(tmp_path / "root" / "a" / "big", window=400)  # 193 tokens: 48 %, and room for the head
    planted(tmp_path / "root" / "b" / "small")
    results = {Path(r.path).name: r.status for r in compact_target(str(tmp_path / "root"), threshold=40)}
    assert results == {"big": "compacted", "small": "below_threshold"}


def test_compact_needs_a_directory(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    bare = tmp_path / "log.jsonl"  # a log file outside any session directory
    bare.write_bytes(_log(s))
    with pytest.raises(UsageError, match="needs a session directory"):
        compact_session(Session.open(bare), force=True)
    assert compact_session(Session.open(bare), check=True).status == "below_threshold"  # reading is fine


def test_summariser_failure_keeps_its_artifact_and_appends_no_event(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    before = _log(s)
    script = tmp_path / "fail.py"
    script.write_text("import sys\nsys.stdin.read()\nsys.exit(2)\n")
    with pytest.raises(CattyError) as exc:
        compact_session(Session.open(s), force=True, summarizer=f"cmd:{sys.executable} {script}")
    assert exc.value.exit_code == 65 and "exited 2" in str(exc.value)
    assert _log(s) == before
    (artifact,) = (s / "compaction_requests").iterdir()
    doc = load_artifact(artifact)
    assert doc["summary"] is None and doc["attempts"][0]["outcome"] == "deterministic"


def test_a_compaction_landing_meanwhile_refuses_the_commit(tmp_path: Path) -> None:
    """The summariser itself appends a compaction (as a concurrent cron job would)."""
    s = planted(tmp_path / "s")
    script = tmp_path / "racer.py"
    script.write_text(
        "import sys\nsys.stdin.read()\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from catty_ctx.session.store import Session\n"
        f"s = Session.open({str(s)!r})\n"
        "s.append([{'kind': 'compaction', 'id': 'other', 'mode': 'summary', 'through_seq': s.next_seq() - 1, 'summary': 'theirs'}])\n"
        "print('x' * 600)\n"
    )
    with pytest.raises(LockBusy):
        compact_session(Session.open(s), force=True, summarizer=f"cmd:{sys.executable} {script}")
    assert jsonl(_log(s))[-1]["id"] == "other"


def test_an_invalid_head_falls_back_to_a_minimal_safe_history() -> None:
    head = HeadState()
    head.system_items.append({"seq": 1, "role": "system", "text": "sys"})
    head.last_user = {"seq": 2, "role": "tool", "call_id": "x", "output": "stray", "is_error": False}  # an orphan
    comp = {"id": "k", "summary": "S", "through_seq": 3}
    assert checked_head(comp, head) == "minimal"
    assert [i.get("synthetic") for i in build_head({**comp, "head": "minimal"}, head)] == [None, "compaction_summary"]


def test_replay_runs_the_saved_input_through_another_summarizer(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    res = compact_session(Session.open(s), force=True)
    before = {p.name: p.read_bytes() for p in s.rglob("*") if p.is_file()}
    script = tmp_path / "echo.py"
    script.write_text("import sys\np = sys.stdin.read()\nprint('<summary>' + str(p.count('[user]')) + ' user items; ' + 'y' * 600 + '</summary>')\n")
    out = replay(s / res.artifact, f"cmd:{sys.executable} {script}")
    assert out["summary"].startswith("1 user items; ") and out["original_summarizer"] == "extractive"
    assert "total_ms" in out["timings"]
    assert {p.name: p.read_bytes() for p in s.rglob("*") if p.is_file()} == before


def _kill_during_compaction(s: Path, delay: float, summarizer: str = "extractive", mode: str = "summary") -> None:
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from catty_ctx.compact.pipeline import compact_session; from catty_ctx.session.store import Session; compact_session(Session.open({str(s)!r}), force=True, summarizer={summarizer!r}, mode={mode!r})"
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def test_kill_9_during_compaction_never_leaves_an_unloadable_session(tmp_path: Path) -> None:
    _compaction_kills(tmp_path, 4)


@pytest.mark.slow
def test_kill_9_during_6_compactions_never_leaves_an_unloadable_session(tmp_path: Path) -> None:
    _compaction_kills(tmp_path, 6)


def _compaction_kills(tmp_path: Path, trials: int) -> None:
    """Killed at random moments (summariser running, artifact written, event appended), TRIALS
    times, summary and segments mode in turn."""
    rng = random.Random(7)
    s = planted(tmp_path / "s")
    Session.open(s).append([msg("user", f"filler {i} " + "z" * 400, f"f{i}") for i in range(5000)])  # about 2 MB: a compaction long enough to be killed at any stage
    trial = tmp_path / "trial"
    shutil.copytree(s, trial)
    t0 = time.monotonic()
    _kill_during_compaction(trial, 60)  # runs to the end: how long a whole compaction takes
    whole = time.monotonic() - t0
    for i in range(trials):
        before = _log(s)
        _kill_during_compaction(s, rng.uniform(0.1, 0.95) * whole, mode=("summary", "segments")[i % 2])
        after = _log(s)
        assert after.startswith(before)
        events = list(Session.open(s).events())  # validates every line; a torn tail would warn
        assert after.endswith(b"\n") and len(events) == after.count(b"\n")
        items = view(s)
        if any(i.get("synthetic") == "compaction_summary" for i in items):
            _assert_state_survives(items)
        for artifact in (s / "compaction_requests").glob("*.json") if (s / "compaction_requests").exists() else ():
            load_artifact(artifact)  # never a half-written artifact
        listed = {e["file"] for e in list_segments(s)}  # a crash may leave one unreferenced segment too
        assert {e["segment"] for e in events if e["kind"] == "compaction" and "segment" in e} <= listed
        Session.open(s).append([msg("user", "more", "m")])


def test_kill_9_while_the_summariser_runs_leaves_the_log_untouched(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    script = tmp_path / "slow.py"
    script.write_text("import sys, time\nsys.stdin.read()\ntime.sleep(30)\n")
    before = _log(s)
    _kill_during_compaction(s, 0.8, f"cmd:{sys.executable} {script}")
    assert _log(s) == before and view(s)


def test_tokens_after_is_the_head_the_view_shows_announcements_included(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    Session.open(s).append([{"kind": "state", "facet": "skills", "value": [{"name": "pdf", "description": "read PDFs", "path": "skills/pdf"}]}])
    res = compact_session(Session.open(s), force=True)
    items = view(s)
    assert any("pdf" in i.get("text", "") for i in items)  # the announcer's listing follows the head
    assert res.tokens_after == measure(Session.open(s)).tokens == sum(len(orjson.dumps(i, option=orjson.OPT_SORT_KEYS)) // 4 for i in items)


def test_a_broken_view_is_summarised_repaired(tmp_path: Path) -> None:
    """The summariser gets what a provider would accept: a dangling call answered."""
    s = write_log(tmp_path / "s", [
        session_event(), msg("user", "go", "u1"), msg("assistant", "running", "a1"), call("c1", "run_terminal_cmd", {"command": "make"}),
        msg("user", "still there?", "u2"),
    ])
    res = compact_session(Session.open(s), force=True)
    doc = load_artifact(s / res.artifact)
    assert doc["input"]["repaired"] and any(i.get("role") == "tool" and i.get("call_id") == "c1" for i in doc["input"]["items"])
    assert doc["prefix_fp"] == prefix_fp(doc["input"]["items"])
    clean = planted(tmp_path / "clean")
    assert load_artifact(clean / compact_session(Session.open(clean), force=True).artifact)["input"]["repaired"] == []

"""The compaction pipeline's stages, each on its own: plan, summary_input, summarise, the head
and commit (catty_ctx/compact/__init__.py), with the offline extractive summariser."""
from __future__ import annotations

from pathlib import Path

from catty_ctx.compact.pipeline import CompactOptions, CompactResult, Plan, choose_final_head, commit, draft_event, finished, plan, summarise, summary_input
from catty_ctx.compact.artifacts import artifact_relpath
from catty_ctx.compact.measure import measure
from catty_ctx.compact.summarizers import get_summarizer
from catty_ctx.session.store import Session
from catty_ctx.view.fold import exclusion
from support import call, msg, result, session_event, write_log


def _session(path: Path) -> Path:
    return write_log(path, [
        session_event(window=200_000),
        msg("user", "Refactor the parser; never push to main.", "u1"),
        msg("assistant", "Starting.", "a1"),
        call("c1", "edit_file", {"path": "src/parse.py"}), result("c1", "edited"),
        msg("assistant", "Half done.", "a2"),
    ])


def test_plan_stops_below_the_threshold_and_goes_on_when_forced(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    below = plan(Session.open(s), CompactOptions())
    assert isinstance(below, CompactResult) and below.status == "below_threshold"
    checked = plan(Session.open(s), CompactOptions(check=True, threshold=0))
    assert isinstance(checked, CompactResult) and checked.status == "over_threshold"
    forced = plan(Session.open(s), CompactOptions(force=True))
    assert isinstance(forced, Plan) and not forced.over and forced.m.last_seq == 5 and forced.base["tokens_before"] == forced.m.tokens


def test_the_stages_in_turn_commit_what_compact_session_would(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    session = Session.open(s)
    opts = CompactOptions(force=True, summarizer="extractive")
    planned = plan(session, opts)
    assert isinstance(planned, Plan)
    summ = get_summarizer("extractive")
    inp = summary_input(session, planned.m, opts, summ)
    assert inp.hit is None and inp.request.items == planned.m.items  # one pass: the whole view
    summary = summarise(summ, inp, planned.m, opts)
    assert summary.cut_off is None and "src/parse.py" in (summary.result.summary or "")
    comp = draft_event(planned, opts, inp, summary)
    assert comp["kind"] == "compaction" and comp["through_seq"] == 5 and comp["trigger"] == "manual" and "segment" not in comp
    head = choose_final_head(comp, planned.m, summary, None)
    assert head == "full"
    done, doc, row = finished(planned, opts, inp, summary, comp, None, head)
    assert done["tokens_after"] > 0 and comp["tokens_after"] == 0  # a new event: the draft is left as it was
    assert doc["input"]["repaired"] == [] and row.status == "compacted"
    before = (s / "updates.jsonl").read_bytes()
    out = commit(session, planned, opts, inp, summary, {**comp, "artifact": artifact_relpath(comp["id"])}, head, [])
    log = (s / "updates.jsonl").read_bytes()
    assert (s / artifact_relpath(comp["id"])).is_file()
    assert log.startswith(before) and out.event is not None and out.event["seq"] == 6 and out.event["id"] == comp["id"]
    assert measure(Session.open(s)).previous["id"] == comp["id"]  # the view now folds at it


def test_the_measure_and_the_view_leave_out_the_same_events() -> None:
    excluded = exclusion([(2, 4), (7, 8)])
    assert [seq for seq in range(10) if excluded(seq)] == [2, 3, 7]

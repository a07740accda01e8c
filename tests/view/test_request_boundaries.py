"""Every request a command emits is one a provider takes (reference 3.5, "at every request
build"): prune's output, the summariser's input of compact (each ladder stage) and of two-pass
pass 2, and resume. The pairing repair runs in memory on each; the log is never touched."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catty_ctx.view import providers
from catty_ctx.compact.measure import measure
from catty_ctx.compact.ladder import STAGES, SummaryRequest, _stage_items
from catty_ctx.compact.twopass import Lookup, pass2_items, split_point
from catty_ctx.errors import DataError
from catty_ctx.fork import resume
from catty_ctx.prune.options import PruneOptions
from catty_ctx.prune.pipeline import prune
from catty_ctx.session.store import Session, new_summary
from catty_ctx.session.create import write_summary
from support import call, cli, jsonl, msg, result, session_event, write_log


def valid_in_both_shapes(items: list[dict[str, Any]]) -> None:
    for fmt, (build, validate) in providers.FORMATS.items():
        validate(build(items))


def compaction(through: int, cid: str = "c1") -> dict[str, Any]:
    return {"kind": "compaction", "id": cid, "mode": "summary", "through_seq": through, "summary": "Earlier: the user asked for a green build."}


def _resumable(path: Path, events: list[dict[str, Any]]) -> Path:
    write_log(path, events)
    write_summary(path, new_summary(events[0]))
    return path


def test_prune_after_a_compaction_made_while_a_call_ran_prints_a_valid_request(tmp_path: Path) -> None:
    """The call is folded into the summary; its result lands after the head, an orphan."""
    s = _resumable(tmp_path / "s", [
        session_event(), msg("system", "sys"), msg("user", "run the tests", "u1"),
        msg("assistant", "running", "a1"), call("k1", "run_terminal_cmd", {"command": "pytest"}),
        compaction(4), result("k1", "3 passed"), msg("user", "and now?", "u2"),
    ])
    items = jsonl(cli("prune", str(s), check=True).stdout)
    valid_in_both_shapes(items)
    assert not any(it.get("call_id") == "k1" for it in items)
    before = (s / "updates.jsonl").read_bytes()
    doc, notes = resume(Session.open(s), "anthropic")
    providers.validate_anthropic(doc)
    assert (s / "updates.jsonl").read_bytes() == before


def test_prune_repairs_a_dangling_call_a_duplicate_result_and_an_orphan_result(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", [
        session_event(), msg("user", "go", "u1"),
        msg("assistant", "two calls", "a1"), call("d1"), call("d2"), result("d1", "first"), result("d1", "second"),
        result("ghost", "nobody asked"), msg("user", "next", "u2"),
    ])
    proc = cli("prune", str(s), "--stats", check=True)
    items = jsonl(proc.stdout)
    valid_in_both_shapes(items)
    tools = [(it["call_id"], it["output"]) for it in items if it["role"] == "tool"]
    assert tools[0] == ("d1", "second") and tools[1][0] == "d2" and len(tools) == 2  # last result kept, d2 answered
    stats = orjson.loads(proc.stderr.splitlines()[-1])["stats"]
    assert stats["repaired"] == ["1 dangling call answered", "1 duplicate result dropped", "1 orphan result dropped"]


# -- the property: any event sequence -----------------------------------------------------------

_IDS = st.sampled_from(["k1", "k2", "k3"])
_STEP = st.one_of(
    st.tuples(st.just("user"), st.sampled_from(["hi", "", "fix it"])),
    st.tuples(st.just("assistant"), st.sampled_from(["ok", ""])),
    st.tuples(st.just("system"), st.just("be brief")),
    st.tuples(st.just("call"), _IDS),
    st.tuples(st.just("result"), _IDS),
    st.tuples(st.just("compaction"), st.just("")),
)


def _events(steps: list[tuple[str, str]]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [session_event(window=40_000)]
    for n, (kind, arg) in enumerate(steps):
        if kind in ("user", "assistant", "system"):
            events.append(msg(kind, arg, f"m{n}"))
        elif kind == "call":
            events.append(call(arg, "edit_file", {"path": f"{arg}.py"}))
        elif kind == "result":
            events.append(result(arg, f"out {n} " * 30))
        elif len(events) > 1:
            events.append(compaction(len(events) - 1, f"c{n}"))
    return events


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(_STEP, min_size=1, max_size=14))
def test_any_event_sequence_gives_requests_valid_in_both_provider_shapes(tmp_path: Path, steps: list[tuple[str, str]]) -> None:
    events = _events(steps)
    s = _resumable(tmp_path / f"s{abs(hash(orjson.dumps(steps)))}", events)
    # prune, both strategies, on the session and on the event list
    for strategy in ("cache-aware", "tiered"):
        valid_in_both_shapes([vi.item for vi in prune(Session.open(s), PruneOptions(strategy=strategy, min_percent=0))])
        valid_in_both_shapes([vi.item for vi in prune(list(Session.open(s).events()), PruneOptions(strategy=strategy))])
    # resume
    for fmt in ("openai", "anthropic", "items"):
        try:
            out, _ = resume(Session.open(s), fmt)
        except DataError as exc:  # nothing but the system prompt left: refused, never sent empty
            assert "no conversation to resume" in str(exc)
            continue
        if fmt == "items":
            valid_in_both_shapes(out)
    # compact: the summariser's input at every stage of the ladder, and two-pass pass 2
    m = measure(Session.open(s))
    req = SummaryRequest(items=m.items, window=40_000)
    for stage in STAGES:
        valid_in_both_shapes(_stage_items(stage, req))
    k = split_point(m.items)
    if k:
        valid_in_both_shapes(m.items[:k])  # pass 1's input
        valid_in_both_shapes(pass2_items(m.items, Lookup(True, False, "note one " * 50, k, 1.0), 40_000))

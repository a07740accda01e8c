"""One budget rule (docs/spec.md#token-estimates): the tool schemas a request carries count the
same way in inspect, prune, compact and the ladder, whichever facet declares them; thresholds
compare exactly."""
from __future__ import annotations

from pathlib import Path

import pytest

from catty_ctx.compact.measure import measure
from catty_ctx.compact.pipeline import compact_session
from catty_ctx.compact.artifacts import load_artifact
from catty_ctx.inspect.session import inspect_session
from catty_ctx.prune.options import PruneOptions, PruneStats
from catty_ctx.prune.pipeline import prune
from catty_ctx.session.store import Session
from catty_ctx.view.tokens import item_tokens, over_threshold
from support import msg, session_event, write_log

TOOLS = [{"name": f"tool_{i}", "description": "Reads a file of the project and returns its text. " * 8,
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}} for i in range(12)]
SCHEMA = sum(item_tokens(t) for t in TOOLS)


@pytest.fixture(params=["tools", "prompt_context"])
def session(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    value = TOOLS if request.param == "tools" else {"tools": TOOLS}
    events = [session_event(window=200_000), msg("system", "sys"), {"kind": "state", "facet": request.param, "value": value}]
    for i in range(4):
        events += [msg("user", f"turn {i} " + "u" * 300, f"u{i}"), msg("assistant", f"step {i} " + "a" * 300, f"a{i}")]
    return write_log(tmp_path / "s", events)


def test_prune_and_inspect_agree_on_the_total_with_tool_schemas_and_no_usage(session: Path) -> None:
    total = inspect_session(Session.open(session))["tokens"]
    st = PruneStats()
    items = list(prune(Session.open(session), PruneOptions(), stats=st))
    assert total == sum(v.tokens for v in items) + SCHEMA
    assert st.request_tokens_before == total  # the schemas counted, as inspect counts them
    assert measure(Session.open(session), keep_items=False).tokens == total


def test_compaction_and_its_ladder_leave_room_for_the_schemas_whichever_facet_declares_them(session: Path) -> None:
    assert measure(Session.open(session), keep_items=False).schema == SCHEMA
    res = compact_session(Session.open(session), force=True)
    doc = load_artifact(session / str(res.artifact))
    assert doc["input"]["tool_schema_tokens"] == SCHEMA


def test_161_of_1000_is_at_a_16_point_1_percent_threshold() -> None:
    assert over_threshold(161, 1_000, 16.1)
    assert not over_threshold(160, 1_000, 16.1)
    assert over_threshold(1, 3, 33.333333333333336) is False  # (1/3 is under 33.333333333333336 %)
    assert over_threshold(85, 100, 85) and over_threshold(7, 10, 70.0) and not over_threshold(69, 100, 70.0)
    assert over_threshold(1, 10**9, 1e-07) and not over_threshold(0, 10, 1e-07)

"""SPEC "The context view" and "Token estimates": the fold from events to items."""
from __future__ import annotations

from pathlib import Path

import orjson

from catty_ctx.view.fingerprint import canonical
from catty_ctx.view.tokens import over_threshold
from catty_ctx.view.fold import ViewStats, stream_view, view
from support import call, msg, result, session_event, write_log


def _view(tmp_path: Path, events: list[dict]) -> list[dict]:
    return view(write_log(tmp_path / "s", [session_event(), *events]))


def test_assistant_items_carry_their_tool_calls_and_results_follow(tmp_path: Path) -> None:
    items = _view(tmp_path, [msg("user", "go"), msg("assistant", "reading"), call("c1", "read", {"p": 1}), call("c2", "ls"), result("c1", "A"), result("c2", "B", True)])
    assert items == [
        {"seq": 1, "role": "user", "text": "go"},
        {"seq": 2, "role": "assistant", "text": "reading", "tool_calls": [{"call_id": "c1", "name": "read", "args": {"p": 1}}, {"call_id": "c2", "name": "ls", "args": {}}]},
        {"seq": 5, "role": "tool", "call_id": "c1", "output": "A", "is_error": False},
        {"seq": 6, "role": "tool", "call_id": "c2", "output": "B", "is_error": True},
    ]


def test_calls_interleaved_with_results_stay_with_their_assistant(tmp_path: Path) -> None:
    items = _view(tmp_path, [msg("user", "go"), msg("assistant", ""), call("c1"), result("c1"), call("c2"), result("c2")])
    assert [c["call_id"] for c in items[1]["tool_calls"]] == ["c1", "c2"]
    assert [i["role"] for i in items] == ["user", "assistant", "tool", "tool"]


def test_tool_calls_without_an_assistant_get_an_empty_one(tmp_path: Path) -> None:
    items = _view(tmp_path, [msg("user", "go"), call("c1"), result("c1")])
    assert items[1] == {"role": "assistant", "text": "", "synthetic": "implicit_assistant", "tool_calls": [{"call_id": "c1", "name": "t", "args": {}}]}


def test_synthetic_messages_and_non_json_args_are_kept(tmp_path: Path) -> None:
    items = _view(tmp_path, [msg("user", "<env>", synthetic="harness_context"), msg("user", "q"), msg("assistant", "x"), call("c1", "sh", "ls -la {broken"), result("c1")])
    assert items[0]["synthetic"] == "harness_context"
    assert items[2]["tool_calls"][0]["args"] == "ls -la {broken"


def test_rewind_keeps_turns_up_to_to_turn(tmp_path: Path) -> None:
    items = _view(tmp_path, [
        msg("user", "t1"), msg("assistant", "a1"),
        msg("user", "t2"), msg("assistant", "a2"),
        msg("user", "t3"), msg("assistant", "a3"),
        {"kind": "rewind", "to_turn": 1},
        msg("user", "t2 again"), msg("assistant", "b2"),
    ])
    assert [i["text"] for i in items] == ["t1", "a1", "t2 again", "b2"]


def test_repairs_drop_and_answer(tmp_path: Path) -> None:
    items = _view(tmp_path, [
        msg("user", "go"), msg("assistant", ""), call("c1"), call("c2"), result("c1", "first"), result("c1", "second"),
        msg("user", "next"),
        {"kind": "repair", "action": "drop", "target_seq": 5, "reason": "duplicate_result"},
        {"kind": "repair", "action": "answer", "call_id": "c2", "text": "not executed", "reason": "dangling_call"},
    ])
    assert [(i["role"], i.get("output")) for i in items[2:4]] == [("tool", "second"), ("tool", "not executed")]
    assert items[3]["synthetic"] == "dangling_call" and "seq" not in items[3]
    assert items[4]["text"] == "next"


def test_compaction_head_then_events_after_through_seq(tmp_path: Path) -> None:
    items = _view(tmp_path, [
        msg("system", "sys"),
        msg("user", "build it"), msg("assistant", "ok"),
        {"kind": "state", "facet": "todos", "value": [{"text": "write tests", "status": "in_progress"}, {"text": "x", "status": "completed"}]},
        msg("user", "keep going"), msg("assistant", "done part"),
        msg("assistant", "after the fold"),
        {"kind": "compaction", "id": "k1", "mode": "summary", "through_seq": 6, "summary": "SUMMARY TEXT"},
        msg("user", "new"),
    ])
    assert items[0] == {"seq": 1, "role": "system", "text": "sys"}
    assert items[1] == {"seq": 5, "role": "user", "text": "keep going"}
    assert items[2]["synthetic"] == "compaction_summary" and "SUMMARY TEXT" in items[2]["text"]
    assert items[3]["synthetic"] == "continuation_state" and "[in_progress] write tests" in items[3]["text"]
    assert [i["text"] for i in items[4:]] == ["after the fold", "new"]


def test_same_log_same_view_byte_for_byte(demo: Path) -> None:
    a = b"".join(canonical(i) for i in view(demo))
    b = b"".join(canonical(i) for i in view(demo))
    assert a == b and a


def test_subagent_events_stay_out_of_the_main_view(tmp_path: Path) -> None:
    items = _view(tmp_path, [msg("user", "go"), {**msg("user", "sub task"), "agent": "a1"}, msg("assistant", "ok")])
    assert [i["text"] for i in items] == ["go", "ok"]


def test_token_total_is_last_usage_plus_items_after(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "q"), msg("assistant", "a"),
                                   {"kind": "usage", "model": "m", "input": 100, "output": 10, "cache_read": 1000, "cache_write": 5},
                                   msg("user", "x" * 400)])
    st = ViewStats()
    items = list(stream_view(d, stats=st))
    after = len(canonical(items[-1].item)) // 4
    assert st.tokens == 1115 + after


def test_token_total_without_usage_is_the_sum_of_estimates(tmp_path: Path) -> None:
    d = write_log(tmp_path / "s", [session_event(), msg("user", "q" * 100), msg("assistant", "a", images=[{"blob": "h"}, {"blob": "i"}])])
    st = ViewStats()
    items = list(stream_view(d, stats=st))
    assert items[1].tokens == len(orjson.dumps({"role": "assistant", "seq": 2, "text": "a"}, option=orjson.OPT_SORT_KEYS)) // 4 + 2 * 765
    assert st.tokens == sum(i.tokens for i in items)


def test_thresholds_compare_with_greater_or_equal() -> None:
    assert over_threshold(170_000, 200_000, 85)
    assert not over_threshold(169_999, 200_000, 85)
    assert not over_threshold(10, 0, 85)

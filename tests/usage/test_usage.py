"""The usage ledger: exact counts over Claude Code, Codex and catty logs, prices, the cache."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from msgspec.structs import replace

import catty_ctx
from catty_ctx.usage import pipeline as U
from catty_ctx.usage import filescan, library, pricetable
from support import write_log
from support.usage_trees import claude_tree, codex_rollout

SONNET = "claude-sonnet-4-20250514"


def claude_line(mid: str, rid: str | None, *, ts: str = "2026-02-01T10:00:00.000Z", model: str = SONNET, sid: str = "s1",
                side: bool = False, agent: str | None = None, inp: int = 10, out: int = 5, cr: int = 100, cw: int = 0,
                uuid: str | None = None) -> bytes:
    obj: dict[str, Any] = {"type": "assistant", "sessionId": sid, "isSidechain": side, "timestamp": ts, "uuid": uuid or f"u-{mid}-{rid}-{sid}-{out}",
                           "message": {"id": mid, "model": model, "role": "assistant", "content": [],
                                       "usage": {"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": cr,
                                                 "cache_creation_input_tokens": cw}}}
    if rid is not None:
        obj["requestId"] = rid
    if agent is not None:
        obj["agentId"] = agent
    return orjson.dumps(obj) + b"\n"


def ledger(paths: list[Path], **kw: Any) -> U.Ledger:
    led, _scan = U.usage([str(p) for p in paths], timezone_name=kw.pop("tz", "UTC"), **kw)
    return led


def row(led: U.Ledger, key: str) -> dict[str, Any]:
    return next(r for r in led.rows if r[led.by] == key)


# -- Claude Code --------------------------------------------------------------------------------


def test_claude_tree_equals_the_hand_counted_truth_per_model_and_day(tmp_path: Path) -> None:
    truth = claude_tree(tmp_path / "claude", seed=3)
    by_model = ledger([tmp_path / "claude"], by="model")
    for model, (inp, out, cr, cw, calls) in truth.by_model().items():
        assert {k: row(by_model, model)[k] for k in ("input", "output", "cache_read", "cache_write", "calls")} == \
            {"input": inp, "output": out, "cache_read": cr, "cache_write": cw, "calls": calls}
    assert len(by_model.rows) == len(truth.by_model())
    by_day = ledger([tmp_path / "claude"], by="day")
    days: dict[str, list[int]] = {}
    for (_m, day), c in truth.cells.items():
        acc = days.setdefault(day, [0, 0, 0, 0, 0])
        for i, v in enumerate(c):
            acc[i] += v
    assert {r["day"]: [r["input"], r["output"], r["cache_read"], r["cache_write"], r["calls"]] for r in by_day.rows} == days


def test_content_block_copies_count_once_keeping_the_largest_usage(tmp_path: Path) -> None:
    f = tmp_path / "projects" / "p" / "s1.jsonl"
    f.parent.mkdir(parents=True)
    f.write_bytes(claude_line("msg_1", "req_1", out=3) + claude_line("msg_1", "req_1", out=40) + claude_line("msg_1", "req_1", out=7))
    led = ledger([tmp_path])
    assert led.totals["calls"] == 1 and led.totals["output"] == 40 and led.duplicates == 2


def test_resumed_session_replaying_records_in_another_file_counts_once(tmp_path: Path) -> None:
    proj = tmp_path / "projects" / "p"
    proj.mkdir(parents=True)
    (proj / "s1.jsonl").write_bytes(claude_line("msg_1", "req_1", sid="s1") + claude_line("msg_2", "req_2", sid="s1"))
    # The resumed session starts with the same records (same uuid, message and request ids).
    (proj / "s2.jsonl").write_bytes(claude_line("msg_1", "req_1", sid="s2") + claude_line("msg_2", "req_2", sid="s2")
                                    + claude_line("msg_3", "req_3", sid="s2"))
    led = ledger([tmp_path])
    assert led.totals["calls"] == 3 and led.totals["input"] == 30


def test_a_replayed_record_counts_once_by_its_uuid_even_with_rewritten_ids(tmp_path: Path) -> None:
    proj = tmp_path / "projects" / "p"
    proj.mkdir(parents=True)
    (proj / "s1.jsonl").write_bytes(claude_line("msg_1", "req_1", uuid="u-1", sid="s1"))
    (proj / "s2.jsonl").write_bytes(claude_line("msg_1", None, uuid="u-1", sid="s2") + claude_line("msg_2", "req_2", uuid="u-2", sid="s2"))
    assert ledger([tmp_path]).totals["calls"] == 2


def test_side_question_replay_of_a_parent_message_is_dropped_in_favour_of_the_main_copy(tmp_path: Path) -> None:
    proj = tmp_path / "projects" / "p"
    (proj / "s1" / "subagents").mkdir(parents=True)
    (proj / "s1.jsonl").write_bytes(claude_line("msg_1", "req_1", cr=20))
    (proj / "s1" / "subagents" / "agent-aside.jsonl").write_bytes(
        claude_line("msg_1", "req_9", side=True, agent="aside", cr=50_000)  # the replay, under a new request id
        + claude_line("msg_2", "req_2", side=True, agent="aside", cr=700))  # the side question's own answer
    led = ledger([tmp_path], by="agent")
    assert row(led, "main")["cache_read"] == 20 and row(led, "aside")["cache_read"] == 700
    assert led.totals["calls"] == 2


def test_main_conversation_copy_wins_over_a_sidechain_copy_of_the_same_request(tmp_path: Path) -> None:
    proj = tmp_path / "projects" / "p"
    proj.mkdir(parents=True)
    (proj / "agent-x.jsonl").write_bytes(claude_line("msg_1", "req_1", side=True, agent="x", out=500))
    (proj / "s1.jsonl").write_bytes(claude_line("msg_1", "req_1", out=5))
    led = ledger([tmp_path], by="agent")
    assert [r["agent"] for r in led.rows] == ["main"] and led.totals["output"] == 5


def test_subagent_progress_records_in_the_parent_count_once_with_the_subagents_own_file(tmp_path: Path) -> None:
    proj = tmp_path / "projects" / "p"
    (proj / "s1" / "subagents").mkdir(parents=True)
    inner = orjson.loads(claude_line("msg_7", "req_7", side=True, inp=7, cr=0))
    progress = {"type": "progress", "sessionId": "s1", "timestamp": inner["timestamp"], "data": {"agentId": "a7", "message": inner}}
    (proj / "s1.jsonl").write_bytes(claude_line("msg_1", "req_1", inp=1, cr=0) + orjson.dumps(progress) + b"\n")
    led = ledger([tmp_path], by="agent")
    assert {r["agent"]: r["input"] for r in led.rows} == {"main": 1, "a7": 7}
    (proj / "s1" / "subagents" / "agent-a7.jsonl").write_bytes(claude_line("msg_7", "req_7", side=True, agent="a7", inp=7, cr=0))
    led = ledger([tmp_path], by="agent")
    assert {r["agent"]: r["input"] for r in led.rows} == {"main": 1, "a7": 7}


def test_provider_reported_claude_cost_wins_over_the_table(tmp_path: Path) -> None:
    proj = tmp_path / "projects" / "p"
    proj.mkdir(parents=True)
    line = orjson.loads(claude_line("msg_1", "req_1"))
    line["costUSD"] = 0.25
    (proj / "s1.jsonl").write_bytes(orjson.dumps(line) + b"\n")
    assert ledger([tmp_path]).totals["cost_usd"] == 0.25


def test_without_request_ids_gateway_message_ids_collapse_only_within_a_session_at_one_time(tmp_path: Path) -> None:
    proj = tmp_path / "projects" / "p"
    proj.mkdir(parents=True)
    (proj / "a.jsonl").write_bytes(claude_line("gw-1", None, sid="a", inp=1, uuid="a1") + claude_line("gw-1", None, sid="a", inp=1, uuid="a2")
                                   + claude_line("gw-1", None, sid="a", inp=2, uuid="a3", ts="2026-02-01T10:05:00.000Z"))  # a reused id later
    (proj / "b.jsonl").write_bytes(claude_line("gw-1", None, sid="b", inp=4, uuid="b1")  # another session
                                   + claude_line("msg_9", None, sid="b", inp=8, uuid="b2")
                                   + claude_line("msg_9", None, sid="b", inp=8, uuid="b3", ts="2026-02-01T10:00:01.000Z"))
    assert ledger([tmp_path]).totals["input"] == 1 + 2 + 4 + 8


def test_synthetic_responses_are_not_calls(tmp_path: Path) -> None:
    proj = tmp_path / "projects" / "p"
    proj.mkdir(parents=True)
    (proj / "s1.jsonl").write_bytes(claude_line("msg_1", "req_1") + claude_line("syn-1", None, model="<synthetic>", inp=0, out=0, cr=0))
    led = ledger([tmp_path])
    assert [r["model"] for r in led.rows] == [SONNET] and led.totals["calls"] == 1


def test_subagent_files_show_apart_from_the_main_loop(tmp_path: Path) -> None:
    proj = tmp_path / "projects" / "p"
    (proj / "s1" / "subagents").mkdir(parents=True)
    (proj / "s1.jsonl").write_bytes(claude_line("msg_1", "req_1", inp=1))
    (proj / "s1" / "subagents" / "agent-a1.jsonl").write_bytes(claude_line("msg_2", "req_2", side=True, agent="a1", inp=2))
    (proj / "s1" / "subagents" / "agent-b2.jsonl").write_bytes(claude_line("msg_3", "req_3", side=True, inp=4))  # agent from the file name
    led = ledger([tmp_path], by="agent")
    assert {r["agent"]: r["input"] for r in led.rows} == {"main": 1, "a1": 2, "agent-b2": 4}
    by_session = ledger([tmp_path], by="session")
    assert [(r["session"], r["calls"]) for r in by_session.rows] == [("s1", 3)]
    assert [r["project"] for r in ledger([tmp_path], by="project").rows] == ["p"]


# -- Codex ---------------------------------------------------------------------------------------


def _codex_steps() -> list[dict[str, Any]]:
    return [
        {"ts": "2026-02-01T09:00:00.000Z", "model": "gpt-5-codex",
         "last": {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 300, "reasoning_output_tokens": 120}, "repeat": True},
        {"ts": "2026-02-01T09:01:00.000Z", "model": "gpt-5-codex",
         "last": {"input_tokens": 2000, "cached_input_tokens": 1500, "output_tokens": 50, "reasoning_output_tokens": 0}},
        {"ts": "2026-02-01T23:59:00.000Z", "model": "gpt-5",
         "last": {"input_tokens": 4000, "cached_input_tokens": 4000, "output_tokens": 10, "reasoning_output_tokens": 8}, "repeat": True},
    ]


def test_codex_counts_last_usage_only_when_totals_move_with_cached_input_apart(tmp_path: Path) -> None:
    codex_rollout(tmp_path / "sessions" / "2026" / "02" / "01" / "rollout-2026-02-01T09-00-00-a.jsonl", _codex_steps())
    led = ledger([tmp_path])
    # Hand-computed: input = input - cached; output as reported (reasoning inside it, and shown apart).
    assert row(led, "gpt-5-codex") == {"model": "gpt-5-codex", "input": 800 + 500, "output": 350, "cache_read": 1700, "cache_write": 0,
                                        "reasoning": 120, "calls": 2, "cost_usd": round(1300 * 1.25e-6 + 350 * 1e-5 + 1700 * 1.25e-7, 6),
                                        "partial": False}
    g5 = row(led, "gpt-5")
    assert (g5["input"], g5["output"], g5["cache_read"], g5["reasoning"], g5["calls"]) == (0, 10, 4000, 8, 1)
    assert [r["session"] for r in ledger([tmp_path], by="session").rows] == ["0199a000-0000-7000-8000-000000000001"]


def test_codex_forked_rollout_copying_its_parent_counts_the_copy_once(tmp_path: Path) -> None:
    steps = _codex_steps()
    codex_rollout(tmp_path / "sessions" / "2026" / "02" / "01" / "rollout-a.jsonl", steps[:2])
    codex_rollout(tmp_path / "sessions" / "2026" / "02" / "02" / "rollout-b.jsonl", steps, session_id="child")
    led = ledger([tmp_path])
    assert led.totals["calls"] == 3 and led.totals["reasoning"] == 128


def test_codex_logs_without_last_usage_count_what_the_totals_moved_by(tmp_path: Path) -> None:
    log = tmp_path / "rollout-old.jsonl"
    codex_rollout(log, _codex_steps())
    lines = [orjson.loads(x) for x in log.read_bytes().splitlines()]
    for obj in lines:
        info = obj.get("payload", {}).get("info")
        if isinstance(info, dict):
            del info["last_token_usage"]
    log.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    led = ledger([tmp_path])
    assert (led.totals["input"], led.totals["output"], led.totals["cache_read"], led.totals["reasoning"], led.totals["calls"]) == \
        (800 + 500 + 0, 360, 5700, 128, 3)


def test_day_rows_use_the_local_zone_unless_a_zone_is_given(tmp_path: Path) -> None:
    codex_rollout(tmp_path / "rollout-x.jsonl", _codex_steps())
    assert [r["day"] for r in ledger([tmp_path], by="day", tz="UTC").rows] == ["2026-02-01"]
    assert [r["day"] for r in ledger([tmp_path], by="day", tz="Asia/Tokyo").rows] == ["2026-02-01", "2026-02-02"]
    code = ("import sys; from catty_ctx.usage.pipeline import usage; l, _ = usage([sys.argv[1]], by='day'); print([r['day'] for r in l.rows])")
    env = dict(os.environ, TZ="America/Los_Angeles", PYTHONPATH=str(Path(catty_ctx.__file__).parent.parent))
    out = subprocess.run([__import__("sys").executable, "-c", code, str(tmp_path)], capture_output=True, env=env, check=True).stdout
    assert out.strip() == b"['2026-02-01']"  # 09:00Z and 23:59Z are both Feb 1 in Los Angeles


def test_since_and_until_are_inclusive_days(tmp_path: Path) -> None:
    codex_rollout(tmp_path / "rollout-x.jsonl", _codex_steps())
    assert ledger([tmp_path], tz="Asia/Tokyo", since="2026-02-02").totals["calls"] == 1
    assert ledger([tmp_path], tz="Asia/Tokyo", until="20260201").totals["calls"] == 2
    assert ledger([tmp_path], tz="Asia/Tokyo", since="2026-02-01", until="2026-02-01").totals["calls"] == 2


def test_week_and_month_rows(tmp_path: Path) -> None:
    codex_rollout(tmp_path / "rollout-x.jsonl", _codex_steps())
    assert [r["week"] for r in ledger([tmp_path], by="week", tz="Asia/Tokyo").rows] == ["2026-W05", "2026-W06"]
    assert [r["month"] for r in ledger([tmp_path], by="month").rows] == ["2026-02"]
    new_year = tmp_path / "ny"
    codex_rollout(new_year / "rollout-y.jsonl", [dict(_codex_steps()[0], ts="2025-12-29T12:00:00.000Z")])
    assert [r["week"] for r in ledger([new_year], by="week").rows] == ["2026-W01"]  # ISO weeks: Monday Dec 29 opens 2026


# -- catty sessions ----------------------------------------------------------------------------


def _usage_ev(model: str, inp: int, out: int, **kw: Any) -> dict[str, Any]:
    return {"kind": "usage", "model": model, "input": inp, "output": out, "cache_read": kw.pop("cache_read", 0),
            "cache_write": kw.pop("cache_write", 0), "reasoning": kw.pop("reasoning", 0), **kw}


def test_catty_usage_events_by_agent_with_request_ids_counted_once(tmp_path: Path) -> None:
    write_log(tmp_path / "root" / "a", [{"kind": "session", "session_id": "sa"},
                                         _usage_ev(SONNET, 100, 10, request_id="r1"),
                                         _usage_ev(SONNET, 100, 10, request_id="r1"),  # the same call logged twice
                                         _usage_ev(SONNET, 7, 1, agent="explore-1", cost_usd=0.5)])
    led = ledger([tmp_path / "root"], by="agent")
    assert {r["agent"]: (r["input"], r["calls"]) for r in led.rows} == {"main": (100, 1), "explore-1": (7, 1)}
    assert row(led, "explore-1")["cost_usd"] == 0.5  # a provider-reported cost wins over the table


def test_a_forks_copied_usage_events_count_once_through_a_chain_of_forks(tmp_path: Path) -> None:
    parent = [{"kind": "session", "session_id": "p"}, _usage_ev(SONNET, 1, 0), _usage_ev(SONNET, 2, 0)]
    write_log(tmp_path / "r" / "p", parent)
    # The child copied seq 1..2 (keeping their seq) and went on; the grandchild copied the child through seq 3.
    child = [{"kind": "session", "session_id": "c", "parent_session_id": "p", "forked_from_seq": 2}, *parent[1:], _usage_ev(SONNET, 4, 0)]
    write_log(tmp_path / "r" / "c", child)
    grand = [{"kind": "session", "session_id": "g", "parent_session_id": "c", "forked_from_seq": 3}, *child[1:], _usage_ev(SONNET, 8, 0)]
    write_log(tmp_path / "r" / "g", grand)
    led = ledger([tmp_path / "r"], by="session")
    assert {r["session"]: r["input"] for r in led.rows} == {"p": 3, "c": 4, "g": 8}
    # Sessions with equal events that are not forks of each other are not copies.
    write_log(tmp_path / "s" / "x", [{"kind": "session", "session_id": "x"}, _usage_ev(SONNET, 1, 0)])
    write_log(tmp_path / "s" / "y", [{"kind": "session", "session_id": "y"}, _usage_ev(SONNET, 1, 0)])
    assert ledger([tmp_path / "s"]).totals["calls"] == 2


def test_an_incomplete_usage_withholds_cost_and_marks_rows_partial(tmp_path: Path) -> None:
    write_log(tmp_path / "r" / "a", [{"kind": "session", "session_id": "sa"}, _usage_ev(SONNET, 100, 10),
                                      _usage_ev(SONNET, 5, 1, agent="bg", incomplete=True)])
    write_log(tmp_path / "r" / "b", [{"kind": "session", "session_id": "sb"}, _usage_ev("claude-opus-4-1-20250805", 100, 10)])
    led = ledger([tmp_path / "r"], by="session")
    assert led.incomplete is True
    assert row(led, "sa")["cost_usd"] is None and row(led, "sa")["partial"] is True
    assert row(led, "sb")["cost_usd"] == round(100 * 15e-6 + 10 * 75e-6, 6) and row(led, "sb")["partial"] is False
    assert led.totals["cost_usd"] is None and led.totals["partial"] is True


# -- prices ------------------------------------------------------------------------------------


def test_prices_come_from_the_price_library_named_with_its_version(tmp_path: Path) -> None:
    import genai_prices

    write_log(tmp_path / "r" / "a", [{"kind": "session", "session_id": "sa"}, _usage_ev(SONNET, 1000, 100)])
    led = ledger([tmp_path / "r"])
    assert led.document()["prices"] == {"library": "genai-prices", "version": genai_prices.__version__, "files": []}
    assert led.totals["cost_usd"] == round(1000 * 3e-6 + 100 * 15e-6, 6) and led.totals["partial"] is False


SONNET_45 = "claude-sonnet-4-5-20250929"


def test_a_call_above_200k_prompt_tokens_is_priced_wholly_at_the_tier_rates() -> None:
    prices = U.load_prices()
    base = U.Record(1.77e9, SONNET_45, 1_000, 2_000, 150_000, 40_000, 0, None, None, False, "main", "s", "", False, None, None)
    small = U.call_cost(base, prices)
    assert small == pytest.approx(1_000 * 3e-6 + 2_000 * 15e-6 + 150_000 * 0.3e-6 + 40_000 * 3.75e-6)
    big = replace(base, cache_read=160_000)  # prompt 1,000 + 160,000 + 40,000 = 201,000 > 200,000
    assert U.call_cost(big, prices) == pytest.approx(1_000 * 6e-6 + 2_000 * 22.5e-6 + 160_000 * 0.6e-6 + 40_000 * 7.5e-6)
    at_limit = replace(base, cache_read=159_000)  # exactly 200,000: the base rates
    assert U.call_cost(at_limit, prices) == pytest.approx(1_000 * 3e-6 + 2_000 * 15e-6 + 159_000 * 0.3e-6 + 40_000 * 3.75e-6)


@pytest.mark.parametrize("name, provider, model", [
    ("claude-sonnet-4-6", "anthropic", "claude-sonnet-4-6"),
    ("claude-opus-4-6", "anthropic", "claude-opus-4-6"),
    ("gpt-5.3-codex", "openai", "gpt-5.3-codex"),
    ("gemini-3-pro", "google", "gemini-3-pro-preview"),
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "aws", None),  # Bedrock's own (regional) price
    ("claude-sonnet-4-5@20250929", "google", "claude-sonnet-4-5"),  # Vertex
    ("anthropic/claude-sonnet-4.5", "openrouter", "anthropic/claude-sonnet-4.5"),
    ("claude-sonnet-4-5-20250929", "anthropic", "claude-sonnet-4-5"),
])
def test_current_provider_prefixed_and_dated_names_are_priced_by_the_library(name: str, provider: str, model: str | None) -> None:
    prices = U.load_prices()
    got = prices.priced_by(name)
    assert got is not None and got["provider"] == provider and (model is None or got["model"] == model)
    assert prices.rates(name, 20_500, False) is not None


def test_prices_apply_at_the_calls_date() -> None:
    """o3's price fell on 2025-06-10: a call before that day costs the old price, one after it the new."""
    prices = U.load_prices()
    before = U.Record(datetime(2025, 6, 9, 12, tzinfo=timezone.utc).timestamp(), "o3", 1_000_000, 0, 0, 0, 0, None, None, False,
                      "main", "s", "", False, None, None)
    after = replace(before, ts=datetime(2025, 6, 11, 12, tzinfo=timezone.utc).timestamp())
    assert U.call_cost(before, prices) == pytest.approx(10.0) and U.call_cost(after, prices) == pytest.approx(2.0)


def test_unknown_models_stay_unpriced_and_the_library_never_reaches_the_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def refuse(*_a: Any, **_k: Any) -> None:
        raise AssertionError("the price library tried the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "fresh-cache"))
    prices = U.load_prices()
    assert prices.rates("no-such-model-xyz", 20_500, False) is None and prices.priced_by("no-such-model-xyz") is None
    assert prices.rates("claude-opus-4-6", 20_500, False) is not None


def test_a_warm_run_never_imports_the_price_library(tmp_path: Path) -> None:
    """The models a run meets are resolved once and kept in the price index: a later process
    over new logs of the same models prices them without importing the library; nor does the
    first one when the package's price table stands for the installed library (`pricetable`)."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(Path(catty_ctx.__file__).parent.parent))
    probe = ("import sys; from catty_ctx.usage.pipeline import usage; led, _ = usage([sys.argv[1]], use_cache=False, jobs=1); "
             "print(led.totals['cost_usd'] is not None, 'genai_prices.data' in sys.modules, 'genai_prices.update_prices' in sys.modules)")
    # (the library's updater, its only code that reaches the network, is never even imported)
    shipped = pricetable.load(library.version()[0], library.data_file()) is not None
    for i, expect in ((0, f"True {not shipped} False"), (1, "True False False")):
        write_log(tmp_path / f"r{i}" / "a", [{"kind": "session", "session_id": f"s{i}"}, _usage_ev("claude-opus-4-6", 1000, 100)])
        out = subprocess.run([sys.executable, "-c", probe, str(tmp_path / f"r{i}")], capture_output=True, env=env, text=True, check=True)
        assert out.stdout.split() == expect.split()


def test_model_names_match_the_users_table_without_provider_prefix_or_date(tmp_path: Path) -> None:
    table = tmp_path / "prices.json"
    table.write_bytes(orjson.dumps({SONNET: {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6}}))
    prices = U.load_prices(table)
    assert prices.lookup("anthropic/claude-sonnet-4-20250514") is prices.lookup(SONNET)
    assert prices.lookup("claude-sonnet-4") is prices.lookup(SONNET)
    assert prices.lookup("claude-sonnet-4-5") is not prices.lookup(SONNET)
    assert prices.lookup("no-such-model") is None


def test_prices_file_overrides_bundled_entries_and_unpriced_models_make_rows_partial(tmp_path: Path) -> None:
    write_log(tmp_path / "r" / "a", [{"kind": "session", "session_id": "sa"}, _usage_ev("house-model", 1000, 100), _usage_ev(SONNET, 1000, 0)])
    led = ledger([tmp_path / "r"])
    assert row(led, "house-model")["partial"] is True and row(led, "house-model")["cost_usd"] is None
    assert led.totals["partial"] is True and led.totals["cost_usd"] == round(1000 * 3e-6, 6)
    table = tmp_path / "prices.json"
    table.write_bytes(orjson.dumps({"house-model": {"input_cost_per_token": 1e-3, "output_cost_per_token": 2e-3},
                                    SONNET: {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6}}))
    led = ledger([tmp_path / "r"], prices_file=str(table))
    assert row(led, "house-model")["cost_usd"] == 1.2 and row(led, "house-model")["partial"] is False
    assert row(led, SONNET)["cost_usd"] == 0.001 and led.totals["partial"] is False
    assert led.document()["prices"]["files"] == [str(table)]


def test_a_price_table_that_overflows_gives_no_cost_and_a_partial_row(tmp_path: Path) -> None:
    """A price of 1e308 a token times 1,000 tokens is infinite: once shown as `$inf` with `partial: false`."""
    write_log(tmp_path / "r" / "a", [{"kind": "session", "session_id": "sa"}, _usage_ev("house-model", 1000, 100)])
    table = tmp_path / "prices.json"
    table.write_bytes(orjson.dumps({"house-model": {"input_cost_per_token": 1e308, "output_cost_per_token": 1e308}}))
    led = ledger([tmp_path / "r"], prices_file=str(table))
    assert row(led, "house-model")["cost_usd"] is None and row(led, "house-model")["partial"] is True
    assert led.totals["cost_usd"] is None and led.totals["partial"] is True
    from support import cli

    proc = cli("usage", str(tmp_path / "r"), "--prices", str(table), "--json")
    assert proc.returncode == 0 and b"inf" not in proc.stdout.lower() and orjson.loads(proc.stdout)["totals"]["partial"] is True


def test_the_configured_price_table_covers_private_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_log(tmp_path / "r" / "a", [{"kind": "session", "session_id": "sa"}, _usage_ev("house-model", 1000, 100)])
    (tmp_path / "config" / "catty-ctx").mkdir(parents=True)
    (tmp_path / "config" / "catty-ctx" / "prices.json").write_bytes(
        orjson.dumps({"house-model": {"input_cost_per_token": 1e-3, "output_cost_per_token": 2e-3}}))
    assert row(ledger([tmp_path / "r"]), "house-model")["cost_usd"] is None
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert row(ledger([tmp_path / "r"]), "house-model")["cost_usd"] == 1.2  # (a new table is a new question: not the cached answer)


# -- bad lines, detection ----------------------------------------------------------------------


def test_bad_lines_are_skipped_counted_and_named(tmp_path: Path) -> None:
    proj = tmp_path / "projects" / "p"
    proj.mkdir(parents=True)
    (proj / "s1.jsonl").write_bytes(claude_line("msg_1", "req_1") + b'{"message": {"usage": {"output_tokens": broken\n' + claude_line("msg_2", "req_2")
                                    + b'{"type":"assistant","message":{"usage"')  # a torn tail
    _led, scan = U.usage([str(tmp_path)])
    assert _led.totals["calls"] == 2 and scan.bad_lines == 2
    assert scan.bad_samples == [f"{proj / 's1.jsonl'}:2: not valid JSON", f"{proj / 's1.jsonl'}:4: torn final line (no newline)"]


def test_kinds_are_told_from_content_not_names(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "claude-export.jsonl").write_bytes(claude_line("msg_1", "req_1"))
    codex_rollout(tmp_path / "x" / "some-codex-log.jsonl", _codex_steps()[:1])
    write_log(tmp_path / "x" / "sess", [{"kind": "session", "session_id": "sa"}, _usage_ev(SONNET, 3, 3)])
    shutil.move(tmp_path / "x" / "sess" / "updates.jsonl", tmp_path / "x" / "catty-log.jsonl")
    led = ledger([tmp_path / "x"])
    assert {r["model"]: r["calls"] for r in led.rows} == {SONNET: 2, "gpt-5-codex": 1}


# -- the cache ---------------------------------------------------------------------------------


def test_unchanged_files_are_not_read_again(tmp_path: Path) -> None:
    claude_tree(tmp_path / "c", seed=5, projects=1, sessions=2)
    first, scan1 = U.usage([str(tmp_path / "c")])
    again, scan2 = U.usage([str(tmp_path / "c")])
    assert scan1.files_parsed == scan1.files > 0 and scan2.files_parsed == 0 and scan2.bytes_parsed == 0
    assert again.rows == first.rows and again.totals == first.totals
    assert list(U.cache_dir().glob("usage-*.bin"))


def test_a_new_question_about_unchanged_files_reads_no_file(tmp_path: Path) -> None:
    claude_tree(tmp_path / "c", seed=5, projects=1, sessions=2)
    U.usage([str(tmp_path / "c")], by="model")
    by_day, scan = U.usage([str(tmp_path / "c")], by="day", timezone_name="Asia/Tokyo")
    assert scan.files_parsed == 0 and scan.records  # from the per-file cache
    fresh, _ = U.usage([str(tmp_path / "c")], by="day", timezone_name="Asia/Tokyo", use_cache=False)
    assert by_day.rows == fresh.rows


def test_an_appended_file_is_read_only_from_where_it_ended(tmp_path: Path) -> None:
    claude_tree(tmp_path / "c", seed=6, projects=1, sessions=2, subagents=False)
    before, _ = U.usage([str(tmp_path / "c")])
    target = sorted((tmp_path / "c" / "projects").rglob("*.jsonl"))[0]
    tail = claude_line("msg_new", "req_new", out=1) + claude_line("msg_new", "req_new", out=9)
    with open(target, "ab") as f:
        f.write(tail)
    after, scan = U.usage([str(tmp_path / "c")])
    assert scan.files_parsed == 1 and scan.bytes_parsed == len(tail)
    assert after.totals["calls"] == before.totals["calls"] + 1 and after.totals["output"] == before.totals["output"] + 9
    fresh, _ = U.usage([str(tmp_path / "c")], use_cache=False)
    assert fresh.rows == after.rows


def test_a_torn_line_completed_by_a_later_append_counts_once(tmp_path: Path) -> None:
    f = tmp_path / "projects" / "p" / "s.jsonl"
    f.parent.mkdir(parents=True)
    line = claude_line("msg_2", "req_2")
    f.write_bytes(claude_line("msg_1", "req_1") + line[:30])
    led, scan = U.usage([str(tmp_path)])
    assert led.totals["calls"] == 1 and scan.bad_lines == 1
    with open(f, "ab") as out:
        out.write(line[30:])
    led, scan = U.usage([str(tmp_path)])
    assert led.totals["calls"] == 2 and scan.bad_lines == 0 and scan.bytes_parsed == len(line)  # the torn start is read again


def test_a_file_that_shrank_or_changed_in_place_is_read_again(tmp_path: Path) -> None:
    f = tmp_path / "projects" / "p" / "s.jsonl"
    f.parent.mkdir(parents=True)
    f.write_bytes(claude_line("msg_1", "req_1", inp=10) + claude_line("msg_2", "req_2", inp=20))
    assert U.usage([str(tmp_path)])[0].totals["input"] == 30
    f.write_bytes(claude_line("msg_1", "req_1", inp=10))  # shrank
    led, scan = U.usage([str(tmp_path)])
    assert led.totals["input"] == 10 and scan.bytes_parsed == f.stat().st_size
    f.write_bytes(claude_line("msg_1", "req_1", inp=70))  # same size, rewritten in place
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 1_000_000))
    assert U.usage([str(tmp_path)])[0].totals["input"] == 70
    f.write_bytes(claude_line("msg_1", "req_1", inp=80) + claude_line("msg_3", "req_3", inp=1))  # grew, but the old part changed
    assert U.usage([str(tmp_path)])[0].totals["input"] == 81


def test_a_new_log_in_a_known_folder_is_found_and_a_folder_listing_is_trusted_only_when_its_mtime_is_old(tmp_path: Path) -> None:
    proj = tmp_path / "projects" / "p"
    proj.mkdir(parents=True)
    (proj / "s1.jsonl").write_bytes(claude_line("msg_1", "req_1"))
    assert U.usage([str(tmp_path)])[0].totals["calls"] == 1
    (proj / "s2.jsonl").write_bytes(claude_line("msg_2", "req_2"))  # the folder's mtime moves: listed again
    assert U.usage([str(tmp_path)])[0].totals["calls"] == 2
    # A change within the clock's tick leaves the mtime as it was: a listing taken right after a
    # change is not trusted, so the third log is still found.
    racy = proj.stat().st_mtime_ns
    (proj / "s3.jsonl").write_bytes(claude_line("msg_3", "req_3"))
    os.utime(proj, ns=(racy, racy))
    assert U.usage([str(tmp_path)])[0].totals["calls"] == 3
    # A listing of a folder unchanged for long is trusted: one stat, no read of the folder.
    old = racy - 3_600_000_000_000
    os.utime(proj, ns=(old, old))
    assert U.usage([str(tmp_path)], by="day")[0].totals["calls"] == 3
    (proj / "s4.jsonl").write_bytes(claude_line("msg_4", "req_4"))
    os.utime(proj, ns=(old, old))  # (only a clock set back could do this)
    assert U.usage([str(tmp_path)], by="session")[0].totals["calls"] == 3
    assert U.usage([str(tmp_path)], by="session", use_cache=False)[0].totals["calls"] == 4


def test_a_cached_answer_comes_back_with_what_the_caller_rendered(tmp_path: Path) -> None:
    claude_tree(tmp_path / "c", seed=5, projects=1, sessions=1)
    seen: list[int] = []

    def render(led: U.Ledger, scan: U.Scan) -> bytes:
        seen.append(scan.files_parsed)
        return repr((led.rows, scan.files, scan.files_parsed)).encode()

    first, _ = U.usage([str(tmp_path / "c")], render=render)
    again, scan = U.usage([str(tmp_path / "c")], render=render)
    assert first.rendered is None and seen == [0]  # rendered once, as an answer from the cache reads
    assert again.rendered == repr((first.rows, scan.files, 0)).encode()


def test_another_catty_ctx_version_never_serves_what_an_earlier_one_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import catty_ctx.usage.answers

    claude_tree(tmp_path / "c", seed=5, projects=1, sessions=1)
    U.usage([str(tmp_path / "c")], render=lambda led, scan: b"printed by this version")
    assert U.usage([str(tmp_path / "c")])[0].rendered == b"printed by this version"
    monkeypatch.setattr(catty_ctx.usage.answers, "__version__", "99.0")  # the version the answer cache keys on
    assert U.usage([str(tmp_path / "c")])[0].rendered is None


def test_a_damaged_cache_is_ignored_and_rewritten(tmp_path: Path) -> None:
    claude_tree(tmp_path / "c", seed=12, projects=1, sessions=2)
    good, _ = U.usage([str(tmp_path / "c")], by="day")
    for f in U.cache_dir().glob("usage-*.bin"):
        f.write_bytes(b"\x00garbage" * 10)
    again, scan = U.usage([str(tmp_path / "c")], by="day")
    assert again.rows == good.rows and scan.files_parsed == scan.files
    assert U.usage([str(tmp_path / "c")], by="day")[1].files_parsed == 0


def test_agent_homes_are_read_by_their_own_folder_and_other_roots_whole(tmp_path: Path) -> None:
    home = tmp_path / "claude-home"
    (home / "projects" / "-w").mkdir(parents=True)
    (home / "projects" / "-w" / "s1.jsonl").write_bytes(claude_line("msg_1", "req_1"))
    (home / "elsewhere").mkdir()
    (home / "elsewhere" / "copy.jsonl").write_bytes(claude_line("msg_9", "req_9"))  # outside projects/: not Claude Code's
    assert ledger([home]).totals["calls"] == 1
    root = tmp_path / "catty-root"
    write_log(root / "sessions" / "a", [{"kind": "session", "session_id": "a"}, _usage_ev(SONNET, 1, 1)])
    write_log(root / "other" / "b", [{"kind": "session", "session_id": "b"}, _usage_ev(SONNET, 1, 1)])
    assert ledger([root]).totals["calls"] == 2  # a folder named sessions/ does not make a Codex home


def test_fifos_and_other_non_files_are_skipped(tmp_path: Path) -> None:
    proj = tmp_path / "projects" / "p"
    proj.mkdir(parents=True)
    (proj / "s1.jsonl").write_bytes(claude_line("msg_1", "req_1"))
    os.mkfifo(proj / "pipe.jsonl")
    assert ledger([tmp_path]).totals["calls"] == 1  # and no hang on the FIFO


def test_no_cache_neither_reads_nor_writes_the_cache(tmp_path: Path) -> None:
    claude_tree(tmp_path / "c", seed=8, projects=1, sessions=1)
    _, scan = U.usage([str(tmp_path / "c")], use_cache=False)
    _, scan2 = U.usage([str(tmp_path / "c")], use_cache=False)
    assert scan2.files_parsed == scan.files_parsed == scan.files
    # (only the price index, which stands for the installed price library, not for any log)
    assert not U.cache_dir().exists() or not list(U.cache_dir().glob("usage-*.bin"))


def test_parallel_workers_give_the_same_ledger_as_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude_tree(tmp_path / "c", seed=9, projects=2, sessions=3)
    one, _ = U.usage([str(tmp_path / "c")], jobs=1, use_cache=False, by="day")
    monkeypatch.setattr(filescan, "PARALLEL_MIN_BYTES", 0)
    two, scan = U.usage([str(tmp_path / "c")], jobs=2, use_cache=False, by="day")
    assert two.rows == one.rows and two.totals == one.totals and scan.files_parsed == scan.files


def test_the_entries_workers_hand_back_are_cached_as_they_came_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's entries go to the per-file cache as the MessagePack it sent: a later run reads
    every log from them, and resumes a grown log from where the worker stopped."""
    claude_tree(tmp_path / "c", seed=9, projects=2, sessions=3)
    one, _ = U.usage([str(tmp_path / "c")], jobs=1, use_cache=False, by="day")
    monkeypatch.setattr(filescan, "PARALLEL_MIN_BYTES", 0)
    forks: list[int] = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    two, scan = U.usage([str(tmp_path / "c")], jobs=2, by="day")
    assert forks and two.rows == one.rows and scan.files_parsed == scan.files
    again, scan = U.usage([str(tmp_path / "c")], jobs=2, by="session")  # a new question: the per-file cache serves it
    assert scan.files_parsed == 0 and scan.from_cache == scan.files and again.totals == one.totals
    log = max((tmp_path / "c").rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    with open(log, "ab") as f:
        f.write(orjson.dumps({"type": "assistant", "sessionId": "s", "timestamp": "2026-03-01T12:00:00.000Z", "requestId": "req_new",
                              "message": {"id": "msg_new", "model": "claude-sonnet-4-20250514", "content": [],
                                          "usage": {"input_tokens": 5, "output_tokens": 1}}}) + b"\n")
    grown, scan = U.usage([str(tmp_path / "c")], jobs=2, by="project")
    assert scan.files_parsed == 1 and scan.bytes_parsed < 400 and grown.totals["input"] == one.totals["input"] + 5


def test_a_cache_written_behind_the_fold_is_whole_when_usage_returns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large per-file cache is written by a thread while the calls are deduped and folded;
    usage returns only once it is written, and a write that fails is a warning, not a result."""
    import threading

    from catty_ctx.usage import filecache

    claude_tree(tmp_path / "c", seed=9, projects=2, sessions=3)
    monkeypatch.setattr(filescan, "WRITE_BEHIND_FILES", 0)
    started: list[str] = []

    class Spy(filecache.Writing):
        def __init__(self, jobs: list[tuple[int, str, int, dict[str, Any]]]) -> None:
            started.extend(arg for _i, arg, _gen, _files in jobs)
            super().__init__(jobs)

    monkeypatch.setattr(filecache, "Writing", Spy)
    one, scan = U.usage([str(tmp_path / "c")], by="day")
    assert started == [str(tmp_path / "c")] and not scan.warnings
    assert not [t for t in threading.enumerate() if t.name == "catty-ctx-cache"]
    again, scan = U.usage([str(tmp_path / "c")], by="model")  # a new question: every log from that cache
    assert scan.files_parsed == 0 and scan.from_cache == scan.files and again.totals == one.totals
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-a-folder"))
    (tmp_path / "not-a-folder").write_text("a file where the cache folder would be")
    failed, scan = U.usage([str(tmp_path / "c")], by="day")
    assert failed.totals == one.totals and any(w.startswith("usage cache not written") for w in scan.warnings)
    assert len(started) == 2


def test_a_worker_that_dies_or_cannot_start_costs_time_not_the_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude_tree(tmp_path / "c", seed=9, projects=2, sessions=3)
    one, _ = U.usage([str(tmp_path / "c")], jobs=1, use_cache=False, by="day")
    monkeypatch.setattr(filescan, "PARALLEL_MIN_BYTES", 0)
    parent, real_scan = os.getpid(), U.scan_file

    def dies_in_a_child(task: Any) -> Any:
        if os.getpid() != parent:
            os._exit(3)  # a worker killed mid-share
        return real_scan(task)

    monkeypatch.setattr(filescan, "scan_file", dies_in_a_child)
    died, scan = U.usage([str(tmp_path / "c")], jobs=3, use_cache=False, by="day")
    assert died.rows == one.rows and scan.files_parsed == scan.files

    def no_fork() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(filescan, "scan_file", real_scan)
    monkeypatch.setattr(os, "fork", no_fork)
    alone, scan = U.usage([str(tmp_path / "c")], jobs=2, use_cache=False, by="day")
    assert alone.rows == one.rows and scan.files_parsed == scan.files


def test_a_caller_running_threads_is_never_forked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    claude_tree(tmp_path / "c", seed=9, projects=1, sessions=2)
    monkeypatch.setattr(filescan, "PARALLEL_MIN_BYTES", 0)
    forks: list[int] = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    U.usage([str(tmp_path / "c")], jobs=2, use_cache=False)
    assert forks == [1]
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        led, scan = U.usage([str(tmp_path / "c")], jobs=2, use_cache=False)
    finally:
        stop.set()
        other.join()
    assert forks == [1] and scan.files_parsed == scan.files


# -- agreement with ccusage (only where it is installed) ---------------------------------------


def _ccusage() -> str | None:
    return os.environ.get("CATTY_CTX_CCUSAGE") or shutil.which("ccusage")


@pytest.mark.skipif(_ccusage() is None, reason="ccusage is not installed (npm install ccusage@20.0.24, or set CATTY_CTX_CCUSAGE)")
@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
def test_per_model_and_per_day_tokens_equal_ccusage(tmp_path: Path, zone: str) -> None:
    claude_tree(tmp_path / "claude", seed=11, projects=2, sessions=4, turns=20,
                start=datetime(2026, 1, 30, 17, 0, tzinfo=timezone.utc))
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(tmp_path / "claude"), HOME=str(tmp_path), TZ="UTC")
    proc = subprocess.run([str(_ccusage()), "daily", "--json", "--offline", "--breakdown", "--timezone", zone],
                          capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    theirs_day: dict[str, tuple[int, ...]] = {}
    theirs_model: dict[str, list[int]] = {}
    for d in orjson.loads(proc.stdout)["daily"]:
        theirs_day[d.get("period") or d["date"]] = (d["inputTokens"], d["outputTokens"], d["cacheReadTokens"], d["cacheCreationTokens"])
        for b in d["modelBreakdowns"]:
            acc = theirs_model.setdefault(b["modelName"], [0, 0, 0, 0])
            for i, k in enumerate(("inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens")):
                acc[i] += b[k]
    ours_day = ledger([tmp_path / "claude"], by="day", tz=zone)
    ours_model = ledger([tmp_path / "claude"], by="model", tz=zone)
    assert {r["day"]: (r["input"], r["output"], r["cache_read"], r["cache_write"]) for r in ours_day.rows} == theirs_day
    assert {r["model"]: [r["input"], r["output"], r["cache_read"], r["cache_write"]] for r in ours_model.rows} == theirs_model


@pytest.mark.parametrize("name", ["subagent-inherited-prefix", "fork-restamped-with-spawn-answer"])
def test_a_codex_child_rollout_counts_under_its_own_session_not_its_parents(tmp_path: Path, name: str) -> None:
    """A subagent's or fork's rollout opens with its own session_meta and then copies its
    parent's: the calls are the child's (the copied meta names the parent)."""
    source = Path(__file__).resolve().parents[2] / "fixtures" / "import" / "codex" / "wild" / name
    (rollout,) = source.glob("*.jsonl")
    own = orjson.loads(rollout.read_bytes().split(b"\n", 1)[0])["payload"]["id"]
    shutil.copy(rollout, tmp_path / rollout.name)
    for _ in range(2):  # a cold read, then the per-file cache's state
        led, _scan = U.usage([str(tmp_path)], by="session", use_cache=True)
        assert [r["session"] for r in led.rows] == [own]
    # appended calls after a cached read still belong to the child
    with open(tmp_path / rollout.name, "ab") as f:
        f.write(orjson.dumps({"timestamp": "2026-09-17T12:00:00.000Z", "type": "event_msg", "payload": {
            "type": "token_count", "info": {"total_token_usage": {"input_tokens": 99_999, "cached_input_tokens": 0, "output_tokens": 9,
                                                                  "reasoning_output_tokens": 0, "total_tokens": 100_008}}}}) + b"\n")
    led, _scan = U.usage([str(tmp_path)], by="session", use_cache=True)
    assert [r["session"] for r in led.rows] == [own]

"""Subagents as sessions (docs/design.md#m12): `--agent ID` gives a subagent's own view to the
reading commands, `inspect --agents` lists them with the usage ledger's numbers, and `fork
--agent` makes one a session of its own."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from catty_ctx.view import providers
from support import ROOT, call, cli, jsonl, msg, result, session_event, write_log

CLAUDE = ROOT / "fixtures/import/claude/projects/-home-dev-shop"


def _usage(model: str, i: int, o: int, rid: str, agent: str | None = None, **kw: Any) -> dict[str, Any]:
    ev = {"kind": "usage", "model": model, "input": i, "output": o, "cache_read": kw.get("cr", 0), "cache_write": 0, "request_id": rid}
    return {**ev, "agent": agent} if agent else ev


def _as(agent: str, ev: dict[str, Any]) -> dict[str, Any]:
    return {**ev, "agent": agent}


def two_subagents(tmp_path: Path) -> Path:
    """A main loop that spawns two subagents through Task calls; each has its prompt, calls and usage."""
    return write_log(tmp_path / "s", [
        session_event("s-main", model="claude-sonnet-4-5"), msg("user", "research two things"), msg("assistant", "spawning"),
        call("t1", "Task", {"description": "find A", "prompt": "look for A"}), call("t2", "Task", {"description": "find B", "prompt": "look for B"}),
        _as("aaa", msg("user", "look for A")), _as("aaa", msg("assistant", "searching A")), _as("aaa", call("a1", "Grep", {"pattern": "A"})),
        _as("aaa", result("a1", "A found in x.py")), _as("aaa", msg("assistant", "A is in x.py")),
        _usage("claude-haiku-4-5", 1_000, 200, "r-a1", "aaa", cr=5_000),
        _as("bbb", msg("user", "look for B")), _as("bbb", msg("assistant", "B is in y.py")), _usage("claude-haiku-4-5", 2_000, 300, "r-b1", "bbb"),
        result("t1", "A is in x.py\nagentId: aaa"), result("t2", "B is in y.py\nagentId: bbb"),
        msg("assistant", "both found"), _usage("claude-sonnet-4-5", 10_000, 500, "r-m1"),
        {"kind": "state", "facet": "subagents", "value": [{"id": "aaa", "type": "Explore", "description": "find A", "status": "completed"},
                                                          {"id": "bbb", "type": "Explore", "description": "find B", "status": "running"}]},
    ])


def test_resume_agent_is_that_subagents_conversation(tmp_path: Path) -> None:
    s = two_subagents(tmp_path)
    r = cli("resume", str(s), "--agent", "aaa", "--format", "openai")
    assert r.returncode == 0, r.stderr
    doc = orjson.loads(r.stdout)
    _build, validate = providers.FORMATS["openai"]
    validate(doc)  # (raises on a request a provider refuses)
    messages = doc["messages"]
    assert messages[0] == {"role": "user", "content": "look for A"}
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[2]["content"] == "A found in x.py" and messages[-1]["content"] == "A is in x.py"
    assert "research two things" not in r.stdout.decode()  # none of the main loop
    items = jsonl(cli("resume", str(s), "--agent", "bbb").stdout)
    assert [(i["role"], i["text"]) for i in items] == [("user", "look for B"), ("assistant", "B is in y.py")]


def test_inspect_agents_lists_both_with_the_usage_ledgers_tokens_and_cost(tmp_path: Path) -> None:
    s = two_subagents(tmp_path)
    r = cli("inspect", str(s), "--agents", "--json")
    assert r.returncode == 0, r.stderr
    rows = {a["agent"]: a for a in orjson.loads(r.stdout)["agents"]}
    assert set(rows) == {"aaa", "bbb"}
    assert (rows["aaa"]["status"], rows["aaa"]["turns"], rows["aaa"]["parent_call"], rows["aaa"]["model"]) == ("completed", 1, "t1", "claude-haiku-4-5")
    assert (rows["bbb"]["status"], rows["bbb"]["parent_call"]) == ("running", "t2")
    ledger = orjson.loads(cli("usage", str(s), "--by", "agent", "--json", "--no-cache").stdout)
    # bbb still runs: its calls are not all logged, so the bill is incomplete and no cost is shown (issue 42)
    assert ledger["incomplete"] is True and ledger["totals"]["cost_usd"] is None
    assert all(r["cost_usd"] is None for r in [*rows.values(), *ledger["rows"]])
    log = s / "updates.jsonl"
    seq = len(log.read_bytes().splitlines())
    done = [{"id": "aaa", "type": "Explore", "description": "find A", "status": "completed"},
            {"id": "bbb", "type": "Explore", "description": "find B", "status": "completed"}]
    with log.open("ab") as f:
        f.write(orjson.dumps({"v": 1, "seq": seq, "ts": "2026-11-01T00:59:00.000Z", "kind": "state", "facet": "subagents", "value": done}) + b"\n")
    rows = {a["agent"]: a for a in orjson.loads(cli("inspect", str(s), "--agents", "--json").stdout)["agents"]}
    ledger = orjson.loads(cli("usage", str(s), "--by", "agent", "--json", "--no-cache").stdout)
    assert ledger["incomplete"] is False
    by = {row["agent"]: row for row in ledger["rows"]}
    for agent, row in rows.items():
        u = by[agent]
        assert row["tokens"] == u["input"] + u["output"] + u["cache_read"] + u["cache_write"]
        assert row["cost_usd"] == u["cost_usd"] and row["cost_usd"] > 0
    main = by["main"]
    assert sum(r["tokens"] for r in rows.values()) + main["input"] + main["output"] + main["cache_read"] + main["cache_write"] == (
        ledger["totals"]["input"] + ledger["totals"]["output"] + ledger["totals"]["cache_read"] + ledger["totals"]["cache_write"])
    assert sum(r["cost_usd"] for r in rows.values()) + main["cost_usd"] == pytest.approx(ledger["totals"]["cost_usd"])
    table = cli("inspect", str(s), "--agents")
    assert table.returncode == 0 and b"aaa" in table.stdout


def test_inspect_and_prune_of_a_subagent_see_its_view_only(tmp_path: Path) -> None:
    s = two_subagents(tmp_path)
    rep = orjson.loads(cli("inspect", str(s), "--agent", "aaa", "--json").stdout)
    assert rep["turns"] == 1 and rep["items"] == 4 and rep["problems"]["dangling"] == 0
    assert rep["tokens"] == 6_200  # its own last usage's context
    assert rep["source"]["parent_session_id"] == "s-main" and rep["source"]["model"] == "claude-haiku-4-5"
    pruned = jsonl(cli("prune", str(s), "--agent", "aaa").stdout)
    assert [i["role"] for i in pruned] == ["user", "assistant", "tool", "assistant"]
    page = cli("report", str(s), "--agent", "bbb", "-o", str(tmp_path / "b.html"))
    assert page.returncode == 0, page.stderr
    html = (tmp_path / "b.html").read_text()
    assert "look for B" in html and "research two things" not in html


def test_an_unknown_agent_is_a_usage_error_naming_the_known_ones(tmp_path: Path) -> None:
    s = two_subagents(tmp_path)
    r = cli("resume", str(s), "--agent", "zzz")
    assert r.returncode == 2 and b"aaa, bbb" in r.stderr and len(r.stderr.splitlines()) == 1


def test_a_subagents_view_is_read_only(tmp_path: Path) -> None:
    from catty_ctx.errors import DataError
    from catty_ctx.session.store import Session
    from catty_ctx.subagents import subagent_session

    s = two_subagents(tmp_path)
    before = (s / "updates.jsonl").read_bytes()
    with subagent_session(Session.open(s), "aaa") as sub, pytest.raises(DataError, match="fork"):
        sub.append([msg("user", "x")])
    assert (s / "updates.jsonl").read_bytes() == before


def test_fork_agent_makes_the_subagent_a_session_with_its_parent(tmp_path: Path) -> None:
    s = two_subagents(tmp_path)
    r = cli("fork", str(s), str(tmp_path / "child"), "--agent", "aaa", "--json")
    assert r.returncode == 0, r.stderr
    doc = orjson.loads(r.stdout)
    assert doc["parent_session_id"] == "s-main" and doc["forked_from_seq"] == 10  # the parent's seq of its last event
    child = tmp_path / "child"
    first = jsonl((child / "updates.jsonl").read_bytes())[0]
    assert first["parent_session_id"] == "s-main" and first["model"] == "claude-haiku-4-5"
    summary = orjson.loads((child / "summary.json").read_bytes())
    assert summary["parent_session_id"] == "s-main" and summary["parent_agent"] == "aaa" and summary["title"] == "look for A"
    assert not any("agent" in e for e in jsonl((child / "updates.jsonl").read_bytes()))
    # A session of its own: the main loop's view of the child is the subagent's conversation, and it takes appends.
    items = jsonl(cli("resume", str(child)).stdout)
    assert [i["role"] for i in items] == ["user", "assistant", "tool", "assistant"]
    assert cli("append", str(child), "-q", input=orjson.dumps(msg("user", "go on")) + b"\n").returncode == 0
    assert cli("repair", str(child), "--check").returncode == 0


def test_native_claude_subagent_files_are_subagents_too() -> None:
    main = CLAUDE / "sess-0001.jsonl"
    r = cli("inspect", str(main), "--agents", "--json")
    assert r.returncode == 0, r.stderr
    rows = orjson.loads(r.stdout)["agents"]
    assert [a["agent"] for a in rows] == ["explore1"]
    ledger = orjson.loads(cli("usage", str(CLAUDE), "--by", "agent", "--json", "--no-cache").stdout)
    u = next(row for row in ledger["rows"] if row["agent"] == "explore1")
    assert rows[0]["tokens"] == u["input"] + u["output"] + u["cache_read"] + u["cache_write"] and rows[0]["cost_usd"] == u["cost_usd"]
    doc = orjson.loads(cli("resume", str(main), "--agent", "explore1", "--format", "openai").stdout)
    assert doc["messages"][0] == {"role": "user", "content": "List the docs pages that mention coupons."}


def test_compact_check_of_a_subagent_measures_its_view(tmp_path: Path) -> None:
    s = two_subagents(tmp_path)
    r = cli("compact", str(s), "--agent", "aaa", "--check", "--json", "--threshold", "1")
    assert r.returncode == 1 and orjson.loads(r.stdout)["tokens_before"] == 6_200  # its own context, over 1 % of 200,000
    assert cli("compact", str(s), "--agent", "bbb", "--check", "--json").returncode == 0
    assert cli("compact", str(tmp_path), "--agent", "aaa", "--force").returncode == 2  # one session, not a ROOT


def test_compact_agent_compacts_the_subagents_view_in_its_parents_log(tmp_path: Path) -> None:
    s = two_subagents(tmp_path)
    main_before = orjson.loads(cli("inspect", str(s), "--json").stdout)["fp"]
    r = cli("compact", str(s), "--agent", "aaa", "--force", "--json")
    assert r.returncode == 0, r.stderr
    doc = orjson.loads(r.stdout)
    assert doc["status"] == "compacted" and doc["session_id"] == "s-main" and doc["through_seq"] == 10  # the parent's seq of its last event
    log = jsonl((s / "updates.jsonl").read_bytes())
    comp = log[-1]
    assert comp["kind"] == "compaction" and comp["agent"] == "aaa" and comp["through_seq"] == 10 and comp["seq"] == 19
    assert (s / comp["artifact"]).is_file()
    items = jsonl(cli("resume", str(s), "--agent", "aaa").stdout)
    assert any(i.get("synthetic") == "compaction_summary" and "look for A" in i["text"] for i in items)
    assert not any(i.get("role") == "tool" for i in items)  # its calls are folded into the summary
    assert orjson.loads(cli("inspect", str(s), "--json").stdout)["fp"] == main_before  # the main loop's view is untouched
    assert orjson.loads(cli("inspect", str(s), "--agent", "aaa", "--json").stdout)["compactions"][0]["id"] == comp["id"]


def test_segment_list_of_a_subagent_lists_its_own_compactions(tmp_path: Path) -> None:
    s = two_subagents(tmp_path)
    with (s / "updates.jsonl").open("ab") as f:
        f.write(orjson.dumps({"v": 1, "seq": 19, "ts": "2026-11-01T00:01:00Z", "kind": "compaction", "agent": "aaa", "id": "ka", "mode": "summary",
                              "through_seq": 9, "summary": "A was searched and found"}) + b"\n")
    rows = jsonl(cli("segment", "list", str(s), "--agent", "aaa").stdout)
    assert len(rows) == 1 and rows[0]["seq_to"] == 5  # the subagent's own numbering
    hits = jsonl(cli("segment", "grep", str(s), "A found in x.py", "--agent", "aaa").stdout)
    assert hits and all(h["segment"] == 0 for h in hits)
    items = jsonl(cli("resume", str(s), "--agent", "aaa").stdout)
    assert any(i.get("synthetic") == "compaction_summary" for i in items)  # its compaction, in its view


def test_codex_subagent_threads_are_the_sessions_subagents(tmp_path: Path) -> None:
    """A Codex subagent is a rollout of its own naming its spawner: the parent's --agents lists it
    (by its rollout's turns and usage), --agent ID (or its nickname) reads its conversation."""
    fixture = ROOT / "fixtures/import/codex/wild/subagent-inherited-prefix/rollout-2026-09-17T11-10-00-0199a004-0000-7000-8000-00000000c004.jsonl"
    day = tmp_path / "sessions" / "2026" / "09" / "17"
    day.mkdir(parents=True)
    child = day / fixture.name
    child.write_bytes(fixture.read_bytes())
    lines = fixture.read_bytes().splitlines(keepends=True)
    parent = day / "rollout-2026-09-17T11-00-00-0199a004-0000-7000-8000-0000000aa004.jsonl"
    parent.write_bytes(b"".join(lines[1:9]))  # the parent's own lines, up to its spawn_agent call
    r = cli("inspect", str(parent), "--agents", "--json")
    assert r.returncode == 0, r.stderr
    rows = orjson.loads(r.stdout)["agents"]
    assert [(a["agent"], a["type"], a["description"], a["parent_call"]) for a in rows] == [
        ("0199a004-0000-7000-8000-00000000c004", "explorer", "Noether", "call_spawn1")]
    ledger = orjson.loads(cli("usage", str(child), "--json", "--no-cache").stdout)["totals"]
    assert rows[0]["tokens"] == ledger["input"] + ledger["output"] + ledger["cache_read"] + ledger["cache_write"] > 0
    assert rows[0]["model"] == "gpt-5-codex-mini"
    for name in ("Noether", "0199a004-0000-7000-8000-00000000c004"):
        doc = orjson.loads(cli("resume", str(parent), "--agent", name, "--format", "openai").stdout)
        assert {"role": "user", "content": "Read ci/last.log and report the failing seed."} in doc["messages"]
        assert doc["messages"][-1]["content"] == "The failing seed is 4242 (ci/last.log line 41)."

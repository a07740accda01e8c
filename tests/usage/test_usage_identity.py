"""One call, one count, whatever copies of it are read; each price from what the record says (docs/usage.md).

Built from the shapes the agents write: the recorded sessions of fixtures/agents (Claude Code
2.1.332, Codex 0.171.0), the older Claude Code layout with progress records of
fixtures/import/claude/wild, and the usage objects of the providers' own responses.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support import cli

from catty_ctx.formats.calls import codex_running
from catty_ctx.proxy.families import usage_fields
from catty_ctx.session.create import create_session
from catty_ctx.session.store import Session
from catty_ctx.usage import pipeline as U
from catty_ctx.usage.prices import load_prices

ROOT = Path(__file__).resolve().parents[2]
CLAUDE_HOME = ROOT / "fixtures/agents/claude-2.1.332/tools-resume-compactions"
CLAUDE_FILE = next((CLAUDE_HOME / "projects/-home-user-project").glob("*.jsonl"))
CODEX_HOME = ROOT / "fixtures/agents/codex-0.171.0/tools-resume-compactions"
CODEX_FILE = next((CODEX_HOME / "sessions").rglob("rollout-*.jsonl"))
OPENCODE_STORAGE = ROOT / "fixtures/import/opencode/storage"  # steps of a message, and messages without steps


def ledger(*paths: Path) -> U.Ledger:
    led, _scan = U.usage([str(p) for p in paths], timezone_name="UTC", use_cache=False)
    return led


def totals(led: U.Ledger) -> tuple[int, ...]:
    t = led.totals
    return t["calls"], t["input"], t["output"], t["cache_read"], t["cache_write"]


def imported(source: Path, out: Path, fmt: str = "auto") -> Path:
    run = cli("import", fmt, str(source), "--out", str(out))
    assert run.returncode == 0, run.stderr
    return out


# -- one identity across copies ------------------------------------------------------------------


@pytest.mark.parametrize("source", [CLAUDE_FILE, CODEX_FILE, OPENCODE_STORAGE], ids=["claude", "codex", "opencode"])
def test_an_import_beside_its_source_counts_each_call_once(tmp_path: Path, source: Path) -> None:
    alone = ledger(source)
    assert alone.totals["calls"] > 0
    copy = imported(source, tmp_path / "imported")
    assert totals(ledger(copy)) == totals(alone)  # the import holds the same calls
    both = ledger(source, copy)
    assert totals(both) == totals(alone)
    assert both.duplicates == alone.duplicates + alone.totals["calls"]  # (every call of the copy; an opencode message its steps stand for)


def test_a_mirrored_home_counts_each_call_once(tmp_path: Path) -> None:
    """The hooks' mirror (docs/agents.md) is an import of each transcript into a ROOT of the home."""
    home = tmp_path / "home"
    shutil.copytree(CLAUDE_HOME / "projects", home / ".claude/projects")
    (home / ".claude/settings.json").write_text("{}")
    shutil.copytree(CODEX_HOME / "sessions", home / ".codex/sessions")
    (home / ".codex/config.toml").write_text("")
    homes_alone = totals(ledger(home))
    for i, source in enumerate((CLAUDE_FILE, CODEX_FILE)):
        imported(source, home / ".catty-ctx/sessions" / f"mirror-{i}")
    assert totals(ledger(home)) == homes_alone


def _proxy_session(folder: Path, rollout: Path, skip: int = 0) -> int:
    """A catty session holding the rollout's calls as the proxy records them: each named by the
    session's running totals summed from the calls it holds, the first SKIP calls not seen."""
    lines = [json.loads(line) for line in rollout.read_text().splitlines()]
    sid = next(d["payload"]["id"] for d in lines if d["type"] == "session_meta")
    counts = [d["payload"]["info"] for d in lines if d["type"] == "event_msg" and d["payload"].get("type") == "token_count"
              and d["payload"].get("info")]
    calls = [c["last_token_usage"] for i, c in enumerate(counts) if i == 0 or c["total_token_usage"] != counts[i - 1]["total_token_usage"]]
    create_session(folder, session_id=sid)
    running = [0, 0, 0, 0]
    events = []
    for u in calls[skip:]:
        running = [a + b for a, b in zip(running, (u["input_tokens"], u["cached_input_tokens"], u["output_tokens"], u["reasoning_output_tokens"]))]
        events.append({"kind": "usage", "model": "gpt-5.5", "input": u["input_tokens"] - u["cached_input_tokens"], "output": u["output_tokens"],
                       "cache_read": u["cached_input_tokens"], "cache_write": 0, "reasoning": u["reasoning_output_tokens"],
                       "request_id": codex_running(sid, running)})
    Session.open(folder).append(events)
    return len(calls)


def test_a_codex_proxy_session_beside_its_rollout_or_its_import_counts_each_call_once(tmp_path: Path) -> None:
    """The proxy names a Codex call by the session's running totals, which the rollout records too."""
    alone = ledger(CODEX_FILE)
    assert _proxy_session(tmp_path / "proxy", CODEX_FILE) == alone.totals["calls"] > 1
    copy = imported(CODEX_FILE, tmp_path / "imported")  # (named by time and totals, as the rollout)
    for paths in ((CODEX_FILE, tmp_path / "proxy"), (tmp_path / "proxy", CODEX_FILE), (copy, tmp_path / "proxy"),
                  (tmp_path / "proxy", copy, CODEX_FILE)):
        both = ledger(*paths)
        assert (both.totals["calls"], both.totals["input"] + both.totals["cache_read"], both.totals["output"]) == \
            (alone.totals["calls"], alone.totals["input"] + alone.totals["cache_read"], alone.totals["output"]), paths
        assert both.duplicates == alone.duplicates + (len(paths) - 1) * alone.totals["calls"], paths
    # A proxy that missed the first call sums short: its names meet none of the rollout's.
    _proxy_session(tmp_path / "late", CODEX_FILE, skip=1)
    assert ledger(CODEX_FILE, tmp_path / "late").totals["calls"] == 2 * alone.totals["calls"] - 1


def _claude_line(**over: Any) -> dict[str, Any]:
    rec = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/home/dev/p", "sessionId": "s-1",
           "version": "2.1.332", "type": "assistant", "uuid": "u-1", "timestamp": "2026-11-02T10:00:00.000Z",
           "requestId": "req_011CA1", "message": {"model": "claude-sonnet-4-5", "id": "msg_01A", "type": "message", "role": "assistant",
                                                   "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                                                   "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 0,
                                                             "cache_creation_input_tokens": 0}}}
    rec.update(over)
    return rec


def test_a_write_backs_zero_usage_is_no_call(tmp_path: Path) -> None:
    """`fork --to claude` writes assistant records with usage zero and no request id (docs/writeback.md)."""
    source = tmp_path / "src"
    imported(CLAUDE_FILE, source)
    dest = tmp_path / "dest"
    dest.mkdir()
    run = cli("fork", str(source), str(dest), "--to", "claude")
    assert run.returncode == 0, run.stderr
    written = next(dest.rglob("*.jsonl"))
    assert b'"output_tokens":0' in written.read_bytes().replace(b" ", b"")
    led, scan = U.usage([str(written)], timezone_name="UTC", use_cache=False, allow_empty=True)
    assert led.totals["calls"] == 0
    # and so for inspect: no provider usage of zero tokens
    shown = cli("inspect", str(written), "--json")
    assert shown.returncode == 0, shown.stderr
    assert "provider usage" not in json.dumps(json.loads(shown.stdout)).replace("no provider usage", "")


def test_subagent_finals_win_over_progress_snapshots(tmp_path: Path) -> None:
    """Older Claude Code logged a subagent's responses in the parent as `progress` records, written while
    streaming (output 3); the subagent's own file holds the final record (output 406)."""
    wild = ROOT / "fixtures/import/claude/wild/old-subagents/wild-old-0010.jsonl"
    lines = [json.loads(line) for line in wild.read_text().splitlines()]
    progress = next(rec for rec in lines if rec.get("type") == "progress")
    inner = progress["data"]["message"]
    inner["message"]["usage"] = {"input_tokens": 9, "output_tokens": 3, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    project = tmp_path / "projects/-home-dev-wild"
    project.mkdir(parents=True)
    (project / wild.name).write_text("".join(json.dumps(rec) + "\n" for rec in lines))
    final = dict(inner, isSidechain=True, sessionId="wild-old-0010", agentId=progress["data"]["agentId"],
                 message=dict(inner["message"], usage={"input_tokens": 9, "output_tokens": 406, "cache_read_input_tokens": 0,
                                                       "cache_creation_input_tokens": 0}))
    sub = project / "wild-old-0010/subagents"
    sub.mkdir(parents=True)
    (sub / f"agent-{progress['data']['agentId']}.jsonl").write_text(json.dumps(final) + "\n")
    led, _scan = U.usage([str(tmp_path)], by="agent", timezone_name="UTC", use_cache=False)
    rows = {r["agent"]: r for r in led.rows}
    assert rows[progress["data"]["agentId"]]["output"] == 406
    assert rows[progress["data"]["agentId"]]["calls"] == 1
    assert "main" in rows and rows["main"]["calls"] == 2


# -- prices from what the record says -----------------------------------------------------------


def test_one_hour_cache_writes_price_at_twice_the_input_rate(tmp_path: Path) -> None:
    """Claude Code 2.x records `cache_creation.ephemeral_1h_input_tokens` (its default TTL for the main loop)."""
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 10_000, "cache_read_input_tokens": 0, "output_tokens": 0,
             "cache_creation": {"ephemeral_5m_input_tokens": 4_000, "ephemeral_1h_input_tokens": 6_000}}
    rec = _claude_line(message=dict(_claude_line()["message"], usage=usage))
    log = tmp_path / "s-1.jsonl"
    log.write_text(json.dumps(rec) + "\n")
    row = ledger(log).rows[0]
    assert row["cache_write"] == 10_000
    # claude-sonnet-4-5: input $3/M, 5-minute writes 1.25x ($3.75/M), one-hour writes 2x ($6/M)
    assert row["cost_usd"] == pytest.approx(3 * 3e-6 + 4_000 * 3.75e-6 + 6_000 * 6e-6, rel=1e-9)
    # an import keeps the split on its usage event (`cache_write_1h`), so its ledger prices the same;
    # so does a proxy session recording the same response
    copy = imported(log, tmp_path / "imported", "claude")
    assert b'"cache_write":10000,' in (copy / "updates.jsonl").read_bytes()
    assert b'"cache_write_1h":6000' in (copy / "updates.jsonl").read_bytes()
    assert ledger(copy).rows[0]["cost_usd"] == pytest.approx(row["cost_usd"], rel=1e-9)
    assert totals(ledger(log, copy)) == totals(ledger(log))
    assert usage_fields(usage, openai=False) == {"input": 3, "output": 0, "cache_read": 0, "cache_write": 10_000, "cache_write_1h": 6_000,
                                                 "reasoning": 0}
    # a user's table names the one-hour rate as LiteLLM does
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"claude-sonnet-4-5": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6,
                                                       "cache_creation_input_token_cost": 2e-6,
                                                       "cache_creation_input_token_cost_above_1hr": 5e-6}}))
    led, _ = U.usage([str(log)], timezone_name="UTC", use_cache=False, prices_file=str(table))
    assert led.rows[0]["cost_usd"] == pytest.approx(3e-6 + 4_000 * 2e-6 + 6_000 * 5e-6, rel=1e-9)


def test_codex_cache_writes_are_priced_where_the_model_bills_them(tmp_path: Path) -> None:
    """Codex 0.171.0 records `cache_write_input_tokens`, part of `input_tokens`; GPT-5.6 bills them at 1.25x input."""
    lines = [json.loads(line) for line in CODEX_FILE.read_text().splitlines()]
    for rec in lines:
        p = rec.get("payload") or {}
        if rec.get("type") == "turn_context":
            p["model"] = "gpt-5.6"
        info = p.get("info") if p.get("type") == "token_count" else None
        for part in ("total_token_usage", "last_token_usage") if info else ():
            info[part]["cache_write_input_tokens"] = info[part]["input_tokens"] // 2
    log = tmp_path / CODEX_FILE.name
    log.write_text("".join(json.dumps(rec) + "\n" for rec in lines))
    led = ledger(log)
    row = led.rows[0]
    calls: dict[str, Any] = {}
    for rec in lines:
        info = (rec.get("payload") or {}).get("info") if (rec.get("payload") or {}).get("type") == "token_count" else None
        if info:  # (a repeat of the totals is no call)
            calls.setdefault(json.dumps(info["total_token_usage"]), info["last_token_usage"])
    assert len(calls) == row["calls"]
    written = sum(c["cache_write_input_tokens"] for c in calls.values())
    assert row["cache_write"] == written > 0
    rates = load_prices().rates("gpt-5.6", int(led_day(log)), False)
    assert rates is not None and rates[2] == pytest.approx(1.25 * rates[0])
    expected = row["input"] * rates[0] + row["output"] * rates[1] + written * rates[2] + row["cache_read"] * rates[3]
    assert row["cost_usd"] == pytest.approx(expected, rel=1e-6)
    # the import counts and prices the same
    assert totals(ledger(imported(log, tmp_path / "imp"))) == totals(led)


def led_day(log: Path) -> float:
    from catty_ctx.usage.times import epoch

    first = json.loads(log.read_text().splitlines()[0])
    return (epoch(first["timestamp"]) or 0) // 86_400


# -- readers agree --------------------------------------------------------------------------------

WILD = sorted([*ROOT.glob("fixtures/import/claude/wild/*/*.jsonl"), *ROOT.glob("fixtures/import/codex/wild/*/rollout-*.jsonl"),
               CLAUDE_FILE, CODEX_FILE])


@pytest.mark.parametrize("source", WILD, ids=lambda p: p.parent.name)
def test_usage_of_a_file_and_of_its_import_count_the_same_calls(tmp_path: Path, source: Path) -> None:
    """Over every real file here; a file holding records of several sessions is the sum of each one's import."""
    sessions: set[Any] = set()
    for line in source.read_text().splitlines() if "claude" in str(source) else ():
        try:
            sessions.add(json.loads(line).get("sessionId"))
        except (ValueError, AttributeError):
            continue  # (a cut line)
    others = sorted(s for s in sessions if isinstance(s, str) and s != source.stem)
    copies = [imported(source, tmp_path / "main")]
    for i, sid in enumerate(others):
        run = cli("import", "auto", str(source), "--session", sid, "--out", str(tmp_path / f"other-{i}"))
        if run.returncode == 0:
            copies.append(tmp_path / f"other-{i}")
    led, _ = U.usage([str(source)], timezone_name="UTC", use_cache=False, allow_empty=True)
    of_imports, _ = U.usage([str(c) for c in copies], timezone_name="UTC", use_cache=False, allow_empty=True)
    assert totals(of_imports) == totals(led)


def test_report_of_an_import_names_the_agent_it_came_from(tmp_path: Path) -> None:
    copy = imported(CLAUDE_FILE, tmp_path / "imported")
    page = cli("report", str(copy))
    assert page.returncode == 0, page.stderr
    assert "<dt>source agent</dt><dd>claude</dd>" in page.stdout.decode()


@pytest.mark.parametrize("command", ["inspect", "resume", "prune", "export"])
def test_a_native_transcript_on_stdin_gets_a_hint_naming_import(command: str) -> None:
    run = cli(command, "-", input=CLAUDE_FILE.read_bytes())
    assert run.returncode == 65
    assert run.stderr.decode().splitlines() == [
        "catty-ctx: error: <stdin>: Claude Code transcript, not catty-ctx events; name the file instead of -, "
        "or pipe its import: catty-ctx import claude FILE | catty-ctx ... -"]


def test_a_gemini_chat_cut_short_is_a_bad_line_not_an_empty_ledger(tmp_path: Path) -> None:
    """An older Gemini CLI chat (one indented JSON document) cut mid-write, under any name: `--strict` refuses it,
    and without it the cut is named on stderr (not an empty ledger and silence)."""
    chat = next((ROOT / "fixtures/import/gemini/legacy").glob("session-*.json"))
    cut = tmp_path / "trunc.json"
    cut.write_bytes(chat.read_bytes()[:300])
    strict = cli("usage", str(cut), "--strict", "--no-cache")
    assert strict.returncode == 65 and strict.stdout == b""
    assert strict.stderr.decode().startswith(f"catty-ctx: error: {cut}:1: not valid JSON")
    lenient = cli("usage", str(cut), "--no-cache", "--json")
    assert lenient.returncode == 0 and f"{cut}:1: not valid JSON" in lenient.stderr.decode()
    assert json.loads(lenient.stdout)["bad_lines"] == 1

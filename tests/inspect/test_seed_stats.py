"""`inspect ROOT --stats`: the distributions the constants are calibrated on."""
from __future__ import annotations

from pathlib import Path

import orjson

from support import call, cli, jsonl, msg, result, session_event, write_log


def _comp(cid: str, through: int, before: int, ts: str) -> dict:
    return {"kind": "compaction", "id": cid, "mode": "summary", "through_seq": through, "summary": "s", "tokens_before": before, "ts": ts}


def test_inspect_root_stats_gives_each_distribution_and_the_share_over_its_constant(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write_log(root / "a", [session_event(window=100_000), msg("user", "u" * 100), msg("assistant", "ok"), call("c1", "Read"), result("c1", "x" * 1_000),
                           call("c2", "Bash"), result("c2", "y" * 30_000), msg("user", "again"), msg("assistant", "ok"), call("c3", "Read"),
                           result("c3", "z" * 50_000),
                           _comp("k1", 10, 80_000, "2026-11-01T00:00:00Z"), msg("user", "more"), _comp("k2", 12, 90_000, "2026-11-01T00:01:30Z")])
    write_log(root / "deep" / "b", [session_event(), msg("user", "hello"), msg("assistant", "hi"), call("d1", "grep"), result("d1", "w" * 10)])
    r = cli("inspect", str(root), "--stats", "--json")
    assert r.returncode == 0, r.stderr
    doc = orjson.loads(r.stdout)
    assert doc["sessions"] == 2
    d = doc["distributions"]
    tools = d["tool_output_bytes"]
    assert (tools["count"], tools["min"], tools["max"], tools["p50"]) == (3, 10, 50_000, 1_000)
    assert tools["constant"] == "tool_limit" and tools["value"] == 40_000 and tools["over"] == round(1 / 3, 4)
    shell = d["terminal_output_chars"]
    assert (shell["count"], shell["max"], shell["over"], shell["value"]) == (1, 30_000, 1.0, 20_000)
    assert d["turn_tool_calls"]["count"] == 4 and d["turn_tool_calls"]["max"] == 2  # a, a, a, b's turns
    assert d["compaction_context_percent"]["max"] == 90.0 and d["compaction_context_percent"]["over"] == 0.5  # 85 % today
    assert d["compaction_context_tokens"]["min"] == 80_000
    assert d["seconds_between_compactions"] == {**d["seconds_between_compactions"], "count": 1, "min": 90.0}
    # A table on a terminal, rows in a pipe.
    rows = jsonl(cli("inspect", str(root), "--stats").stdout)
    assert [row["metric"] for row in rows][:2] == ["tool_output_bytes", "terminal_output_chars"]


def test_stats_give_the_estimators_error_against_provider_usage_per_model(tmp_path: Path) -> None:
    """Each main-loop usage on the live view: the estimate of the request it measured over the
    prompt its provider reported, per model (median and p90), so bytes_per_token can be set."""
    events: list[dict] = [session_event(window=200_000), msg("system", "s" * 396)]
    for i, (model, factor) in enumerate([("gpt-a", 1.0), ("gpt-a", 2.0), ("gpt-a", 1.0), ("claude-b", 0.5)]):
        events.append(msg("user", "u" * 3_996, f"u{i}"))
        events.append({"kind": "usage", "model": model, "input": 0, "output": 5, "cache_read": 0, "cache_write": 0, "factor": factor})
        events.append(msg("assistant", "ok", f"a{i}"))
    s = write_log(tmp_path / "s", events)
    # The provider's prompt at each usage: the estimate of the items before it, scaled by FACTOR.
    log = jsonl((s / "updates.jsonl").read_bytes())
    items = orjson.loads(cli("inspect", str(s), "--items", "--json", check=True).stdout)["items"]
    tokens = {it["item"]["seq"]: it["tokens"] for it in items}
    for ev in log:
        if ev["kind"] == "usage":
            before = sum(t for seq, t in tokens.items() if seq < ev["seq"])
            ev["input"] = int(before * ev.pop("factor"))
    (s / "updates.jsonl").write_bytes(b"".join(orjson.dumps(ev) + b"\n" for ev in log))
    doc = orjson.loads(cli("inspect", str(s), "--stats", "--json", check=True).stdout)
    est = doc["estimator"]
    assert set(est) == {"gpt-a", "claude-b"}
    assert (est["gpt-a"]["count"], est["gpt-a"]["min"], est["gpt-a"]["p50"], est["gpt-a"]["p90"]) == (3, 0.5, 1.0, 1.0)  # twice the prompt once
    assert est["claude-b"]["count"] == 1 and abs(est["claude-b"]["p50"] - 2.0) < 0.01  # half the prompt: twice the estimate
    rows = jsonl(cli("inspect", str(s), "--stats").stdout)
    assert [r["metric"] for r in rows if r["metric"].startswith("estimate_ratio:")] == ["estimate_ratio:claude-b", "estimate_ratio:gpt-a"]

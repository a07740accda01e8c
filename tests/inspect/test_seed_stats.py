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

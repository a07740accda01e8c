"""`usage --by block`: 5-hour windows from each window's first call (ccusage's rule), their
tokens, cost, burn rate, and the running block's projection; equal to ccusage's `blocks`."""
from __future__ import annotations

import os
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest
from support import cli, write_log
from support.usage_trees import claude_tree

from catty_ctx.usage import pipeline as U
from catty_ctx.usage.blocks import BLOCK_SECONDS, block_keys, current, describe, iso
from catty_ctx.usage.records import Record

T0 = datetime(2026, 3, 2, 9, 47, 12, tzinfo=timezone.utc).timestamp()


def _call(ts: float, n: int = 100) -> Record:
    return Record(ts, "claude-sonnet-4-20250514", n, n, 0, 0, 0, None, None, False, "main", "s", "p", False, None, None)


def test_a_block_starts_at_its_first_call_floored_to_the_hour_and_a_new_one_after_5_hours() -> None:
    offsets = [0, 3600, 4 * 3600, 4 * 3600 + 720,  # 09:47 to 13:59:12: within 5 h of 09:00 (the floor of 09:47)
               4 * 3600 + 800,                      # 14:00:32: more than 5 h after 09:00 → a block at 14:00
               4 * 3600 + 800 + BLOCK_SECONDS + 1]  # more than 5 h after the call before → a block after the gap
    calls = [_call(T0 + o) for o in reversed(offsets)]  # the order of the calls does not matter
    keys, spans = block_keys(calls)
    hour = T0 - T0 % 3600
    assert list(reversed(keys)) == [iso(hour)] * 4 + [iso(hour + 5 * 3600)] + [iso((T0 + offsets[-1]) // 3600 * 3600)]
    assert spans[iso(hour)] == [hour, T0, T0 + 4 * 3600 + 720]


def test_burn_rate_and_the_running_blocks_projection() -> None:
    start = T0 - T0 % 3600
    keys, spans = block_keys([_call(T0), _call(T0 + 1800)])
    (key,) = set(keys)
    row = {"block": key, "input": 200, "output": 200, "cache_read": 0, "cache_write": 0, "reasoning": 0, "calls": 2,
           "cost_usd": 1.5, "partial": False}
    (done,) = describe([row], spans, now=start + BLOCK_SECONDS + 1)
    assert done["active"] is False and done["projection"] is None
    assert (done["tokens"], done["tokens_per_hour"], done["cost_per_hour"]) == (400, 800.0, 3.0)
    assert (done["end"], done["first"], done["last"]) == (iso(start + BLOCK_SECONDS), iso(T0), iso(T0 + 1800))
    now = T0 + 3600
    (running,) = describe([row], spans, now=now)
    left = (start + BLOCK_SECONDS - now) / 3600
    assert running["active"] and running["projection"] == {"tokens": round(400 + 800 * left), "cost_usd": round(1.5 + 3 * left, 6),
                                                            "minutes_left": round(left * 60, 1)}
    assert current([done]) is None and current([running]) == running
    (single,) = describe([{**row, "calls": 1}], {key: [start, T0, T0]}, now=now)  # one call: no span, no rate
    assert single["tokens_per_hour"] is None and single["projection"] is None


def test_blocks_from_the_command_line_as_json_and_as_a_table(tmp_path: Path) -> None:
    calls = [{"kind": "usage", "ts": datetime.fromtimestamp(T0 + o, timezone.utc).isoformat(), "model": "claude-sonnet-4-20250514",
              "input": 1000, "output": 500, "cache_read": 0, "cache_write": 0, "reasoning": 0} for o in (0, 600, 8 * 3600)]
    write_log(tmp_path / "s" / "updates.jsonl", [{"kind": "session", "session_id": "s1"}, *calls])
    proc = cli("usage", str(tmp_path / "s"), "--by", "block", "--json", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    doc = orjson.loads(proc.stdout)
    assert doc["by"] == "block" and [r["calls"] for r in doc["rows"]] == [2, 1]
    first = doc["rows"][0]
    assert set(first) >= {"block", "end", "first", "last", "active", "tokens", "tokens_per_hour", "cost_per_hour", "projection", "cost_usd"}
    assert first["tokens"] == 3000 and first["tokens_per_hour"] == 18000.0
    table = cli("usage", str(tmp_path / "s"), "--by", "block")
    assert table.returncode == 0 and b'"block"' in table.stdout  # a pipe: JSON Lines, one row each


def _ccusage() -> str | None:
    return os.environ.get("CATTY_CTX_CCUSAGE") or shutil.which("ccusage")


@pytest.mark.skipif(_ccusage() is None, reason="ccusage is not installed (npm install ccusage@20.0.24, or set CATTY_CTX_CCUSAGE)")
def test_blocks_equal_ccusages_on_a_tree_of_several_days(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    start = datetime(2026, 1, 30, 17, 0, tzinfo=timezone.utc)
    claude_tree(root, seed=11, projects=2, sessions=4, turns=20, start=start)
    # a second stretch of work after an idle day and a half: a gap, and blocks floored anew
    claude_tree(root, seed=12, projects=1, sessions=3, turns=12, start=start + timedelta(days=4, minutes=23))
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(root), HOME=str(tmp_path), TZ="UTC")
    proc = subprocess.run([str(_ccusage()), "blocks", "--json", "--offline"], capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    theirs = [b for b in orjson.loads(proc.stdout)["blocks"] if not b["isGap"]]
    led, _scan = U.usage([str(root)], by="block")
    ours = led.rows
    assert len(theirs) >= 14 and ours[-1]["last"][:10] > ours[0]["block"][:10]  # several days
    assert [(r["block"], r["end"], r["last"]) for r in ours] == [(b["startTime"], b["endTime"], b["actualEndTime"]) for b in theirs]
    assert [(r["input"], r["output"], r["cache_read"], r["cache_write"], r["tokens"]) for r in ours] == [
        (b["tokenCounts"]["inputTokens"], b["tokenCounts"]["outputTokens"], b["tokenCounts"]["cacheReadInputTokens"],
         b["tokenCounts"]["cacheCreationInputTokens"], b["totalTokens"]) for b in theirs]
    assert [r["cost_usd"] for r in ours] == [pytest.approx(b["costUSD"], abs=1e-6) for b in theirs]
    # asked again (the per-file cache warm): the same blocks
    assert U.usage([str(root)], by="block")[0].rows == ours

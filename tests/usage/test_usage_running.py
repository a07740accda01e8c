"""Issue 42, a running subagent: a catty session whose `subagents` facet lists a subagent as
running has not logged all its calls yet, so its bill is incomplete (docs/usage.md#incomplete-and-partial-grok-builds-rules)
— on a full scan, on an answer adjusted after an append, and on a new question asked of the kept calls."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from support import cli, write_log

from catty_ctx.usage import pipeline as U

SONNET = "claude-sonnet-4-20250514"
OPUS = "claude-opus-4-1-20250805"


def _usage(model: str, inp: int, out: int, **kw: Any) -> dict[str, Any]:
    return {"kind": "usage", "model": model, "input": inp, "output": out, "cache_read": 0, "cache_write": 0, "reasoning": 0, **kw}


def _subagents(status: str, agent: str | None = None) -> dict[str, Any]:
    ev: dict[str, Any] = {"kind": "state", "facet": "subagents", "value": [{"id": "bg", "type": "explore", "status": status}]}
    if agent is not None:
        ev["agent"] = agent
    return ev


def _append(log: Path, ev: dict[str, Any]) -> None:
    lines = log.read_bytes().splitlines()
    seq = len(lines)
    log.write_bytes(log.read_bytes() + orjson.dumps({"v": 1, "seq": seq, "ts": f"2026-11-01T00:01:{seq % 60:02d}.000Z", **ev}) + b"\n")


def _two_sessions(root: Path, *facets: dict[str, Any]) -> Path:
    a = write_log(root / "a", [{"kind": "session", "session_id": "sa"}, _usage(SONNET, 100, 10),
                               _usage(SONNET, 5, 1, agent="bg"), *facets])
    write_log(root / "b", [{"kind": "session", "session_id": "sb"}, _usage(OPUS, 100, 10)])
    return a / "updates.jsonl"


def _ledger(root: Path, by: str = "session", **kw: Any) -> U.Ledger:
    return U.usage([str(root)], by=by, timezone_name="UTC", **kw)[0]


def _incomplete(led: U.Ledger) -> bool:
    if led.by != "session":
        return led.incomplete and led.totals["cost_usd"] is None and led.totals["partial"] is True
    sa = next(r for r in led.rows if r["session"] == "sa")
    sb = next(r for r in led.rows if r["session"] == "sb")
    assert sb["cost_usd"] == round(100 * 15e-6 + 10 * 75e-6, 6) and sb["partial"] is False  # the other session's bill stands
    whole = led.incomplete, sa["cost_usd"] is None, sa["partial"], led.totals["cost_usd"] is None, led.totals["partial"]
    assert len(set(whole)) == 1, whole  # (all one way or all the other)
    return whole[0]


@pytest.mark.parametrize("owner", [None, "bg"])  # the main loop's facet, or a subagent's own (a nested subagent)
def test_a_subagent_listed_as_running_marks_its_sessions_bill_incomplete(tmp_path: Path, owner: str | None) -> None:
    _two_sessions(tmp_path / "r", {"kind": "message", "id": "m1", "role": "user", "text": "go"}, _subagents("running", owner))
    assert _incomplete(_ledger(tmp_path / "r", use_cache=False))
    assert _incomplete(_ledger(tmp_path / "r"))  # the same through the caches


def test_the_bill_is_whole_again_when_the_facet_says_the_subagent_ended(tmp_path: Path) -> None:
    log = _two_sessions(tmp_path / "r", _subagents("running"))
    assert _incomplete(_ledger(tmp_path / "r"))
    _append(log, _usage(SONNET, 7, 2, agent="bg"))  # the subagent's last call ...
    assert _incomplete(_ledger(tmp_path / "r"))
    _append(log, _subagents("completed"))  # ... and it is done
    led = _ledger(tmp_path / "r")
    assert not _incomplete(led) and led.totals["calls"] == 4
    assert led == _ledger(tmp_path / "r", use_cache=False)._replace(rendered=led.rendered)


def test_a_subagent_started_after_a_cached_answer_marks_the_bill_incomplete(tmp_path: Path) -> None:
    log = _two_sessions(tmp_path / "r")
    for by in ("session", "model"):
        assert not _incomplete(_ledger(tmp_path / "r", by=by))  # (answers and folds kept: the next run adjusts them)
    _append(log, _subagents("running"))  # no call appended: only the facet says more is coming
    assert _incomplete(_ledger(tmp_path / "r"))
    assert _incomplete(_ledger(tmp_path / "r", by="model"))
    assert _incomplete(_ledger(tmp_path / "r", by="agent"))  # a question not asked before: the kept calls' fold


def test_usage_says_so_on_the_command_line(tmp_path: Path) -> None:
    _two_sessions(tmp_path / "r", _subagents("running"))
    proc = cli("usage", str(tmp_path / "r"), "--json", "--by", "session")
    doc = orjson.loads(proc.stdout)
    assert proc.returncode == 0 and doc["incomplete"] is True and doc["totals"]["cost_usd"] is None
    assert b"incomplete" in proc.stderr

"""The compaction's wall-clock backstop: a summariser that never answers is cut off at
`--deadline`, and the compaction goes on with the extractive summary and the minimal head."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import orjson

from catty_ctx.compact import compact_session
from catty_ctx.compact.artifacts import load_artifact
from catty_ctx.store import Session
from catty_ctx.view import view
from conftest import cli, jsonl
from test_compact import planted


def _silent(folder: Path) -> str:
    """`cmd:` spec of a summariser that reads its prompt and never answers."""
    script = folder / "silent.py"
    script.write_text("import sys, time\nsys.stdin.read()\ntime.sleep(600)\n")
    return f"cmd:{sys.executable} {script}"


def test_a_summariser_that_never_answers_is_cut_at_the_deadline_and_the_minimal_head_used(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    spec = _silent(tmp_path)
    began = time.monotonic()
    res = compact_session(Session.open(s), force=True, summarizer=spec, summarizer_options={"timeout": 120, "backoff": 0.5}, deadline=2.0)
    took = time.monotonic() - began
    assert res.status == "compacted" and took < 10, took  # the call's own 120 s timeout did not hold it
    ev = jsonl((s / "updates.jsonl").read_bytes())[-1]
    assert ev["kind"] == "compaction" and ev["head"] == "minimal" and ev["summarizer"] == "extractive"
    assert ev["deadline"] == {"seconds": 2.0, "summarizer": spec, "stage": "verbatim", "fallback": "extractive"}
    assert len(ev["summary"]) > 0
    items = view(s)
    assert [it["role"] for it in items if it.get("synthetic") == "compaction_summary"] == ["user"]
    doc = load_artifact(s / ev["artifact"])
    outcomes = [a.get("outcome") for a in doc["result"]["attempts"]] if "result" in doc else [a.get("outcome") for a in doc["attempts"]]
    assert "transient" in outcomes  # the late call is kept in the artifact, cut at what was left


def test_without_a_deadline_hit_the_summariser_s_own_summary_and_the_full_head_stay(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    res = compact_session(Session.open(s), force=True, deadline=0.5)  # extractive answers at once
    ev = jsonl((s / "updates.jsonl").read_bytes())[-1]
    assert res.status == "compacted" and "deadline" not in ev and ev.get("head", "full") == "full"


def test_deadline_is_an_option_of_compact(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    proc = cli("compact", str(s), "--force", "--summarizer", _silent(tmp_path), "--deadline", "1.5", "--json")
    assert proc.returncode == 0, proc.stderr
    row = orjson.loads(proc.stdout)
    assert row["status"] == "compacted" and jsonl((s / "updates.jsonl").read_bytes())[-1]["deadline"]["seconds"] == 1.5

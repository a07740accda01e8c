"""`eval --stress` (docs/eval.md#stress): a late tool result, a cancelled turn and a new turn land
while each compaction runs; the view after each commit is checked. The bundled sessions come
out clean, and the check does find what a compaction that wrote no repair would leave."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from catty_ctx.eval.drive import Strategy, drive
from catty_ctx.session.store import Session
from catty_ctx.view.fold import view
from support import FIXTURES, cli


def test_eval_stress_on_the_bundled_sessions_reports_no_violation(tmp_path: Path) -> None:
    doc = orjson.loads(cli("eval", str(FIXTURES / "sessions"), "--stress", "--json", "--mode", "summary", "--mode", "segments",
                           "--out", str(tmp_path / "out"), check=True).stdout)
    for run in doc["runs"]:
        m = run["metrics"]
        assert m["integrity_violations"] == 0 and m["stress_checks"] == 3 * run["sessions"] == 9, run
    copy = next((tmp_path / "out").glob("*/*-demo"))
    log = [orjson.loads(line) for line in (copy / "updates.jsonl").read_bytes().splitlines()]
    reasons = sorted({e["reason"] for e in log if e["kind"] == "repair"})
    assert reasons == ["cancelled", "compaction"]  # the cancelled call answered, the late result dropped
    assert "stress_checks" not in orjson.loads(cli("eval", str(FIXTURES / "sessions" / "demo"), "--json", check=True).stdout)["runs"][0]["metrics"]


def test_the_stress_check_finds_a_compaction_that_leaves_its_late_result_unrepaired(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from catty_ctx.compact import pipeline

    monkeypatch.setattr(pipeline, "new_view_repairs", lambda *a, **k: [])  # the commit as it was before the boundary repair
    d = drive(FIXTURES / "sessions" / "demo", tmp_path / "copy", Strategy(stress=True))
    assert d.stress_checks == 3 and d.violations > 0
    assert any(it.get("role") == "tool" for it in view(Session.open(tmp_path / "copy")))

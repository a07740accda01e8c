"""A native session's window is the one its file records, read directly or imported (issue 41)."""
from __future__ import annotations

import json
from pathlib import Path

from support import FIXTURES, cli

ROLLOUT = next((FIXTURES / "agents/codex-0.171.0/tools-resume-compactions/sessions").rglob("rollout-*.jsonl"))


def test_a_codex_rollout_read_directly_has_the_window_it_records(tmp_path: Path) -> None:
    """Codex 0.171.0 records `model_context_window` in every `token_count`, after its session header."""
    counts = [json.loads(line)["payload"] for line in ROLLOUT.read_text().splitlines() if '"token_count"' in line]
    recorded = {p["info"]["model_context_window"] for p in counts if p.get("type") == "token_count" and p.get("info")}
    assert recorded == {258400}
    direct = cli("inspect", str(ROLLOUT), "--json")
    assert direct.returncode == 0, direct.stderr
    out = tmp_path / "imported"
    assert cli("import", "auto", str(ROLLOUT), "--out", str(out)).returncode == 0
    imported = cli("inspect", str(out), "--json")
    got, again = json.loads(direct.stdout), json.loads(imported.stdout)
    assert got["window"] == again["window"] == 258400
    assert got["percent"] == again["percent"]

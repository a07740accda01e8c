"""Issue 43: `append` of a second, different result for a call the log has answered keeps it
(in quarantine, with a record naming the call), never silently gone; the same result again
(a retry) keeps nothing."""
from __future__ import annotations

import json
from pathlib import Path

from support import call, cli, msg, result, session_event, write_log


def test_a_second_different_result_is_kept_in_quarantine(tmp_path: Path) -> None:
    s = write_log(tmp_path / "s", [session_event(), msg("user", "go"), call("c1", "bash", {"cmd": "make"}), result("c1", "first answer")])
    second = json.dumps(result("c1", "SECOND-ANSWER, not the same")).encode() + b"\n"
    proc = cli("append", str(s), input=second)
    assert proc.returncode == 0 and b"quarantine" in proc.stderr, proc.stderr
    kept = [json.loads(line) for f in (s / "quarantine").glob("second-results-*.jsonl") for line in f.read_text().splitlines()]
    assert [ev["output"] for ev in kept] == ["SECOND-ANSWER, not the same"]
    index = [json.loads(line) for line in (s / "quarantine" / "index.jsonl").read_text().splitlines()]
    assert index[-1]["call_ids"] == ["c1"]
    log = (s / "updates.jsonl").read_text()
    assert "SECOND-ANSWER" not in log and "first answer" in log  # the log keeps its first answer
    again = cli("append", str(s), input=json.dumps(result("c1", "first answer")).encode() + b"\n")  # a retry of the same
    assert again.returncode == 0 and len(list((s / "quarantine").glob("second-results-*.jsonl"))) == 1
    assert cli("inspect", str(s)).returncode == 0  # the quarantine record names no gap: the session reads as before

"""The compaction's wall-clock backstop: a summariser that never answers is cut off at
`--deadline`, and the compaction goes on with the extractive summary and the head a summary
of its own would have had: the running state survives exactly when the summariser hung."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import orjson
from support import cli, jsonl
from test_compact import planted

from catty_ctx.compact.pipeline import compact_session
from catty_ctx.compact.artifacts import load_artifact
from catty_ctx.session.store import Session
from catty_ctx.view.fold import view


def _silent(folder: Path) -> str:
    """`cmd:` spec of a summariser that reads its prompt and never answers."""
    script = folder / "silent.py"
    script.write_text("import sys, time\nsys.stdin.read()\ntime.sleep(600)\n")
    return f"cmd:{sys.executable} {script}"


def test_a_summariser_that_never_answers_is_cut_at_the_deadline_and_the_extractive_summary_used(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    spec = _silent(tmp_path)
    began = time.monotonic()
    res = compact_session(Session.open(s), force=True, summarizer=spec, summarizer_options={"timeout": 120, "backoff": 0.5}, deadline=2.0)
    took = time.monotonic() - began
    assert res.status == "compacted" and took < 2 + 30, took  # the call's own 120 s timeout did not hold it (a loaded machine's margin)
    ev = jsonl((s / "updates.jsonl").read_bytes())[-1]
    assert ev["kind"] == "compaction" and ev.get("head", "full") == "full" and ev["summarizer"] == "extractive"
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


def _script(folder: Path, name: str, body: str) -> str:
    script = folder / name
    script.write_text("import sys\nsys.stdin.read()\n" + body)
    return f"cmd:{sys.executable} {script}"


def test_a_degenerate_summary_is_asked_again_at_once_not_after_waits(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    count = tmp_path / "calls"
    spec = _script(tmp_path, "short.py", f"open({str(count)!r}, 'a').write('x')\nprint('too short')\n")
    began = time.monotonic()
    try:
        compact_session(Session.open(s), force=True, summarizer=spec, summarizer_options={"backoff": 3.0})
    except Exception as exc:  # the summariser never gave a summary: nothing committed
        assert "degenerate summary" in str(exc)
    assert count.read_text() == "xxx" and time.monotonic() - began < 3.0 + 6.0  # 3 attempts, no 3 s + 6 s waits (which alone take 9 s)


def test_a_command_exiting_75_is_retried_after_a_wait_and_any_other_status_is_final(tmp_path: Path) -> None:
    s = planted(tmp_path / "s")
    count = tmp_path / "calls"
    flaky = _script(tmp_path, "flaky.py", f"import os\nn = len(open({str(count)!r}).read()) if os.path.exists({str(count)!r}) else 0\n"
                    f"open({str(count)!r}, 'a').write('x')\nsys.exit(75) if n == 0 else print('<summary>' + 'S' * 600 + '</summary>')\n")
    assert compact_session(Session.open(s), force=True, summarizer=flaky, summarizer_options={"backoff": 0.1}).status == "compacted"
    assert count.read_text() == "xx"
    count.unlink()
    broken = _script(tmp_path, "broken.py", f"open({str(count)!r}, 'a').write('x')\nsys.exit(4)\n")
    try:
        compact_session(Session.open(planted(tmp_path / "t")), force=True, summarizer=broken, summarizer_options={"backoff": 0.1})
    except Exception as exc:
        assert "exited 4" in str(exc)
    assert count.read_text() == "x"  # deterministic: one attempt


def test_the_backstops_head_keeps_the_running_state(tmp_path: Path) -> None:
    from support import msg, session_event, write_log

    state = {
        "jobs": [{"id": "job-7", "command": "npm run dev-server", "status": "running"}],
        "subagents": [{"id": "sa-3", "type": "explorer", "description": "map the parser modules", "status": "running"}],
        "instructions": [{"path": "AGENTS.md", "text": "Never touch vendor/; run make lint before committing."}],
        "memory": ["the staging database is read-only"],
        "plan": "1. split the parser 2. port the tests",
    }
    events = [session_event(window=200_000), msg("system", "sys")]
    events += [{"kind": "state", "facet": k, "value": v} for k, v in state.items()]
    for i in range(4):
        events += [msg("user", f"turn {i} " + "u" * 300, f"u{i}"), msg("assistant", f"step {i} " + "a" * 300, f"a{i}")]
    s = write_log(tmp_path / "s", events)
    res = compact_session(Session.open(s), force=True, summarizer=_silent(tmp_path), summarizer_options={"timeout": 120}, deadline=1.0)
    assert res.status == "compacted"
    ev = jsonl((s / "updates.jsonl").read_bytes())[-1]
    assert "deadline" in ev
    text = "\n".join(str(it.get("text")) for it in view(s))
    for needle in ("job-7", "npm run dev-server", "sa-3", "map the parser modules", "Never touch vendor/", "staging database is read-only",
                   "split the parser"):
        assert needle in text, needle

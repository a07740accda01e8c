"""What compaction costs shows in the ledger (grok-build's weakness #9): every answered call
of a summariser, pass 1 included, is a `usage` event of agent `compaction`."""
from __future__ import annotations

import sys
from pathlib import Path

import orjson

from support import cli, jsonl, msg, session_event, write_log
from support.scripted_server import error, sse

SUMMARY = "<summary>" + "The user wants a green build; vendor/ is off limits. " * 12 + "</summary>"


def _session(path: Path) -> Path:
    events = [session_event(window=200_000), msg("system", "sys")]
    for i in range(12):
        events += [msg("user", f"step {i}: make the build green " * 20, f"u{i}"), msg("assistant", f"done {i} " * 40, f"a{i}")]
    return write_log(path, events)




def _agent_rows(s: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    doc = orjson.loads(cli("usage", str(s), "--by", "agent", "--json", check=True).stdout)
    return {r["agent"]: r for r in doc["rows"]}


def test_compact_records_the_provider_reported_tokens_as_a_compaction_row(tmp_path: Path, endpoint, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    s = _session(tmp_path / "s")
    reported = {"prompt_tokens": 4321, "completion_tokens": 210, "total_tokens": 4531}
    with endpoint([sse(SUMMARY[:40], SUMMARY[40:], usage=reported)]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        cli("compact", str(s), "--force", "--summarizer", "openai:m-sum", "--json", check=True)
    assert srv.requests[0]["stream_options"] == {"include_usage": True}
    spent = [e for e in jsonl((s / "updates.jsonl").read_bytes()) if e["kind"] == "usage"]
    assert [(e["agent"], e["model"], e["input"], e["output"], e.get("estimated")) for e in spent] == [("compaction", "m-sum", 4321, 210, None)]
    assert jsonl((s / "updates.jsonl").read_bytes())[-1]["kind"] == "compaction"  # the commit point stays last
    row = _agent_rows(s)["compaction"]
    assert (row["input"], row["output"], row["calls"]) == (4321, 210, 1)


def test_every_answered_attempt_is_spend_and_a_failed_compaction_still_records_it(tmp_path: Path, endpoint, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    s = _session(tmp_path / "s")
    short = sse("<summary>too short</summary>", usage={"prompt_tokens": 100, "completion_tokens": 5})
    with endpoint([short, error(500, "down"), short, short]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        proc = cli("compact", str(s), "--force", "--summarizer", "openai:m-sum")
    assert proc.returncode == 75
    events = jsonl((s / "updates.jsonl").read_bytes())
    assert not any(e["kind"] == "compaction" for e in events)
    assert [(e["input"], e["output"]) for e in events if e["kind"] == "usage"] == [(100, 5), (100, 5)]  # 3 attempts, one had no answer


def test_a_command_summariser_reports_no_tokens_so_its_spend_is_an_estimate_flagged_as_one(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    script = tmp_path / "summ.py"
    script.write_text(f"import sys\nsys.stdin.read()\nprint({SUMMARY!r})\n")
    cli("compact", str(s), "--force", "--summarizer", f"cmd:{sys.executable} {script}", check=True)
    events = jsonl((s / "updates.jsonl").read_bytes())
    (ev,) = [e for e in events if e["kind"] == "usage"]
    art = orjson.loads((s / events[-1]["artifact"]).read_bytes())
    assert ev["agent"] == "compaction" and ev["estimated"] is True
    assert ev["output"] == (len(SUMMARY) + 1) // 4 and ev["input"] > 1000  # bytes / 4 of the prompt and the answer
    assert art["attempts"][0]["usage"]["estimated"] is True


def test_the_extractive_summariser_calls_no_model_and_records_nothing(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    cli("compact", str(s), "--force", check=True)
    assert not [e for e in jsonl((s / "updates.jsonl").read_bytes()) if e["kind"] == "usage"]
    assert "compaction" not in _agent_rows(s)


def test_pass_one_spend_is_recorded_by_the_compaction_that_reads_its_note(tmp_path: Path, endpoint, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """--prefire appends no event (SPEC): its spend travels in the cache, and the two-pass
    compaction that uses the note records it beside its own."""
    s = _session(tmp_path / "s")
    with endpoint([sse(SUMMARY, usage={"prompt_tokens": 900, "completion_tokens": 150}),
                   sse(SUMMARY, usage={"prompt_tokens": 300, "completion_tokens": 120})]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        before = (s / "updates.jsonl").read_bytes()
        cli("compact", str(s), "--prefire", "--summarizer", "openai:m-sum", check=True)
        assert (s / "updates.jsonl").read_bytes() == before
        out = orjson.loads(cli("compact", str(s), "--force", "--two-pass", "--summarizer", "openai:m-sum", "--json", check=True).stdout)
    assert out["two_pass"]["hit"] is True
    spent = [e for e in jsonl((s / "updates.jsonl").read_bytes()) if e["kind"] == "usage"]
    assert [(e["purpose"], e["input"], e["output"]) for e in spent] == [("prefire", 900, 150), ("compaction", 300, 120)]
    assert _agent_rows(s)["compaction"]["calls"] == 2

"""The compaction checks can trigger: the minimal-history fallback, a window too small for
anything (exit 65, nothing committed), the fitted stage that never sends the system item
alone, and a `cmd:` summariser that reports an overflow so the ladder runs."""
from __future__ import annotations

import sys
from pathlib import Path

import orjson

from catty_ctx.session.store import Session
from catty_ctx.view.fold import view
from support import cli, jsonl, msg, session_event, write_log

SUMMARY = "<summary>" + "The user wants the parser split; the tokenizer is half done. " * 12 + "</summary>"


def _log(s: Path) -> bytes:
    return (s / "updates.jsonl").read_bytes()


def _talk(path: Path, window: int, turns: int, chars: int, **state: object) -> Path:
    events = [session_event(window=window), msg("system", "You are a coding agent.")]
    for facet, value in state.items():
        events.append({"kind": "state", "facet": facet, "value": value})
    for i in range(turns):
        events += [msg("user", f"request {i}: " + "x" * chars, f"u{i}"), msg("assistant", f"answer {i}: " + "y" * chars, f"a{i}")]
    return write_log(path, events)


def _recorder(tmp_path: Path, limit: int, how: str) -> str:
    """A summariser command that keeps every prompt it gets and reports an overflow (exit 3,
    or the documented stderr line) when the prompt is over `limit` bytes."""
    seen = tmp_path / "prompts"
    seen.mkdir()
    fail = "sys.exit(3)" if how == "status" else "print('something went wrong', file=sys.stderr); print('context_length_exceeded', file=sys.stderr); sys.exit(1)"
    script = tmp_path / "summ.py"
    script.write_text(
        "import os, sys\n"
        "data = sys.stdin.read()\n"
        f"open(os.path.join({str(seen)!r}, str(len(os.listdir({str(seen)!r})))), 'w').write(data)\n"
        f"if len(data.encode()) > {limit}:\n    {fail}\n"
        f"print({SUMMARY!r})\n"
    )
    return f"cmd:{sys.executable} {script}"


def _prompts(tmp_path: Path) -> list[str]:
    folder = tmp_path / "prompts"
    return [(folder / str(i)).read_text() for i in range(len(list(folder.iterdir())))]


def test_a_head_that_does_not_fit_falls_back_to_the_minimal_history(tmp_path: Path) -> None:
    """Instructions of 40,000 characters make the full head (~10,000 tokens) larger than the
    8,000-token window; the minimal history (system items and the summary) fits."""
    s = _talk(tmp_path / "s", 8_000, 4, 200, instructions=[{"path": "AGENTS.md", "text": "Rule. " * 6_700}])
    out = orjson.loads(cli("compact", str(s), "--force", "--json", check=True).stdout)
    ev = jsonl(_log(s))[-1]
    assert out["head"] == "minimal" and ev["head"] == "minimal" and ev["tokens_after"] <= 8_000
    assert [i.get("synthetic") for i in view(s)] == [None, "compaction_summary"]


def test_when_not_even_the_minimal_history_fits_nothing_is_committed_and_it_exits_65(tmp_path: Path) -> None:
    s = _talk(tmp_path / "s", 150, 2, 100)
    before = _log(s)
    proc = cli("compact", str(s), "--force")
    assert proc.returncode == 65 and proc.stderr.count(b"\n") == 1
    assert b"window (150 tokens) is too small" in proc.stderr and b"nothing was compacted" in proc.stderr
    assert _log(s) == before and not (s / "compaction_requests").exists()


def test_a_window_of_32768_or_less_never_sends_the_system_item_alone(tmp_path: Path) -> None:
    """Window 32,768: the fitted budget (window - 32,768) is 0, so the fitted stage holds only
    the system item; it is skipped, and the lossy stage (70 % of the window) is sent."""
    s = _talk(tmp_path / "s", 32_768, 60, 1_000)  # ~30,000 tokens: over the lossy budget too
    spec = _recorder(tmp_path, 100_000, "status")
    out = orjson.loads(cli("compact", str(s), "--force", "--summarizer", spec, "--json", check=True).stdout)
    art = orjson.loads((s / out["artifact"]).read_bytes())
    assert [(a["stage"], a["outcome"]) for a in art["attempts"]] == [("verbatim", "overflow"), ("fitted", "too_small"), ("lossy", "success")]
    prompts = _prompts(tmp_path)
    assert len(prompts) == 2 and all("[user]" in p for p in prompts)  # every prompt sent held conversation


def test_when_no_stage_holds_anything_but_the_system_item_it_exits_65_saying_the_window_is_too_small(tmp_path: Path) -> None:
    s = _talk(tmp_path / "s", 1_000, 1, 12_000)  # one exchange, each message ~3,000 tokens
    before = _log(s)
    proc = cli("compact", str(s), "--force", "--summarizer", _recorder(tmp_path, 0, "status"))
    assert proc.returncode == 65 and b"window (1,000 tokens) is too small" in proc.stderr
    assert _log(s) == before and len(_prompts(tmp_path)) == 1  # only the verbatim stage was sent
    assert not any(e["kind"] == "compaction" for e in jsonl(_log(s)))


def test_a_command_summariser_reports_an_overflow_on_stderr_and_the_ladder_runs(tmp_path: Path) -> None:
    s = _talk(tmp_path / "s", 40_000, 40, 1_000)  # ~20,000 tokens; fitted budget 7,232
    spec = _recorder(tmp_path, 60_000, "stderr")
    out = orjson.loads(cli("compact", str(s), "--force", "--summarizer", spec, "--json", check=True).stdout)
    art = orjson.loads((s / out["artifact"]).read_bytes())
    outcomes = [(a["stage"], a["outcome"]) for a in art["attempts"]]
    assert outcomes[0] == ("verbatim", "overflow") and outcomes[-1][1] == "success" and len(outcomes) == 2
    assert len(_prompts(tmp_path)[1].encode()) <= 60_000 < len(_prompts(tmp_path)[0].encode())
    assert Session.open(s).first_event() is not None

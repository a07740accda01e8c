"""Two-pass's pass 1 never pays twice and never pays for nothing (docs/compact.md#two-pass-compaction):
a note whose key (prefix length and fingerprint, summariser, prompt) is already cached is not
asked for again; a window whose reserve leaves no room for a note beside the live tail refuses
`--prefire` before any call; pass 1's real spend is reported, and a note never used is waste
with its real tokens, in the log's usage events and in the compaction event."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

from support import cli, jsonl, msg, session_event, write_log
from support.scripted_server import sse

SUMMARY = "<summary>" + "The user wants a green build; vendor/ is off limits. " * 30 + "</summary>"
PASS1 = {"prompt_tokens": 153_000, "completion_tokens": 595}


def _session(path: Path, window: int = 200_000) -> Path:
    events: list[dict[str, Any]] = [session_event("s-keyed", window=window), msg("system", "sys")]
    for i in range(12):
        events += [msg("user", f"step {i}: make the build green " * 20, f"u{i}"), msg("assistant", f"done {i} " * 40, f"a{i}")]
    return write_log(path, events)


def _counting_summarizer(tmp_path: Path) -> tuple[str, Path]:
    """A real command summariser that appends a line to CALLS each time it is run."""
    calls = tmp_path / "calls.txt"
    script = tmp_path / "summ.py"
    script.write_text(f"import sys\nsys.stdin.read()\nopen({str(calls)!r}, 'a').write('called\\n')\nprint({SUMMARY!r})\n")
    return f"cmd:{sys.executable} {script}", calls


def _calls(calls: Path) -> int:
    return len(calls.read_text().splitlines()) if calls.exists() else 0


def _row(*args: str) -> dict[str, Any]:
    return orjson.loads(cli("compact", *args, "--json", check=True).stdout)  # type: ignore[no-any-return]


def test_three_prefires_on_an_unchanged_session_call_the_summariser_once(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    spec, calls = _counting_summarizer(tmp_path)
    rows = [_row(str(s), "--prefire", "--summarizer", spec) for _ in range(3)]
    assert _calls(calls) == 1
    assert [r["status"] for r in rows] == ["prefired", "cached", "cached"]
    assert len({r["two_pass"]["fp"] for r in rows}) == 1
    assert rows[1]["two_pass"]["spent_tokens"] == rows[0]["two_pass"]["spent_tokens"] > 0
    assert len(list((s / "compaction_requests").glob("prefire-*.json"))) == 1  # one pass, one artifact


def test_a_changed_prefix_or_summariser_runs_pass_1_again(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    spec, calls = _counting_summarizer(tmp_path)
    _row(str(s), "--prefire", "--summarizer", spec)
    log = s / "updates.jsonl"
    seq = len(jsonl(log.read_bytes()))
    with log.open("ab") as f:  # one more turn: the split moves, the key is another one
        for i, ev in enumerate((msg("user", "and the docs " * 40, "u-more"), msg("assistant", "docs done " * 40, "a-more"))):
            f.write(orjson.dumps({"v": 1, "seq": seq + i, "ts": "2026-11-01T00:02:00.000Z", **ev}) + b"\n")
    assert _row(str(s), "--prefire", "--summarizer", spec)["status"] == "prefired"
    assert _calls(calls) == 2
    spec2 = spec + " --other"  # (another command line: another summariser id)
    assert _row(str(s), "--prefire", "--summarizer", spec2)["status"] == "prefired"
    assert _calls(calls) == 3


def test_a_28000_token_window_refuses_prefire_with_one_line_and_no_call(tmp_path: Path) -> None:
    s = _session(tmp_path / "s", window=28_000)
    spec, calls = _counting_summarizer(tmp_path)
    before = sorted(p.name for p in s.rglob("*"))
    proc = cli("compact", str(s), "--prefire", "--summarizer", spec)
    assert proc.returncode == 65
    err = proc.stderr.decode()
    assert len(err.strip().splitlines()) == 1 and "--prefire refused" in err and "32,768" in err, err
    assert _calls(calls) == 0
    assert sorted(p.name for p in s.rglob("*")) == before  # no artifact, no marker, no cache
    # A window that holds the note and the tail beside the reserve prefires.
    big = _session(tmp_path / "big", window=60_000)
    assert _row(str(big), "--prefire", "--summarizer", spec)["status"] == "prefired"


def test_pass_1_reports_its_real_spend_and_an_unused_note_is_waste_in_the_log(tmp_path: Path, endpoint, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    s = _session(tmp_path / "s")
    with endpoint([sse(SUMMARY, usage=PASS1), sse(SUMMARY, usage={"prompt_tokens": 4000, "completion_tokens": 500})]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        pre = _row(str(s), "--prefire", "--summarizer", "openai:m-sum")
        assert pre["two_pass"]["spent_tokens"] == 153_595  # the provider's figures, not the note's size
        # A compaction without --two-pass folds the prefix the note was for: the note is never used.
        out = _row(str(s), "--force", "--summarizer", "openai:m-sum")
    assert out["two_pass"]["fallback"] == "single_pass" and out["two_pass"]["wasted_tokens"] == 153_595
    events = jsonl((s / "updates.jsonl").read_bytes())
    (wasted,) = [e for e in events if e["kind"] == "usage" and e.get("purpose") == "prefire"]
    assert wasted["wasted"] is True and wasted["input"] == 153_000
    (own,) = [e for e in events if e["kind"] == "usage" and e.get("purpose") == "compaction"]
    assert "wasted" not in own
    assert not (s / "compaction_requests" / "prefire.json").exists()  # settled: never appended twice

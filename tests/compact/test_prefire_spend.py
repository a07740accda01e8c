"""The spend of two-pass compaction's pass 1 counts in `usage` exactly once: read from the prefire
cache while it waits there (`compact --prefire` appends no event), from the log once a compaction
appended it, and once when both hold it (a crash between the append and the cache's removal).
A second prefire that replaces an unused note keeps that note's spend."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from support import cli, forked_process, jsonl, msg, session_event, write_log
from support.scripted_server import sse

SUMMARY = "<summary>" + "The user wants a green build; vendor/ is off limits. " * 12 + "</summary>"
PASS1 = {"prompt_tokens": 900, "completion_tokens": 150}
PASS1_AGAIN = {"prompt_tokens": 910, "completion_tokens": 160}
PASS2 = {"prompt_tokens": 300, "completion_tokens": 120}


def _session(path: Path, sid: str = "s-prefire") -> Path:
    events: list[dict[str, Any]] = [session_event(sid, window=200_000, cwd="/home/dev/proj"), msg("system", "sys")]
    for i in range(12):
        events += [msg("user", f"step {i}: make the build green " * 20, f"u{i}"), msg("assistant", f"done {i} " * 40, f"a{i}")]
    events.append({"kind": "usage", "model": "gpt-4.1", "input": 1000, "output": 50, "cache_read": 0, "cache_write": 0, "reasoning": 0})
    return write_log(path, events)


def _append_usage(s: Path, n: int) -> None:
    """One more main-loop call, appended as a writer would (next seq, one write)."""
    log = s / "updates.jsonl"
    seq = len(jsonl(log.read_bytes()))
    ev = {"v": 1, "seq": seq, "ts": "2026-11-01T00:01:00.000Z", "kind": "usage", "model": "gpt-4.1", "input": n, "output": 7,
          "cache_read": 0, "cache_write": 0, "reasoning": 0}
    with log.open("ab") as f:
        f.write(orjson.dumps(ev) + b"\n")


def _append_turn(s: Path) -> None:
    """One more turn (the prefix pass 1 takes moves: a new key, so a new pass)."""
    log = s / "updates.jsonl"
    seq = len(jsonl(log.read_bytes()))
    with log.open("ab") as f:
        for i, ev in enumerate((msg("user", "and the docs too " * 20, "u-more"), msg("assistant", "docs done " * 40, "a-more"))):
            f.write(orjson.dumps({"v": 1, "seq": seq + i, "ts": "2026-11-01T00:02:00.000Z", **ev}) + b"\n")


def _cmd_summarizer(tmp_path: Path) -> str:
    """A local command summariser: it reports no tokens and no request id (its events carry the
    estimate, and only `prefire_call` names them)."""
    script = tmp_path / "summ.py"
    script.write_text(f"import sys\nsys.stdin.read()\nprint({SUMMARY!r})\n")
    return f"cmd:{sys.executable} {script}"




def _usage(*args: str, by: str = "agent", cache: bool = True) -> dict[str, Any]:
    """`usage --json` in a process of its own (the cached-answer path is start-up code: the
    program imported afresh, tests/support/forked_cli.py); without the caches, the answer to hold it to,
    in this process."""
    run = forked_process if cache else cli
    proc = run("usage", *args, "--by", by, "--json", *(() if cache else ("--no-cache",)), check=True)
    doc = orjson.loads(proc.stdout)
    for what in ("files_parsed", "bytes_parsed"):  # (how much was read: what the caches save)
        doc.pop(what)
    return doc  # type: ignore[no-any-return]


def _rows(doc: dict[str, Any], by: str = "agent") -> dict[str, tuple[int, int, int]]:
    return {r[by]: (r["input"], r["output"], r["calls"]) for r in doc["rows"]}


def _spend_in_cache(s: Path) -> list[dict[str, Any]]:
    return orjson.loads((s / "compaction_requests" / "prefire.json").read_bytes())["spend"]  # type: ignore[no-any-return]


def _logged(s: Path, purpose: str) -> list[dict[str, Any]]:
    return [e for e in jsonl((s / "updates.jsonl").read_bytes()) if e["kind"] == "usage" and e.get("purpose") == purpose]


def test_a_prefires_spend_counts_before_its_compaction_and_once_after(tmp_path: Path, endpoint, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    s = _session(tmp_path / "s")
    with endpoint([sse(SUMMARY, usage=PASS1), sse(SUMMARY, usage=PASS2)]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        before = (s / "updates.jsonl").read_bytes()
        cli("compact", str(s), "--prefire", "--summarizer", "openai:m-sum", check=True)
        assert (s / "updates.jsonl").read_bytes() == before  # no event: the spend is in the cache alone
        (pending,) = _spend_in_cache(s)
        assert pending["purpose"] == "prefire" and pending["prefire_call"].startswith("prefire-") and pending["request_id"]
        doc = _usage(str(s))
        assert _rows(doc)["compaction"] == (900, 150, 1)
        assert _rows(doc)["main"] == (1000, 50, 1)
        assert _rows(_usage(str(s), by="session"), "session")["s-prefire"] == (1900, 200, 2)  # the session's own, as the log says
        assert _rows(_usage(str(s), by="project"), "project")["/home/dev/proj"] == (1900, 200, 2)
        out = orjson.loads(cli("compact", str(s), "--force", "--two-pass", "--summarizer", "openai:m-sum", "--json", check=True).stdout)
    assert out["two_pass"]["hit"] is True and "wasted_tokens" not in out["two_pass"]
    assert not (s / "compaction_requests" / "prefire.json").exists()
    (appended,) = _logged(s, "prefire")
    assert appended["prefire_call"] == pending["prefire_call"] and appended["request_id"] == pending["request_id"]
    after = _usage(str(s))
    assert _rows(after)["compaction"] == (1200, 270, 2)  # pass 1 once, pass 2
    assert after == _usage(str(s), cache=False)


@pytest.mark.parametrize("summarizer", ["openai", "cmd"])
def test_a_crash_between_the_append_and_the_caches_removal_counts_the_call_once(
        tmp_path: Path, endpoint, monkeypatch, summarizer: str) -> None:  # type: ignore[no-untyped-def]
    """Both the log and the cache hold pass 1's events: they share a dedupe key (the request
    id, or without one the `prefire_call` name), so they are one call."""
    s = _session(tmp_path / "s")
    spec = _cmd_summarizer(tmp_path) if summarizer == "cmd" else "openai:m-sum"
    with endpoint([sse(SUMMARY, usage=PASS1), sse(SUMMARY, usage=PASS2)]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        cli("compact", str(s), "--prefire", "--summarizer", spec, check=True)
        cache = s / "compaction_requests" / "prefire.json"
        kept = tmp_path / "prefire.json.kept"
        shutil.copy2(cache, kept)
        pending = _rows(_usage(str(s)))["compaction"]
        assert pending[2] == 1
        cli("compact", str(s), "--force", "--two-pass", "--summarizer", spec, check=True)
    done = _usage(str(s))
    assert _rows(done)["compaction"][2] == 2
    (appended,) = _logged(s, "prefire")
    if summarizer == "cmd":
        assert "request_id" not in appended and appended["estimated"] is True  # only its name tells it
    # The state a crash right after the append leaves: the events in the log, the cache still there.
    shutil.copy2(kept, cache)
    crashed = _usage(str(s))
    assert _rows(crashed) == _rows(done)
    assert crashed["totals"] == done["totals"] and crashed["duplicates_dropped"] == done["duplicates_dropped"] + 1
    assert crashed == _usage(str(s), cache=False)
    by_session = _usage(str(s), by="session")
    assert _rows(by_session, "session")["s-prefire"][2] == 3 and by_session == _usage(str(s), by="session", cache=False)


def test_a_second_prefire_keeps_the_spend_of_the_note_it_replaces(tmp_path: Path, endpoint, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    s = _session(tmp_path / "s")
    with endpoint([sse(SUMMARY, usage=PASS1), sse(SUMMARY, usage=PASS1_AGAIN), sse(SUMMARY, usage=PASS2)]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        cli("compact", str(s), "--prefire", "--summarizer", "openai:m-sum", check=True)
        (first,) = _spend_in_cache(s)
        _append_turn(s)
        cli("compact", str(s), "--prefire", "--summarizer", "openai:m-sum", check=True)
        carried, second = _spend_in_cache(s)
        assert carried == first and second["input"] == 910 and second["prefire_call"] != first["prefire_call"]
        assert (s / "updates.jsonl").read_bytes().count(b'"purpose"') == 0  # still no event (SPEC)
        assert _rows(_usage(str(s)))["compaction"] == (1810, 310, 2)
        out = orjson.loads(cli("compact", str(s), "--force", "--two-pass", "--summarizer", "openai:m-sum", "--json", check=True).stdout)
    assert out["two_pass"]["hit"] is True and out["two_pass"]["wasted_tokens"] == 900 + 150  # the replaced note's
    assert [(e["input"], e["prefire_call"]) for e in _logged(s, "prefire")] == [(900, first["prefire_call"]), (910, second["prefire_call"])]
    after = _usage(str(s))
    assert _rows(after)["compaction"] == (2110, 430, 3)
    assert after == _usage(str(s), cache=False)


def test_the_cached_ledger_follows_the_cache_appearing_changing_and_going(tmp_path: Path) -> None:
    """Through the answer cache and the kept ledger (logs that only grew), asked about the session
    and about a ROOT holding it: each answer equals a run without caches."""
    root = tmp_path / "root"
    s = _session(root / "proj" / "s")
    spec = _cmd_summarizer(tmp_path)

    def check(calls: int) -> None:
        for target in (str(s), str(root)):
            for _ in range(2):  # the second run is the cached answer
                doc = _usage(target)
                assert doc == _usage(target, cache=False)
                assert doc["totals"]["calls"] == calls, doc
                assert _rows(doc).get("compaction", (0, 0, 0))[2] == calls - len(_main_calls(s))
        strict = orjson.loads(cli("usage", str(root), "--by", "agent", "--json", "--strict", check=True).stdout)
        assert strict["totals"] == doc["totals"] and strict["bad_lines"] == 0  # the cache is one document, not lines

    check(1)
    cli("compact", str(s), "--prefire", "--summarizer", spec, check=True)  # appears
    check(2)
    _append_usage(s, 3)  # the log grows while the cache waits
    check(3)
    _append_turn(s)  # a new turn: the next prefire has another key
    cli("compact", str(s), "--prefire", "--summarizer", spec, check=True)  # replaced (new file, one more call)
    check(4)
    cli("compact", str(s), "--force", "--two-pass", "--summarizer", spec, check=True)  # gone: its events in the log
    assert not (s / "compaction_requests" / "prefire.json").exists()
    assert len(_logged(s, "prefire")) == 2
    check(5)


def _main_calls(s: Path) -> list[dict[str, Any]]:
    return [e for e in jsonl((s / "updates.jsonl").read_bytes()) if e["kind"] == "usage" and e.get("agent") != "compaction"]


def test_an_unreadable_cache_is_named_like_a_bad_line(tmp_path: Path) -> None:
    s = _session(tmp_path / "s")
    (s / "compaction_requests").mkdir()
    (s / "compaction_requests" / "prefire.json").write_bytes(b'{"spend": [{"model": "m"}]}\n')
    proc = cli("usage", str(s), "--json")
    assert proc.returncode == 0
    doc = orjson.loads(proc.stdout)
    assert doc["bad_lines"] == 1 and doc["totals"]["calls"] == 1
    assert b"prefire.json:1: prefire spend:" in proc.stderr
    assert cli("usage", str(s), "--json", "--strict").returncode == 65


def test_a_compaction_that_commits_nothing_records_pass_one_once_and_keeps_the_note(tmp_path: Path, endpoint, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The summariser gives up on pass 2: pass 1's calls are appended with its own, and dropped
    from the cache, whose note the next compaction still uses without appending them again."""
    s = _session(tmp_path / "s")
    shorts = [sse("<summary>too short</summary>", usage={"prompt_tokens": 100, "completion_tokens": 5}) for _ in range(3)]  # (each its own id)
    with endpoint([sse(SUMMARY, usage=PASS1), *shorts, sse(SUMMARY, usage=PASS2)]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        cli("compact", str(s), "--prefire", "--summarizer", "openai:m-sum", check=True)
        (pending,) = _spend_in_cache(s)
        assert cli("compact", str(s), "--force", "--two-pass", "--summarizer", "openai:m-sum").returncode == 75
        assert [e["prefire_call"] for e in _logged(s, "prefire")] == [pending["prefire_call"]]
        assert _spend_in_cache(s) == []  # recorded: the note stays, its spend does not
        assert _rows(_usage(str(s)))["compaction"] == (1200, 165, 4)
        out = orjson.loads(cli("compact", str(s), "--force", "--two-pass", "--summarizer", "openai:m-sum", "--json", check=True).stdout)
    assert out["two_pass"]["hit"] is True
    assert len(_logged(s, "prefire")) == 1  # not appended a second time
    after = _usage(str(s))
    assert _rows(after)["compaction"] == (1500, 285, 5)
    assert after == _usage(str(s), cache=False)


def test_a_note_replaced_while_pass_two_runs_survives_the_compaction(tmp_path: Path) -> None:
    """A cron prefire can finish while a two-pass compaction's pass 2 runs (outside the lock):
    the compaction that used the old note must not delete the new one and its spend with it."""
    s = _session(tmp_path / "s")
    cache = s / "compaction_requests" / "prefire.json"
    old_note, new_note, flag = tmp_path / "old.json", tmp_path / "new.json", tmp_path / "swap"
    script = tmp_path / "summ.py"
    # Pass 2 (the flag set) finds the newer note put in place while it runs, as a prefire's rename would.
    script.write_text(f"import os, sys\nsys.stdin.read()\nif os.path.exists({str(flag)!r}):\n"
                      f"    os.replace({str(new_note)!r}, {str(cache)!r})\nprint({SUMMARY!r})\n")
    spec = f"cmd:{sys.executable} {script}"
    cli("compact", str(s), "--prefire", "--summarizer", spec, check=True)
    shutil.copy2(cache, old_note)
    _append_turn(s)  # (the second note is for a longer prefix; the first still matches the live view)
    cli("compact", str(s), "--prefire", "--summarizer", spec, check=True)
    first, second = _spend_in_cache(s)
    shutil.copy2(cache, new_note)
    shutil.copy2(old_note, cache)  # the state when the compaction starts: the first note alone
    flag.touch()
    out = orjson.loads(cli("compact", str(s), "--force", "--two-pass", "--summarizer", spec, "--json", check=True).stdout)
    assert out["two_pass"]["hit"] is True
    assert [e["prefire_call"] for e in _logged(s, "prefire")] == [first["prefire_call"]]
    assert _spend_in_cache(s) == [second]  # the newer note stays, less what was just appended
    doc = _usage(str(s))
    assert _rows(doc)["compaction"][2] == 3 and doc == _usage(str(s), cache=False)  # first, second (waiting), pass 2


def test_a_compacted_session_without_a_waiting_prefire_reads_its_log_alone(tmp_path: Path) -> None:
    root = tmp_path / "root"
    s = _session(root / "s")
    cli("compact", str(s), "--force", check=True)  # an artifact in compaction_requests/, no prefire cache
    assert (s / "compaction_requests").is_dir() and not (s / "compaction_requests" / "prefire.json").exists()
    for target in (s, s / "updates.jsonl", root):
        doc = _usage(str(target))
        assert (doc["files"], doc["bad_lines"], doc["totals"]["calls"]) == (1, 0, 1)

"""Every wild fixture, as a new user would try it: import, inspect, repair --check, resume in
both provider shapes, usage.

A wild fixture is a source file written the way an agent really writes it (a variant found
in the agent's own code or in files users attach to bug reports). Each one lives under
`fixtures/import/<format>/wild/`, the folder naming the format, as either

- a folder holding the source and an `expected.json` (its `"source"` names the file or
  folder to import, relative to the fixture folder), or
- a file `NAME.EXT` with `NAME.expected.json` beside it.

`expected.json` holds what the import must give; every key but `user_turns` is optional:
`session` (passed as `--session`), `session_id`, `parent_session_id` and `model` (of the
session event), `user_turns` (real user messages of the main loop), `assistant_messages`
and `assistant_text_messages` (main loop; the latter with text), `tool_calls` and
`tool_pairs` (main-loop calls; those with a result), `usage_events` (all of them),
`off_branch_usage`, `agent_usage`, `compactions`, `images`, `reasoning`, `dangling` (what
`inspect` finds), `unlinked` and `other_session` (from the import report), `off_branch`
(the report's skip count), `usage_calls` (the ledger of the imported session) and
`source_usage_calls` (the ledger of the source), `torn` (lines cut mid-record). The round trip holds on every one: the
import reports no torn line, `repair --check` exits 0, both provider requests are valid,
and the ledger of the import equals the ledger of the source (or of `usage_of`, relative
to the fixture's folder: `.` for a session with its subagent files), summed over the import of each session the file holds
(`other_sessions` names the others) — unless `usage_matches_source` is false, which
`usage_gap` must explain. Unless `auto` is false, `import auto` names the fixture's format
(`format`, when given, must be the folder's).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from agents.roundtrip import native_equals_pipe
from support import FIXTURES, cli

from catty_ctx.importers.detect import detect

WILD = sorted(
    p for p in (FIXTURES / "import").glob("*/wild/*")
    if not p.name.endswith("expected.json") and not p.name.startswith(".")
)


def _case(entry: Path) -> tuple[str, Path, dict[str, Any]]:
    fmt = entry.parent.parent.name
    if entry.is_dir():  # (an expected.json's own "format", when given, must agree: checked below)
        exp_path = entry / "expected.json"
        expected = orjson.loads(exp_path.read_bytes()) if exp_path.exists() else {}
        if "source" in expected:
            return fmt, entry / expected["source"], expected
        inside = [p for p in entry.iterdir() if p.name != "expected.json"]
        return fmt, inside[0] if len(inside) == 1 else entry, expected
    exp_path = entry.parent / (entry.with_suffix("").name + ".expected.json")
    return fmt, entry, orjson.loads(exp_path.read_bytes()) if exp_path.exists() else {}


def _ok(*args: str) -> bytes:
    proc = cli(*args)
    assert proc.returncode == 0, f"{' '.join(args)}: exit {proc.returncode}: {proc.stderr.decode()}"
    return proc.stdout


def _check_openai(doc: dict[str, Any]) -> None:
    """Every call answered exactly once, right after its assistant; no orphan, no empty message."""
    msgs = doc["messages"]
    assert msgs, "an empty request"
    i = 0
    while i < len(msgs):
        m = msgs[i]
        assert m["role"] in ("system", "developer", "user", "assistant", "tool"), m
        if m["role"] == "tool":
            raise AssertionError(f"a tool message answers no call: {m}")
        calls = [c["id"] for c in m.get("tool_calls") or ()]
        assert m.get("content") or calls, f"an empty message: {m}"
        answered = []
        i += 1
        while i < len(msgs) and msgs[i]["role"] == "tool":
            answered.append(msgs[i]["tool_call_id"])
            i += 1
        assert sorted(answered) == sorted(calls), (calls, answered)


def _check_anthropic(doc: dict[str, Any]) -> None:
    """Roles alternate from a user message; each tool_use is answered in the next user message."""
    msgs = doc["messages"]
    assert msgs and msgs[0]["role"] == "user"
    for a, b in zip(msgs, msgs[1:]):
        assert a["role"] != b["role"], (a, b)
    for k, m in enumerate(msgs):
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        assert blocks, f"an empty message: {m}"
        for block in blocks:  # the provider refuses a text block of whitespace alone
            assert block["type"] != "text" or block["text"].strip(), f"a blank text block: {m}"
        if m["role"] != "assistant":
            continue
        uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
        if uses:
            nxt = msgs[k + 1]["content"] if k + 1 < len(msgs) else []
            results = [b["tool_use_id"] for b in nxt if isinstance(b, dict) and b.get("type") == "tool_result"]
            assert sorted(results) == sorted(uses), (uses, results)


def _counts(events: list[dict[str, Any]]) -> dict[str, int]:
    main = [e for e in events if not e.get("agent")]
    answered = {e["call_id"] for e in main if e["kind"] == "tool_result"}
    usage = [e for e in events if e["kind"] == "usage"]
    assistants = [e for e in main if e["kind"] == "message" and e["role"] == "assistant"]
    return {
        "user_turns": sum(1 for e in main if e["kind"] == "message" and e["role"] == "user" and not e.get("synthetic")),
        "assistant_messages": len(assistants),
        "assistant_text_messages": sum(1 for e in assistants if e["text"].strip()),
        "tool_calls": sum(1 for e in main if e["kind"] == "tool_call"),
        "tool_pairs": sum(1 for e in main if e["kind"] == "tool_call" and e["call_id"] in answered),
        "usage_events": len(usage),
        "off_branch_usage": sum(1 for e in usage if e.get("off_branch")),
        "agent_usage": sum(1 for e in usage if e.get("agent")),
        "compactions": sum(1 for e in events if e["kind"] == "compaction"),
        "images": sum(len(e.get("images") or ()) for e in events),
        "reasoning": sum(1 for e in events if e["kind"] == "reasoning"),
    }


_TOTALS = ("input", "output", "cache_read", "cache_write", "calls")


@pytest.mark.parametrize("entry", WILD, ids=[f"{p.parent.parent.name}/{p.name}" for p in WILD])
def test_wild_fixture_imports_and_works_with_every_command(entry: Path, tmp_path: Path) -> None:
    fmt, source, expected = _case(entry)
    assert expected.get("format", fmt) == fmt
    if expected and expected.get("auto", True):
        assert detect(source) == fmt
    assert "user_turns" in expected, "a wild fixture says how many user turns its source holds"
    out = tmp_path / "imported"
    session = ["--session", expected["session"]] if expected.get("session") else []
    proc = cli("import", fmt, str(source), "--out", str(out), *session)
    assert proc.returncode == 0, proc.stderr.decode()
    report = orjson.loads(proc.stdout)
    torn = expected.get("torn", 0)  # a line cut mid-record; a complete last line lacking its newline is none
    assert len(report["torn"]) == torn and (torn or b"torn" not in proc.stderr), proc.stderr.decode()
    events = [orjson.loads(line) for line in (out / "updates.jsonl").read_bytes().splitlines()]

    inspected = orjson.loads(_ok("inspect", str(out), "--json"))
    assert inspected["events"] == len(events) == report["events"]
    _ok("repair", "--check", str(out))
    _check_openai(orjson.loads(_ok("resume", str(out), "--format", "openai")))
    _check_anthropic(orjson.loads(_ok("resume", str(out), "--format", "anthropic")))
    ledger = orjson.loads(_ok("usage", str(out), "--json"))["totals"]

    got = _counts(events)
    for key, value in expected.items():
        if key in got:
            assert got[key] == value, f"{key}: {got[key]} != {value}"
    for key in ("session_id", "parent_session_id", "model"):
        if key in expected:
            assert events[0].get(key) == expected[key], key
    if "dangling" in expected:
        assert inspected["problems"]["dangling"] == expected["dangling"]
    if "unlinked" in expected:
        assert report["unlinked"] == expected["unlinked"]
    for key in ("other_session", "off_branch"):
        if key in expected:
            assert report["skipped"].get(key, 0) == expected[key], key
    if "usage_calls" in expected:
        assert ledger["calls"] == expected["usage_calls"]
    whole = entry / expected["usage_of"] if "usage_of" in expected else source  # (a folder: the session with its subagent files)
    # (--allow-empty: a source with no usage the ledger reads, such as the first CLI's document, is 0 calls)
    source_ledger = orjson.loads(_ok("usage", str(whole), "--json", "--allow-empty"))["totals"]
    if "source_usage_calls" in expected:
        assert source_ledger["calls"] == expected["source_usage_calls"]
    if expected.get("usage_matches_source", True):
        totals = {k: ledger[k] for k in _TOTALS}
        for n, other in enumerate(expected.get("other_sessions", ())):
            more = tmp_path / f"other-{n}"
            _ok("import", fmt, str(source), "--out", str(more), "--session", other)
            for k, v in orjson.loads(_ok("usage", str(more), "--json"))["totals"].items():
                if k in totals:
                    totals[k] += v
        assert totals == {k: source_ledger[k] for k in _TOTALS}
    else:
        assert expected.get("usage_gap"), "say why the import's usage differs from the source's"


@pytest.mark.parametrize("entry", WILD, ids=[f"{p.parent.parent.name}/{p.name}" for p in WILD])
def test_wild_fixture_reads_natively_as_the_import_pipe(entry: Path) -> None:
    """`resume FILE` and `inspect FILE --json` answer as `import auto FILE | CMD -` (issue 26's item 2),
    on every wild fixture of every agent, nothing written beside it."""
    native_equals_pipe(_case(entry)[1])

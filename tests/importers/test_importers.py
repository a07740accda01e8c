"""The importers keep their promises (issue: import real agent sessions).

Every expected count below was read off the hand-written fixture named in the test.
"""
from __future__ import annotations

import base64
import sqlite3
from collections import Counter
import re
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from catty_ctx.errors import DataError
from catty_ctx.session.events import check_event
from catty_ctx.importers.pipeline import import_events, import_to_dir
from catty_ctx.importers.detect import detect
from catty_ctx.session.store import Session
from catty_ctx.view.fold import view

from support import FIXTURES

IMP = FIXTURES / "import"
CLAUDE = IMP / "claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl"
CODEX = next((IMP / "codex" / "sessions").rglob("rollout-*.jsonl"))
GEMINI = next((IMP / "gemini" / "tmp").rglob("session-*.jsonl"))
GEMINI_LEGACY = next((IMP / "gemini" / "legacy").glob("*.json"))
OPENCODE = IMP / "opencode" / "storage"
OPENAI = IMP / "openai" / "chat.json"
ANTHROPIC = IMP / "anthropic" / "conversation.json"
PIXEL = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def opencode_db(tmp_path: Path) -> Path:
    db = tmp_path / "opencode.db"
    con = sqlite3.connect(db)
    con.executescript((IMP / "opencode" / "opencode-db.sql").read_text())
    con.commit()
    con.close()
    return db


def run(fmt: str, source: Path, **kw: Any) -> tuple[list[dict[str, Any]], Any]:
    events: list[dict[str, Any]] = []
    report, _ = import_events(fmt, source, events.append, strict=True, **kw)
    return events, report


def main_loop(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if not e.get("agent")]


def count(events: list[dict[str, Any]], kind: str, **fields: Any) -> int:
    return sum(1 for e in events if e["kind"] == kind and all(e.get(k) == v for k, v in fields.items()))


def real_users(events: list[dict[str, Any]]) -> int:
    return sum(1 for e in main_loop(events) if e["kind"] == "message" and e["role"] == "user" and not e.get("synthetic"))


def assert_valid_log(events: list[dict[str, Any]]) -> None:
    assert events[0]["kind"] == "session"
    assert [e["seq"] for e in events] == list(range(len(events)))
    for e in events:
        assert check_event(e) is None, e


# -- every format -------------------------------------------------------------------------------

ALL = [("claude", CLAUDE), ("codex", CODEX), ("gemini", GEMINI), ("gemini", GEMINI_LEGACY), ("opencode", OPENCODE),
       ("openai", OPENAI), ("openai", IMP / "openai" / "bare-array.json"), ("anthropic", ANTHROPIC)]


@pytest.mark.parametrize("fmt,source", ALL, ids=[f"{f}-{s.name}" for f, s in ALL])
def test_every_format_gives_a_valid_log_with_the_session_event_first(fmt: str, source: Path) -> None:
    events, _ = run(fmt, source)
    assert_valid_log(events)
    assert events[0]["source"]["format"] == fmt


@pytest.mark.parametrize("fmt,source", ALL, ids=[f"{f}-{s.name}" for f, s in ALL])
def test_importing_twice_gives_the_same_bytes(fmt: str, source: Path) -> None:
    first, _ = run(fmt, source)
    second, _ = run(fmt, source)
    assert b"".join(orjson.dumps(e) for e in first) == b"".join(orjson.dumps(e) for e in second)


@pytest.mark.parametrize("fmt,source", ALL, ids=[f"{f}-{s.name}" for f, s in ALL])
def test_auto_detects_every_format_from_content(fmt: str, source: Path) -> None:
    assert detect(source) == fmt


def test_auto_detects_an_opencode_database(tmp_path: Path) -> None:
    assert detect(opencode_db(tmp_path)) == "opencode"


@pytest.mark.parametrize("fmt,source", ALL, ids=[f"{f}-{s.name}" for f, s in ALL])
def test_every_tool_call_follows_an_assistant_message(fmt: str, source: Path) -> None:
    events, _ = run(fmt, source)
    last_role: dict[Any, str] = {}
    for e in events:
        if e["kind"] == "message":
            last_role[e.get("agent")] = e["role"]
        elif e["kind"] == "tool_call":
            assert last_role.get(e.get("agent")) == "assistant", e


# -- Claude Code --------------------------------------------------------------------------------


def test_claude_counts_match_the_source() -> None:
    events, report = run("claude", CLAUDE)
    main = main_loop(events)
    # live branch: prompts u1, u6, u9, u11 (x1 is on an abandoned branch, u5 is meta)
    assert real_users(events) == 4
    assert count(main, "tool_call") == 5  # toolu_01..05
    assert count(main, "tool_result") == 5
    assert count(main, "tool_result", is_error=True) == 1  # toolu_02
    # responses msg_01..06 (msg_syn is <synthetic>: no usage); msg_x, made on the abandoned
    # branch, is kept as a usage event marked off_branch (it was paid for)
    assert count(main, "usage") == 7
    assert [e["request_id"] for e in main if e["kind"] == "usage" and e.get("off_branch")] == ["req_x"]
    assert report.skipped["hook-telemetry"] == 1 and report.skipped["replayed"] == 3
    assert report.skipped["off_branch"] == 2
    assert report.torn and report.torn[0].endswith(":32")


def test_claude_merges_the_lines_of_one_response_and_keeps_the_largest_usage() -> None:
    events, _ = run("claude", CLAUDE)
    first = [e for e in events if e["kind"] == "message" and e["id"] == "a1"]
    assert len(first) == 1 and first[0]["text"] == "Let me read the cart code and run the tests."
    usage = [e for e in events if e["kind"] == "usage" and e.get("request_id") == "req_01"]
    assert len(usage) == 1
    assert (usage[0]["output"], usage[0]["input"], usage[0]["cache_read"], usage[0]["cache_write"]) == (88, 12, 4000, 900)
    # the two tool calls of msg_01 sit between its message and its results
    at = events.index(first[0])
    kinds = [e["kind"] for e in events[at : at + 7]]
    assert kinds == ["message", "reasoning", "tool_call", "tool_call", "usage", "tool_result", "tool_result"]


def test_the_usage_ledger_counts_the_fixture_responses_once() -> None:
    """The ledger reads Claude files itself; on this fixture it counts each response once:
    msg_01, 02, x, 03, 04, 05, 06 on every branch (not <synthetic>), from 11 usage copies."""
    from catty_ctx.usage.pipeline import usage

    ledger, scan = usage([CLAUDE], use_cache=False, jobs=1)
    rep = ledger.document(scan)
    assert rep["totals"]["calls"] == 7 and rep["calls_read"] == 11 and rep["duplicates_dropped"] == 4


def test_claude_drops_replayed_uuids_and_keeps_the_live_branch() -> None:
    events, _ = run("claude", CLAUDE)
    ids = [e["id"] for e in events if e["kind"] == "message"]
    assert len(ids) == len(set(ids))
    assert "x1" not in ids and "x2" not in ids


def test_claude_compaction_pair_becomes_a_compaction_event() -> None:
    events, _ = run("claude", CLAUDE)
    comp = [e for e in events if e["kind"] == "compaction"]
    assert len(comp) == 1
    c = comp[0]
    assert c["through_seq"] == c["seq"] - 1 and c["mode"] == "summary"
    assert c["trigger"] == "auto" and c["tokens_before"] == 163200
    assert c["summary"].startswith("This session is being continued")
    assert not any(e["kind"] == "message" and e["id"] == "u8" for e in events)


def test_claude_meta_text_is_synthetic_and_thinking_stays_out_of_the_view(tmp_path: Path) -> None:
    out = tmp_path / "s"
    import_to_dir("claude", CLAUDE, out)
    events = list(Session.open(out).events(warn=None))
    meta = [e for e in events if e["kind"] == "message" and e["id"] == "u5"]
    assert meta[0]["synthetic"] == "meta"
    assert count(events, "reasoning") == 1
    items = view(Session.open(out))
    assert not any("coupon logic is probably" in orjson.dumps(i).decode() for i in items)


def test_claude_subagent_file_becomes_agent_events() -> None:
    events, _ = run("claude", CLAUDE)
    sub = [e for e in events if e.get("agent") == "explore1"]
    assert count(sub, "tool_call") == 1 and count(sub, "tool_result") == 1 and count(sub, "usage") == 2
    assert sub[0]["kind"] == "message" and sub[0]["role"] == "user"


def test_claude_images_become_blobs(tmp_path: Path) -> None:
    out = tmp_path / "s"
    import_to_dir("claude", CLAUDE, out)
    events = list(Session.open(out).events(warn=None))
    imgs = [img for e in events for img in e.get("images", [])]
    assert len(imgs) == 2 and all("data" not in i for i in imgs)
    assert (out / "blobs" / imgs[0]["blob"]).read_bytes() == PIXEL
    # on a stream (no folder for blobs) the bytes stay inline
    streamed, _ = run("claude", CLAUDE)
    inline = [img for e in streamed for img in e.get("images", [])]
    assert base64.b64decode(inline[0]["data"]) == PIXEL


def test_claude_session_id_inside_a_projects_tree() -> None:
    events, _ = run("claude", IMP / "claude" / "projects", session_id="sess-0001")
    assert events[0]["session_id"] == "sess-0001"


# -- Codex --------------------------------------------------------------------------------------


def test_codex_counts_match_the_source() -> None:
    events, report = run("codex", CODEX)
    assert real_users(events) == 2
    assert count(events, "message", role="user", synthetic="harness_context") == 2
    assert count(events, "tool_call") == 4  # function_call x2, custom_tool_call, local_shell_call
    assert count(events, "tool_result") == 4
    assert count(events, "compaction") == 1
    assert report.skipped["event_msg:user_message"] == 2 and report.skipped["event_msg:agent_message"] == 1
    assert events[0]["parent_session_id"] == "11111111-2222-4333-8444-555555555555"


def test_codex_usage_only_when_totals_moved_with_cached_input_apart() -> None:
    events, _ = run("codex", CODEX)
    usage = [e for e in events if e["kind"] == "usage"]
    # four token_count events carry info, two repeat the totals before them
    assert [(u["input"], u["cache_read"], u["output"], u["reasoning"]) for u in usage] == [
        (2000, 3000, 200, 100), (500, 5500, 150, 50), (1500, 2500, 70, 10)]
    assert [u["model"] for u in usage] == ["gpt-5-codex", "gpt-5-codex", "gpt-5"]


def test_codex_tool_calls_without_an_assistant_message_get_an_empty_one() -> None:
    events, report = run("codex", CODEX)
    implicit = [e for e in events if e["kind"] == "message" and e["role"] == "assistant" and e["text"] == ""]
    # call_1, call_2 and call_3 each follow the output of the one before: three steps, and call_4
    assert len(implicit) == 4 == report.implicit_assistants
    failed = [e for e in events if e["kind"] == "tool_result" and e["call_id"] == "call_1"]
    assert failed[0]["is_error"] is True  # exit_code 1


# -- Gemini -------------------------------------------------------------------------------------


def test_gemini_counts_match_the_source() -> None:
    events, report = run("gemini", GEMINI)
    assert count(events, "message", role="user") == 3
    assert count(events, "tool_call") == 3
    assert count(events, "tool_result") == 2  # run_shell_command-3 was still executing
    usage = [e for e in events if e["kind"] == "usage"]
    # output as billed: Gemini's output + its thoughts (docs/usage.md), the thoughts also apart
    assert [(u["input"], u["cache_read"], u["output"], u["reasoning"]) for u in usage] == [
        (800, 1200, 80, 30), (300, 2000, 20, 0), (300, 2100, 20, 5)]
    assert report.skipped["message:info"] == 1 and report.skipped["compression_checkpoint"] == 1
    g1 = [e for e in events if e["kind"] == "message" and e["id"] == "g1"]
    assert len(g1) == 1 and g1[0]["text"].startswith("README describes")  # the later copy wins


def test_gemini_rewind_becomes_a_rewind_event(tmp_path: Path) -> None:
    out = tmp_path / "s"
    import_to_dir("gemini", GEMINI, out)
    events = list(Session.open(out).events(warn=None))
    rewinds = [e for e in events if e["kind"] == "rewind"]
    assert [r["to_turn"] for r in rewinds] == [1]
    texts = [i.get("text") for i in view(Session.open(out))]
    assert "Now list the tests." not in texts and "Instead, count the lines of README.md." in texts


def test_gemini_older_single_json_form() -> None:
    events, _ = run("gemini", GEMINI_LEGACY)
    assert real_users(events) == 1 and count(events, "tool_call") == 1 and count(events, "usage") == 2


# -- opencode -----------------------------------------------------------------------------------


def test_opencode_storage_counts_match_the_source() -> None:
    events, report = run("opencode", OPENCODE)
    assert real_users(events) == 2
    assert count(events, "message", synthetic="opencode") == 1
    assert count(events, "tool_call") == 3
    assert count(events, "tool_result") == 2  # the running edit is left dangling
    assert count(events, "tool_result", is_error=True) == 1
    assert count(events, "usage") == 4  # two step-finish parts, the summary, msg_006's tokens
    comp = [e for e in events if e["kind"] == "compaction"]
    assert len(comp) == 1 and comp[0]["trigger"] == "auto" and comp[0]["summary"].startswith("Summary:")
    assert report.skipped["part:snapshot-v2"] == 1


def test_opencode_sqlite_database(tmp_path: Path) -> None:
    db = opencode_db(tmp_path)
    events, _ = run("opencode", db)
    assert events[0]["session_id"] == "ses_db1" and events[0]["parent_session_id"] == "ses_parent"
    assert real_users(events) == 1 and count(events, "tool_call") == 1 and count(events, "tool_result") == 1
    usage = [e for e in events if e["kind"] == "usage"]
    # output as billed: opencode's output + its reasoning (docs/usage.md)
    assert [(u["input"], u["output"], u["reasoning"], u["cost_usd"]) for u in usage] == [(800, 80, 20, 0.003)]


def test_opencode_database_is_opened_read_only(tmp_path: Path) -> None:
    db = opencode_db(tmp_path)
    before = db.read_bytes()
    db.chmod(0o444)
    run("opencode", db)
    assert db.read_bytes() == before


# -- message arrays -----------------------------------------------------------------------------


def test_openai_array_counts_match_the_source() -> None:
    events, report = run("openai", OPENAI)
    assert real_users(events) == 2 and count(events, "tool_call") == 2 and count(events, "tool_result") == 2
    usage = [e for e in events if e["kind"] == "usage"]
    assert [(u["input"], u["cache_read"], u["output"]) for u in usage] == [(176, 1024, 40), (120, 1200, 30)]
    bad_args = [e for e in events if e["kind"] == "tool_call" and e["call_id"] == "call_b"]
    assert bad_args[0]["args"] == '{"city": "Oslo"'  # not JSON: kept verbatim
    assert report.skipped["role:critic"] == 1


def test_anthropic_array_counts_match_the_source() -> None:
    events, _ = run("anthropic", ANTHROPIC)
    assert count(events, "message", role="system") == 1
    assert real_users(events) == 2 and count(events, "tool_call") == 3 and count(events, "tool_result") == 3
    assert count(events, "tool_result", is_error=True) == 1 and count(events, "usage") == 2
    assert count(events, "reasoning") == 1


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["claude", "codex", "gemini"])
def test_an_invalid_middle_line_is_a_data_error_naming_file_and_line(fmt: str) -> None:
    with pytest.raises(DataError) as err:
        run(fmt, IMP / fmt / "bad" / "invalid-middle.jsonl")
    assert "invalid-middle.jsonl:" in str(err.value)
    events, report = run(fmt, IMP / fmt / "bad" / "invalid-middle.jsonl", lenient=True)
    assert len(report.invalid) == 1 and real_users(events) >= 1


@pytest.mark.parametrize("fmt,source,what", [
    ("claude", CODEX, "not a Claude Code session"),
    ("codex", CLAUDE, "not a Codex CLI session"),
    ("codex", OPENAI, "not a Codex CLI session"),
    ("gemini", OPENAI, "not a Gemini CLI session"),
    ("opencode", OPENAI, "not an opencode session"),
    ("openai", GEMINI, "not an OpenAI messages array"),
])
def test_a_source_with_no_recognised_record_is_an_error(fmt: str, source: Path, what: str) -> None:
    with pytest.raises(DataError) as err:
        run(fmt, source)
    assert what in str(err.value)


def test_out_writes_a_whole_session_or_nothing(tmp_path: Path) -> None:
    out = tmp_path / "s"
    with pytest.raises(DataError):
        import_to_dir("claude", IMP / "claude" / "bad" / "invalid-middle.jsonl", out)
    assert not out.exists() and list(tmp_path.iterdir()) == []
    report = import_to_dir("claude", CLAUDE, out)
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert summary["source"]["format"] == "claude" and summary["events"] == report.events
    assert summary["session_id"] == "sess-0001" and summary["title"].startswith("The cart total is wrong")
    assert summary["log_size"] == (out / "updates.jsonl").stat().st_size
    assert Counter(e["kind"] for e in Session.open(out).events(warn=None)) == report.kinds


def test_todo_tools_become_the_todos_state_facet(tmp_path: Path) -> None:
    src = tmp_path / "todo.json"
    todo_input = {"todos": [{"content": "Fix cart", "status": "completed", "activeForm": "Fixing cart"},
                            {"content": "Update docs", "status": "in_progress", "activeForm": "Updating docs"}]}
    src.write_bytes(orjson.dumps({"messages": [
        {"role": "user", "content": "plan it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "TodoWrite", "input": todo_input}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    ]}))
    events, _ = run("anthropic", src)
    state = [e for e in events if e["kind"] == "state"]
    assert [(s["facet"], s["value"]) for s in state] == [
        ("todos", [{"text": "Fix cart", "status": "completed"}, {"text": "Update docs", "status": "in_progress"}])]


def test_claude_old_layout_sidechain_records_become_agent_events(tmp_path: Path) -> None:
    base = {"sessionId": "old-1", "cwd": "/w", "type": "user"}
    lines = [
        {**base, "parentUuid": None, "isSidechain": False, "uuid": "m1", "timestamp": "2026-10-01T10:00:00.000Z",
         "message": {"role": "user", "content": "main prompt"}},
        {**base, "parentUuid": None, "isSidechain": True, "agentId": "ag7", "uuid": "s1", "timestamp": "2026-10-01T10:00:01.000Z",
         "message": {"role": "user", "content": "sidechain prompt"}},
        {**base, "parentUuid": "m1", "isSidechain": False, "uuid": "m2", "timestamp": "2026-10-01T10:00:02.000Z",
         "message": {"role": "user", "content": "second main prompt"}},
    ]
    src = tmp_path / "old-1.jsonl"
    src.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    events, _ = run("claude", src)
    assert [(e.get("agent"), e["text"]) for e in events if e["kind"] == "message"] == [
        (None, "main prompt"), (None, "second main prompt"), ("ag7", "sidechain prompt")]


_ODD_VALUES = [None, 0, -1, 1.5, True, "", "x", [], {}, [1], {"a": 1}, [{"type": "text"}], [None], {"type": None}, "2026-13-45"]


def _mutate(obj: Any, rng: Any, depth: int = 0) -> None:
    """Put a value of the wrong type somewhere inside obj."""
    import copy

    if isinstance(obj, (dict, list)) and obj:
        key = rng.choice(list(obj)) if isinstance(obj, dict) else rng.randrange(len(obj))
        if rng.random() < 0.4 or depth > 4:
            obj[key] = copy.deepcopy(rng.choice(_ODD_VALUES))
        else:
            _mutate(obj[key], rng, depth + 1)


@pytest.mark.parametrize("fmt,source", [("claude", CLAUDE), ("codex", CODEX), ("gemini", GEMINI), ("gemini", GEMINI_LEGACY),
                                        ("openai", OPENAI), ("anthropic", ANTHROPIC)])
def test_records_of_unexpected_shape_are_data_errors_never_crashes(fmt: str, source: Path, tmp_path: Path) -> None:
    import random

    rng = random.Random(fmt + source.name)
    lines = source.suffix == ".jsonl"
    for _ in range(60):
        if lines:
            records = []
            for raw in source.read_bytes().splitlines():
                try:
                    records.append(orjson.loads(raw))
                except orjson.JSONDecodeError:
                    pass  # the torn tail
            for _ in range(rng.randint(1, 6)):
                _mutate(rng.choice(records), rng)
            data = b"".join(orjson.dumps(r) + b"\n" for r in records)
        else:
            doc = orjson.loads(source.read_bytes())
            for _ in range(rng.randint(1, 6)):
                _mutate(doc, rng)
            data = orjson.dumps(doc)
        target = tmp_path / source.name
        target.write_bytes(data)
        for lenient in (False, True):
            try:
                events, _ = run(fmt, target, lenient=lenient)
            except DataError:
                continue  # one line naming the file (and record): what the CLI prints
            assert_valid_log(events)


def test_edit_tools_become_the_edited_files_state_facet() -> None:
    events, _ = run("claude", CLAUDE)
    edited = [e["value"] for e in main_loop(events) if e["kind"] == "state" and e["facet"] == "edited_files"]
    assert edited == [["/home/dev/shop/cart.py"], ["/home/dev/shop/cart.py", "/home/dev/shop/docs/coupons.md"]]
    codex_events, _ = run("codex", CODEX)  # apply_patch: the file named in the patch header
    assert [e["value"] for e in codex_events if e["kind"] == "state" and e["facet"] == "edited_files"] == [["src/cli.py"]]


def test_codex_agents_md_block_becomes_instructions_carried_past_compaction(tmp_path: Path) -> None:
    events, _ = run("codex", CODEX)
    state = [e["value"] for e in events if e["kind"] == "state" and e["facet"] == "instructions"]
    assert state == [[{"path": "/home/dev/tool/AGENTS.md", "text": "Run ruff before committing."}]]
    out = tmp_path / "s"
    import_to_dir("codex", CODEX, out)
    head = [i for i in view(Session.open(out)) if i.get("synthetic") == "instructions"]
    assert len(head) == 1 and "Run ruff before committing." in head[0]["text"]


def test_claude_command_output_and_interrupts_are_not_user_turns(tmp_path: Path) -> None:
    texts = ["run it", "<local-command-stdout>Set model to opus</local-command-stdout>", "[Request interrupted by user]"]
    src = tmp_path / "c.jsonl"
    lines = [{"type": "user", "sessionId": "c", "parentUuid": f"u{i - 1}" if i else None, "uuid": f"u{i}",
              "timestamp": f"2026-10-01T10:00:0{i}.000Z", "message": {"role": "user", "content": t}} for i, t in enumerate(texts)]
    src.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    events, report = run("claude", src)
    assert [e.get("synthetic") for e in events if e["kind"] == "message"] == [None, "command_output", "interrupted"]
    assert report.user_turns == 1


def test_gemini_rewind_inside_a_turn_drops_the_rest_of_that_turn(tmp_path: Path) -> None:
    recs = [
        {"sessionId": "g", "projectHash": "p", "startTime": "2026-10-03T11:00:00.000Z"},
        {"id": "u1", "timestamp": "2026-10-03T11:00:01.000Z", "type": "user", "content": "first"},
        {"id": "g1", "timestamp": "2026-10-03T11:00:02.000Z", "type": "gemini", "content": "one"},
        {"id": "u2", "timestamp": "2026-10-03T11:00:03.000Z", "type": "user", "content": "second"},
        {"id": "g2", "timestamp": "2026-10-03T11:00:04.000Z", "type": "gemini", "content": "keep me"},
        {"id": "g3", "timestamp": "2026-10-03T11:00:05.000Z", "type": "gemini", "content": "undo me",
         "toolCalls": [{"id": "c1", "name": "ls", "args": {}, "status": "success", "resultDisplay": "a b"}]},
        {"id": "u3", "timestamp": "2026-10-03T11:00:06.000Z", "type": "user", "content": "third, undone too"},
        {"$rewindTo": "g3"},
        {"id": "u4", "timestamp": "2026-10-03T11:00:07.000Z", "type": "user", "content": "fourth"},
    ]
    src = tmp_path / "session-x.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    out = tmp_path / "s"
    import_to_dir("gemini", src, out)
    events = list(Session.open(out).events(warn=None))
    assert [e["to_turn"] for e in events if e["kind"] == "rewind"] == [2]
    assert count(events, "repair", action="drop") == 3  # g3's message, its call and its result
    items = view(Session.open(out))
    assert [i.get("text") for i in items if i["role"] != "tool"] == ["first", "one", "second", "keep me", "fourth"]
    assert not any(i["role"] == "tool" for i in items)


def test_codex_context_window_reaches_summary_json(tmp_path: Path) -> None:
    out = tmp_path / "s"
    import_to_dir("codex", CODEX, out)
    assert orjson.loads((out / "summary.json").read_bytes())["window"] == 272000


# -- which session a tree or database is imported as ------------------------------------------------


def test_a_tree_of_two_sessions_asks_for_one_and_takes_the_one_named(tmp_path: Path) -> None:
    from catty_ctx.errors import UsageError

    tree = tmp_path / "sessions" / "2026" / "10" / "02"
    tree.mkdir(parents=True)
    other = tree / CODEX.name.replace("c0de", "beef")
    other.write_bytes(CODEX.read_bytes().replace(b"c0de", b"beef"))
    (tree / CODEX.name).write_bytes(CODEX.read_bytes())
    with pytest.raises(UsageError, match="holds 2 sessions; name one with --session ID"):
        run("codex", tmp_path / "sessions")
    events, _ = run("codex", tmp_path / "sessions", session_id="00000000beef")
    assert events[0]["session_id"].endswith("beef")
    with pytest.raises(UsageError, match="no Codex session 0000feed in this tree"):
        run("codex", tmp_path / "sessions", session_id="0000feed")


def test_an_opencode_database_of_two_sessions_asks_for_one(tmp_path: Path) -> None:
    from catty_ctx.errors import UsageError

    db = opencode_db(tmp_path)
    con = sqlite3.connect(db)
    row = con.execute("SELECT * FROM session WHERE id = 'ses_db1'").fetchone()
    con.execute(f"INSERT INTO session VALUES ({', '.join('?' * len(row))})", ("ses_db2", *row[1:]))
    con.commit()
    con.close()
    with pytest.raises(UsageError, match="holds 2 sessions; name one with --session ID"):
        run("opencode", db)
    events, _ = run("opencode", db, session_id="ses_db1")
    assert events[0]["session_id"] == "ses_db1"
    with pytest.raises(UsageError, match="no opencode session ses_x in this database"):
        run("opencode", db, session_id="ses_x")


def test_an_opencode_storage_names_a_missing_session(tmp_path: Path) -> None:
    from catty_ctx.errors import UsageError

    with pytest.raises(UsageError, match="no opencode session ses_x in this storage"):
        run("opencode", OPENCODE, session_id="ses_x")


def test_an_opencode_export_document_imports_by_name_and_by_auto() -> None:
    """`opencode export ID` writes {info, messages: [{info, parts}]}: once refused by both."""
    source = IMP / "opencode" / "wild" / "export-document" / "notes-export.json"
    assert detect(source) == "opencode"
    for fmt in ("opencode", "auto"):
        events, report = run(fmt, source)
        assert events[0]["session_id"] == "ses_4c1f9a2b7ffeQx3LkZ0wYt19" and events[0]["cwd"] == "/home/dev/notes"
        assert report.user_turns == 2
        assert [(e["input"], e["cache_read"]) for e in events if e["kind"] == "usage"] == [(1200, 0), (140, 1200), (30, 1380)]
        assert [e["call_id"] for e in events if e["kind"] == "tool_result"] == ["toolu_oc1"]


def test_a_folder_of_several_claude_sessions_is_refused_with_their_ids_dates_and_first_prompts(tmp_path: Path) -> None:
    from support import cli

    src = FIXTURES / "import" / "claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl"
    folder = tmp_path / "proj"
    folder.mkdir()
    for name in ("first-session", "second-session"):
        shutil.copy(src, folder / f"{name}.jsonl")
    proc = cli("import", "claude", str(folder))
    (line,) = proc.stderr.decode().splitlines()  # one line, as every error
    assert proc.returncode == 2 and proc.stdout == b""
    assert "holds 2 sessions; name one with --session ID: first-session (" in line and "; second-session (" in line
    assert line.count("The cart total is wrong") == 2 and re.search(r"\(\d{4}-\d\d-\d\d, ", line)


@pytest.mark.parametrize("fmt", ["gemini", "opencode"])
def test_usage_of_a_gemini_or_opencode_import_equals_usage_of_the_source(tmp_path: Path, fmt: str) -> None:
    """Thinking tokens are billed as output: the import once left them out of `output` (the ledger counts them)."""
    from support import cli

    source = {"gemini": GEMINI, "opencode": OPENCODE}[fmt]
    out = tmp_path / "s"
    import_to_dir(fmt, source, out)
    totals = [orjson.loads(cli("usage", str(p), "--json").stdout)["totals"] for p in (source, out)]
    assert totals[0] == totals[1] and totals[0]["calls"] >= 3

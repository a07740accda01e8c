"""Claude Code files as they are found in the wild import whole (issue: importers faithful to
the wild). Each test names the defect it guards; the fixtures are under
fixtures/import/claude/wild/ and their counts were read off the files by hand.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from catty_ctx.importers.pipeline import import_events

from support import FIXTURES, cli, msg, session_event, write_log

WILD = FIXTURES / "import" / "claude" / "wild"
NULL_PARENTS = WILD / "null-parents" / "wild-null-0001.jsonl"
TWO_SESSIONS = WILD / "two-sessions" / "wild-main-0002.jsonl"
RESUMED = WILD / "resumed-copy" / "wild-new-0003.jsonl"
COMPACT = WILD / "compact-summary" / "wild-compact-0004.jsonl"
REWIND = WILD / "rewind" / "wild-rewind-0005.jsonl"
PARALLEL = WILD / "parallel-tools" / "wild-parallel-0006.jsonl"
CUT = WILD / "cut-file" / "wild-cut-0009.jsonl"
OLD = WILD / "old-subagents" / "wild-old-0010.jsonl"
REWOUND = WILD / "rewound-tip" / "wild-tip-0012.jsonl"
BLANK = WILD / "whitespace-text" / "wild-space-0013.jsonl"
ALONE = WILD / "subagent-alone" / "agent-a7c41e9.jsonl"
WORKFLOW = WILD / "workflow-subagents" / "wild-wf-0014.jsonl"
FOREIGN = WILD / "foreign-session-records" / "wild-own-0015.jsonl"
LIVE = WILD / "live-no-final-newline" / "wild-live-0016.jsonl"
PREAMBLE = "This session is being continued from a previous conversation"


def run(source: Path, **kw: Any) -> tuple[list[dict[str, Any]], Any, list[str]]:
    events: list[dict[str, Any]] = []
    warnings: list[str] = []
    report, _ = import_events("claude", source, events.append, strict=True, warn=warnings.append, **kw)
    return events, report, warnings


def tally(events: list[dict[str, Any]]) -> dict[str, int]:
    main = [e for e in events if not e.get("agent")]
    answered = {e["call_id"] for e in main if e["kind"] == "tool_result"}
    return {
        "user_turns": sum(1 for e in main if e["kind"] == "message" and e["role"] == "user" and not e.get("synthetic")),
        "assistant_calls": sum(1 for e in main if e["kind"] == "message" and e["role"] == "assistant"),
        "tool_pairs": sum(1 for e in main if e["kind"] == "tool_call" and e["call_id"] in answered),
        "usage_events": sum(1 for e in events if e["kind"] == "usage"),
    }


def ok(*args: str) -> bytes:
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


def test_records_with_parent_uuid_null_everywhere_import_whole_in_file_order() -> None:
    """11 records, none linked: once only the last one was imported ("off_branch 10")."""
    events, report, warnings = run(NULL_PARENTS)
    assert tally(events) == {"user_turns": 2, "assistant_calls": 5, "tool_pairs": 3, "usage_events": 5}
    texts = [e["text"] for e in events if e["kind"] == "message"]
    assert texts[0].startswith("Rename the helper") and texts[-1] == "Both files now use parse_config."
    assert report.unlinked == 10 and "off_branch" not in report.skipped
    said = [w for w in warnings if "file order" in w]
    assert len(said) == 1 and "10 messages" in said[0]


def test_a_file_cut_out_of_a_larger_one_keeps_both_stretches() -> None:
    events, report, _ = run(CUT)
    assert tally(events) == {"user_turns": 2, "assistant_calls": 4, "tool_pairs": 2, "usage_events": 4}
    assert report.unlinked == 4 and "off_branch" not in report.skipped


def test_a_file_with_two_sessions_keeps_its_own_id_and_session_picks_the_other(tmp_path: Path) -> None:
    proc = cli("import", "claude", str(TWO_SESSIONS))
    assert proc.returncode == 0, proc.stderr.decode()
    events = [orjson.loads(line) for line in proc.stdout.splitlines()]
    assert events[0]["session_id"] == "wild-main-0002"
    assert tally(events) == {"user_turns": 2, "assistant_calls": 3, "tool_pairs": 1, "usage_events": 3}
    assert b"wild-other-0009 (4 records)" in proc.stderr and b"--session ID" in proc.stderr

    other = tmp_path / "other"
    ok("import", "claude", str(TWO_SESSIONS), "--session", "wild-other-0009", "--out", str(other))
    events = [orjson.loads(line) for line in (other / "updates.jsonl").read_bytes().splitlines()]
    assert events[0]["session_id"] == "wild-other-0009"
    assert tally(events) == {"user_turns": 2, "assistant_calls": 2, "tool_pairs": 0, "usage_events": 2}
    assert [e["text"] for e in events if e["kind"] == "message"][0] == "Start a changelog entry for 1.4."

    missing = cli("import", "claude", str(TWO_SESSIONS), "--session", "wild-none")
    assert missing.returncode == 2 and missing.stdout == b""
    assert missing.stderr.decode().count("\n") == 1 and "wild-main-0002, wild-other-0009" in missing.stderr.decode()


def test_a_resumed_sessions_file_keeps_the_history_it_copied_and_its_own_id() -> None:
    events, report, _ = run(RESUMED)
    assert events[0]["session_id"] == "wild-new-0003"
    assert tally(events) == {"user_turns": 2, "assistant_calls": 3, "tool_pairs": 1, "usage_events": 3}
    assert "other_session" not in report.skipped


def test_the_compact_summary_is_wrapped_once(tmp_path: Path) -> None:
    """Claude Code's summary already opens with its own preamble: the carrier is that text."""
    out = tmp_path / "s"
    ok("import", "claude", str(COMPACT), "--out", str(out))
    items = [orjson.loads(line) for line in ok("resume", str(out)).splitlines()]
    carriers = [i for i in items if i.get("synthetic") == "compaction_summary"]
    assert len(carriers) == 1
    text = carriers[0]["text"]
    assert text.count("This session is being continued") == 1 and text.startswith(PREAMBLE)
    assert "the three commands are ported" in text and "<summary>" not in text


def test_a_summary_without_a_preamble_is_still_wrapped() -> None:
    from catty_ctx.view.head import SUMMARY_PREAMBLE, summary_carrier

    comp = {"mode": "summary", "through_seq": 4, "summary": "Goal: port the CLI."}
    assert summary_carrier(comp).startswith(SUMMARY_PREAMBLE + "\n\n<summary>\nGoal: port the CLI.\n</summary>")


def test_usage_of_the_imported_session_equals_usage_of_the_source_after_a_rewind(tmp_path: Path) -> None:
    """Five calls were made, one on the abandoned branch: the import once counted four."""
    out = tmp_path / "s"
    ok("import", "claude", str(REWIND), "--out", str(out))
    source = orjson.loads(ok("usage", str(REWIND), "--json"))["totals"]
    imported = orjson.loads(ok("usage", str(out), "--json"))["totals"]
    assert source["calls"] == imported["calls"] == 5
    assert source == imported
    events = [orjson.loads(line) for line in (out / "updates.jsonl").read_bytes().splitlines()]
    off = [e for e in events if e["kind"] == "usage" and e.get("off_branch")]
    assert [e["request_id"] for e in off] == ["req_r3"]
    # ...and the abandoned branch's messages stay out of the view
    items = ok("resume", str(out)).decode()
    assert "skip the cache purge" not in items and "keep the cache purge" in items


def test_an_off_branch_usage_event_does_not_measure_the_view(tmp_path: Path) -> None:
    """The context size of a call on an abandoned branch is not the view's."""
    def tokens(extra: list[dict[str, Any]]) -> int:
        s = write_log(tmp_path / f"s{len(extra)}", [
            session_event(), msg("user", "hello", "u1"), msg("assistant", "hi", "a1"),
            {"kind": "usage", "model": "m", "input": 900, "output": 100, "cache_read": 0, "cache_write": 0},
            *extra,
        ])
        return int(orjson.loads(ok("inspect", str(s), "--json"))["tokens"])

    off = {"kind": "usage", "model": "m", "input": 90_000, "output": 100, "cache_read": 0, "cache_write": 0, "off_branch": True}
    assert tokens([off]) == tokens([]) == 1000


def test_parallel_tool_results_linked_to_their_own_call_lines_are_kept() -> None:
    """One line per tool_use, each result linked to its own line: none is an abandoned branch."""
    events, report, _ = run(PARALLEL)
    assert tally(events) == {"user_turns": 1, "assistant_calls": 2, "tool_pairs": 3, "usage_events": 2}
    assert "off_branch" not in report.skipped
    kinds = [e["kind"] for e in events if e["kind"] in ("tool_call", "tool_result")]
    assert kinds == ["tool_call"] * 3 + ["tool_result"] * 3


def test_subagent_responses_logged_as_progress_records_keep_their_usage() -> None:
    events, _, _ = run(OLD)
    by_agent = sorted((e.get("agent") or "", e["request_id"]) for e in events if e["kind"] == "usage")
    assert by_agent == [("", "req_s1"), ("", "req_s2"), ("a7f3", "req_sub1"), ("b2c9", "req_sub2")]


def test_a_cycle_of_parent_links_ends_instead_of_hanging(tmp_path: Path) -> None:
    lines = [
        {"type": "user", "uuid": "a", "parentUuid": "c", "sessionId": "cyc", "timestamp": "2026-10-05T10:00:01.000Z",
         "message": {"role": "user", "content": "first"}},
        {"type": "assistant", "uuid": "b", "parentUuid": "a", "sessionId": "cyc", "timestamp": "2026-10-05T10:00:02.000Z",
         "message": {"id": "msg_1", "model": "m", "role": "assistant", "content": [{"type": "text", "text": "reply"}]}},
        {"type": "user", "uuid": "c", "parentUuid": "b", "sessionId": "cyc", "timestamp": "2026-10-05T10:00:03.000Z",
         "message": {"role": "user", "content": "second"}},
    ]
    src = tmp_path / "cyc.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))
    events, _, _ = run(src)
    assert [e["text"] for e in events if e["kind"] == "message"] == ["first", "reply", "second"]


def test_usage_of_an_imported_session_with_subagents_equals_usage_of_its_project_folder(tmp_path: Path) -> None:
    """The main fixture: a rewind, a <synthetic> response, a subagent file, a torn tail."""
    project = FIXTURES / "import" / "claude" / "projects" / "-home-dev-shop"
    out = tmp_path / "s"
    ok("import", "claude", str(project / "sess-0001.jsonl"), "--out", str(out))
    source = orjson.loads(cli("usage", str(project), "--json").stdout)["totals"]  # (the torn tail: a warning)
    imported = orjson.loads(ok("usage", str(out), "--json"))["totals"]
    assert source == imported and imported["calls"] == 9


def test_a_prompt_typed_while_claude_was_busy_is_a_user_turn() -> None:
    """It reaches the model only as an attachment record; once it was skipped."""
    events, report, _ = run(WILD / "queued-prompt" / "wild-queue-0011.jsonl")
    users = [(e["text"], e.get("synthetic")) for e in events if e["kind"] == "message" and e["role"] == "user"]
    assert users[:2] == [("Add the price column to the export.", None), ("and convert the prices to euros", None)]
    assert users[2][1] == "task_notification"
    assert report.skipped["attachment:deferred_tools_delta"] == 1 and report.skipped["queue-operation"] == 2


def test_session_in_a_tree_finds_a_session_whose_records_sit_in_another_sessions_file(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-dev-wild"
    project.mkdir(parents=True)
    (project / TWO_SESSIONS.name).write_bytes(TWO_SESSIONS.read_bytes())
    (project / RESUMED.name).write_bytes(RESUMED.read_bytes())
    events, _, _ = run(tmp_path / "projects", session_id="wild-other-0009")
    assert events[0]["session_id"] == "wild-other-0009"
    assert tally(events)["user_turns"] == 2
    proc = cli("import", "claude", str(tmp_path / "projects"), "--session", "wild-none")
    assert proc.returncode == 2 and b"no Claude Code session wild-none" in proc.stderr


def test_a_lone_record_that_carries_no_conversation_is_no_news(tmp_path: Path) -> None:
    src = tmp_path / "wild-null-0001.jsonl"
    stray = {"type": "system", "subtype": "local_command", "uuid": "z1", "parentUuid": None, "sessionId": "wild-null-0001",
             "timestamp": "2026-10-05T09:59:00.000Z", "content": "<command-name>/clear</command-name>"}
    lines = RESUMED.read_bytes().replace(b"wild-new-0003", b"wild-null-0001").replace(b"wild-old-0002", b"wild-null-0001")
    src.write_bytes(orjson.dumps(stray) + b"\n" + lines)
    events, report, warnings = run(src)
    assert report.unlinked == 0 and not any("file order" in w for w in warnings)
    assert tally(events)["user_turns"] == 2


def _rewound_with(tmp_path: Path, *extra: dict[str, Any], drop_marks: bool = False) -> Path:
    """The rewound fixture, its `last-prompt` records kept or dropped, more lines appended."""
    lines = [line for line in REWOUND.read_bytes().splitlines() if not (drop_marks and b'"last-prompt"' in line)]
    src = tmp_path / REWOUND.name
    src.write_bytes(b"".join(line + b"\n" for line in lines) + b"".join(orjson.dumps(r) + b"\n" for r in extra))
    return src


def _texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["text"] for e in events if e["kind"] == "message" and e["text"]]


def test_the_branch_the_user_rewound_to_is_imported_not_the_newest_leaf(tmp_path: Path) -> None:
    """Rewound to the first answer and left: the file's newest last-prompt names that answer,
    below which the undone turn still hangs. Once the undone turn was imported as live."""
    events, report, warnings = run(REWOUND)
    assert _texts(events) == ["List the failing tests in ci.log.", "Two tests fail: test_login and test_token."]
    assert tally(events) == {"user_turns": 1, "assistant_calls": 2, "tool_pairs": 1, "usage_events": 4}
    off = [e["request_id"] for e in events if e["kind"] == "usage" and e.get("off_branch")]
    assert off == ["req_t3", "req_t4"] and report.skipped["off_branch"] == 4
    assert not any("last-prompt" in w for w in warnings)
    # without its markers the same file keeps the newest leaf
    events, report, _ = run(_rewound_with(tmp_path, drop_marks=True))
    assert _texts(events)[-1] == "Done: test_token now freezes the clock." and "off_branch" not in report.skipped


def test_a_last_prompt_followed_by_messages_is_stale(tmp_path: Path) -> None:
    """Resumed after the rewind and went on from the old tip: the newest message wins again."""
    more = {"parentUuid": "t08", "isSidechain": False, "type": "user", "sessionId": "wild-tip-0012", "uuid": "t10",
            "timestamp": "2026-10-05T11:01:00.000Z", "message": {"role": "user", "content": "Now test_login."}}
    events, report, _ = run(_rewound_with(tmp_path, more))
    assert _texts(events)[-2:] == ["Done: test_token now freezes the clock.", "Now test_login."]
    assert "off_branch" not in report.skipped


def test_a_last_prompt_naming_a_record_not_in_the_file_is_ignored_with_one_warning(tmp_path: Path) -> None:
    marks = [{"type": "last-prompt", "lastPrompt": "x", "leafUuid": leaf, "sessionId": sid}
             for leaf, sid in (("t04", "wild-tip-0012"), ("gone", "wild-tip-0012"), ("t02", "wild-other-0009"))]
    events, report, warnings = run(_rewound_with(tmp_path, *marks, drop_marks=True))
    assert _texts(events)[-1] == "Done: test_token now freezes the clock." and "off_branch" not in report.skipped
    said = [w for w in warnings if "last-prompt" in w]
    assert len(said) == 1 and "line 12" in said[0] and "gone" in said[0], said  # (another session's marker: not ours)


def test_a_text_block_of_whitespace_alone_never_reaches_the_request(tmp_path: Path) -> None:
    """Claude Code logs "\n\n" text blocks (before a tool_use, or as a whole reply): the
    provider refuses a blank text block in a request, so resume once sent a request it rejects."""
    events, _, _ = run(BLANK)
    assert not [e for e in events if e["kind"] == "message" and e["text"] and not e["text"].strip()]
    assert tally(events) == {"user_turns": 2, "assistant_calls": 3, "tool_pairs": 1, "usage_events": 3}
    out = tmp_path / "s"
    ok("import", "claude", str(BLANK), "--out", str(out))
    request = orjson.loads(ok("resume", str(out), "--format", "anthropic"))
    blocks = [b for m in request["messages"] for b in m["content"] if isinstance(m["content"], list)]
    assert blocks and all(b["text"].strip() for b in blocks if b["type"] == "text")
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user", "assistant"]


def test_a_subagent_transcript_alone_imports_as_its_own_conversation(tmp_path: Path) -> None:
    """Given without its parent's file, every record a sidechain record: once the main view
    was empty (resume: exit 65 "no conversation") and the file was read twice, as its own
    subagent too."""
    events, _, _ = run(ALONE)
    assert events[0]["session_id"] == "agent-a7c41e9"
    assert events[0]["parent_session_id"] == "3f1c9a2e-7d4b-4c10-9e55-00000000a016"
    assert not [e for e in events if e.get("agent")]
    assert tally(events) == {"user_turns": 1, "assistant_calls": 2, "tool_pairs": 1, "usage_events": 2}
    context = next(e for e in events if e["kind"] == "state" and e["facet"] == "prompt_context")["value"]
    assert context["audience"] == "subagent"
    out = tmp_path / "s"
    ok("import", "claude", str(ALONE), "--out", str(out))
    assert b"retry delay" in ok("resume", str(out), "--format", "anthropic")


def test_a_workflows_subagents_are_imported_with_their_parent() -> None:
    """`<id>/subagents/workflows/<run>/agent-*.jsonl` (a `.meta.json` beside each): once left out."""
    events, _, _ = run(WORKFLOW)
    agents = sorted({e["agent"] for e in events if e.get("agent")})
    assert agents == ["wa01", "wa02"]
    assert [e["request_id"] for e in events if e["kind"] == "usage" and e.get("agent")] == [
        "req_wa01_1", "req_wa01_2", "req_wa02_1", "req_wa02_2"]
    assert tally(events) == {"user_turns": 1, "assistant_calls": 2, "tool_pairs": 1, "usage_events": 6}


def test_records_stamped_with_no_or_another_session_id_that_continue_the_file_are_its_own() -> None:
    """No sessionId on two records, an unrelated one on the last four (all linked below the
    file's own): once the last four were dropped with their usage as "another session"."""
    events, report, warnings = run(FOREIGN)
    assert events[0]["session_id"] == "wild-own-0015"
    assert tally(events) == {"user_turns": 2, "assistant_calls": 4, "tool_pairs": 2, "usage_events": 4}
    assert _texts(events)[-1] == "Done: the key now follows uv.lock."
    assert "other_session" not in report.skipped and not any("also holds" in w for w in warnings)


def test_a_live_sessions_last_record_without_its_newline_is_read_without_a_warning() -> None:
    """Claude Code writes the newline of a record with the next one: a complete last line is no torn write."""
    assert not LIVE.read_bytes().endswith(b"\n")
    events, report, warnings = run(LIVE)
    assert report.torn == [] and not any("torn" in w for w in warnings)
    assert _texts(events)[-1] == "Two TODOs: a retry in a.py and logging in b.py."
    proc = cli("import", "claude", str(LIVE))
    assert proc.returncode == 0 and b"torn" not in proc.stderr

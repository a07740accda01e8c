"""Codex rollouts as Codex really writes them (issue 15: importers faithful to the wild).

Each folder under fixtures/import/codex/wild/ holds one rollout of a variant Codex writes
(hand-written, no user's data) and an expected.json whose counts were read off that file:
user turns, assistant messages (with and without text), tool calls, answered pairs, usage
events. The tests below import each one, check those counts, and check the defect each
variant used to hit.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catty_ctx.usage import pipeline as U
from catty_ctx.errors import UsageError
from catty_ctx.fork import resume
from catty_ctx.importers.pipeline import import_events, import_to_dir
from catty_ctx.importers.detect import detect
from catty_ctx.view.integrity import pairing_problems
from catty_ctx.view.providers import to_openai
from catty_ctx.session.store import Session
from catty_ctx.view.fold import view

from support import FIXTURES

WILD = FIXTURES / "import" / "codex" / "wild"
# Codex compresses a rollout idle for a week; the usage ledger does not read those yet, so the
# compressed variant lives beside wild/ (whose every folder also goes through `usage`).
COMPRESSED = FIXTURES / "import" / "codex" / "compressed"
CASES = sorted(p.name for p in WILD.iterdir() if p.is_dir())


def case(name: str, root: Path = WILD) -> tuple[Path, dict[str, Any]]:
    expected = orjson.loads((root / name / "expected.json").read_bytes())
    return root / name / expected["source"], expected


def compressed() -> tuple[Path, dict[str, Any]]:
    return case(".", COMPRESSED)


def run(source: Path, fmt: str = "codex") -> tuple[list[dict[str, Any]], Any]:
    events: list[dict[str, Any]] = []
    report, _ = import_events(fmt, source, events.append, strict=True)
    return events, report


def messages(events: list[dict[str, Any]], role: str) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == "message" and e["role"] == role]


def imported(tmp_path: Path, name: str, fmt: str = "codex") -> Session:
    source, _ = case(name)
    out = tmp_path / name
    import_to_dir(fmt, source, out)
    return Session.open(out)


def test_every_variant_has_a_fixture() -> None:
    assert CASES == ["calls-in-sequence-and-parallel", "chat-completions-document", "cut-after-first-lines",
                     "developer-between-call-and-output", "event-and-item-copies", "event-only",
                     "first-cli-json-document", "fork-restamped-with-spawn-answer", "legacy-header-and-bare-items",
                     "newer-fields-and-rollback", "remote-compaction", "subagent-inherited-prefix"]


@pytest.mark.parametrize("name", CASES)
def test_counts_match_the_source(name: str) -> None:
    source, want = case(name)
    events, report = run(source)
    calls = {e["call_id"] for e in events if e["kind"] == "tool_call"}
    answered = {e["call_id"] for e in events if e["kind"] == "tool_result"}
    assistants = messages(events, "assistant")
    got = {
        "session_id": events[0]["session_id"],
        "parent_session_id": events[0].get("parent_session_id"),
        "user_turns": report.user_turns,
        "assistant_messages": len(assistants),
        "assistant_text_messages": sum(1 for m in assistants if m["text"]),
        "tool_calls": sum(1 for e in events if e["kind"] == "tool_call"),
        "tool_pairs": len(calls & answered),
        "usage_events": sum(1 for e in events if e["kind"] == "usage"),
    }
    assert got == {k: want[k] for k in got}
    assert len(report.torn) == want.get("torn", 0)


@pytest.mark.parametrize("name", CASES)
def test_imported_session_repairs_nothing_and_resumes_in_both_shapes(tmp_path: Path, name: str) -> None:
    _, want = case(name)
    session = imported(tmp_path, name)
    items = view(session)
    assert pairing_problems(items).counts == {"dangling": want["dangling"], "orphan": 0, "duplicate": 0}
    summary = orjson.loads((session.directory / "summary.json").read_bytes())
    if "model" in want:
        assert summary["model"] == want["model"]
    if "created_at" in want:
        assert summary["created_at"] == want["created_at"]
    assert not summary["created_at"].startswith("1970")
    for fmt in ("openai", "anthropic"):
        request, repaired = resume(session, fmt)  # checked against the provider's rules
        assert repaired == [] and request["messages"]


@pytest.mark.parametrize("name", CASES)
def test_usage_of_the_import_equals_usage_of_the_source(tmp_path: Path, name: str) -> None:
    source, want = case(name)
    session = imported(tmp_path, name)
    a, _ = U.usage([str(source)], timezone_name="UTC", use_cache=False)
    b, _ = U.usage([str(session.directory)], timezone_name="UTC", use_cache=False)
    assert a.totals == b.totals
    assert b.totals.get("calls", 0) == want["usage_events"]


# -- one test per defect --------------------------------------------------------------------------


def test_messages_recorded_only_as_events_are_imported_in_order() -> None:
    events, report = run(case("event-only")[0])
    said = [(e["role"], e["text"]) for e in events
            if e["kind"] == "message" and e["role"] in ("user", "assistant") and not e.get("synthetic") and e["text"]]
    assert said == [
        ("user", "List the TODO items in notes.md"),
        ("assistant", "Three TODO items: buy milk (line 3), call Ana (line 7), fix bike (line 9)."),
        ("user", "Which one is oldest?"),
        ("assistant", "I cannot tell from the file: it keeps no dates."),
    ]
    # the prompt comes before the call it asked for, the answer after the call's output
    kinds = [e["kind"] for e in events if e["kind"] in ("message", "tool_call", "tool_result")
             and e.get("role") != "developer" and not e.get("synthetic")]
    assert kinds[:4] == ["message", "message", "tool_call", "tool_result"]
    assert report.user_turns == 2


def test_event_copies_of_response_items_are_not_imported_twice_in_either_order() -> None:
    events, report = run(case("event-and-item-copies")[0])
    texts = [e["text"] for e in events if e["kind"] == "message" and not e.get("synthetic") and e["text"]]
    assert texts == ["Count the lines of notes.md", "notes.md has 12 lines.", "And the words?",
                     "About 90 words; say if you want the exact count.", "Thanks, that is all."]
    assert report.skipped["event_msg:user_message"] == 2 and report.skipped["event_msg:agent_message"] == 2
    # a user_message event of kind environment_context shows harness context: not a turn
    assert report.skipped["event_msg:user_message (harness context)"] == 1 and report.user_turns == 3


def test_a_file_cut_after_its_first_lines_keeps_its_prompt(tmp_path: Path) -> None:
    session = imported(tmp_path, "cut-after-first-lines")
    assert [i["text"] for i in view(session) if i["role"] == "user" and not i.get("synthetic")] == ["Summarise notes.md in one line"]


def test_a_subagent_thread_names_its_parent_and_its_inherited_spawn_call_is_not_dangling(tmp_path: Path) -> None:
    source, want = case("subagent-inherited-prefix")
    events, report = run(source)
    assert events[0]["parent_session_id"] == want["parent_session_id"]  # from source.subagent.thread_spawn alone
    spawn = [e for e in events if e.get("call_id") == "call_spawn1"]
    assert [e["kind"] for e in spawn] == ["tool_call", "tool_result"]
    assert want["parent_session_id"] in spawn[1]["output"] and spawn[1]["is_error"] is False
    # the answer comes before the child's own first turn, so the prefix stays one whole step
    first_own = next(e for e in events if e["kind"] == "message" and e["text"].startswith("Read ci/last.log"))
    assert spawn[1]["seq"] < first_own["seq"]
    assert report.skipped["session_meta:ancestor"] == 1
    contexts = [e["value"] for e in events if e["kind"] == "state" and e["facet"] == "prompt_context"]
    assert contexts[0]["audience"] == "subagent"
    items = view(imported(tmp_path, "subagent-inherited-prefix"))
    assert pairing_problems(items).ok


def test_a_fork_keeps_the_answer_codex_wrote_to_the_spawn_call() -> None:
    events, _ = run(case("fork-restamped-with-spawn-answer")[0])
    results = [e for e in events if e["kind"] == "tool_result" and e["call_id"] == "call_sp2"]
    assert len(results) == 1 and results[0]["output"].startswith("[fork note]")
    assert events[0]["parent_session_id"] == "0199a005-0000-7000-8000-0000000aa005"


def test_calls_after_outputs_stay_separate_steps_and_parallel_calls_one(tmp_path: Path) -> None:
    _, want = case("calls-in-sequence-and-parallel")
    session = imported(tmp_path, "calls-in-sequence-and-parallel")
    steps = [[c["call_id"] for c in i["tool_calls"]] for i in view(session) if i["role"] == "assistant" and i.get("tool_calls")]
    assert steps == want["steps"]
    # an OpenAI request keeps call, output, call, output in the order they happened
    order = []
    for m in to_openai(view(session))["messages"]:
        order += [c["id"] for c in m.get("tool_calls") or ()] or ([m["tool_call_id"]] if m["role"] == "tool" else [])
    assert order == ["call_s1", "call_s1", "call_s2", "call_s2", "call_s3", "call_s3", "call_p1", "call_p2", "call_p1", "call_p2"]


@pytest.mark.parametrize("name", ["legacy-header-and-bare-items", "first-cli-json-document"])
def test_older_forms_are_told_apart_and_keep_their_own_id_and_time(tmp_path: Path, name: str) -> None:
    source, want = case(name)
    assert detect(source) == "codex"
    session = imported(tmp_path, name, fmt="auto")
    summary = orjson.loads((session.directory / "summary.json").read_bytes())
    assert (summary["session_id"], summary["created_at"]) == (want["session_id"], want["created_at"])
    assert {e["ts"][:10] for e in session.events(warn=None)} == {want["created_at"][:10]}


@pytest.mark.parametrize("name,text", [("legacy-header-and-bare-items", "Always run the linter before you commit."),
                                       ("newer-fields-and-rollback", "Use tabs in Makefiles."),
                                       ("first-cli-json-document", "Prefer small commits.")])
def test_instructions_reach_the_view_once(tmp_path: Path, name: str, text: str) -> None:
    items = view(imported(tmp_path, name))
    assert sum(text in (i.get("text") or "") for i in items) == case(name)[1]["instruction_messages"] == 1


def test_the_session_model_is_the_first_own_turn_contexts(tmp_path: Path) -> None:
    events, _ = run(case("subagent-inherited-prefix")[0])
    assert events[0]["model"] == "gpt-5-codex-mini"  # not the parent's, whose copy comes first
    session = imported(tmp_path, "cut-after-first-lines")  # no token count at all
    assert orjson.loads((session.directory / "summary.json").read_bytes())["model"] == "gpt-5"


def test_a_rollback_becomes_a_rewind(tmp_path: Path) -> None:
    _, want = case("newer-fields-and-rollback")
    session = imported(tmp_path, "newer-fields-and-rollback")
    assert [e["to_turn"] for e in session.events(warn=None) if e["kind"] == "rewind"] == want["rewinds"]
    assert [i["text"] for i in view(session) if i["role"] == "user" and not i.get("synthetic")] == want["view_user_texts"]


def test_a_remote_compaction_keeps_the_history_it_was_replaced_by(tmp_path: Path) -> None:
    _, want = case("remote-compaction")
    session = imported(tmp_path, "remote-compaction")
    compactions = [e for e in session.events(warn=None) if e["kind"] == "compaction"]
    assert [(c["summary"], c["summarizer"]) for c in compactions] == [(want["compaction_summary"], "codex-remote")]
    assert any(want["compaction_summary"] in (i.get("text") or "") for i in view(session))


def test_token_counts_without_last_usage_count_what_the_totals_moved_by(tmp_path: Path) -> None:
    lines = [{"timestamp": "2026-09-20T10:00:00.000Z", "type": "session_meta", "payload": {"id": "t1", "timestamp": "2026-09-20T10:00:00.000Z"}},
             {"timestamp": "2026-09-20T10:00:01.000Z", "type": "turn_context", "payload": {"model": "gpt-5"}},
             {"timestamp": "2026-09-20T10:00:02.000Z", "type": "event_msg", "payload": {"type": "user_message", "message": "hi"}}]
    for i, total in enumerate([(1000, 200, 50), (2500, 900, 80)]):
        info = {"total_token_usage": {"input_tokens": total[0], "cached_input_tokens": total[1], "output_tokens": total[2],
                                      "total_tokens": total[0] + total[2]}}
        lines.append({"timestamp": f"2026-09-20T10:00:0{3 + i}.000Z", "type": "event_msg", "payload": {"type": "token_count", "info": info}})
    src = tmp_path / "rollout-t1.jsonl"
    src.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    events, _ = run(src)
    assert [(u["input"], u["cache_read"], u["output"]) for u in events if u["kind"] == "usage"] == [(800, 200, 50), (800, 700, 30)]
    out = tmp_path / "s"
    import_to_dir("codex", src, out)
    a, _ = U.usage([str(src)], timezone_name="UTC", use_cache=False)
    b, _ = U.usage([str(out)], timezone_name="UTC", use_cache=False)
    assert a.totals == b.totals


def write_rollout(path: Path, records: list[tuple[str, str, dict[str, Any]]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps({"timestamp": ts, "type": t, "payload": p}) + b"\n" for ts, t, p in records))
    return path


def test_events_shown_before_their_items_keep_their_order(tmp_path: Path) -> None:
    ts = "2026-09-21T10:00:0%d.000Z"
    src = write_rollout(tmp_path / "rollout-o.jsonl", [
        (ts % 0, "session_meta", {"id": "o", "timestamp": ts % 0}),
        (ts % 1, "event_msg", {"type": "user_message", "message": "first"}),
        (ts % 2, "event_msg", {"type": "agent_message", "message": "second"}),
        (ts % 3, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "first"}]}),
        (ts % 4, "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "second"}]}),
    ])
    events, _ = run(src)
    assert [(e["role"], e["text"], e["ts"]) for e in events if e["kind"] == "message"] == [
        ("user", "first", ts % 3), ("assistant", "second", ts % 4)]


def test_a_call_left_open_in_a_session_of_its_own_stays_for_repair(tmp_path: Path) -> None:
    ts = "2026-09-22T10:00:0%d.000Z"
    src = write_rollout(tmp_path / "rollout-d.jsonl", [
        (ts % 5, "session_meta", {"id": "d", "timestamp": ts % 5}),
        (ts % 1, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run it"}]}),
        (ts % 2, "response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
        (ts % 3, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "stop"}]}),
    ])
    events, _ = run(src)  # older times without a parent are no copy: nothing is answered for it
    assert [e["kind"] for e in events if e.get("call_id") == "c1"] == ["tool_call"]


def test_instructions_in_a_message_after_the_first_turn_context_are_still_found(tmp_path: Path) -> None:
    ts = "2026-09-23T10:00:0%d.000Z"
    block = "<user_instructions>\n\nNo force pushes.\n\n</user_instructions>"
    src = write_rollout(tmp_path / "rollout-i.jsonl", [
        (ts % 0, "session_meta", {"id": "i", "timestamp": ts % 0, "instructions": "No force pushes."}),
        (ts % 1, "turn_context", {"model": "gpt-5"}),
        (ts % 2, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": block}]}),
        (ts % 3, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "push it"}]}),
    ])
    events, _ = run(src)
    assert sum("No force pushes." in e.get("text", "") for e in events if e["kind"] == "message") == 1
    assert events[0]["model"] == "gpt-5"


def test_a_compressed_rollout_is_read_through_zstd_and_found_once_beside_its_plain_copy(tmp_path: Path) -> None:
    source, want = compressed()
    assert detect(source) == "codex"
    events, _ = run(source, fmt="auto")
    assert events[0]["session_id"] == want["session_id"]
    tree = tmp_path / "sessions" / "2026" / "08" / "01"
    tree.mkdir(parents=True)
    shutil.copy(source, tree)
    plain = tree / source.stem  # Codex decompresses a rollout beside the .zst while it resumes it
    plain.write_bytes(subprocess.run(["zstd", "-dcq", str(source)], capture_output=True, check=True).stdout)
    events, _ = run(tmp_path / "sessions")  # one session, not "holds 2 sessions"
    assert events[0]["source"]["path"] == str(plain.resolve())


def test_a_compressed_rollout_without_the_zstd_program_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no zstd on it
    with pytest.raises(UsageError, match="compressed with zstd.*zstd -d"):
        run(compressed()[0])


def test_a_corrupt_compressed_rollout_is_a_data_error(tmp_path: Path) -> None:
    from catty_ctx.errors import DataError

    bad = tmp_path / "rollout-bad.jsonl.zst"
    bad.write_bytes(compressed()[0].read_bytes()[:40])  # cut short
    with pytest.raises(DataError, match="zstd"):
        run(bad)


def test_an_event_only_prompt_keeps_its_image(tmp_path: Path) -> None:
    pixel = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    ts = "2026-09-24T10:00:0%d.000Z"
    src = write_rollout(tmp_path / "rollout-m.jsonl", [
        (ts % 0, "session_meta", {"id": "m", "timestamp": ts % 0}),
        (ts % 1, "event_msg", {"type": "user_message", "message": "what is this?", "images": [pixel], "local_images": ["/x.png"]}),
        (ts % 2, "event_msg", {"type": "agent_message", "message": "A single white pixel."}),
    ])
    out = tmp_path / "s"
    import_to_dir("codex", src, out)
    prompt = next(i for i in view(Session.open(out)) if i["role"] == "user")
    assert prompt["text"] == "what is this?" and [img["media_type"] for img in prompt["images"]] == ["image/png"]
    assert (out / "blobs" / prompt["images"][0]["blob"]).is_file()


def test_a_folder_of_compressed_rollouts_is_told_apart_as_codex(tmp_path: Path) -> None:
    tree = tmp_path / "archived_sessions"
    tree.mkdir()
    shutil.copy(compressed()[0], tree)
    assert detect(tree) == "codex"


# -- any mix of the two records ------------------------------------------------------------------

FORMS = ("item", "event", "item+event", "event+item")


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(("user", "assistant", "call")), st.sampled_from(FORMS)), min_size=1, max_size=12))
def test_any_mix_of_items_and_event_copies_imports_each_message_once_in_order(turns: list[tuple[str, str]]) -> None:
    """Each message recorded as an item, an event, or both in either order: imported once, in place."""
    import tempfile

    records: list[tuple[str, str, dict[str, Any]]] = [("2026-09-25T10:00:00.000Z", "session_meta", {"id": "h"})]
    want: list[tuple[str, str]] = []
    for n, (role, form) in enumerate(turns):
        ts = f"2026-09-25T10:{n // 60:02d}:{n % 60:02d}.500Z"
        if role == "call":
            records += [(ts, "response_item", {"type": "function_call", "name": "ls", "arguments": "{}", "call_id": f"c{n}"}),
                        (ts, "response_item", {"type": "function_call_output", "call_id": f"c{n}", "output": "ok"})]
            want.append(("call", f"c{n}"))
            continue
        text = f"{role} text {n}"
        part = "output_text" if role == "assistant" else "input_text"
        item = (ts, "response_item", {"type": "message", "role": role, "content": [{"type": part, "text": text}]})
        event = (ts, "event_msg", {"type": "user_message" if role == "user" else "agent_message", "message": text})
        records += {"item": [item], "event": [event], "item+event": [item, event], "event+item": [event, item]}[form]
        want.append((role, text))
    with tempfile.TemporaryDirectory() as tmp:
        events, _ = run(write_rollout(Path(tmp) / "rollout-h.jsonl", records))
    got = [("call", e["call_id"]) if e["kind"] == "tool_call" else (e["role"], e["text"])
           for e in events if e["kind"] == "tool_call" or (e["kind"] == "message" and e["text"])]
    assert got == want


def test_a_developer_or_system_message_between_a_call_and_its_output_does_not_part_them(tmp_path: Path) -> None:
    """Codex records a permissions or model change when it happens, mid-turn: once the message
    parted each call from its output (a fresh import: dangling calls and displaced results)."""
    events, _ = run(case("developer-between-call-and-output")[0])
    order = [(e["kind"], e.get("call_id") or e.get("role")) for e in events if e["kind"] in ("message", "tool_call", "tool_result")]
    assert order == [("message", "user"), ("message", "assistant"), ("tool_call", "call_d1"), ("tool_result", "call_d1"),
                     ("message", "developer"), ("message", "assistant"), ("tool_call", "call_d2"), ("tool_call", "call_d3"),
                     ("tool_result", "call_d2"), ("tool_result", "call_d3"), ("message", "system"), ("message", "assistant")]
    session = imported(tmp_path, "developer-between-call-and-output")
    assert pairing_problems(view(session)).counts == {"dangling": 0, "orphan": 0, "duplicate": 0}


def test_a_document_of_chat_completions_messages_imports() -> None:
    """`{session, items}` whose items are `role`/`content`/`tool_calls`/`tool_call_id`
    messages: once refused as "no conversation"."""
    source, _ = case("chat-completions-document")
    assert detect(source) == "codex"
    events, _ = run(source)
    calls = [(e["call_id"], e["args"]) for e in events if e["kind"] == "tool_call"]
    assert calls == [("call_cc1", {"command": ["wc", "-l", "setup.py"]}), ("call_cc2", {"command": ["wc", "-l", "pyproject.toml"]})]
    texts = [e["text"] for e in messages(events, "assistant") if e["text"]]
    assert texts == ["setup.py has 57 lines.", "Checking.", "There is no pyproject.toml in this folder."]
    ids = [e["id"] for e in events if e["kind"] == "message"]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("name", ["instructions-only-header.jsonl", "instructions-only-session-meta.jsonl"])
def test_a_rollout_holding_only_instructions_is_no_conversation(tmp_path: Path, name: str) -> None:
    """Once imported with exit 0 as one user message; docs/import.md promises exit 65, nothing written."""
    from support import cli

    source = FIXTURES / "import" / "codex" / "bad" / name
    out = tmp_path / "s"
    proc = cli("import", "codex", str(source), "--out", str(out))
    assert proc.returncode == 65 and b"no conversation" in proc.stderr and not out.exists()
    proc = cli("import", "auto", str(source))
    assert proc.returncode == 65 and proc.stdout == b""

"""The extractive summariser: grok-build's nine sections, built from the items, deterministic."""
from __future__ import annotations

from catty_ctx.compact.extractive import SECTIONS, extractive_summary, parse_sections, trim
from catty_ctx.compact.ladder import SummaryRequest
from catty_ctx.compact.extractive import ExtractiveSummarizer

ITEMS = [
    {"seq": 1, "role": "system", "text": "sys"},
    {"seq": 2, "role": "user", "text": "Fix `parse_item` in src/parse.py; never change the public API."},
    {"seq": 3, "role": "assistant", "text": "Reading the parser first.", "tool_calls": [
        {"call_id": "c1", "name": "read_file", "args": {"path": "src/parse.py"}},
        {"call_id": "c2", "name": "run_terminal_cmd", "args": {"command": "pytest -q"}},
    ]},
    {"seq": 4, "role": "tool", "call_id": "c1", "output": "def parse_item(x): ...", "is_error": False},
    {"seq": 5, "role": "tool", "call_id": "c2", "output": "collected 3\nE   AssertionError: None != []\n1 failed", "is_error": True},
    {"seq": 6, "role": "assistant", "text": "The early return gives None.", "tool_calls": [
        {"call_id": "c3", "name": "edit_file", "args": {"path": "src/parse.py", "old": "None", "new": "[]"}},
        {"call_id": "c4", "name": "run_terminal_cmd", "args": {"command": "pytest -q"}},
        {"call_id": "c5", "name": "run_terminal_cmd", "args": {"command": "ruff check"}},
    ]},
    {"seq": 7, "role": "tool", "call_id": "c3", "output": "ok", "is_error": False},
    {"seq": 8, "role": "tool", "call_id": "c4", "output": "3 passed", "is_error": False},
    {"seq": 9, "role": "tool", "call_id": "c5", "output": "error: ruff not found", "is_error": True},
    {"seq": 10, "role": "assistant", "text": "Tests pass; lint is not installed."},
    {"seq": 11, "role": "user", "text": "Also add a test for parse_item('')."},
]
STATE = {"todos": [{"text": "add the empty-input test", "status": "in_progress"}], "todos_done": 2}


def _sections(items: list = ITEMS, state: dict = STATE) -> dict[str, list[str]]:
    return parse_sections(extractive_summary(items, state))


def test_all_nine_sections_in_order() -> None:
    text = extractive_summary(ITEMS, STATE)
    positions = [text.index(f"## {i}. {title}") for i, title in enumerate(SECTIONS, 1)]
    assert positions == sorted(positions)


def test_primary_request_is_the_first_user_message() -> None:
    assert _sections()["Primary Request and Intent"] == [ITEMS[1]["text"]]


def test_key_concepts_are_identifier_like_words() -> None:
    concepts = _sections()["Key Technical Concepts"][0]
    assert "parse_item" in concepts and "src/parse.py" in concepts


def test_files_read_and_edited() -> None:
    assert _sections()["Files and Code Sections"] == ["- `src/parse.py`: read, edited"]


def test_errors_and_how_they_ended() -> None:
    errors = _sections()["Errors and Fixes"]
    assert errors[0].startswith('- [seq 5] run_terminal_cmd(command="pytest -q") failed: E   AssertionError: None != []')
    assert errors[0].endswith("→ then run_terminal_cmd succeeded at seq 8")
    assert errors[1].endswith("failed: error: ruff not found → unresolved")


def test_problem_solving_has_steps_and_commands_run() -> None:
    steps = _sections()["Problem Solving"]
    assert "- [seq 3] Reading the parser first." in steps and "- ran `pytest -q`" in steps and "- ran `ruff check`" in steps


def test_every_user_message_and_long_ones_trimmed_with_a_marker() -> None:
    long = "L" * 5000
    users = _sections(ITEMS + [{"seq": 12, "role": "user", "text": long}])["All User Messages"]
    assert users[0] == f"- [seq 2] {ITEMS[1]['text']}" and users[1] == f"- [seq 11] {ITEMS[-1]['text']}"
    assert "characters trimmed" in users[2] and len(users[2]) < 2200
    assert trim(long, 2000).startswith("L" * 1333)


def test_multi_line_user_messages_parse_back_whole() -> None:
    users = _sections([{"seq": 2, "role": "user", "text": "line one\n- not a bullet\nline three"}])["All User Messages"]
    assert users == ["- [seq 2] line one\n  - not a bullet\n  line three"]


def test_pending_tasks_from_the_todos() -> None:
    assert _sections()["Pending Tasks"] == ["- [in_progress] add the empty-input test", "- (2 done)"]


def test_current_work_is_the_last_assistant_text() -> None:
    assert _sections()["Current Work"] == ["Tests pass; lint is not installed."]


def test_next_step_answers_a_pending_user_message_else_the_todo() -> None:
    assert _sections()["Optional Next Step"][0].startswith("Answer the latest user message: Also add a test")
    assert _sections(ITEMS[:-1])["Optional Next Step"] == ["Continue with the in progress task: add the empty-input test"]


def test_same_items_same_summary() -> None:
    assert extractive_summary(ITEMS, STATE) == extractive_summary(ITEMS, STATE)


def test_an_earlier_summary_in_the_input_is_carried_forward() -> None:
    first = extractive_summary(ITEMS, STATE)
    carrier = {"role": "user", "synthetic": "compaction_summary", "text": f"preamble\n\n<summary>\n{first}\n</summary>"}
    later = [{"seq": 1, "role": "system", "text": "sys"}, {"seq": 11, "role": "user", "text": ITEMS[-1]["text"]}, carrier,
             {"seq": 20, "role": "user", "text": "Now update the changelog."},
             {"seq": 21, "role": "assistant", "text": "ok", "tool_calls": [{"call_id": "c9", "name": "write_file", "args": {"path": "CHANGELOG.md"}}]},
             {"seq": 22, "role": "tool", "call_id": "c9", "output": "ok", "is_error": False}]
    s = _sections(later, {})
    assert s["Primary Request and Intent"] == [ITEMS[1]["text"]]
    assert [u.split("]")[0] for u in s["All User Messages"]] == ["- [seq 2", "- [seq 11", "- [seq 20"]
    assert "- `src/parse.py`: read, edited" in s["Files and Code Sections"] and "- `CHANGELOG.md`: edited" in s["Files and Code Sections"]
    assert any("ruff not found" in e for e in s["Errors and Fixes"])


def test_the_summarizer_interface_reports_one_successful_attempt() -> None:
    res = ExtractiveSummarizer().summarize(SummaryRequest(ITEMS, STATE))
    assert res.summary and res.stage == "verbatim" and res.attempts[0]["outcome"] == "success" and "total_ms" in res.timings


def _call(seq: int, cid: str, name: str, args: dict) -> dict:
    return {"seq": seq, "role": "assistant", "text": "", "tool_calls": [{"call_id": cid, "name": name, "args": args}]}


def _res(seq: int, cid: str, output: str, error: bool) -> dict:
    return {"seq": seq, "role": "tool", "call_id": cid, "output": output, "is_error": error}


def test_an_error_is_fixed_only_when_the_same_target_later_succeeds() -> None:
    """A later success of the same tool on another command or file fixes nothing; a success
    on the same command (whitespace aside) or the same path does."""
    items = [
        {"seq": 1, "role": "user", "text": "make it pass"},
        _call(2, "a", "run_terminal_cmd", {"command": "pytest -q"}), _res(3, "a", "1 failed", True),
        _call(4, "b", "run_terminal_cmd", {"command": "ls"}), _res(5, "b", "src tests", False),
        _call(6, "c", "edit_file", {"path": "a.py"}), _res(7, "c", "Error: no match", True),
        _call(8, "d", "edit_file", {"path": "b.py"}), _res(9, "d", "ok", False),
        _call(10, "e", "run_terminal_cmd", {"command": "pytest  -q"}), _res(11, "e", "3 passed", False),
    ]
    errors = _sections(items, {})["Errors and Fixes"]
    assert errors[0].endswith("→ then run_terminal_cmd succeeded at seq 11")
    assert errors[1].endswith("failed: Error: no match → unresolved")

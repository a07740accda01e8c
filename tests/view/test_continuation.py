"""The continuation state: versioned, built from state events and from edit/write calls."""
from __future__ import annotations

from catty_ctx.view.head import CONTINUATION_VERSION, HeadState, continuation_state, render_state


def _ev(seq: int, kind: str, **kw: object) -> dict:
    return {"v": 1, "seq": seq, "ts": "t", "kind": kind, **kw}


def _state(*events: dict) -> HeadState:
    h = HeadState()
    for e in events:
        h.track(e)
    return h


def test_every_facet_is_carried_and_the_structure_is_versioned() -> None:
    h = _state(
        _ev(1, "state", facet="skills", value=[{"name": "pdf", "description": "read PDFs", "path": "s/pdf"}]),
        _ev(2, "state", facet="mcp", value=[{"name": "github", "tools": ["issues", "prs"]}]),
        _ev(3, "state", facet="memory", value=["prefers tabs"]),
        _ev(4, "state", facet="plan", value="1. split 2. test"),
        _ev(5, "state", facet="instructions", value=[{"path": "AGENTS.md", "text": "x"}]),
    )
    cs = continuation_state(h)
    assert cs["version"] == CONTINUATION_VERSION == 1
    text = render_state(cs)
    for needle in ("- prefers tabs", "Plan: 1. split 2. test", "Instruction files in effect: AGENTS.md"):
        assert needle in text
    assert cs["skills"] == [{"name": "pdf", "description": "read PDFs"}] and cs["mcp"] == [{"name": "github", "tools": ["issues", "prs"]}]
    assert "pdf" not in text  # the announcer lists skills and MCP servers after the head


def test_latest_facet_event_wins() -> None:
    h = _state(_ev(1, "state", facet="todos", value=[{"text": "a", "status": "pending"}]),
               _ev(2, "state", facet="todos", value=[{"text": "a", "status": "completed"}]))
    cs = continuation_state(h)
    assert cs["todos"] == [] and cs["todos_done"] == 1


def test_edited_files_merge_the_facet_and_calls_and_skip_failed_only_edits() -> None:
    h = _state(
        _ev(1, "state", facet="edited_files", value=["README.md"]),
        _ev(2, "tool_call", call_id="a", name="Edit", args={"file_path": "src/x.py"}), _ev(3, "tool_result", call_id="a", output="ok", is_error=False),
        _ev(4, "tool_call", call_id="b", name="str_replace_based_edit_tool", args={"path": "src/y.py"}),  # no result yet: counts
        _ev(5, "tool_call", call_id="c", name="write_file", args={"path": "src/z.py"}), _ev(6, "tool_result", call_id="c", output="denied", is_error=True),
        _ev(7, "tool_call", call_id="d", name="read_file", args={"path": "src/r.py"}), _ev(8, "tool_result", call_id="d", output="", is_error=False),
    )
    assert continuation_state(h)["edited_files"] == ["README.md", "src/x.py", "src/y.py"]


def test_nothing_to_carry_renders_nothing() -> None:
    assert render_state(continuation_state(HeadState())) == ""

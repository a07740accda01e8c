"""The project's instruction files in the view (docs/compact.md#the-compacted-view): a head
does not inject a file the kept system prompt already carries, and a subagent's view starts
with the project's files (the seed: subagents get the full AGENTS.md), before and after its
own compaction."""
from __future__ import annotations

from pathlib import Path

from catty_ctx.compact.pipeline import compact_session
from catty_ctx.session.store import Session
from catty_ctx.subagents import subagent_session
from catty_ctx.view.fold import view
from support import msg, session_event, write_log

AGENTS = "Never touch vendor/; run make lint before committing."


def _texts(items: list[dict]) -> str:
    return "\n".join(str(it.get("text")) for it in items)


def test_instructions_the_system_prompt_carries_appear_once_after_a_compaction(tmp_path: Path) -> None:
    events = [session_event(window=200_000), msg("system", f"You are a coding agent.\n\n# AGENTS.md\n{AGENTS}"),
              {"kind": "state", "facet": "instructions", "value": [{"path": "AGENTS.md", "text": AGENTS},
                                                                     {"path": "docs/AGENTS.md", "text": "Docs use British spelling."}]}]
    for i in range(3):
        events += [msg("user", f"turn {i} " + "u" * 200, f"u{i}"), msg("assistant", f"step {i}", f"a{i}")]
    s = write_log(tmp_path / "s", events)
    assert _texts(view(s)).count(AGENTS) == 1
    assert compact_session(Session.open(s), force=True).status == "compacted"
    after = view(s)
    assert _texts(after).count(AGENTS) == 1  # the system item's copy, not a second one
    assert _texts(after).count("Docs use British spelling.") == 1  # a file the system prompt lacks is injected


def test_a_subagents_view_holds_the_projects_agents_md_before_and_after_its_compaction(tmp_path: Path) -> None:
    events = [session_event(window=200_000), msg("system", "sys"),
              {"kind": "state", "facet": "instructions", "value": [{"path": "AGENTS.md", "text": AGENTS}]},
              msg("user", "explore the parser", "u0")]
    for i in range(3):
        events += [msg("user", f"sub turn {i} " + "u" * 200, f"su{i}", agent="sa-1"), msg("assistant", f"found {i}", f"sa{i}", agent="sa-1")]
    s = write_log(tmp_path / "s", events)
    with subagent_session(Session.open(s), "sa-1") as sub:
        assert _texts(view(sub)).count(AGENTS) == 1
        seqs = sub.origin["seqs"] if sub.origin else []
        assert len(seqs) == 2 + 6 and seqs[2:] == [e for e in range(4, 10)]  # the parent's seqs of its own events
    from catty_ctx.agent_compact import compact_agent

    compact_agent(str(s), "sa-1", force=True)
    with subagent_session(Session.open(s), "sa-1") as sub:
        items = view(sub)
        assert any(it.get("synthetic") == "compaction_summary" for it in items)
        assert _texts(items).count(AGENTS) == 1


def test_handles_of_outputs_moved_to_blobs_are_carried_across_a_compaction(tmp_path: Path) -> None:
    """A result too large to keep inline is a blob the agent reads by its handle; the compaction
    folds the result away, so the head's reminder lists the handle."""
    import orjson

    from support import cli

    events = [{"kind": "message", "id": "u1", "role": "user", "text": "dump the table"},
              {"kind": "message", "id": "a1", "role": "assistant", "text": ""},
              {"kind": "tool_call", "call_id": "c1", "name": "read_file", "args": {"path": "big.csv"}},
              {"kind": "tool_result", "call_id": "c1", "output": "row,value\n" * 8_000, "is_error": False},
              {"kind": "message", "id": "a2", "role": "assistant", "text": "read it"}]
    s = tmp_path / "s"
    cli("append", str(s), "--create", "-q", input=b"".join(orjson.dumps(e) + b"\n" for e in events), check=True)
    log = [orjson.loads(line) for line in (s / "updates.jsonl").read_bytes().splitlines()]
    handle = next(e["blob"] for e in log if e["kind"] == "tool_result")
    cli("compact", str(s), "--force", check=True)
    reminder = next(it["text"] for it in view(s) if it.get("synthetic") == "continuation_state")
    assert handle in reminder and "catty-ctx blob" in reminder

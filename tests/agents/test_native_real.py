"""Issue 26's round trip on transcripts the real, pinned Claude Code and Codex CLIs write here
(offline, against the fake servers): with tool calls, a resume and compactions, `import`
→ `repair --check` 0 → `resume` valid for both providers → usage of the import = usage of
the source → the user's turns kept; and the native file read directly answers as the import
pipe does. The stored copies under fixtures/agents/ get the same checks without the CLIs
(test_agent_fixtures.py)."""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from agents.anthropic_fake import FakeAnthropic
from agents.fixtures import require
from agents.netns import LoopbackNamespace
from agents.openai_fake import FakeResponses
from agents.roundtrip import (
    NATIVE_PENDING,
    check_round_trip,
    native_equals_pipe,
    resumed_tool_ids,
)
from agents.runner import Claude, Codex, read_jsonl
from agents.scenarios import ERROR, Written, claude_session, codex_session


def homes(tmp_path_factory: pytest.TempPathFactory, agent: str) -> tuple[Path, Path]:
    """A fresh HOME and project folder, for one module's session."""
    tmp = tmp_path_factory.mktemp(f"{agent}-real")
    (tmp / "project").mkdir()
    return tmp / "home", tmp / "project"


@pytest.fixture(scope="module")
def claude_written(loopback: LoopbackNamespace, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Written]:
    exe = require("claude")
    with FakeAnthropic(loopback.listen()) as server:
        yield claude_session(Claude(loopback, server, exe, *homes(tmp_path_factory, "claude")))


@pytest.fixture(scope="module")
def codex_written(loopback: LoopbackNamespace, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Written]:
    exe = require("codex")
    with FakeResponses(loopback.listen()) as server:
        yield codex_session(Codex(loopback, server, exe, *homes(tmp_path_factory, "codex")))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.long  # (its module's real runs are made for it first)
@pytest.mark.agents("claude")
def test_claude_wrote_tool_calls_a_resume_and_both_compactions(claude_written: Written) -> None:
    records = read_jsonl(claude_written.path)
    assert {r.get("sessionId") for r in records if "sessionId" in r} == {claude_written.session_id}  # the resumes appended
    calls = [b for r in records if r.get("type") == "assistant" for b in r["message"]["content"] if b.get("type") == "tool_use"]
    assert [c["name"] for c in calls] == ["Bash"] * 3
    triggers = [r["compactMetadata"]["trigger"] for r in records if r.get("subtype") == "compact_boundary"]
    assert triggers == ["manual", "auto"]
    assert any(ERROR in orjson.dumps(r).decode() for r in records)


@pytest.mark.agents("codex")
def test_codex_wrote_tool_calls_a_resume_and_an_automatic_compaction(codex_written: Written) -> None:
    records = read_jsonl(codex_written.path)
    payloads = [r.get("payload") or {} for r in records]
    assert [p["name"] for p in payloads if p.get("type") == "function_call"] == ["exec_command"] * 2
    assert sum(1 for r in records if r["type"] == "compacted") == 1
    assert sum(1 for r in records if r["type"] == "session_meta") >= 1
    # the compaction request Codex sent, then the next turn carries the summary
    compaction = [b for b in codex_written.bodies if "CONTEXT CHECKPOINT COMPACT" in orjson.dumps(b["input"][-1]).decode()]
    assert len(compaction) == 1


@pytest.mark.agents("claude")
def test_claude_transcript_round_trip(claude_written: Written, tmp_path: Path) -> None:
    before = digest(claude_written.path)
    check_round_trip(claude_written.path, tmp_path / "import", claude_written.prompts)
    assert digest(claude_written.path) == before


@pytest.mark.agents("codex")
def test_codex_rollout_round_trip(codex_written: Written, tmp_path: Path) -> None:
    before = digest(codex_written.path)
    check_round_trip(codex_written.path, tmp_path / "import", codex_written.prompts)
    assert digest(codex_written.path) == before


@pytest.mark.agents("claude")
def test_resume_after_claude_compacted_keeps_the_messages_claude_kept(claude_written: Written, tmp_path: Path) -> None:
    """After its automatic compaction Claude Code re-sent the summary and then, verbatim, the
    messages of its `preservedSegment` (the last call and its result): the resumed import holds
    them too, not the summary alone."""
    last = claude_written.bodies[-1]["messages"]
    sent = {b["id"] for m in last if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_use"}
    assert sent, "Claude Code kept no call after its compaction: the scenario no longer tests this"
    assert sent <= resumed_tool_ids(claude_written.path, tmp_path / "import")


@NATIVE_PENDING
@pytest.mark.agents("claude")
def test_claude_transcript_read_natively_as_the_import_pipe(claude_written: Written) -> None:
    native_equals_pipe(claude_written.path)


@NATIVE_PENDING
@pytest.mark.agents("codex")
def test_codex_rollout_read_natively_as_the_import_pipe(codex_written: Written) -> None:
    native_equals_pipe(codex_written.path)



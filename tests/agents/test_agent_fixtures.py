"""The stored copies of what the pinned CLIs wrote (fixtures/agents/, recorded by
record_fixtures.py): the same round trip and native reading as test_native_real.py, without
the CLIs, so they hold on every machine."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from support import FIXTURES

from agents.roundtrip import (
    NATIVE_PENDING,
    check_round_trip,
    native_equals_pipe,
    resumed_tool_ids,
)
from agents.runner import read_jsonl

STORED = sorted((FIXTURES / "agents").glob("*/*/scenario.json"))
IDS = [f"{p.parent.parent.name}/{p.parent.name}" for p in STORED]


def scenario(manifest: Path) -> tuple[Path, dict[str, Any]]:
    doc = orjson.loads(manifest.read_bytes())
    return manifest.parent / doc["file"], doc


def test_every_cli_has_stored_sessions() -> None:
    assert sorted(p.parent.parent.name.split("-")[0] for p in STORED) == ["claude", "codex", "grok"]


@pytest.mark.parametrize("manifest", STORED, ids=IDS)
def test_round_trip(manifest: Path, tmp_path: Path) -> None:
    source, doc = scenario(manifest)
    check_round_trip(source, tmp_path / "import", doc["prompts"])


@pytest.mark.parametrize("manifest", [p for p in STORED if "claude-" in str(p)], ids=[i for i in IDS if i.startswith("claude-")])
def test_claude_compactions_keep_their_preserved_segment(manifest: Path, tmp_path: Path) -> None:
    """Each compact_boundary names the records Claude Code kept verbatim after its summary; the
    calls among them that the view still holds after the last compaction are resumed."""
    source, _ = scenario(manifest)
    records = read_jsonl(source)
    by_uuid = {r["uuid"]: r for r in records if "uuid" in r}
    last = [r for r in records if r.get("subtype") == "compact_boundary"][-1]
    kept = last["compactMetadata"]["preservedMessages"]["uuids"]
    calls = {b["id"] for u in kept for b in by_uuid[u]["message"]["content"]
             if isinstance(b, dict) and b.get("type") == "tool_use"}
    assert calls, "the stored session's last compaction kept no call: it no longer tests this"
    assert calls <= resumed_tool_ids(source, tmp_path / "import")


@NATIVE_PENDING
@pytest.mark.parametrize("manifest", STORED, ids=IDS)
def test_read_natively_as_the_import_pipe(manifest: Path) -> None:
    native_equals_pipe(scenario(manifest)[0])

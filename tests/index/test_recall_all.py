"""recall_search with scope "all": every session of the project (Claude Code's transcripts of
its folder, Codex rollouts started in it), the same through the index as without it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.usage_trees import codex_rollout

from catty_ctx.agents.recall import Recall, RecallError
from catty_ctx.agents.recall_all import recall_search
from catty_ctx.index import Index

MARK = "E-9931 disk quota exceeded"


def _transcript(path: Path, sid: str, cwd: str, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    base = {"sessionId": sid, "cwd": cwd, "isSidechain": False, "timestamp": "2026-03-01T10:00:00Z"}
    path.write_text("\n".join(json.dumps(r) for r in (
        {**base, "type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": f"run it: {text}"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1", "requestId": "r1",
         "message": {"id": "m1", "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": "ok"}],
                     "usage": {"input_tokens": 1, "output_tokens": 1}}})) + "\n")


def test_scope_all_finds_every_session_of_the_project_and_no_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "work" / "shop"
    project.mkdir(parents=True)
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("CATTY_CTX_INDEX", str(tmp_path / "index.sqlite"))
    slug = "".join(c if c.isalnum() else "-" for c in str(project))
    for sid in ("s-1", "s-2"):
        _transcript(claude / "projects" / slug / f"{sid}.jsonl", sid, str(project), MARK)
    _transcript(claude / "projects" / "-elsewhere" / "s-3.jsonl", "s-3", "/elsewhere", MARK)
    recall = Recall(cwd=str(project))
    without = recall_search(recall, "quota exceeded", scope="all")
    assert without["scope"] == "all" and sorted(m["session"] for m in without["matches"]) == ["s-1", "s-2"] and not without["more"]
    assert recall_search(recall, "quota exceeded", scope="all", limit=1)["more"] is True
    # through the index: the same matches
    Index().update([str(claude / "projects" / slug)])
    assert sorted(map(repr, recall_search(recall, "quota exceeded", scope="all")["matches"])) == sorted(map(repr, without["matches"]))
    for bad in ({"scope": "everything"}, {"scope": "all", "limit": 0}):
        with pytest.raises(RecallError):
            recall_search(recall, "x", **bad)
    with pytest.raises(RecallError):
        recall_search(recall, "(", regex=True, scope="all")


def test_scope_all_takes_the_codex_rollouts_started_in_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("CATTY_CTX_INDEX", str(tmp_path / "index.sqlite"))
    day = tmp_path / "codex" / "sessions" / "2026" / "03" / "01"
    day.mkdir(parents=True)
    for name, cwd in (("a", str(tmp_path)), ("b", "/somewhere/else")):
        path = day / f"rollout-2026-03-01T10-00-00-0199a000-0000-7000-8000-00000000000{name == 'a' and 1 or 2}.jsonl"
        codex_rollout(path, [{"ts": "2026-03-01T10:00:00.000Z", "model": "gpt-5", "last": {"input_tokens": 1, "cached_input_tokens": 0,
                                                                                          "output_tokens": 1, "reasoning_output_tokens": 0}}],
                      session_id=f"0199a000-0000-7000-8000-00000000000{name == 'a' and 1 or 2}", cwd=cwd)
        with open(path, "a") as f:
            f.write(json.dumps({"timestamp": "2026-03-01T10:00:01.000Z", "type": "response_item", "payload": {
                "type": "message", "role": "user", "content": [{"type": "input_text", "text": MARK}]}}) + "\n")
    got = recall_search(Recall(cwd=str(tmp_path)), "quota exceeded", scope="all")
    assert [m["session"] for m in got["matches"]] == ["0199a000-0000-7000-8000-000000000001"]

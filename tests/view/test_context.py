"""Context assembly (blobs, instructions, snapshot, announce): instruction discovery, blobs, snapshots, announcement budgets."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from catty_ctx.view.announce import DESCRIPTION_LIMIT, Announcer
from catty_ctx.session.blobs import externalize, write_blob
from catty_ctx.errors import WriteError
from catty_ctx.instructions import discover_instructions, record_instructions, strip_front_matter
from catty_ctx.view.snapshot import context_report, snapshot_event
from catty_ctx.session.layout import blob_handle
from catty_ctx.session.store import Session
from catty_ctx.view.fold import view
from support import call, msg, result, session_event, write_log


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Any]:
    """A home with user-level files and a git repository with nested, ignored and linked files."""
    home = tmp_path / "home"
    config = tmp_path / "config"
    _write(home / ".claude" / "CLAUDE.md", "global claude\n")
    _write(config / "catty-ctx" / "AGENTS.md", "global catty\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _write(repo / ".gitignore", "build/\n.cursor/rules/private.mdc\n")
    _write(repo / "AGENTS.md", "root agents\n")
    os.symlink("AGENTS.md", repo / "CLAUDE.md")  # the same file under a second name
    _write(repo / ".cursor" / "rules" / "style.mdc", "---\ndescription: style\nglobs: '*.py'\n---\nroot cursor rule\n")
    _write(repo / ".cursor" / "rules" / "private.mdc", "ignored rule\n")
    _write(repo / "pkg" / "AGENTS.md", "pkg agents\n")
    _write(repo / "pkg" / "build" / "AGENTS.md", "ignored build agents\n")
    _write(repo / "pkg" / "build" / "x" / "AGENTS.md", "ignored deeper\n")
    _write(repo / "pkg" / "sub" / "CLAUDE.md", "sub claude\n")
    _write(repo / "pkg" / "sub" / ".claude" / "rules" / "b.md", "rule b\n")
    _write(repo / "pkg" / "sub" / ".claude" / "rules" / "a.md", "rule a\n")
    _write(repo / "pkg" / "sub" / "AGENTS.md", "---\n---\n\n")  # only front matter: empty
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(config), "CODEX_HOME": str(tmp_path / "no-codex")}
    return {"home": home, "config": config, "repo": repo, "env": env}


def test_discovery_order_is_global_then_repo_root_then_each_folder_down_to_dir(tree: dict[str, Any]) -> None:
    repo = tree["repo"]
    found = discover_instructions(repo / "pkg" / "sub", env=tree["env"])
    texts = [p.text for p in found.parts]
    assert texts == ["global claude", "global catty", "root agents", "root cursor rule", "pkg agents", "sub claude", "rule a", "rule b"]
    assert [p.order for p in found.parts] == list(range(1, 9))
    assert [p.scope for p in found.parts] == ["global", "global", "repo", "repo", "dir", "dir", "dir", "dir"]
    assert found.root == str(repo.resolve())


def test_discovery_skips_git_ignored_files(tree: dict[str, Any]) -> None:
    repo = tree["repo"]
    found = discover_instructions(repo / "pkg" / "build" / "x", env=tree["env"])
    paths = [p.path for p in found.parts]
    assert all("build" not in p and "private" not in p for p in paths)
    reasons = {Path(s["path"]).name + ":" + s["reason"] for s in found.skipped}
    assert "private.mdc:ignored by git" in reasons and "AGENTS.md:ignored by git" in reasons


def test_discovery_dedupes_by_canonical_path_and_tags_sources(tree: dict[str, Any]) -> None:
    repo = tree["repo"].resolve()
    found = discover_instructions(repo, env=tree["env"])
    assert [p.path for p in found.parts].count(str(repo / "AGENTS.md")) == 1
    assert any(s["reason"].startswith("same file as") and s["path"].endswith("CLAUDE.md") for s in found.skipped)
    assert all(Path(p.path).is_absolute() for p in found.parts)


def test_rule_front_matter_is_stripped() -> None:
    assert strip_front_matter("---\nalwaysApply: true\n---\nUse tabs.\n") == "Use tabs."
    assert strip_front_matter("\ufeff---\r\na: 1\r\n---\r\nX\r\n") == "X"
    assert strip_front_matter("--- not front matter\nbody") == "--- not front matter\nbody"
    assert strip_front_matter("---\nunclosed\nbody") == "---\nunclosed\nbody"


def test_outside_a_repository_only_dir_and_global_files_count(tmp_path: Path, tree: dict[str, Any]) -> None:
    plain = tmp_path / "plain" / "deep"
    _write(plain / "AGENTS.md", "plain\n")
    _write(plain.parent / "AGENTS.md", "parent, not a repo\n")
    found = discover_instructions(plain, include_global=False, env=tree["env"])
    assert found.root is None and [p.text for p in found.parts] == ["plain"]


def test_record_instructions_is_idempotent(tmp_path: Path, tree: dict[str, Any]) -> None:
    s = Session.open(write_log(tmp_path / "s", [session_event()]))
    first = record_instructions(s, discover_instructions(tree["repo"], env=tree["env"]))
    assert first is not None and first["facet"] == "instructions"
    assert record_instructions(s, discover_instructions(tree["repo"], env=tree["env"])) is None
    _write(tree["repo"] / "AGENTS.md", "root agents, edited\n")
    again = record_instructions(s, discover_instructions(tree["repo"], env=tree["env"]))
    assert again is not None and again["seq"] == first["seq"] + 1
    assert sum(1 for ev in s.events() if ev["kind"] == "state") == 2


# -- externalised payloads ---------------------------------------------------------------


def test_large_user_message_keeps_its_end_and_names_its_blob(tmp_path: Path) -> None:
    question = "So: which of these lines is the culprit?"
    text = "log line\n" * 120_000 + question
    out = externalize(msg("user", text), tmp_path)
    handle = out["blob"]
    assert handle == blob_handle(text.encode()) and out["bytes"] == len(text.encode())
    assert out["text"].endswith(question) and handle in out["text"]
    assert len(out["text"].encode()) < 25_000
    assert (tmp_path / "blobs" / handle).read_bytes() == text.encode()
    tail = out["text"].rsplit("\n\n", 1)[1]
    assert len(tail) >= 4 * len(out["text"].split("\n\n", 1)[0])  # the end gets four fifths


def test_large_tool_output_keeps_head_and_tail(tmp_path: Path) -> None:
    output = "HEAD" + "x" * 100_000 + "TAIL"
    out = externalize(result("c1", output), tmp_path)
    assert out["output"].startswith("HEAD") and out["output"].endswith("TAIL")
    assert out["bytes"] == len(output) and (tmp_path / "blobs" / out["blob"]).is_file()


def test_payloads_at_or_under_the_limit_stay_inline(tmp_path: Path) -> None:
    ev = msg("user", "é" * 12_500)  # exactly 25,000 bytes
    assert externalize(ev, tmp_path) is ev
    assert externalize(result("c", "x" * 40_000), tmp_path)["output"] == "x" * 40_000
    assert externalize(msg("assistant", "x" * 40_000), tmp_path)["text"] == "x" * 40_000
    assert externalize(msg("assistant", "x" * 100_000), tmp_path, assistant_limit=0)["text"] == "x" * 100_000
    assert externalize(msg("system", "x" * 100_000), tmp_path)["text"] == "x" * 100_000
    assert externalize(msg("user", "x" * 100_000), tmp_path, user_limit=0)["text"] == "x" * 100_000
    assert externalize(msg("user", "x" * 100_000), None)["text"] == "x" * 100_000
    assert not (tmp_path / "blobs").exists()


def test_previews_never_split_a_character(tmp_path: Path) -> None:
    out = externalize(msg("user", "日本語の文章" * 10_000 + "？"), tmp_path)
    assert "\ufffd" not in out["text"] and out["text"].endswith("？")


def test_identical_payloads_are_stored_once(tmp_path: Path) -> None:
    a = externalize(result("c1", "same " * 20_000), tmp_path)
    b = externalize(result("c2", "same " * 20_000), tmp_path)
    c = externalize(msg("user", "same " * 20_000), tmp_path)
    assert a["blob"] == b["blob"] == c["blob"]
    assert os.listdir(tmp_path / "blobs") == [a["blob"]]
    assert write_blob(tmp_path, b"same " * 20_000) == a["blob"]


def test_a_blob_that_cannot_be_written_fails_instead_of_dropping_the_payload(tmp_path: Path) -> None:
    (tmp_path / "blobs").write_text("a file where the folder should be")
    with pytest.raises(WriteError, match="cannot store a 50,015-byte message"):
        externalize(msg("user", "x" * 50_000 + "final question?"), tmp_path)


def test_the_view_shows_the_preview_and_the_handle(tmp_path: Path) -> None:
    big = externalize(msg("user", "y" * 30_000 + "why?", i="u1"), tmp_path)
    out = externalize(result("c1", "z" * 50_000), tmp_path)
    items = view([
        {"v": 1, "seq": 0, "ts": "t", **session_event()},
        {"v": 1, "seq": 1, "ts": "t", **big},
        {"v": 1, "seq": 2, "ts": "t", **msg("assistant", "", i="a1")},
        {"v": 1, "seq": 3, "ts": "t", **call("c1")},
        {"v": 1, "seq": 4, "ts": "t", **out},
    ])
    assert items[0]["blob"] == big["blob"] and items[0]["text"].endswith("why?")
    assert items[2]["blob"] == out["blob"] and items[2]["output"] == out["output"]


# -- the prompt-context snapshot ---------------------------------------------------------


def _ctx(tmp_path: Path, events: list[dict[str, Any]]) -> dict[str, Any]:
    return context_report(Session.open(write_log(tmp_path / "s", events)))


def test_context_report_gives_every_recorded_part_its_source(tmp_path: Path) -> None:
    snap = snapshot_event(
        {"audience": "main", "model": "m-1", "environment": {"cwd": "/p", "os": "linux"}, "environment.git_branch": "dev"},
        {"environment": "claude: first record", "model": "claude: assistant message", "audience": "claude: isSidechain false"},
    )
    rep = _ctx(tmp_path, [session_event(cwd="/elsewhere"), snap])
    parts = rep["parts"]
    assert parts["environment.cwd"] == {"value": "/p", "known": True, "source": "claude: first record", "seq": 1}
    assert parts["environment.git_branch"]["source"] == "claude: first record"
    assert parts["audience"]["source"] == "claude: isSidechain false"
    assert rep["snapshot_seq"] == 1 and rep["schema"] == 1
    assert "persona" in rep["unknown"] and "environment.shell" in rep["unknown"] and "model" not in rep["unknown"]


def test_context_report_fills_gaps_from_the_log_and_names_where_from(tmp_path: Path) -> None:
    rep = _ctx(tmp_path, [
        session_event(cwd="/w", model="m0"),
        {"kind": "state", "facet": "instructions", "value": [{"path": "/w/AGENTS.md", "text": "be brief", "order": 1}]},
        {"kind": "usage", "model": "m2", "input": 1, "output": 1},
        {"kind": "state", "facet": "memory", "value": ["likes tabs"]},
    ])
    p = rep["parts"]
    assert p["model"]["value"] == "m2" and p["model"]["source"] == "the latest usage event"
    assert p["environment.cwd"]["source"] == "the session event"
    assert p["instructions"]["value"] == [{"path": "/w/AGENTS.md", "order": 1}] and p["instructions"]["seq"] == 1
    assert p["memory"]["value"] == ["likes tabs"]
    assert rep["snapshot_seq"] is None and "audience" in rep["unknown"]


def test_the_latest_snapshot_replaces_earlier_ones(tmp_path: Path) -> None:
    rep = _ctx(tmp_path, [
        session_event(),
        snapshot_event({"persona": "old"}, {"persona": "a"}),
        snapshot_event({"persona": "new"}, {"persona": "b"}),
        snapshot_event({"persona": "sub"}, {"persona": "c"}, agent="sa-1"),
    ])
    assert rep["parts"]["persona"]["value"] == "new" and rep["parts"]["persona"]["seq"] == 2


# -- announcement budgets ----------------------------------------------------------------


def _skills(*names: str, desc: str = "does things") -> dict[str, Any]:
    return {"kind": "state", "facet": "skills", "value": [{"name": n, "description": desc, "path": f"/s/{n}"} for n in names]}


def _announcements(items: list[dict[str, Any]]) -> list[str]:
    return [i["text"] for i in items if i.get("synthetic") == "announcement"]


def test_skills_are_announced_once_then_only_what_changed(tmp_path: Path) -> None:
    items = view(write_log(tmp_path / "s", [
        session_event(), msg("user", "go", i="u1"), _skills("a", "b"),
        msg("user", "more", i="u2"), _skills("a", "b"),
        _skills("a", "b", "c"), _skills("b", "c"),
    ]))
    ann = _announcements(items)
    assert len(ann) == 3
    assert "- a: does things (/s/a)" in ann[0] and "- b:" in ann[0]
    assert "- c:" in ann[1] and "- a:" not in ann[1]
    assert "No longer available (skills): a" in ann[2] and "- b:" not in ann[2]


def test_each_description_is_clipped_to_400_bytes() -> None:
    ann = Announcer().feed(_skills("big", desc="é" * 1000))
    assert ann is not None
    line = next(line for line in ann["text"].splitlines() if line.startswith("- big"))
    desc = line[len("- big: "):].rsplit(" (", 1)[0]
    assert len(desc.encode()) <= DESCRIPTION_LIMIT and desc.endswith("…")


def test_the_whole_listing_stays_within_its_share_of_the_window() -> None:
    a = Announcer(window=20_000, share=0.01)  # 800 bytes
    ev = _skills(*(f"skill-{i:02d}" for i in range(40)), desc="a description of forty bytes or so....")
    ann = a.feed(ev)
    assert ann is not None and len(ann["text"].encode()) <= a.budget == 800
    assert "more skills not listed" in ann["text"]
    listed = sum(1 for line in ann["text"].splitlines() if line.startswith("- "))
    assert 0 < listed < 40 and len(a.announced) == listed
    again = Announcer(window=2_000_000, share=0.01).feed(ev)
    assert again is not None and "not listed" not in again["text"]


def test_tools_and_mcp_servers_are_announced_too() -> None:
    a = Announcer()
    ann = a.feed({"kind": "state", "facet": "mcp", "value": [{"name": "fs", "tools": ["read", {"name": "write"}]}]})
    assert ann is not None and "MCP servers connected:\n- fs: read, write" in ann["text"]
    ann = a.feed({"kind": "state", "facet": "tools", "value": [{"name": "bash", "description": "run a command"}]})
    assert ann is not None and "- bash: run a command" in ann["text"]
    assert a.feed({"kind": "state", "facet": "todos", "value": []}) is None


def test_announcements_survive_compaction_once_and_are_not_repeated(tmp_path: Path) -> None:
    items = view(write_log(tmp_path / "s", [
        session_event(), msg("user", "go", i="u1"), _skills("a", "b"),
        msg("assistant", "ok", i="a1"),
        {"kind": "compaction", "id": "c1", "mode": "summary", "through_seq": 3, "summary": "did things"},
        _skills("a", "b"),  # a runtime re-recording the same skills after compacting
        msg("user", "next", i="u2"),
        _skills("a", "b", "c"),
    ]))
    ann = _announcements(items)
    assert len(ann) == 2
    assert "- a:" in ann[0] and "- b:" in ann[0]
    assert "- c:" in ann[1] and "- a:" not in ann[1]
    assert items.index(next(i for i in items if i.get("synthetic") == "announcement")) < [i.get("seq") for i in items].index(6)


def test_an_announcement_never_splits_a_call_from_its_result(tmp_path: Path) -> None:
    items = view(write_log(tmp_path / "s", [
        session_event(), msg("user", "go", i="u1"), msg("assistant", "", i="a1"), call("c1"),
        _skills("a"), result("c1"), msg("user", "again", i="u2"),
    ]))
    roles = [(i["role"], i.get("synthetic")) for i in items]
    assert roles == [("user", None), ("assistant", None), ("tool", None), ("user", "announcement"), ("user", None)]


def test_the_budget_follows_the_session_window(tmp_path: Path) -> None:
    events = [session_event(window=10_000), msg("user", "go", i="u1"), _skills(*(f"s{i}" for i in range(50)), desc="d" * 100)]
    ann = _announcements(view(write_log(tmp_path / "s", events)))
    assert len(ann[0].encode()) <= 400 and "not listed" in ann[0]

"""Native sessions read where they lie (docs/architecture.md, "Formats"): every reading command
takes an agent's own session file or home and answers as `import auto FILE | CMD -` does,
without changing anything under the agent's home."""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import orjson
import pytest

from support import FIXTURES, cli

IMPORT = FIXTURES / "import"
VIEW_FIELDS = ("events", "kinds", "roles", "turns", "items", "tokens", "window", "percent", "fp", "largest", "compactions", "problems")


def _claude_record(kind: str, uid: str, parent: str | None, content: object, **extra: object) -> dict:
    message = {"role": kind, "content": content}
    if kind == "assistant":
        message.update({"id": f"msg_{uid}", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 10, "output_tokens": 5}})
    return {"type": kind, "uuid": uid, "parentUuid": parent, "sessionId": "dangling-0001", "cwd": "/home/dev/app",
            "timestamp": f"2026-10-05T10:00:0{uid[-1]}.000Z", "message": message, **extra}


def _dangling_claude(path: Path) -> None:
    """A Claude Code transcript whose last tool call was never answered (the agent was killed)."""
    records = [
        _claude_record("user", "u1", None, "List the files, please."),
        _claude_record("assistant", "a2", "u1", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}],
                       requestId="req_1"),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    """A fake HOME holding sessions of four agents where each keeps them."""
    home = tmp_path / "home"
    shutil.copytree(IMPORT / "claude" / "projects", home / ".claude" / "projects")
    shutil.copytree(IMPORT / "claude" / "wild" / "compact-summary", home / ".claude" / "projects" / "-home-dev-wild")
    _dangling_claude(home / ".claude" / "projects" / "-home-dev-app" / "dangling-0001.jsonl")
    (home / ".claude" / "history.jsonl").write_text('{"display": "hi", "timestamp": 1, "project": "/x"}\n')  # not a session
    shutil.copytree(IMPORT / "codex" / "sessions", home / ".codex" / "sessions")
    (home / ".codex" / "history.jsonl").write_text('{"session_id": "x", "ts": 1, "text": "hi"}\n')
    shutil.copytree(IMPORT / "gemini" / "tmp", home / ".gemini" / "tmp")
    shutil.copytree(IMPORT / "opencode" / "storage", home / ".local" / "share" / "opencode" / "storage")
    return home


def _tree_hash(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.join(dirpath, d)] = "dir"
        for f in filenames:
            p = os.path.join(dirpath, f)
            out[p] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    return out


def _rows(out: bytes, key: str) -> list[dict]:
    """The rows of a listing, whether JSON Lines or one document holding them under KEY."""
    docs = [orjson.loads(line) for line in out.splitlines() if line.strip()]
    if len(docs) == 1 and isinstance(docs[0].get(key), list):
        return docs[0][key]
    return docs


def _native_files(home: Path) -> list[Path]:
    claude = sorted(p for p in (home / ".claude" / "projects").rglob("*.jsonl") if "subagents" not in p.parts)
    codex = sorted((home / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    gemini = sorted((home / ".gemini" / "tmp").rglob("session-*"))
    opencode = sorted((home / ".local" / "share" / "opencode" / "storage" / "session").rglob("*.json"))
    assert claude and codex and gemini and opencode
    return [*claude, *codex, *gemini, *opencode]


def _piped(fmt: str, source: Path, *cmd: str) -> tuple[int, bytes]:
    imported = cli("import", fmt, str(source))
    if imported.returncode != 0:
        return imported.returncode, b""
    r = cli(*cmd, "-", input=imported.stdout)
    return r.returncode, r.stdout


def test_every_reading_command_answers_as_the_import_pipe(home: Path) -> None:
    before = _tree_hash(home)
    for f in _native_files(home):
        direct = cli("inspect", str(f), "--json")
        code, piped = _piped("auto", f, "inspect", "--json")
        assert direct.returncode == code == 0, (f, direct.stderr)
        mine, theirs = orjson.loads(direct.stdout), orjson.loads(piped)
        assert {k: mine[k] for k in VIEW_FIELDS} == {k: theirs[k] for k in VIEW_FIELDS}, f
        assert mine["agent"] != "catty" and mine["source"]["path"] == str(f) and mine["source"]["session_id"], f
        assert b"field 'v'" not in direct.stderr
        for cmd in (("resume",), ("resume", "--format", "openai"), ("resume", "--format", "anthropic"), ("prune",), ("repair", "--check")):
            d = cli(*cmd, str(f))
            assert (d.returncode, d.stdout) == _piped("auto", f, *cmd), (f, cmd, d.stderr)
    assert _tree_hash(home) == before


def test_a_bad_line_is_skipped_and_named_by_readers_and_refused_by_import(tmp_path: Path) -> None:
    """A line a reader cannot read (not JSON, or JSON but no object) is a bad line like any other:
    `import` refuses it unless --lenient, a reader of the native file reads as `import --lenient`
    does, naming the line it skipped (as `usage` does; `usage --strict` refuses)."""
    bad = IMPORT / "claude" / "bad" / "invalid-middle.jsonl"
    assert cli("import", "auto", str(bad)).returncode == 65
    lenient = cli("import", "auto", "--lenient", str(bad), check=True)
    for cmd in (("inspect",), ("resume",), ("report",), ("segment", "list")):
        r = cli(*cmd, str(bad))
        assert r.returncode == 0, (cmd, r.stderr)
        assert r.stderr.splitlines()[0] == lenient.stderr.splitlines()[0] == f"catty-ctx: warning: {bad}:2: invalid JSON skipped".encode(), cmd
        assert b"field 'v'" not in r.stderr and b"quarantine" not in r.stderr
    assert cli("usage", "--strict", str(bad)).returncode == 65
    empty = tmp_path / "empty.jsonl"  # a Claude file with no conversation
    empty.write_bytes(orjson.dumps({"type": "summary", "summary": "x", "leafUuid": "u1"}) + b"\n")
    imported = cli("import", "auto", str(empty))
    r = cli("resume", str(empty))
    assert r.returncode == imported.returncode == 65 and r.stderr == imported.stderr
    assert sorted(os.listdir(tmp_path)) == ["empty.jsonl"]


def test_a_line_of_json_but_no_object_is_a_bad_line_like_any_other(tmp_path: Path) -> None:
    """claude-code-log's edge case: a line `[1, 2]` in a Claude Code file. `inspect` reads on past it
    naming it, `import` and `usage --strict` refuse it, and a check over it is no "fine"."""
    bad = IMPORT / "claude" / "bad" / "invalid-middle.jsonl"
    not_object = tmp_path / "not-object.jsonl"  # the same file with its bad line JSON but no object
    lines = bad.read_bytes().splitlines(keepends=True)
    not_object.write_bytes(lines[0] + b"[1, 2]\n" + b"".join(lines[2:]))
    assert cli("import", "auto", str(not_object)).returncode == 65
    r = cli("inspect", str(not_object))
    assert r.returncode == 0 and r.stderr.splitlines() == [f"catty-ctx: warning: {not_object}:2: not a JSON object, skipped".encode()]
    r = cli("repair", "--check", "--json", str(not_object))  # a check over a line it skipped is no "fine"
    assert r.returncode == 1 and orjson.loads(r.stdout)["problems"] == {"unread_source_line": 1}, r.stderr
    assert cli("usage", "--strict", str(not_object)).returncode == 65


def test_report_names_the_agent(home: Path) -> None:
    f = next((home / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    page = cli("report", str(f), check=True).stdout.decode()
    assert "<dt>source agent</dt><dd>codex</dd>" in page and str(f) in page
    claude = home / ".claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl"
    assert "<dt>source agent</dt><dd>claude</dd>" in cli("report", str(claude), check=True).stdout.decode()
    shown = cli("inspect", str(claude), check=True).stdout.decode()
    assert "claude" not in shown or "Claude Code" in shown


def test_segments_of_a_native_compaction(home: Path) -> None:
    before = _tree_hash(home)
    f = home / ".claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl"
    rows = _rows(cli("segment", "list", str(f), "--json", check=True).stdout, "segments")
    assert len(rows) == 1 and rows[0]["compaction_id"] == "s1"
    hits = _rows(cli("segment", "grep", str(f), "cart total is wrong", "--json", check=True).stdout, "matches")
    assert hits and hits[0]["seq"] is not None
    event = orjson.loads(cli("inspect", str(f), "--seq", str(hits[0]["seq"]), check=True).stdout)
    assert "cart total is wrong" in event["text"]
    assert rows[0]["seq_from"] <= hits[0]["seq"] <= rows[0]["seq_to"]
    shown = cli("segment", "show", str(f), str(rows[0]["segment"]), check=True).stdout.decode()
    assert "The cart total is wrong when a coupon is applied. Fix it." in shown
    assert _tree_hash(home) == before


def test_repair_check_finds_a_dangling_call_and_writers_refuse(home: Path) -> None:
    before = _tree_hash(home)
    f = home / ".claude" / "projects" / "-home-dev-app" / "dangling-0001.jsonl"
    r = cli("repair", "--check", str(f), "--json")
    assert r.returncode == 1, r.stderr
    assert orjson.loads(r.stdout)["problems"].get("dangling", 0) >= 1 or b"dangling" in r.stdout
    for cmd in (("repair",), ("compact", "--force"), ("append",)):
        w = cli(*cmd, str(f), input=b'{"kind":"message","role":"user","text":"x"}\n')
        assert w.returncode == 65, (cmd, w.stderr)
        assert b"Claude Code transcript" in w.stderr and b"--out DIR" in w.stderr, cmd
    assert _tree_hash(home) == before


def test_homes_are_roots(home: Path, tmp_path: Path) -> None:
    before = _tree_hash(home)
    expected = {str(p) for p in _native_files(home)}
    for root, sub in ((home / ".claude", "projects"), (home / ".codex", "sessions")):
        want = {p for p in expected if p.startswith(str(root / sub))}
        rows = _rows(cli("inspect", str(root), "--json", check=True).stdout, "sessions")
        assert {r["path"] for r in rows} == want
        assert all(r["agent"] in ("claude", "codex") for r in rows)
        rows = _rows(cli("repair", "--check", str(root), "--json").stdout, "sessions")
        assert {r["path"] for r in rows} == want
        out = tmp_path / f"site-{root.name}"
        cli("report", str(root), "-o", str(out), check=True)
        index = (out / "index.html").read_text()
        assert all(Path(p).name in index for p in want) and len(list(out.glob("*.html"))) == len(want) + 1
        assert cli("compact", "--check", str(root), "--json").returncode in (0, 1)
    rows = _rows(cli("inspect", str(home), "--json", check=True).stdout, "sessions")
    assert {r["path"] for r in rows} == expected  # a mixed tree: every agent's sessions, each once
    sub = home / ".claude" / "projects" / "-home-dev-shop"
    assert {r["path"] for r in _rows(cli("inspect", str(sub), "--json", check=True).stdout, "sessions")} == {str(sub / "sess-0001.jsonl")}
    assert _tree_hash(home) == before


def test_eval_and_fork_take_a_native_session(home: Path, tmp_path: Path) -> None:
    before = _tree_hash(home)
    f = home / ".claude" / "projects" / "-home-dev-shop" / "sess-0001.jsonl"
    child = tmp_path / "child"
    cli("fork", str(f), str(child), check=True)
    assert orjson.loads(cli("inspect", str(child), "--json", check=True).stdout)["agent"] == "catty"
    mine = cli("resume", str(child), check=True).stdout
    assert mine == cli("resume", str(f), check=True).stdout
    assert _tree_hash(home) == before

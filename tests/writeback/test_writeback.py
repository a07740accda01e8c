"""`fork SRC DEST --to claude|codex`: a new native session from the repaired, slimmed view; the source untouched."""
from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from support import FIXTURES, cli
from support.writeback_sessions import BIG, USER_TURNS, claude_session, codex_session

from catty_ctx.writeback import claude as claude_writer, codex as codex_writer

MAX = 200_000


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _items(fmt: str, path: Path) -> list[dict[str, Any]]:
    """The repaired view of a native file as our importer reads it (resume --format items)."""
    events = cli("import", fmt, str(path), check=True).stdout
    return [orjson.loads(line) for line in cli("resume", "-", "--format", "items", input=events, check=True).stdout.splitlines()]


def _same(item: dict[str, Any]) -> dict[str, Any]:
    """What must survive the trip: role, text, calls, results (not seq numbers nor synthetic marks)."""
    out = {k: v for k, v in item.items() if k in ("role", "text", "tool_calls", "call_id", "output", "is_error")}
    if isinstance(out.get("text"), str) and not out["text"].strip():
        out["text"] = ""
    if "images" in item:
        out["images"] = [(i.get("media_type"), i.get("data")) for i in item["images"]]
    return out


def _fork(src: Path, dest: Path, *args: str) -> dict[str, Any]:
    return orjson.loads(cli("fork", str(src), str(dest), "--to", "claude", *args, "--json", check=True).stdout)


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    return claude_session(tmp_path / "src")


def test_claude_copy_of_a_session_with_a_dangling_call_and_a_5_mb_output(broken: Path, tmp_path: Path) -> None:
    before = _digest(broken)
    dest = tmp_path / "dest"
    doc = _fork(broken, dest, "--max-bytes", str(MAX))
    path = Path(doc["path"])
    # A new file named by its new id; the source's bytes unchanged; the copy under 1 MB.
    assert path.parent == dest and path.name == f"{doc['session_id']}.jsonl" and doc["session_id"] in doc["resume"]
    assert _digest(broken) == before and path.stat().st_size < 1_000_000
    assert doc["calls_repaired"] == 1 and doc["outputs_moved"] == 1 and doc["bytes_before"] > BIG
    recs = _lines(path)
    assert claude_writer.check_records(recs, doc["session_id"]) == []
    # One unbroken chain root → tip; every tool_use answered in the very next user record.
    assert recs[0]["parentUuid"] is None and all(r["parentUuid"] == p["uuid"] for p, r in zip(recs, recs[1:]))
    for i, r in enumerate(recs):
        uses = [b["id"] for b in r["message"]["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
        if uses:
            nxt = recs[i + 1]
            assert nxt["type"] == "user" and [b["tool_use_id"] for b in nxt["message"]["content"]] == uses
    # The assistant message of the unanswered call stays, its text too; no whitespace-only block.
    texts = [b["text"] for r in recs for b in r["message"]["content"] if isinstance(r["message"]["content"], list) and b.get("type") == "text"]
    assert "I will run the tests to see the failure." in texts and all(t.strip() for t in texts)


def test_the_copy_reimported_is_the_view_and_resumes(broken: Path, tmp_path: Path) -> None:
    doc = _fork(broken, tmp_path / "dest", "--max-bytes", str(MAX))
    path = Path(doc["path"])
    source = [_same(it) for it in _items("claude", broken)]
    copy = [_same(it) for it in _items("claude", path)]
    assert len(copy) == len(source)
    for a, b in zip(source, copy):
        if a.get("role") == "tool" and len(a["output"]) > MAX:  # the placeholder: head and tail of the original kept
            assert b["output"].startswith("[") and a["output"][:1000] in b["output"] and b["output"].endswith("THE-END")
            assert len(b["output"].encode()) < MAX and "catty-ctx import claude" in b["output"]
        else:
            assert a == b
    users = [it["text"] for it in _items("claude", path) if it["role"] == "user" and not it.get("synthetic")]
    assert users == USER_TURNS
    out = tmp_path / "imported"
    cli("import", "claude", str(path), "--out", str(out), check=True)
    assert cli("repair", str(out), "--check").returncode == 0
    req = orjson.loads(cli("resume", str(out), "--format", "anthropic", check=True).stdout)
    said = [b["text"] if isinstance(b, dict) else b for m in req["messages"] if m["role"] == "user"
            for b in (m["content"] if isinstance(m["content"], list) else [m["content"]]) if not isinstance(b, dict) or b.get("type") == "text"]
    assert said == USER_TURNS


def test_the_placeholder_names_a_command_that_prints_the_whole_output(broken: Path, tmp_path: Path) -> None:
    path = Path(_fork(broken, tmp_path / "dest", "--max-bytes", str(MAX))["path"])
    note = next(b["content"] for r in _lines(path) if isinstance(r["message"]["content"], list)
                for b in r["message"]["content"] if b.get("type") == "tool_result" and "not in this copy" in b["content"])
    command = note.split("is event seq ", 1)[1].split(": ", 1)[1].split("]\n", 1)[0]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.run(["sh", "-c", command.replace("catty-ctx", f"{shlex.quote(os.sys.executable)} -m catty_ctx")],
                          capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    event = orjson.loads(proc.stdout)
    assert event["kind"] == "tool_result" and len(event["output"]) == BIG and event["output"].endswith("THE-END")


def test_dry_run_reports_and_writes_nothing(broken: Path, tmp_path: Path) -> None:
    doc = orjson.loads(cli("fork", str(broken), str(tmp_path / "dest"), "--to", "claude", "--max-bytes", str(MAX), "--dry-run", "--json",
                           check=True).stdout)
    assert doc["dry_run"] and doc["records"] == 13 and doc["calls_repaired"] == 1 and doc["outputs_moved"] == 1
    assert doc["bytes_before"] > BIG > 1_000_000 > doc["bytes_after"]
    assert not (tmp_path / "dest").exists()


def test_default_dest_is_claude_codes_project_folder_for_the_cwd(broken: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    doc = orjson.loads(cli("fork", str(broken), "--to", "claude", "--json", check=True).stdout)
    assert Path(doc["path"]).parent == tmp_path / "cfg" / "projects" / "-home-dev-shop"


def test_a_second_run_writes_a_second_file_and_an_existing_name_exits_73(broken: Path, tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    first = _fork(broken, dest)
    kept = Path(first["path"]).read_bytes()
    second = _fork(broken, dest)
    assert second["session_id"] != first["session_id"] and len(list(dest.iterdir())) == 2
    proc = cli("fork", str(broken), str(dest), "--to", "claude", "--session-id", first["session_id"])
    assert proc.returncode == 73 and len(proc.stderr.decode().strip().splitlines()) == 1 and b"already exists" in proc.stderr
    assert Path(first["path"]).read_bytes() == kept and len(list(dest.iterdir())) == 2


def test_a_dest_that_is_a_file_or_unwritable_exits_73_and_leaves_nothing(broken: Path, tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_bytes(b"x")
    proc = cli("fork", str(broken), str(afile), "--to", "claude")
    assert proc.returncode == 73 and len(proc.stderr.decode().strip().splitlines()) == 1 and afile.read_bytes() == b"x"
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who writes anywhere (root): the full-disk test covers the write path")
        proc = cli("fork", str(broken), str(locked), "--to", "claude")
        assert proc.returncode == 73 and list(locked.iterdir()) == []
    finally:
        locked.chmod(0o700)


def _in_mount_namespace(script: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    return subprocess.run(["unshare", "-m", "sh", "-ec", script], capture_output=True, env=env, timeout=120)


def _can_mount(tmp_path: Path) -> bool:
    probe = tmp_path / "probe"
    probe.mkdir()
    return os.geteuid() == 0 and _in_mount_namespace(f"mount -t tmpfs -o size=1m tmpfs {probe}").returncode == 0


@pytest.mark.parametrize("mount", ["size=2m", "size=2m,ro"], ids=["full", "read-only"])
def test_a_full_or_read_only_dest_exits_73_and_leaves_nothing(broken: Path, tmp_path: Path, mount: str) -> None:
    if not _can_mount(tmp_path):
        pytest.skip("needs root and a private mount namespace (unshare -m) for a small tmpfs")
    dest = tmp_path / "small"
    dest.mkdir()
    py = shlex.quote(os.sys.executable)
    # Without --max-bytes the copy holds the 5 MB output: more than the 2 MB tmpfs takes.
    script = (f"mount -t tmpfs -o {mount} tmpfs {dest}; set +e; {py} -m catty_ctx fork {shlex.quote(str(broken))} {dest} --to claude; "
              f"echo \"exit=$?\"; echo \"left=$(ls -A {dest} | wc -l)\"")
    proc = _in_mount_namespace(script)
    out = proc.stdout.decode()
    assert "exit=73" in out and "left=0" in out, (out, proc.stderr)
    assert len([ln for ln in proc.stderr.decode().splitlines() if ln.strip()]) == 1


# -- Codex -------------------------------------------------------------------------------------


def test_codex_copy_of_a_rollout_with_a_call_without_output(tmp_path: Path) -> None:
    src = codex_session(tmp_path / "src")
    before = _digest(src)
    dest = tmp_path / "dest"
    doc = orjson.loads(cli("fork", str(src), str(dest), "--to", "codex", "--max-bytes", str(MAX), "--json", check=True).stdout)
    path = Path(doc["path"])
    assert path.parent == dest and path.name.startswith("rollout-") and path.name.endswith(f"-{doc['session_id']}.jsonl")
    assert doc["resume"] == f"codex resume {doc['session_id']}" and _digest(src) == before and path.stat().st_size < 1_000_000
    lines = _lines(path)
    assert codex_writer.check_records(lines, doc["session_id"]) == []
    assert lines[0]["type"] == "session_meta" and lines[0]["payload"]["id"] == doc["session_id"]
    payloads = [ln["payload"] for ln in lines[1:]]
    outputs = {p["call_id"]: p["output"] for p in payloads if p["type"] == "function_call_output"}
    calls = [p["call_id"] for p in payloads if p["type"] == "function_call"]
    assert calls == ["call_01", "call_02", "call_03", "call_04"] and set(outputs) == set(calls)
    assert "not executed" in outputs["call_02"] and "catty-ctx import codex" in outputs["call_04"]
    # Read back by our importer: the same view (the slimmed output apart), repair --check finds
    # nothing, and the OpenAI request holds the source's user turns.
    # A Codex function output has no error flag (the text says so): is_error does not make the trip.
    source = [{k: v for k, v in _same(it).items() if k != "is_error"} for it in _items("codex", src)]
    copy = [{k: v for k, v in _same(it).items() if k != "is_error"} for it in _items("codex", path)]
    assert len(copy) == len(source)
    for a, b in zip(source, copy):
        if a.get("role") == "tool" and len(a["output"]) > MAX:
            assert a["output"][:1000] in b["output"] and b["output"].endswith("THE-END")
        else:
            assert a == b
    out = tmp_path / "imported"
    cli("import", "codex", str(path), "--out", str(out), check=True)
    assert cli("repair", str(out), "--check").returncode == 0
    req = orjson.loads(cli("resume", str(out), "--format", "openai", check=True).stdout)
    assert [m["content"] for m in req["messages"] if m["role"] == "user"] == USER_TURNS


def test_codex_default_dest_is_todays_sessions_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "ch"))
    doc = orjson.loads(cli("fork", str(codex_session(tmp_path / "src")), "--to", "codex", "--json", check=True).stdout)
    day = Path(doc["path"]).parent
    assert day.parent.parent.parent == tmp_path / "ch" / "sessions" and len(day.name) == 2


def test_a_claude_session_becomes_a_codex_rollout_and_back(broken: Path, tmp_path: Path) -> None:
    """Any session catty-ctx reads is a source: the same conversation in the other agent's format."""
    doc = orjson.loads(cli("fork", str(broken), str(tmp_path / "c"), "--to", "codex", "--max-bytes", str(MAX), "--json", check=True).stdout)
    users = [it["text"] for it in _items("codex", Path(doc["path"])) if it["role"] == "user" and not it.get("synthetic")]
    assert users == USER_TURNS


def test_at_turn_prune_and_compact_shape_the_copy(broken: Path, tmp_path: Path) -> None:
    cut = _fork(broken, tmp_path / "a", "--at-turn", "2")
    users = [it["text"] for it in _items("claude", Path(cut["path"])) if it["role"] == "user" and not it.get("synthetic")]
    assert users == USER_TURNS[:2]
    compacted = _fork(broken, tmp_path / "b", "--compact")
    recs = _lines(Path(compacted["path"]))
    assert claude_writer.check_records(recs, compacted["session_id"]) == []
    assert any(r.get("isMeta") for r in recs) and compacted["bytes_after"] < 1_000_000  # the summary, as a meta user record
    pruned = _fork(broken, tmp_path / "c", "--prune", "tiered")
    assert claude_writer.check_records(_lines(Path(pruned["path"])), pruned["session_id"]) == []


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_catty_session_with_a_dangling_call_becomes_a_native_one(agent: str, tmp_path: Path) -> None:
    src = FIXTURES / "sessions" / "dangling"
    before = _digest(src / "updates.jsonl")
    doc = orjson.loads(cli("fork", str(src), str(tmp_path / "d"), "--to", agent, "--json", check=True).stdout)
    writer = claude_writer if agent == "claude" else codex_writer
    assert doc["calls_repaired"] >= 1 and writer.check_records(_lines(Path(doc["path"])), doc["session_id"]) == []
    assert _digest(src / "updates.jsonl") == before and not any(p.name.endswith(".lock") for p in src.iterdir())

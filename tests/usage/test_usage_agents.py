"""usage over every agent: Gemini CLI and opencode logs, the agents' homes read with no PATH, refusals, calls shared by uuid."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from support import cli as run_cli
from support import write_log
from support.usage_trees import Truth, claude_tree, codex_rollout, gemini_home, opencode_db, opencode_sessions, opencode_storage

from catty_ctx.usage import pipeline as U
from catty_ctx.usage import walk as usage_walk

ROOT = Path(__file__).resolve().parents[2]


def by_model(led: U.Ledger) -> dict[str, list[int]]:
    return {r["model"]: [r["input"], r["output"], r["cache_read"], r["cache_write"], r["calls"]] for r in led.rows}


def ledger(paths: list[Path] | None, **kw: Any) -> U.Ledger:
    led, _scan = U.usage([str(p) for p in paths] if paths is not None else [], timezone_name="UTC", **kw)
    return led


def cli(*args: str, env: dict[str, str] | None = None, unset: tuple[str, ...] = ()) -> subprocess.CompletedProcess[bytes]:
    """`catty-ctx usage ARGS` in this process, with ENV added to the environment and UNSET taken out of it for the run."""
    with pytest.MonkeyPatch.context() as mp:
        for k in unset:
            mp.delenv(k, raising=False)
        for k, v in (env or {}).items():
            mp.setenv(k, v)
        return run_cli("usage", *args)


# -- Gemini CLI --------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["jsonl", "json"])
def test_gemini_chats_of_both_forms_count_each_reply_once_with_thoughts_in_output(tmp_path: Path, form: str) -> None:
    truth = gemini_home(tmp_path / ".gemini", projects=2, sessions=2, turns=5, seed=3, form=form)
    assert by_model(ledger([tmp_path / ".gemini"])) == truth.by_model()


def test_gemini_thoughts_are_output_and_reasoning(tmp_path: Path) -> None:
    chats = tmp_path / "tmp" / "p" / "chats"
    chats.mkdir(parents=True)
    doc = {"sessionId": "s", "projectHash": "p", "messages": [
        {"id": "g1", "type": "gemini", "timestamp": "2026-02-01T10:00:00.000Z", "model": "gemini-2.5-pro",
         "tokens": {"input": 1000, "output": 50, "cached": 400, "thoughts": 300, "tool": 20, "total": 1370}}]}
    (chats / "session-2026-02-01T10-00-s.json").write_bytes(orjson.dumps(doc))
    r = ledger([chats / "session-2026-02-01T10-00-s.json"]).rows[0]
    assert (r["input"], r["output"], r["reasoning"], r["cache_read"]) == (620, 350, 300, 400)
    # priced as billed: thinking at the output rate
    assert r["cost_usd"] == pytest.approx(620 * 1.25e-6 + 350 * 10e-6 + 400 * 0.125e-6, rel=1e-6)


@pytest.mark.parametrize("form", ["jsonl", "json"])
def test_a_gemini_chat_named_otherwise_is_read_by_its_content(tmp_path: Path, form: str) -> None:
    truth = gemini_home(tmp_path / ".gemini", sessions=1, turns=4, seed=9, form=form)
    chat = next((tmp_path / ".gemini" / "tmp").rglob("session-*"))
    want = truth.by_model()
    assert by_model(ledger([chat])) == want
    data = chat.read_bytes()
    forms = {"chat.json": data, "chat.jsonl": data, "exported-chat": data, "chat.txt": data}
    if form == "json":  # (the document written compact, and indented another way)
        doc = orjson.loads(data)
        forms |= {"compact": orjson.dumps(doc), "compact.json": orjson.dumps(doc) + b"\n",
                  "indented.jsonl": json.dumps(doc, indent=4).encode(), "no-final-newline": data.rstrip()}
    for name, content in forms.items():
        other = tmp_path / "given" / name
        other.parent.mkdir(exist_ok=True)
        other.write_bytes(content)
        _led, scan = U.usage([str(other)], timezone_name="UTC", use_cache=False)
        assert by_model(_led) == want and scan.bad_lines == 0, name
    # Read again after it changed (a document is never resumed from where the last read stopped).
    other = tmp_path / "given" / "exported-chat"
    assert by_model(ledger([other])) == want
    if form == "json":
        doc = orjson.loads(data)
        doc["messages"] = doc["messages"][:2]
        other.write_bytes(json.dumps(doc, indent=2).encode() + b"\n" + b" " * len(data))  # (grown: its old bytes changed)
        fewer = by_model(ledger([other]))
        assert sum(c[4] for c in fewer.values()) == sum(1 for m in doc["messages"] if m.get("type") == "gemini" and m.get("tokens"))


# -- opencode ----------------------------------------------------------------------------------


def test_opencode_storage_database_and_export_count_each_step_once(tmp_path: Path) -> None:
    docs, truth = opencode_sessions(sessions=3, turns=4, seed=5)
    opencode_storage(tmp_path / "tree", docs)
    opencode_db(tmp_path / "db" / "opencode.db", docs)
    (tmp_path / "export.json").write_bytes(orjson.dumps(docs[0]))
    assert by_model(ledger([tmp_path / "tree"])) == truth.by_model()
    assert by_model(ledger([tmp_path / "tree" / "storage"])) == truth.by_model()
    assert by_model(ledger([tmp_path / "db"])) == truth.by_model()
    assert by_model(ledger([tmp_path / "db" / "opencode.db"])) == truth.by_model()
    # a tree migrated into the database, and an export of one of its sessions: the same calls, once
    both = tmp_path / "both"
    opencode_storage(both, docs)
    opencode_db(both / "opencode.db", docs)
    assert by_model(ledger([both, tmp_path / "export.json"])) == truth.by_model()
    one = ledger([tmp_path / "export.json"], by="session")
    assert [r["session"] for r in one.rows] == [docs[0]["info"]["id"]]
    assert ledger([tmp_path / "tree"], by="project").rows[0]["project"].startswith("/home/user/work/oc")


def test_an_opencode_message_without_steps_counts_its_own_tokens(tmp_path: Path) -> None:
    folder = tmp_path / "storage" / "message" / "ses_1"
    folder.mkdir(parents=True)
    (tmp_path / "storage" / "session").mkdir()
    (folder / "msg_1.json").write_bytes(orjson.dumps({
        "id": "msg_1", "sessionID": "ses_1", "role": "assistant", "modelID": "gpt-5", "providerID": "openai", "parentID": "msg_0",
        "time": {"created": 1770000000000}, "cost": 0.5, "tokens": {"input": 100, "output": 10, "reasoning": 5, "cache": {"read": 7, "write": 0}}}))
    r = ledger([tmp_path]).rows[0]
    assert (r["input"], r["output"], r["reasoning"], r["cache_read"], r["calls"], r["cost_usd"]) == (100, 15, 5, 7, 1, 0.5)


# An opencode 0.6 session as it lies in storage/ (the shape of a real one, September 2025: opencode's own
# provider, grok-code): the message holds its `system` prompts and no `parentID`, the step-finish part no
# `reason`; both before 0.15, whose `tokens.input` was the SDK's whole prompt, cache reads included.
EARLY_MESSAGE = {"id": "msg_95521bfdd001ZM07GcDYAneK54", "sessionID": "ses_6aade4081ffe216ygZUgcUQdR1", "role": "assistant",
                 "system": ["You are opencode, an interactive CLI tool."], "mode": "build", "path": {"cwd": "/home/user/clown", "root": "/"},
                 "cost": 0, "tokens": {"input": 9640, "output": 12, "reasoning": 266, "cache": {"write": 0, "read": 9600}},
                 "modelID": "grok-code", "providerID": "opencode", "time": {"created": 1758069899229, "completed": 1758069901481}}
EARLY_STEP = {"id": "prt_95521c8a3001evp0nG98h6rQwV", "messageID": "msg_95521bfdd001ZM07GcDYAneK54", "sessionID": "ses_6aade4081ffe216ygZUgcUQdR1",
              "type": "step-finish", "tokens": {"input": 9640, "output": 12, "reasoning": 266, "cache": {"write": 0, "read": 9600}}, "cost": 0}


def _early_storage(at: Path, message: dict[str, Any], step: dict[str, Any] | None) -> Path:
    storage = at / "storage"
    (storage / "session" / "global").mkdir(parents=True)
    (storage / "session" / "global" / f"{message['sessionID']}.json").write_bytes(orjson.dumps(
        {"id": message["sessionID"], "version": "0.6.10", "title": "pwd", "time": {"created": 1758069899000, "updated": 1758069901481}}))
    (storage / "message" / message["sessionID"]).mkdir(parents=True)
    (storage / "message" / message["sessionID"] / f"{message['id']}.json").write_bytes(orjson.dumps(message))
    (storage / "part" / message["id"]).mkdir(parents=True)
    user = {"id": "msg_95521bf0a001", "sessionID": message["sessionID"], "role": "user", "time": {"created": 1758069899000}}
    (storage / "message" / message["sessionID"] / "msg_95521bf0a001.json").write_bytes(orjson.dumps(user))
    (storage / "part" / "msg_95521bf0a001").mkdir(parents=True)
    (storage / "part" / "msg_95521bf0a001" / "prt_95521bf0a002.json").write_bytes(orjson.dumps(
        {"id": "prt_95521bf0a002", "messageID": user["id"], "sessionID": message["sessionID"], "type": "text", "text": "pwd"}))
    (storage / "part" / message["id"] / "prt_95521c844001.json").write_bytes(orjson.dumps(
        {"id": "prt_95521c844001", "messageID": message["id"], "sessionID": message["sessionID"], "type": "text", "text": "/home/user/clown"}))
    if step is not None:
        (storage / "part" / message["id"] / f"{step['id']}.json").write_bytes(orjson.dumps(step))
    return storage


@pytest.mark.parametrize("with_step", [True, False])
def test_an_opencode_0_6_record_counts_its_input_without_its_cache_reads(tmp_path: Path, with_step: bool) -> None:
    """opencode before 0.15 stored the whole prompt as `input` (cache reads inside) for every provider
    but Anthropic's: 9,640 of which 9,600 read from the cache are 40 fresh tokens, priced so, by
    `usage` of the tree and of its import alike; a later record, or Anthropic's, is read as it says."""
    storage = _early_storage(tmp_path / "early", EARLY_MESSAGE, EARLY_STEP if with_step else None)
    r = ledger([storage]).rows[0]
    assert (r["input"], r["cache_read"], r["output"], r["reasoning"], r["calls"]) == (40, 9600, 278, 266, 1)
    imported = tmp_path / "imported"
    run_cli("import", "opencode", str(storage), "--out", str(imported), check=True)
    i = ledger([imported]).rows[0]
    assert (i["input"], i["cache_read"], i["output"], i["calls"]) == (40, 9600, 278, 1)
    # The same tokens in the later shapes: a step with its `reason`, a message with its `parentID`; and Anthropic's early message.
    later_step = dict(EARLY_STEP, reason="stop")
    later_message = dict({k: v for k, v in EARLY_MESSAGE.items() if k != "system"}, parentID="msg_95521bf0a001", agent="build")
    for at, message, step in (("later", later_message, later_step if with_step else None),
                              ("anthropic", dict(EARLY_MESSAGE, providerID="anthropic", modelID="claude-sonnet-4-5"), None)):
        r = ledger([_early_storage(tmp_path / at, message, step)]).rows[0]
        assert (r["input"], r["cache_read"]) == (9640, 9600), at


# -- the agents' homes -------------------------------------------------------------------------


def _fake_home(home: Path) -> dict[str, Truth]:
    truths = {"claude": claude_tree(home / ".claude", seed=21, projects=1, sessions=2, turns=4)}
    (home / ".claude" / "settings.json").write_text("{}")
    codex_rollout(home / ".codex" / "sessions" / "2026" / "02" / "01" / "rollout-2026-02-01T10-00-00-a.jsonl",
                  [{"ts": "2026-02-01T10:00:00.000Z", "model": "gpt-5-codex", "last": {"input_tokens": 500, "cached_input_tokens": 100,
                                                                                          "output_tokens": 40, "reasoning_output_tokens": 10}}])
    (home / ".codex" / "config.toml").write_text("")
    truths["gemini"] = gemini_home(home / ".gemini", seed=22)
    docs, truths["opencode"] = opencode_sessions(seed=23)
    opencode_storage(home / ".local" / "share" / "opencode", docs)
    return truths


def _no_agent_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME")}
    return {**env, "HOME": str(home)}


def test_usage_with_no_path_reads_the_homes_it_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    _fake_home(home)
    for k, v in _no_agent_env(home).items():
        monkeypatch.setenv(k, v)
    for k in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(k, raising=False)
    named = [home / ".claude", home / ".codex", home / ".local" / "share" / "opencode", home / ".gemini"]  # (the registry's order)
    mine = ledger(None, use_cache=False)
    assert mine.sources == [{"agent": a, "path": str(p)} for a, p in zip(("claude", "codex", "opencode", "gemini"), named)]
    theirs = ledger(named, use_cache=False)
    assert mine.rows == theirs.rows and mine.totals == theirs.totals
    models = {r["model"] for r in mine.rows}
    assert "gpt-5-codex" in models and "gemini-2.5-pro" in models and "claude-opus-4-6" in models
    # cached, the answer stays the same and keeps naming the homes
    assert ledger(None).sources == mine.sources and ledger(None).rows == mine.rows


def test_claude_config_dir_lists_several_homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = claude_tree(tmp_path / "a", seed=31, projects=1, sessions=1, turns=3)
    b = claude_tree(tmp_path / "b", seed=32, projects=1, sessions=1, turns=3)
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", f"{tmp_path / 'a'},{tmp_path / 'b'}")
    both = Truth()
    for t in (a, b):
        for k, v in t.cells.items():
            cell = both.cells.setdefault(k, [0, 0, 0, 0, 0])
            for i, x in enumerate(v):
                cell[i] += x
    led = ledger(None, use_cache=False)
    assert [s["path"] for s in led.sources] == [str(tmp_path / "a"), str(tmp_path / "b")]
    assert by_model(led) == both.by_model()


def test_the_command_names_the_homes_and_refuses_when_none_exists(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _fake_home(home)
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    agents_own = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME")
    proc = cli("--json", "--verbose", env=env, unset=agents_own)
    assert proc.returncode == 0, proc.stderr
    doc = orjson.loads(proc.stdout)
    assert [s["agent"] for s in doc["sources"]] == ["claude", "codex", "opencode", "gemini"]
    assert doc["prices"]["library"] == "genai-prices" and doc["prices"]["version"]
    assert f"reading gemini home {home / '.gemini'}".encode() in proc.stderr
    proc = cli(env={**env, "HOME": str(tmp_path / "nobody")}, unset=agents_own)
    assert proc.returncode == 2 and b"no agent home found" in proc.stderr and b".claude" in proc.stderr and b"opencode" in proc.stderr


# -- refusals ----------------------------------------------------------------------------------


def test_a_text_file_or_an_empty_folder_is_refused(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.md").write_text("# notes\n")
    (tmp_path / "notes" / "data.jsonl").write_text('{"a": 1}\n{"b": 2}\n')
    proc = cli(str(ROOT / "README.md"), env=env)
    assert proc.returncode == 65 and b"README.md: not a " + usage_walk.AGENTS.encode() + b" log" in proc.stderr
    assert proc.stderr.count(b"\n") == 1 and proc.stdout == b""
    for folder in ("empty", "notes"):
        proc = cli(str(tmp_path / folder), env=env)
        assert proc.returncode == 2 and f"no session under {tmp_path / folder}".encode() in proc.stderr, proc.stderr
        proc = cli(str(tmp_path / folder), "--allow-empty", "--json", env=env)
        assert proc.returncode == 0 and orjson.loads(proc.stdout)["totals"]["calls"] == 0
        assert cli(str(tmp_path / folder), env=env).returncode == 2  # (the empty answer kept for --allow-empty is not served)
    assert cli(str(tmp_path / "notes" / "data.jsonl"), env=env).returncode == 65


# -- what identifies a call --------------------------------------------------------------------


def test_two_sessions_sharing_record_uuids_count_twice(tmp_path: Path) -> None:
    """A copied project or a session forked by another tool: the records' uuids are the same, the
    session, message and request ids differ: two calls each."""
    def line(sid: str, mid: str, rid: str, uuid: str) -> bytes:
        return orjson.dumps({"type": "assistant", "sessionId": sid, "uuid": uuid, "timestamp": "2026-02-01T10:00:00.000Z", "requestId": rid,
                             "message": {"id": mid, "model": "claude-sonnet-4-5-20250929", "role": "assistant", "content": [],
                                         "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 0,
                                                   "cache_creation_input_tokens": 0}}}) + b"\n"
    for p, sid in (("-a", "s1"), ("-b", "s2")):
        proj = tmp_path / "projects" / p
        proj.mkdir(parents=True)
        (proj / f"{sid}.jsonl").write_bytes(line(sid, f"msg_{sid}_1", f"req_{sid}_1", "u-1") + line(sid, f"msg_{sid}_2", f"req_{sid}_2", "u-2"))
    led = ledger([tmp_path])
    assert led.totals["calls"] == 4 and led.duplicates == 0
    # the same session copied whole (same ids) is one session's calls, counted once
    shutil.copytree(tmp_path / "projects" / "-a", tmp_path / "projects" / "-a-copy")
    assert ledger([tmp_path]).totals["calls"] == 4


def test_gemini_reply_ids_and_codex_turn_totals_identify_calls_across_files(tmp_path: Path) -> None:
    gemini_home(tmp_path / "g", seed=41, sessions=1)
    once = ledger([tmp_path / "g"]).totals
    shutil.copytree(tmp_path / "g" / "tmp", tmp_path / "g" / "tmp-copy")
    assert ledger([tmp_path / "g"]).totals == once
    write_log(tmp_path / "c" / "s", [{"kind": "session", "session_id": "sa"}])
    assert ledger([tmp_path / "c"], allow_empty=False).totals["calls"] == 0  # (a catty session without calls is a session)


# -- prices against ccusage --------------------------------------------------------------------


def _ccusage() -> str | None:
    return os.environ.get("CATTY_CTX_CCUSAGE")


@pytest.mark.skipif(_ccusage() is None, reason="CATTY_CTX_CCUSAGE unset (npm install ccusage@20.0.24 and point it at its bin/ccusage)")
def test_current_and_provider_prefixed_claude_names_cost_within_2_percent_of_ccusage(tmp_path: Path) -> None:
    models = ["claude-sonnet-4-6", "claude-opus-4-6", "claude-opus-4-5-20251101", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001",
              "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5@20250929", "anthropic/claude-sonnet-4.5"]
    proj = tmp_path / "claude" / "projects" / "-home-user-p"
    proj.mkdir(parents=True)
    lines = []
    for i, model in enumerate(models):
        lines.append(orjson.dumps({
            "type": "assistant", "sessionId": "s1", "uuid": f"u{i}", "timestamp": f"2026-02-{i + 1:02d}T10:00:00.000Z", "requestId": f"req_{i}",
            "message": {"id": f"msg_{i}", "model": model, "role": "assistant", "content": [],
                        "usage": {"input_tokens": 1_200, "output_tokens": 3_000, "cache_read_input_tokens": 90_000,
                                  "cache_creation_input_tokens": 8_000}}}))
    (proj / "s1.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(tmp_path / "claude"), HOME=str(tmp_path), TZ="UTC")
    proc = subprocess.run([str(_ccusage()), "daily", "--json", "--offline", "--breakdown", "--timezone", "UTC"], capture_output=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    theirs: dict[str, float] = {}
    for d in orjson.loads(proc.stdout)["daily"]:
        for b in d["modelBreakdowns"]:
            theirs[b["modelName"]] = theirs.get(b["modelName"], 0.0) + b["cost"]
    ours = {r["model"]: r["cost_usd"] for r in ledger([tmp_path / "claude"]).rows}
    for model in models:
        assert ours[model] is not None, model
        if theirs.get(model):
            assert ours[model] == pytest.approx(theirs[model], rel=0.02), model
    priced_by_them = [m for m in models if theirs.get(m)]
    assert len(priced_by_them) >= 5, theirs

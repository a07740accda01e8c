"""Grok Build's own sessions (issue 39): the real `grok` (pinned, offline against the fake xAI
server) writes them; every reading command reads them where they lie, writers refuse them,
`usage` counts them once. The stored fixtures (fixtures/agents/grok-*/, recorded by
record_fixtures.py) run the same checks on every machine, CLI or not."""
from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from support import FIXTURES, cli

from agents.grok_scenarios import SEGMENT_ONLY, grok_session
from agents.openai_fake import message
from agents.runner import Grok, read_jsonl
from agents.xai_fake import run
from catty_ctx.formats.grok import summary as layout_summary
from catty_ctx.importers.grok import DANGLING_TEXT
from catty_ctx.sources import open_session
from catty_ctx.view.fold import view

STORED = sorted((FIXTURES / "agents").glob("grok-*/*/scenario.json"))
# Every `sessionUpdate` kind grok 1.0.41 wrote in the scenarios (a plain -p run, resumes,
# compactions in segments mode, a foreground subagent, a fork, a killed run, and over ACP a
# cancelled turn and a rewind).
KINDS_1_0_41 = {
    ("session/update", "user_message_chunk"), ("session/update", "agent_message_chunk"), ("session/update", "tool_call"),
    ("session/update", "tool_call_update"), ("_x.ai/session/update", "turn_completed"),
    ("_x.ai/session/update", "background_tasks"), ("_x.ai/session/update", "auto_compact_started"),
    ("_x.ai/session/update", "compaction_checkpoint"), ("_x.ai/session/update", "auto_compact_completed"),
    ("_x.ai/session/update", "subagent_spawned"), ("_x.ai/session/update", "subagent_finished"),
    ("_x.ai/session/update", "rewind_marker"),
}
_PREAMBLE = ("<user_info>", "<system-reminder>", "This session is being continued")
_QUERY = re.compile(r"\A<user_query>\n(.*)\n</user_query>\Z", re.S)


def ok(*args: str) -> bytes:
    proc = cli(*args)
    assert proc.returncode == 0, f"catty-ctx {' '.join(args)}: exit {proc.returncode}\n{proc.stderr.decode()[-2000:]}"
    return proc.stdout


def sessions(home: Path) -> list[Path]:
    return sorted(p.parent for p in (home / "sessions").glob("*/*/updates.jsonl"))


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def cache_items(folder: Path) -> list[tuple[Any, ...]]:
    """grok's chat_history.jsonl under the documented mapping (docs/import.md#grok-build): its
    harness items (the `<user_info>` preamble, `<system-reminder>`s, a compaction's summary
    item) left out, a prompt unwrapped from `<user_query>`, and a call the file leaves
    unanswered answered as grok answers it on load (the text is catty-ctx's)."""
    out: list[tuple[Any, ...]] = []
    answered = {i["tool_call_id"] for i in read_jsonl(folder / "chat_history.jsonl") if i["type"] == "tool_result"}
    for item in read_jsonl(folder / "chat_history.jsonl"):
        t = item["type"]
        if t == "system":
            out.append(("system", item["content"]))
        elif t == "user":
            text = "\n".join(p.get("text", "") for p in item["content"] if p.get("type") == "text")
            if item.get("synthetic_reason") or text.startswith(_PREAMBLE):
                continue
            m = _QUERY.match(text)
            out.append(("user", m.group(1) if m else text))
        elif t == "assistant":
            out.append(("assistant", item.get("content") or "", tuple(c["id"] for c in item.get("tool_calls") or ())))
            out.extend(("tool", c["id"], DANGLING_TEXT) for c in item.get("tool_calls") or () if c["id"] not in answered)
        elif t == "tool_result":
            out.append(("tool", item["tool_call_id"], item["content"]))
    return out


def view_items(folder: Path) -> list[tuple[Any, ...]]:
    """catty-ctx's view of the grok folder under the same mapping (the head a compaction
    rebuilds holds the same harness items, left out alike)."""
    out: list[tuple[Any, ...]] = []
    with open_session(folder, warn=None) as session:
        for item in view(session):
            role = item["role"]
            if role == "system":
                out.append(("system", item["text"]))
            elif role == "user":
                if not item.get("synthetic") and not item["text"].startswith(_PREAMBLE):
                    out.append(("user", item["text"]))
            elif role == "assistant":
                out.append(("assistant", item["text"], tuple(c["call_id"] for c in item.get("tool_calls") or ())))
            elif role == "tool":
                out.append(("tool", item["call_id"], item["output"]))
    return out


def user_turns_in_export(markdown: str) -> list[str]:
    """The user turns of `grok export`'s Markdown (`## User` blocks)."""
    return [b.split("\n## ", 1)[0].strip() for b in markdown.split("## User\n")[1:]]


def check_folder(folder: Path, grok_usage: dict[str, Any] | None, grok_export: str | None) -> None:
    """One session folder grok wrote: every reading command on it, against grok's own answers."""
    doc = orjson.loads(ok("inspect", str(folder), "--json"))
    assert doc["source"]["format"] == "grok" and doc["session_id"] == folder.name
    assert view_items(folder) == cache_items(folder)
    ok("repair", "--check", str(folder))
    ok("repair", "--check", str(folder / "updates.jsonl"))
    md = ok("export", str(folder), "--format", "md").decode()
    for turn in user_turns_in_export(grok_export or ""):
        assert turn in md, turn
    totals = orjson.loads(ok("usage", str(folder), "--json"))["totals"]
    if grok_usage is not None:
        want = grok_usage["session"]
        assert totals["input"] + totals["cache_read"] == want["inputTokens"]
        assert (totals["cache_read"], totals["cache_write"], totals["output"], totals["reasoning"]) == \
            (want["cachedReadTokens"], want["cacheCreationTokens"], want["outputTokens"], want["reasoningTokens"])
        # one model: a record per turn that carries usage (grok's usage.json folds a cancelled
        # turn into the next turn's row, so its turnCount can be lower)
        billed = [u for u in read_jsonl(folder / "updates.jsonl") if u["params"]["update"]["sessionUpdate"] == "turn_completed"
                  and "usage" in u["params"]["update"]]
        assert totals["calls"] == len(billed) >= want["turnCount"]
        assert totals["cost_usd"] == pytest.approx(want["costUsdTicks"] / 1e10, abs=1e-6)
    for fmt in ("openai", "anthropic"):
        assert orjson.loads(ok("resume", str(folder), "--format", fmt))["messages"]
    pruned = [orjson.loads(line) for line in ok("prune", str(folder)).splitlines()]  # the request copy, item by item
    with open_session(folder, warn=None) as session:
        assert [i["role"] for i in pruned] == [i["role"] for i in view(session)]
    assert ok("report", str(folder)).startswith(b"<!DOCTYPE html>")
    first_user = next((i[1] for i in view_items(folder) if i[0] == "user"), None)
    if first_user:
        hits = orjson.loads(ok("search", str(folder), first_user.splitlines()[0], "--json"))["matches"]
        assert hits and hits[0]["session"] == folder.name and hits[0]["agent"] == "grok"


@pytest.mark.long
@pytest.mark.agents("grok")
def test_every_folder_the_real_grok_writes_reads_as_grok_says(grok: Grok) -> None:
    w = grok_session(grok)
    home = grok.grok_home
    folders = sessions(home)
    assert {f.name for f in folders} == {w.session_id, w.fork_id, w.child_id, w.cancelled_id, w.single_id, w.acp_id}
    said = {}  # grok's own answers first (grok writes its logs/ as it runs), then ours
    for folder in folders:
        usage = orjson.loads(grok.run("usage", folder.name).stdout) if (folder / "usage.json").is_file() else None
        exported = grok.run("export", folder.name, check=False)
        said[folder] = usage, exported.stdout if exported.returncode == 0 else None
    main = grok.session_dir(w.session_id)
    assert user_turns_in_export(said[main][1] or "") == w.prompts[w.session_id]
    before = digest(home)
    for folder in folders:
        check_folder(folder, *said[folder])
    hits = orjson.loads(ok("segment", "grep", str(main), SEGMENT_ONLY, "--json"))["matches"]
    assert hits and {h["segment"] for h in hits} == {0}
    # only segment_000.md holds the first turn's output, of what grok kept: the view does not
    with open_session(main, warn=None) as session:
        assert SEGMENT_ONLY not in orjson.dumps(view(session)).decode()
    assert digest(home) == before, "a reading command changed GROK_HOME"


@pytest.mark.agents("grok")
def test_the_fake_xai_server_bills_what_grok_records(grok: Grok) -> None:
    grok.server.push(run("echo billed", "echo"), message("Done."))
    ran = grok.prompt("say it")
    assert ran.json["text"] == "Done." and ran.session_id
    last = [u for u in grok.updates(ran.session_id) if u["params"]["update"]["sessionUpdate"] == "turn_completed"][-1]
    usage = last["params"]["update"]["usage"]
    bodies = grok.server.bodies()
    assert len(bodies) == 2 and usage["modelCalls"] == 2 and usage["costUsdTicks"] == ran.json["total_cost_usd_ticks"] > 0
    outputs = [i for i in bodies[1]["input"] if i.get("type") == "function_call_output"]
    assert outputs and "billed" in outputs[0]["output"]
    assert grok.server.errors == [] and grok.server.unscripted == 0


# -- the stored fixtures: every machine ------------------------------------------------------


def stored() -> tuple[Path, dict[str, Any]]:
    assert STORED, "no grok fixture stored (record_fixtures.py grok)"
    return STORED[0].parent / ".grok", orjson.loads(STORED[0].read_bytes())


def test_the_fixtures_hold_every_kind_the_release_writes() -> None:
    home, _ = stored()
    seen = {(r["method"], r["params"]["update"]["sessionUpdate"]) for f in sessions(home) for r in read_jsonl(f / "updates.jsonl")}
    assert seen == KINDS_1_0_41


def test_stored_folders_read_as_their_cache_says(tmp_path: Path) -> None:
    home, _ = stored()
    copy = tmp_path / ".grok"
    shutil.copytree(home, copy)
    before = digest(copy)
    for folder in sessions(copy):
        usage = orjson.loads((folder / "usage.json").read_bytes()) if (folder / "usage.json").is_file() else None
        check_folder(folder, usage, None)
    assert digest(copy) == before


def test_the_view_is_the_same_from_the_cache_or_from_the_log_alone(tmp_path: Path) -> None:
    """chat_history.jsonl is grok's cache of the model's view: without it (as grok rebuilds it
    from updates.jsonl) every stored folder reads as the same view."""
    home, _ = stored()
    for n, src in enumerate(sessions(home)):
        folder = tmp_path / str(n) / "%2Fx" / src.name
        shutil.copytree(src, folder)
        with_cache = view_items(folder)
        (folder / "chat_history.jsonl").unlink()
        assert view_items(folder) == with_cache, src.name


def test_a_line_of_an_unknown_kind_is_kept_and_known_ones_are_never_dropped(tmp_path: Path) -> None:
    home, doc = stored()
    src = next(f for f in sessions(home) if f.name == doc["session_id"])
    folder = tmp_path / "%2Fx" / src.name
    shutil.copytree(src, folder)
    line = {"timestamp": 1, "method": "_x.ai/session/update",
            "params": {"sessionId": src.name, "update": {"sessionUpdate": "brand_new_kind", "x": 1}}}
    with open(folder / "updates.jsonl", "ab") as f:
        f.write(orjson.dumps(line) + b"\n")
    events = [orjson.loads(e) for e in ok("import", "grok", str(folder)).splitlines()]
    kept = [e for e in events if e["kind"] == "grok_update"]
    assert any(e["update_kind"] == "brand_new_kind" and e["update"]["x"] == 1 for e in kept)
    lines = read_jsonl(folder / "updates.jsonl")
    mapped = {"user_message_chunk", "agent_message_chunk", "tool_call", "turn_completed", "compaction_checkpoint"}
    others = [r for r in lines if r["params"]["update"]["sessionUpdate"] not in mapped
              and not (r["params"]["update"]["sessionUpdate"] == "tool_call_update" and r["params"]["update"].get("status"))]
    assert len(kept) == len(others)


def test_writers_refuse_a_grok_folder_naming_import(tmp_path: Path) -> None:
    home, doc = stored()
    folder = tmp_path / "s"
    shutil.copytree(next(f for f in sessions(home) if f.name == doc["session_id"]), folder)
    before = digest(folder)
    line = orjson.dumps({"kind": "message", "id": "m", "role": "user", "text": "x"}) + b"\n"
    for args in (["repair", "--force", str(folder)], ["append", str(folder)], ["repair", "--force", str(folder / "updates.jsonl")]):
        proc = cli(*args, input=line)
        assert proc.returncode == 65, (args, proc.stderr)
        assert b"import" in proc.stderr and b"Grok Build" in proc.stderr, proc.stderr
    assert digest(folder) == before


def test_import_auto_writes_a_catty_session(tmp_path: Path) -> None:
    home, doc = stored()
    folder = next(f for f in sessions(home) if f.name == doc["session_id"])
    report = orjson.loads(ok("import", "auto", str(folder / "updates.jsonl"), "--out", str(tmp_path / "out")))
    assert report["format"] == "grok" and report["user_turns"] == len(doc["prompts"])
    ok("repair", "--check", str(tmp_path / "out"))
    one = ok("import", "grok", str(home), "--session", doc["session_id"])
    assert one == ok("import", "auto", str(folder))
    several = cli("import", "auto", str(home))  # a home holds several: each named, none chosen
    assert several.returncode == 2 and doc["session_id"].encode() in several.stderr and several.stdout == b""
    assert doc["child_id"].encode() not in several.stderr  # (a child belongs to its parent)


def test_usage_reads_the_homes_and_counts_a_child_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, doc = stored()
    user = tmp_path / "user"
    shutil.copytree(home, user / ".grok")
    elsewhere = tmp_path / "elsewhere"
    parent = next(f for f in sessions(home) if f.name == doc["session_id"])
    child = next(f for f in sessions(home) if f.name == doc["child_id"])
    (elsewhere / "sessions" / "b").mkdir(parents=True)
    shutil.copytree(parent, elsewhere / "sessions" / "b" / parent.name)
    shutil.copytree(child, elsewhere / "sessions" / "b" / child.name)
    monkeypatch.setenv("HOME", str(user))
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GROK_HOME", str(elsewhere))
    totals = orjson.loads(ok("usage", "--json"))["totals"]
    parent_usage = orjson.loads((parent / "usage.json").read_bytes())["session"]
    top = [f for f in sessions(home) if layout_summary(f).get("session_kind") != "subagent"]
    ledgers = [orjson.loads((f / "usage.json").read_bytes())["session"] for f in top if (f / "usage.json").is_file()]
    # the fork holds its parent's turns again (they count once); the child's turn is in its parent's
    assert totals["input"] + totals["cache_read"] == sum(u["inputTokens"] for u in ledgers) - parent_usage["inputTokens"]
    turns = {u["params"]["update"]["prompt_id"] for f in top for u in read_jsonl(f / "updates.jsonl")
             if u["params"]["update"]["sessionUpdate"] == "turn_completed" and "usage" in u["params"]["update"]}
    assert totals["calls"] == len(turns)
    alone = orjson.loads(ok("usage", str(elsewhere), "--json"))["totals"]
    assert alone["input"] + alone["cache_read"] == parent_usage["inputTokens"]


# -- fork --to grok --------------------------------------------------------------------------


def request_texts(body: dict[str, Any]) -> str:
    return orjson.dumps(body.get("input") or body.get("messages") or []).decode()


@pytest.mark.agents("grok")
def test_fork_to_grok_is_resumed_by_the_real_grok(grok: Grok, monkeypatch: pytest.MonkeyPatch) -> None:
    s = grok.server
    s.push(run("echo forked-source", "echo"), message("Echoed."))
    sid = grok.prompt("Echo something").session_id
    s.push(message("Second answer."))
    grok.prompt("Say more", resume=sid)
    source = grok.session_dir(sid)
    before = digest(source)
    monkeypatch.setenv("GROK_HOME", str(grok.grok_home))
    out = orjson.loads(ok("fork", str(source), "--to", "grok", "--json"))
    new = out["session_id"]
    assert new != sid and out["resume"] == f"grok --resume {new}"
    folder = Path(out["path"])
    assert folder.parent == source.parent and layout_summary(folder)["parent_session_id"] == sid
    assert layout_summary(folder)["session_kind"] == "fork"
    s.push(message("Resumed."))
    ran = grok.prompt("Go on", resume=new)
    assert ran.session_id == new and ran.json["text"] == "Resumed."
    sent = request_texts(s.bodies()[-1])
    for turn in ("Echo something", "Say more", "Go on", "forked-source", "Second answer."):
        assert turn in sent, turn
    assert digest(source) == before
    ok("repair", "--check", str(folder))  # and catty-ctx reads what it wrote, as grok left it


def test_fork_to_grok_refuses_a_missing_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROK_HOME", str(tmp_path / "nowhere"))
    proc = cli("fork", str(FIXTURES / "sessions" / "demo"), "--to", "grok")
    err = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1 and "no Grok Build home" in err[0], err
    assert not (tmp_path / "nowhere").exists()


def test_fork_to_grok_writes_a_folder_grok_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, doc = stored()
    (tmp_path / ".grok" / "sessions").mkdir(parents=True)
    monkeypatch.setenv("GROK_HOME", str(tmp_path / ".grok"))
    src = next(f for f in sessions(home) if f.name == doc["session_id"])
    out = orjson.loads(ok("fork", str(src), "--to", "grok", "--json", "--cwd", "/home/user/project"))
    folder = Path(out["path"])
    assert folder.parent.name == "%2Fhome%2Fuser%2Fproject" and sorted(p.name for p in folder.iterdir()) == \
        ["chat_history.jsonl", "summary.json", "updates.jsonl"]
    meta = layout_summary(folder)
    for key in ("info", "session_summary", "created_at", "updated_at", "num_messages", "current_model_id"):
        assert key in meta, key  # grok's required fields
    assert meta["info"] == {"id": out["session_id"], "cwd": "/home/user/project"} and meta["chat_format_version"] == 1
    assert read_jsonl(folder / "chat_history.jsonl")[0]["type"] == "system"
    assert view_items(folder)[1:] == cache_items(folder)[1:]  # the folder reads back as its own cache says
    assert sorted(p.name for p in tmp_path.rglob(".*.writing-*")) == []
    proc = cli("fork", str(src), "--to", "grok", "--session-id", out["session_id"], "--cwd", "/home/user/project")
    assert proc.returncode == 73 and b"already exists" in proc.stderr


def test_eval_native_scores_grok_compactions_in_both_columns() -> None:
    home, doc = stored()
    report = orjson.loads(ok("eval", "--native", str(home), "--json"))["native"]
    mine = [c for c in report["compactions"] if doc["session_id"] in c["session"]]
    assert mine and all(c["agent"] == "grok" and c["error"] is None for c in mine), mine
    for c in mine:
        assert c["facts"] > 0 and c["summary_recall"] is not None and c["reminder_recall"] is not None
        assert c["reminder_chars"] > 0  # our hooks' reminder, built from the updates.jsonl cut at the checkpoint line
    assert report["total"]["failed"] == 0 and report["total"]["compactions"] == len(report["compactions"])


def test_inspect_agents_lists_the_subagent_child_with_its_parents_call() -> None:
    home, doc = stored()
    parent = next(f for f in sessions(home) if f.name == doc["session_id"])
    rows = [orjson.loads(line) for line in ok("inspect", str(parent), "--agents").splitlines()]
    assert [r["agent"] for r in rows] == [doc["child_id"]]
    row = rows[0]
    spawn = next(u["params"]["update"] for u in read_jsonl(parent / "updates.jsonl")
                 if u["params"]["update"]["sessionUpdate"] == "tool_call" and u["params"]["update"]["title"] == "spawn_subagent")
    assert (row["status"], row["type"], row["parent_call"]) == ("completed", "general-purpose", spawn["toolCallId"])
    assert row["turns"] == 1
    # the child's own folder reads on its own too (its turn is its parent's usage: not counted in a walk)
    child = next(f for f in sessions(home) if f.name == doc["child_id"])
    assert orjson.loads(ok("inspect", str(child), "--json"))["turns"] == 1
    assert all(doc["child_id"] not in line for line in ok("inspect", str(home)).decode().splitlines()), "a child listed apart"


def test_eval_replay_summarises_grok_requests_again_and_scores_both() -> None:
    home, doc = stored()
    report = orjson.loads(ok("eval", "--replay", str(home), "--summarizer", "extractive", "--json"))["replay"]
    (row,) = report["requests"]  # the single-pass /compact's request (the two-pass ones keep none)
    assert doc["single_id"] in row["session"] and row["trigger"] == "manual" and row["items"] > 3
    assert row["facts"] >= 2  # the user's rule and the file edited, derived as --native derives them
    assert row["grok"]["recall"] is not None and row["replays"][0]["recall"] is not None and row["replays"][0]["error"] is None
    assert row["replays"][0]["recall"] > row["grok"]["recall"]  # the fake's canned summary names neither
    assert report["total"]["replay_recall"] == {"extractive": row["replays"][0]["recall"]}
    proc = cli("eval", "--replay", str(home))
    assert proc.returncode == 2 and b"--summarizer" in proc.stderr


def test_buckets_url_encoded_and_hashed_name_their_cwd(tmp_path: Path) -> None:
    from catty_ctx.formats.grok import bucket_cwd

    assert bucket_cwd(tmp_path / "%2Fhome%2Fu%2Fmy%20proj") == "/home/u/my proj"
    assert bucket_cwd(tmp_path / "C%3A%5Cgf%5Cproject") == "C:\\gf\\project"
    hashed = tmp_path / "deep-leaf-0123456789abcdef"
    hashed.mkdir()
    assert bucket_cwd(hashed) is None  # no .cwd: the name alone says nothing
    long_cwd = "/" + "/".join(["d" * 60] * 6) + "/Deep Leaf"
    (hashed / ".cwd").write_text(long_cwd)
    assert bucket_cwd(hashed) == long_cwd
    # a session in the hashed bucket reads with that cwd, its summary.json aside
    home, doc = stored()
    src = next(f for f in sessions(home) if f.name == doc["session_id"])
    shutil.copytree(src, hashed / src.name)
    (hashed / src.name / "summary.json").unlink()
    first = orjson.loads(ok("import", "grok", str(hashed / src.name)).splitlines()[0])
    assert first["kind"] == "session" and first["cwd"] == long_cwd and first["session_id"] == doc["session_id"]


@pytest.mark.agents("grok")
def test_with_no_model_in_the_catalogue_grok_talks_chat_completions(grok: Grok) -> None:
    grok.server.models = []  # an empty list: grok's default model goes to /v1/chat/completions
    grok.server.push(run("echo over-chat", "echo"), message("Chatted."))
    ran = grok.prompt("Use chat completions")
    assert ran.json["text"] == "Chatted."
    chats = [r for r in grok.server.calls if r.path == "/v1/chat/completions"]
    assert len(chats) == 2 and chats[0].json["stream"] is True
    assert any(m.get("role") == "tool" and "over-chat" in str(m.get("content")) for m in chats[1].json["messages"])
    usage = [u["params"]["update"]["usage"] for u in grok.updates(ran.session_id)
             if u["params"]["update"]["sessionUpdate"] == "turn_completed"][-1]
    assert usage["modelCalls"] == 2 and usage["costUsdTicks"] == ran.json["total_cost_usd_ticks"] > 0
    folder = grok.session_dir(ran.session_id)
    assert view_items(folder) == cache_items(folder)


def test_writers_over_a_grok_home_refuse_each_session_and_change_nothing(tmp_path: Path) -> None:
    home, _ = stored()
    copy = tmp_path / ".grok"
    shutil.copytree(home, copy)
    before = digest(copy)
    for args in (["repair", str(copy)], ["compact", str(copy)]):
        proc = cli(*args)
        refused = [line for line in proc.stderr.decode().splitlines() if "Grok Build session" in line and "import grok" in line]
        assert proc.returncode == 65 and len(refused) == len(sessions(copy)) - 1, (args, proc.stderr)  # (the child: its parent's)
    assert digest(copy) == before

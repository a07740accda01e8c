"""Generated Claude Code and Codex trees for the usage ledger's tests and its benchmark.

Deterministic (a seed), shaped like the real files: one line per content block repeating the
response's usage (earlier copies sometimes a partial snapshot), tool results padded with
text, subagent files beside the session, a side-question replay of a parent response under
a new request id, `<synthetic>` responses, midnight crossings. `truth` returns what an exact
ledger must count, computed from the generator's own bookkeeping (not by parsing the files).
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson

from support import write_log

CLAUDE_MODELS = ("claude-sonnet-4-20250514", "claude-opus-4-1-20250805", "claude-3-5-haiku-20241022", "claude-sonnet-4-5-20250929")
_WORDS = "the of and to in is that for it as with was on be by this are from at or an but not file test code run".split()


@dataclass
class Truth:
    """Per (model, UTC day) counts of the calls an exact ledger keeps."""

    cells: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # input, output, cache_read, cache_write, calls

    def add(self, model: str, ts: datetime, u: dict[str, int]) -> None:
        cell = self.cells.setdefault((model, ts.strftime("%Y-%m-%d")), [0, 0, 0, 0, 0])
        cell[0] += u["input_tokens"]
        cell[1] += u["output_tokens"]
        cell[2] += u["cache_read_input_tokens"]
        cell[3] += u["cache_creation_input_tokens"]
        cell[4] += 1

    def by_model(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for (model, _day), c in self.cells.items():
            acc = out.setdefault(model, [0, 0, 0, 0, 0])
            for i, v in enumerate(c):
                acc[i] += v
        return out


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _text(rng: random.Random, n: int) -> str:
    if n <= 0:
        return ""
    words = []
    size = 0
    while size < n:
        w = rng.choice(_WORDS)
        words.append(w)
        size += len(w) + 1
    return " ".join(words)[:n]


def _usage(rng: random.Random) -> dict[str, Any]:
    return {
        "input_tokens": rng.randint(1, 40),
        "cache_creation_input_tokens": rng.choice((0, 0, rng.randint(100, 30_000))),
        "cache_read_input_tokens": rng.randint(0, 150_000),
        "output_tokens": rng.randint(1, 4_000),
        "service_tier": "standard",
    }


def claude_tree(
    root: Path,
    *,
    projects: int = 2,
    sessions: int = 3,
    turns: int = 12,
    seed: int = 1,
    pad: int = 200,
    start: datetime = datetime(2026, 1, 30, 21, 0, tzinfo=timezone.utc),
    subagents: bool = True,
    replays: bool = True,
    synthetic: bool = True,
    resumed_copies: bool = False,
) -> Truth:
    """Write ROOT/projects/<project>/<session>.jsonl (+ <session>/subagents/agent-*.jsonl)."""
    rng = random.Random(seed)
    truth = Truth()
    t = start
    n_msg = 0

    def next_id(prefix: str) -> str:
        nonlocal n_msg
        n_msg += 1
        return f"{prefix}{seed:04d}{n_msg:08d}{rng.getrandbits(40):010x}"

    for p in range(projects):
        proj = root / "projects" / f"-home-user-work-proj{p}"
        proj.mkdir(parents=True, exist_ok=True)
        for s in range(sessions):
            sid = f"{seed:08x}-{p:04x}-{s:04x}-8000-{rng.getrandbits(48):012x}"
            cwd = f"/home/user/work/proj{p}"
            base = {"isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": sid, "version": "1.0.98", "gitBranch": "main"}
            lines: list[bytes] = [orjson.dumps({"type": "summary", "summary": "Generated session", "leafUuid": "x"})]
            parent: str | None = None
            main_responses: list[dict[str, Any]] = []
            for _turn in range(turns):
                t += timedelta(seconds=rng.randint(20, 2400))
                uid = next_id("u-")
                lines.append(orjson.dumps({**base, "parentUuid": parent, "type": "user", "uuid": uid, "timestamp": _ts(t),
                                           "message": {"role": "user", "content": _text(rng, 60)}}))
                parent = uid
                for _step in range(rng.randint(1, 3)):
                    t += timedelta(seconds=rng.randint(2, 90), milliseconds=rng.randint(0, 999))
                    model = rng.choice(CLAUDE_MODELS)
                    mid, rid = next_id("msg_"), next_id("req_")
                    u = _usage(rng)
                    blocks = rng.randint(1, 3)
                    for b in range(blocks):
                        ub = dict(u)
                        if b < blocks - 1 and rng.random() < 0.5:
                            ub["output_tokens"] = rng.randint(1, u["output_tokens"])  # a partial snapshot
                        content = ({"type": "text", "text": _text(rng, 120)} if b < blocks - 1
                                   else {"type": "tool_use", "id": f"toolu_{mid}", "name": "Bash", "input": {"command": "ls"}})
                        auid = next_id("a-")
                        entry = {**base, "parentUuid": parent, "type": "assistant", "uuid": auid, "timestamp": _ts(t), "requestId": rid,
                                 "message": {"id": mid, "type": "message", "role": "assistant", "model": model, "content": [content],
                                             "stop_reason": None, "stop_sequence": None, "usage": ub}}
                        lines.append(orjson.dumps(entry))
                        parent = auid
                    truth.add(model, t, u)
                    main_responses.append({"mid": mid, "t": t, "model": model, "u": u})
                    ruid = next_id("u-")
                    lines.append(orjson.dumps({**base, "parentUuid": parent, "type": "user", "uuid": ruid, "timestamp": _ts(t + timedelta(seconds=1)),
                                               "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{mid}", "content": _text(rng, pad)}]},
                                               "toolUseResult": {"stdout": _text(rng, pad // 2), "stderr": "", "interrupted": False}}))
                    parent = ruid
                if synthetic and rng.random() < 0.15:
                    zero = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
                    lines.append(orjson.dumps({**base, "parentUuid": parent, "type": "assistant", "uuid": next_id("a-"), "timestamp": _ts(t),
                                               "message": {"id": next_id("syn-"), "model": "<synthetic>", "role": "assistant",
                                                           "content": [{"type": "text", "text": "No response requested."}], "usage": zero}}))
            (proj / f"{sid}.jsonl").write_bytes(b"\n".join(lines) + b"\n")

            if subagents:
                sub = proj / sid / "subagents"
                sub.mkdir(parents=True, exist_ok=True)
                for a in range(rng.randint(1, 2)):
                    aid = f"{rng.getrandbits(32):08x}"
                    sbase = {**base, "isSidechain": True, "agentId": aid}
                    alines: list[bytes] = []
                    if replays and main_responses:
                        # A side-question log replays a parent response under a new request id.
                        r = rng.choice(main_responses)
                        ru = dict(r["u"], cache_read_input_tokens=r["u"]["cache_read_input_tokens"] + 50_000)
                        alines.append(orjson.dumps({**sbase, "parentUuid": None, "type": "assistant", "uuid": next_id("a-"), "timestamp": _ts(r["t"]),
                                                    "requestId": next_id("req_"),
                                                    "message": {"id": r["mid"], "model": r["model"], "role": "assistant", "content": [], "usage": ru}}))
                    ta = t - timedelta(minutes=rng.randint(1, 30))
                    for _k in range(rng.randint(2, 5)):
                        ta += timedelta(seconds=rng.randint(1, 60))
                        model = rng.choice(CLAUDE_MODELS)
                        u = _usage(rng)
                        mid, rid = next_id("msg_"), next_id("req_")
                        for _b in range(rng.randint(1, 2)):
                            alines.append(orjson.dumps({**sbase, "parentUuid": None, "type": "assistant", "uuid": next_id("a-"), "timestamp": _ts(ta),
                                                        "requestId": rid,
                                                        "message": {"id": mid, "model": model, "role": "assistant",
                                                                    "content": [{"type": "text", "text": _text(rng, pad // 4)}], "usage": u}}))
                        truth.add(model, ta, u)
                    (sub / f"agent-{aid}.jsonl").write_bytes(b"\n".join(alines) + b"\n")

            if resumed_copies and s > 0:
                # A resumed session starts by replaying the previous one's records verbatim.
                prev = sorted(proj.glob("*.jsonl"))[0]
                copy = prev.read_bytes()
                new_sid = f"{seed:08x}-{p:04x}-{s:04x}-9000-{rng.getrandbits(48):012x}"
                (proj / f"{new_sid}.jsonl").write_bytes(copy)
    return truth


def codex_rollout(path: Path, steps: list[dict[str, Any]], *, session_id: str = "0199a000-0000-7000-8000-000000000001", cwd: str = "/home/user/work",
                  pad: int = 0) -> None:
    """A Codex rollout: session_meta, then per step a turn_context (when the model changes) and token_count events
    (PAD: the length of each step's reply text, as tool output and prompts make a real rollout large).

    Each step: {"ts": iso, "model": str, "last": {input_tokens, cached_input_tokens, output_tokens, reasoning_output_tokens},
    "repeat": bool (emit the same token_count twice, as Codex does)}.
    """
    lines: list[bytes] = [orjson.dumps({"timestamp": steps[0]["ts"], "type": "session_meta",
                                        "payload": {"id": session_id, "timestamp": steps[0]["ts"], "cwd": cwd, "originator": "codex_cli_rs", "cli_version": "0.46.0"}})]
    total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0, "total_tokens": 0}
    model = None
    for st in steps:
        if st["model"] != model:
            model = st["model"]
            lines.append(orjson.dumps({"timestamp": st["ts"], "type": "turn_context", "payload": {"cwd": cwd, "model": model, "effort": "medium"}}))
        lines.append(orjson.dumps({"timestamp": st["ts"], "type": "response_item",
                                   "payload": {"type": "message", "role": "assistant",
                                               "content": [{"type": "output_text", "text": _text(random.Random(len(lines)), pad) if pad else "done"}]}}))
        last = dict(st["last"])
        last["total_tokens"] = last["input_tokens"] + last["output_tokens"]
        for k in total:
            total[k] += last[k]
        ev = orjson.dumps({"timestamp": st["ts"], "type": "event_msg",
                           "payload": {"type": "token_count", "info": {"total_token_usage": dict(total), "last_token_usage": last, "model_context_window": 272000}}})
        lines.append(ev)
        if st.get("repeat"):
            lines.append(ev)
    lines.append(orjson.dumps({"timestamp": steps[-1]["ts"], "type": "event_msg", "payload": {"type": "token_count", "info": None, "rate_limits": {}}}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")


GEMINI_MODELS = ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-3-pro-preview")


def gemini_home(root: Path, *, projects: int = 1, sessions: int = 2, turns: int = 6, seed: int = 1, pad: int = 200,
                form: str = "jsonl", start: datetime = datetime(2026, 2, 3, 9, 0, tzinfo=timezone.utc)) -> Truth:
    """Write ROOT/tmp/<project>/chats/session-*.jsonl (FORM "jsonl": a metadata line, records, a
    rewrite of each reply with the same id, a `$set`) or session-*.json (FORM "json": one document).

    The truth counts each reply once, thinking tokens in output (`Truth.add` gets output + thoughts)."""
    rng = random.Random(seed)
    truth = Truth()
    t = start
    (root / "settings.json").parent.mkdir(parents=True, exist_ok=True)
    (root / "settings.json").write_text("{}")
    for p in range(projects):
        chats = root / "tmp" / f"{rng.getrandbits(64):016x}" / "chats"
        chats.mkdir(parents=True, exist_ok=True)
        for s in range(sessions):
            sid = f"{seed:08x}-{p:04x}-{s:04x}-8000-{rng.getrandbits(48):012x}"
            records: list[dict[str, Any]] = []
            lines: list[bytes] = []
            for turn in range(turns):
                t += timedelta(seconds=rng.randint(20, 900))
                records.append({"id": f"u{s}-{turn}", "timestamp": _ts(t), "type": "user", "content": [{"text": _text(rng, 60)}]})
                lines.append(orjson.dumps(records[-1]))
                t += timedelta(seconds=rng.randint(2, 60))
                model = rng.choice(GEMINI_MODELS)
                prompt = rng.randint(1_000, 60_000)
                cached = rng.choice((0, rng.randint(0, prompt)))
                out, thoughts, tool = rng.randint(1, 3_000), rng.choice((0, rng.randint(1, 2_000))), rng.choice((0, 0, rng.randint(1, 500)))
                tokens = {"input": prompt, "output": out, "cached": cached, "thoughts": thoughts, "tool": tool,
                          "total": prompt + out + thoughts + tool}
                reply = {"id": f"g{seed}-{p}-{s}-{turn}-{rng.getrandbits(32):08x}", "timestamp": _ts(t), "type": "gemini",
                         "content": _text(rng, pad), "model": model, "thoughts": [{"subject": "Plan", "description": _text(rng, 80)}]}
                # The reply is written first without its tokens, then again with them (same id).
                lines.append(orjson.dumps(reply))
                reply = dict(reply, tokens=tokens)
                records.append(reply)
                lines.append(orjson.dumps(reply))
                truth.add(model, t, {"input_tokens": prompt - cached + tool, "output_tokens": out + thoughts,
                                     "cache_read_input_tokens": cached, "cache_creation_input_tokens": 0})
            stamp = start.strftime("%Y-%m-%dT%H-%M")
            meta = {"sessionId": sid, "projectHash": chats.parent.name, "startTime": _ts(start), "lastUpdated": _ts(t), "kind": "main"}
            if form == "json":
                (chats / f"session-{stamp}-{sid[:8]}{s}.json").write_bytes(orjson.dumps({**meta, "messages": records}, option=orjson.OPT_INDENT_2))
            else:
                body = [orjson.dumps(meta), *lines, orjson.dumps({"$set": {"lastUpdated": _ts(t)}})]
                (chats / f"session-{stamp}-{sid[:8]}{s}.jsonl").write_bytes(b"\n".join(body) + b"\n")
    return truth


OPENCODE_MODELS = ("claude-sonnet-4-5", "gpt-5", "claude-opus-4-6")


def opencode_sessions(*, sessions: int = 2, turns: int = 5, seed: int = 1, pad: int = 200,
                      start: datetime = datetime(2026, 2, 4, 9, 0, tzinfo=timezone.utc)) -> tuple[list[dict[str, Any]], Truth]:
    """opencode sessions as `opencode export` documents ({info, messages: [{info, parts}]}); each
    assistant message runs 1-3 steps (a step-finish part each: the calls), its own tokens the last step's."""
    rng = random.Random(seed)
    truth = Truth()
    t = start
    docs = []
    n = 0
    for s in range(sessions):
        sid = f"ses_{seed:04d}{s:04d}{rng.getrandbits(40):010x}"
        cwd = f"/home/user/work/oc{s}"
        messages = []
        for _turn in range(turns):
            t += timedelta(seconds=rng.randint(20, 900))
            n += 1
            uid = f"msg_{seed:04d}{n:08d}u"
            messages.append({"info": {"id": uid, "sessionID": sid, "role": "user", "time": {"created": int(t.timestamp() * 1000)}},
                             "parts": [{"id": f"prt_{uid}_0", "sessionID": sid, "messageID": uid, "type": "text", "text": _text(rng, 60)}]})
            n += 1
            mid = f"msg_{seed:04d}{n:08d}a"
            model = rng.choice(OPENCODE_MODELS)
            t += timedelta(seconds=rng.randint(2, 60))
            parts: list[dict[str, Any]] = []
            last: dict[str, Any] = {}
            for step in range(rng.randint(1, 3)):
                tokens = {"input": rng.randint(10, 5_000), "output": rng.randint(1, 2_000), "reasoning": rng.choice((0, rng.randint(1, 900))),
                          "cache": {"read": rng.randint(0, 90_000), "write": rng.choice((0, rng.randint(1, 9_000)))}}
                parts.append({"id": f"prt_{mid}_{step}s", "sessionID": sid, "messageID": mid, "type": "step-start"})
                parts.append({"id": f"prt_{mid}_{step}t", "sessionID": sid, "messageID": mid, "type": "tool", "callID": f"call_{mid}{step}",
                              "tool": "bash", "state": {"status": "completed", "input": {"command": "ls"}, "output": _text(rng, pad)}})
                parts.append({"id": f"prt_{mid}_{step}z", "sessionID": sid, "messageID": mid, "type": "step-finish", "reason": "tool-calls",
                              "cost": 0, "tokens": tokens})
                last = tokens
                truth.add(model, t, {"input_tokens": tokens["input"], "output_tokens": tokens["output"] + tokens["reasoning"],
                                     "cache_read_input_tokens": tokens["cache"]["read"], "cache_creation_input_tokens": tokens["cache"]["write"]})
            info = {"id": mid, "sessionID": sid, "role": "assistant", "time": {"created": int(t.timestamp() * 1000)}, "modelID": model,
                    "providerID": "anthropic" if model.startswith("claude") else "openai", "cost": 0, "tokens": last,
                    "path": {"cwd": cwd, "root": cwd}}
            messages.append({"info": info, "parts": parts})
        docs.append({"info": {"id": sid, "directory": cwd, "title": f"session {s}", "time": {"created": int(start.timestamp() * 1000)}},
                     "messages": messages})
    return docs, truth


def opencode_storage(root: Path, docs: list[dict[str, Any]]) -> None:
    """Write DOCS (see `opencode_sessions`) as opencode's storage tree under ROOT/storage."""
    for doc in docs:
        sid = doc["info"]["id"]
        (root / "storage" / "session" / "prj_1").mkdir(parents=True, exist_ok=True)
        (root / "storage" / "session" / "prj_1" / f"{sid}.json").write_bytes(orjson.dumps(doc["info"]))
        for m in doc["messages"]:
            folder = root / "storage" / "message" / sid
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{m['info']['id']}.json").write_bytes(orjson.dumps(m["info"], option=orjson.OPT_INDENT_2))
            for p in m["parts"]:
                pf = root / "storage" / "part" / m["info"]["id"]
                pf.mkdir(parents=True, exist_ok=True)
                (pf / f"{p['id']}.json").write_bytes(orjson.dumps(p, option=orjson.OPT_INDENT_2))


def opencode_db(path: Path, docs: list[dict[str, Any]]) -> None:
    """Write DOCS as the tables of an `opencode.db` (a JSON `data` column per row)."""
    import sqlite3

    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, time_created INTEGER, data TEXT);"
                      "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, data TEXT);"
                      "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER, data TEXT);")
    for doc in docs:
        info = doc["info"]
        con.execute("INSERT INTO session VALUES (?, ?, ?, ?)", (info["id"], info["directory"], info["time"]["created"], orjson.dumps(info).decode()))
        for m in doc["messages"]:
            mi = {k: v for k, v in m["info"].items() if k not in ("id", "sessionID")}
            con.execute("INSERT INTO message VALUES (?, ?, ?, ?)", (m["info"]["id"], info["id"], m["info"]["time"]["created"], orjson.dumps(mi).decode()))
            for p in m["parts"]:
                pd = {k: v for k, v in p.items() if k not in ("id", "sessionID", "messageID")}
                con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?)", (p["id"], m["info"]["id"], info["id"], m["info"]["time"]["created"],
                                                                      orjson.dumps(pd).decode()))
    con.commit()
    con.close()


def five_agents(root: Path, seed: int = 41, sessions: int = 3, turns: int = 4) -> list[str]:
    """Four agents' homes and a ROOT of catty sessions, with a file of no agent's, a FIFO and a bad line among them:
    the folders, and the Claude Code home's projects folder (inside it) last."""
    claude_tree(root / "claude", seed=seed, projects=3, sessions=sessions, turns=turns, resumed_copies=True)
    (root / "claude" / "settings.json").write_text("{}")
    for day in (1, 2, 3):
        codex_rollout(root / "codex" / "sessions" / "2026" / "02" / f"{day:02d}" / f"rollout-2026-02-{day:02d}T10-00-00-{day}.jsonl",
                      [{"ts": f"2026-02-{day:02d}T10:0{k}:00.000Z", "model": "gpt-5-codex",
                        "last": {"input_tokens": 500 + k, "cached_input_tokens": 100, "output_tokens": 40, "reasoning_output_tokens": 10}}
                       for k in range(3)], session_id=f"0199a000-0000-7000-8000-00000000000{day}")
    (root / "codex" / "config.toml").write_text("")
    gemini_home(root / "gemini", seed=seed + 1, projects=2, sessions=2)
    gemini_home(root / "gemini", seed=seed + 2, projects=1, sessions=1, form="json")
    (root / "gemini" / "settings.json").write_text("{}")
    docs, _truth = opencode_sessions(seed=seed + 3, sessions=3)
    opencode_storage(root / "opencode", docs)
    more, _truth = opencode_sessions(seed=seed + 4, sessions=2)
    opencode_db(root / "opencode" / "opencode.db", more)
    for i in range(3):
        write_log(root / "catty" / f"s{i}", [{"kind": "session", "id": f"s{i}", "created_at": "2026-11-01T00:00:00.000Z", "cwd": "/w"},
                                              {"kind": "usage", "id": f"u{i}", "model": "claude-sonnet-4-5", "input": 10 + i, "output": 5,
                                               "request_id": f"req_{i}"}])
    (root / "catty" / "notes.jsonl").write_text('{"a": 1}\n')
    part = next((root / "opencode" / "storage" / "part").iterdir())
    os.mkfifo(part / "prt_fifo.json")  # (no regular file: passed over, never waited on)
    with open(root / "claude" / "projects" / "-home-user-work-proj0" / "odd.jsonl", "wb") as f:
        f.write(b'{"type": "assistant", "message": {"usage": \n')
    return [str(root / name) for name in ("claude", "codex", "gemini", "opencode", "catty")] + [str(root / "claude" / "projects")]

"""Grok Build sessions (`$GROK_HOME/sessions/<bucket>/<id>/`) → events (docs/import.md#grok-build).

The log of record is the folder's `updates.jsonl`, replayed in emit order (grok writes an ACP
line only when the next one comes, so an `_x.ai` line can precede an earlier ACP line: the
lines are sorted by `_meta.agentTimestampMs`, ties by line). What each kind becomes:

- `user_message_chunk` → a user message (the chunks of one prompt, text then images, joined;
  a hidden or interjected prompt is synthetic; a `hostTurn` echo such as `/compact`, which
  grok never sends the model, is kept as below); `agent_message_chunk` → assistant text;
  `agent_thought_chunk` → reasoning.
- `tool_call` → a tool call (`title` is the tool's name, `rawInput` its arguments); the
  terminal `tool_call_update` (`completed`/`failed`) → its result, with the text the model was
  sent: `chat_history.jsonl`'s result for that call when the cache holds it, else
  `rawOutput.output_for_prompt`, else the update's content less what grok only shows (a
  subagent result's `<subagent_meta>` line): with the cache or without, the same view.
- `turn_completed` → one usage event per model of its `modelUsage` (input counted uncached;
  `costUsdTicks` / 10¹⁰ as the cost, the server's own); a child's is kept whole instead, its
  parent's turn already counting it.
- `compaction_checkpoint` → a compaction whose summary is the checkpoint's summary item.
- `rewind_marker` → a rewind to the turn it names.
- A call the log never answers (an interrupted turn) gets the answer grok gives it on load: a
  `repair` event answering it as not executed.
- Every other line (of a known kind or not) is kept whole as a `grok_update` event: never
  in the view, never dropped; `subagent_spawned`/`subagent_finished` also update the
  `subagents` state facet (id, status, type, description, the parent's call).

The system prompt (`system_prompt.txt`, else the cache's first item) opens the session.
`subagents/<id>/` names the children; each child's own folder (a session of its own, found
beside its parent in its cwd's bucket) is imported with it under `agent` = the child's id.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from ..formats import grok as layout
from .common import SHAPE_ERRORS, EventBuilder, Warn, not_recognised, one_session, several_sessions, shape_error
from .reading import iter_jsonl

WHAT = "a Grok Build session"
KEPT_KIND = "grok_update"  # the event that keeps a line the view has no place for
TICKS_PER_USD = 10_000_000_000
_IN_VIEW = ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update",
            "turn_completed", "compaction_checkpoint", "rewind_marker")
_DONE = ("completed", "failed")
# What grok shows the user in a subagent's result but does not send the model (its cache lacks it).
_SHOWN_ONLY = re.compile(r"<subagent_meta>[^<]*</subagent_meta>\n\n")
DANGLING_TEXT = "The tool was not executed: the turn was interrupted before its result was recorded."


def session_log(source: Path, session_id: str | None) -> Path:
    """The log SOURCE names: itself (a session's updates.jsonl, or a copy of its lines under
    another name), a folder's, or that of one session of a home."""
    if source.is_file():
        if not layout.log_is_grok(source):
            raise not_recognised(str(source), WHAT)
        return source
    found = layout.sessions_under(source, children=bool(session_id))
    if len(found) > 1 and not session_id:
        metas = [(f, layout.summary(f)) for f in found]
        raise several_sessions(source, [(f.name, str(m.get("created_at") or "")[:10], str(m.get("session_summary") or ""))
                                        for f, m in metas])
    folder = one_session(found, source, WHAT, session_id=session_id, missing=f"no Grok Build session {session_id}",
                         named=lambda f: session_id in (f.name, _obj(layout.summary(f).get("info")).get("id")))
    return Path(folder) / layout.LOG


def _ms(rec: dict[str, Any]) -> int:
    meta = (rec.get("params") or {}).get("_meta") if isinstance(rec.get("params"), dict) else None
    ms = meta.get("agentTimestampMs") if isinstance(meta, dict) else None
    return ms if isinstance(ms, int) else 0


def _update(rec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    params = rec["params"] if "method" in rec else rec
    meta = params.get("_meta")
    return params["update"], meta if isinstance(meta, dict) else {}


def _iso(ms: int, rec: dict[str, Any]) -> Any:
    if ms:
        return ms / 1000
    ts = rec.get("timestamp")
    return ts if isinstance(ts, (int, float)) and ts > 0 else None


def _content_text(content: Any) -> str:
    """The text of a tool update's `content` list (text blocks; a diff as its path and new text)."""
    out = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        inner = block.get("content")
        if isinstance(inner, dict) and isinstance(inner.get("text"), str):
            out.append(inner["text"])
        elif block.get("type") == "diff":
            out.append(f"{block.get('path', '')}\n{block.get('newText') or ''}")
    return "\n".join(out)


def _cached_results(folder: Path) -> tuple[dict[str, str], str | None]:
    """chat_history.jsonl's tool results by call id, and its system prompt (the cache grok resumes from)."""
    results: dict[str, str] = {}
    system = None
    try:
        data = (folder / layout.CHAT).read_bytes()
    except OSError:
        return results, system
    for line in data.splitlines():
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(item, dict):
            continue
        if item.get("type") == "tool_result" and isinstance(item.get("tool_call_id"), str) and isinstance(item.get("content"), str):
            results[item["tool_call_id"]] = item["content"]
        elif item.get("type") == "system" and system is None and isinstance(item.get("content"), str):
            system = item["content"]
    return results, system


def checkpoint_summary(folder: Path, update: dict[str, Any]) -> str:
    """The summary a `compaction_checkpoint` line's file carries: its compacted history's
    summary item ("This session is being continued…"), else every compaction_meta item."""
    name = update.get("checkpoint_file") or f"compaction_checkpoints/{update.get('checkpoint_id')}.json"
    try:
        doc = orjson.loads((folder / str(name)).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return "[grok compaction checkpoint not found]"
    texts = []
    for item in doc.get("compacted_history") or () if isinstance(doc, dict) else ():
        if isinstance(item, dict) and item.get("type") == "user" and item.get("synthetic_reason") == "compaction_meta":
            texts.append("\n".join(p.get("text", "") for p in item.get("content") or () if isinstance(p, dict)))
    cont = [t for t in texts if "being continued" in t]
    return "\n\n".join(cont or texts) or "[empty grok compaction summary]"


class _Replay:
    """One log's lines → events, for the main session (AGENT None) or a child."""

    def __init__(self, b: EventBuilder, folder: Path, agent: str | None) -> None:
        self.b = b
        self.folder = folder
        self.agent = agent
        self.results, self.system = _cached_results(folder)
        self.user: list[str] = []
        self.user_images: list[dict[str, Any]] = []
        self.user_meta: dict[str, Any] = {}
        self.user_id = ""
        self.text: list[str] = []
        self.text_id = ""
        self.ts: Any = None
        self.compact_start: dict[str, Any] = {}
        self.children: list[str] = []
        self.open_calls: dict[str, None] = {}  # calls no result has answered yet, in call order
        self.spawns: dict[str, bool] = {}  # call id -> whether it spawns a subagent
        self.subagents: dict[str, dict[str, Any]] = {}  # the `subagents` facet: each child's id, status, type, call

    def flush(self) -> None:
        b = self.b
        if self.user or self.user_images:
            meta = self.user_meta
            synthetic = "grok_hidden" if meta.get("hideFromScrollback") else "interjection" if meta.get("interjection") else None
            b.message("user", "\n".join(self.user), id=self.user_id, ts=self.ts, agent=self.agent,
                      images=self.user_images or None, synthetic=synthetic)
            self.user, self.user_images, self.user_meta = [], [], {}
        if self.text:
            b.message("assistant", "".join(self.text), id=self.text_id, ts=self.ts, agent=self.agent)
            self.text = []

    def line(self, rec: dict[str, Any], lineno: int, ms: int) -> None:
        b = self.b
        update, meta = _update(rec)
        kind = update["sessionUpdate"]
        ts = _iso(ms, rec)
        eid = str(meta.get("eventId") or f"line-{lineno}")
        if kind == "user_message_chunk" and _obj(update.get("_meta")).get("hostTurn"):
            self.flush()  # a command's echo (`/compact`): persisted for grok's turn count, never sent to the model
            b.emit(KEPT_KIND, {"update_kind": str(kind), "update": update}, ts=ts, agent=self.agent)
            return
        if kind == "user_message_chunk":
            if self.text:
                self.flush()
            block = update.get("content") or {}
            umeta = _obj(update.get("_meta"))
            if (self.user or self.user_images) and umeta.get("promptIndex") != self.user_meta.get("promptIndex"):
                self.flush()
            if not self.user and not self.user_images:
                self.user_id, self.user_meta, self.ts = eid, umeta, ts
            if block.get("type") == "image":
                img = b.image(block.get("mimeType"), str(block.get("data") or ""))
                if img:
                    self.user_images.append(img)
            else:
                self.user.append(str(block.get("text") or ""))
            return
        if kind == "agent_message_chunk":
            if self.user or self.user_images:
                self.flush()
            if not self.text:
                self.text_id, self.ts = eid, ts
            self.text.append(str((update.get("content") or {}).get("text") or ""))
            return
        self.flush()
        if kind == "agent_thought_chunk":
            b.reasoning(str((update.get("content") or {}).get("text") or ""), ts=ts, agent=self.agent)
        elif kind == "tool_call":
            tool = (update.get("_meta") or {}).get("x.ai/tool") or {}
            name = tool.get("name") if isinstance(tool, dict) and tool.get("name") else update.get("title")
            b.tool_call(str(update.get("toolCallId")), str(name or ""), update.get("rawInput"), ts=ts, agent=self.agent)
            self.open_calls[str(update.get("toolCallId"))] = None
            self.spawns[str(update.get("toolCallId"))] = name == "spawn_subagent"
        elif kind == "tool_call_update" and update.get("status") in _DONE:
            cid = str(update.get("toolCallId"))
            raw = _obj(update.get("rawOutput"))
            text = self.results.get(cid)
            if text is None:
                prompt = raw.get("output_for_prompt")
                text = prompt if isinstance(prompt, str) else _SHOWN_ONLY.sub("", _content_text(update.get("content")))
            b.tool_result(cid, text, is_error=update.get("status") == "failed", ts=ts, agent=self.agent)
            self.open_calls.pop(cid, None)
            b.end_assistant(self.agent)
        elif kind == "turn_completed" and self.agent is None:
            self.usage(update, ts)
            b.end_assistant(self.agent)
        elif kind == "compaction_checkpoint":
            started = self.compact_start
            b.compaction(checkpoint_summary(self.folder, update), id=str(update.get("checkpoint_id") or eid), ts=ts,
                         agent=self.agent, summarizer="grok", trigger="auto" if started else None,
                         tokens_before=started.get("tokens_used") if isinstance(started.get("tokens_used"), int) else None)
            self.compact_start = {}
        elif kind == "rewind_marker" and self.agent is None:
            target = update.get("target_prompt_index")
            b.rewind(target if isinstance(target, int) else 0, ts=ts)
        else:
            # (also a tool update's enrichment line, and a child's turn_completed: its parent's
            # turn already holds that usage, so it is no usage event here)
            if kind == "auto_compact_started":
                self.compact_start = update
            b.emit(KEPT_KIND, {"update_kind": str(kind), "update": update}, ts=ts, agent=self.agent)
            if kind in ("subagent_spawned", "subagent_finished"):
                self.subagent(kind, update, ts)

    def subagent(self, kind: str, update: dict[str, Any], ts: Any) -> None:
        """A child spawned or finished: the `subagents` facet as it now stands (what `inspect
        --agents` and the continuation state read), its parent's call the open spawn_subagent."""
        child = update.get("child_session_id") or update.get("subagent_id")
        if not isinstance(child, str) or not child:
            return
        entry = self.subagents.setdefault(child, {"id": child})
        if kind == "subagent_spawned":
            self.children.append(child)
            call = next((c for c in reversed(self.open_calls) if self.spawns.get(c)), None)
            entry.update({"status": "running", "type": update.get("subagent_type"), "description": update.get("description")})
            if call:
                entry["call_id"] = call
        else:
            entry["status"] = str(update.get("status") or "completed")
        self.b.state("subagents", [dict(e) for e in self.subagents.values()], ts=ts, agent=self.agent)

    def answer_dangling(self) -> None:
        """Grok's pairing rule on load: a call the log never answered (the turn was interrupted)
        is answered as not executed before the session goes on; the repair event says so."""
        if self.open_calls:
            ids = list(self.open_calls)
            self.b.emit("repair", {"action": "answer", "call_ids": ids, "count": len(ids), "reason": "grok_dangling_call",
                                   "text": DANGLING_TEXT}, agent=self.agent)
            self.open_calls = {}

    def usage(self, update: dict[str, Any], ts: Any) -> None:
        u = update.get("usage")
        if not isinstance(u, dict):
            return
        per_model: dict[Any, Any] = dict(_obj(u.get("modelUsage"))) or {None: u}
        for model, m in per_model.items():
            if not isinstance(m, dict):
                continue
            cached = _n(m.get("cachedReadTokens"))
            ticks = m.get("costUsdTicks")
            cost = ticks / TICKS_PER_USD if isinstance(ticks, int) and ticks > 0 and not u.get("costIsPartial") else None
            self.b.usage(model, input=max(_n(m.get("inputTokens")) - cached, 0), output=_n(m.get("outputTokens")),
                         cache_read=cached, cache_write=_n(m.get("cacheCreationTokens")), reasoning=_n(m.get("reasoningTokens")),
                         ts=ts, agent=self.agent, request_id=str(update.get("prompt_id") or "") or None, cost_usd=cost)


def _obj(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _n(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def _lines(log: Path, b_report: Any, lenient: bool, warn: Warn | None) -> list[tuple[int, int, dict[str, Any]]]:
    """The log's envelopes in emit order: (agentTimestampMs, line, record); others counted as skips."""
    out = []
    for line in iter_jsonl(log, report=b_report, lenient=lenient, warn=warn, what=WHAT):
        if layout.is_update(line.record):
            out.append((_ms(line.record), line.lineno, line.record))
        else:
            b_report.skipped["(not a grok update)"] += 1
    out.sort(key=lambda t: (t[0], t[1]))
    return out


def _replay(replay: _Replay, log: Path, report: Any, lenient: bool, warn: Warn | None,
            lines: list[tuple[int, int, dict[str, Any]]] | None = None) -> None:
    for ms, lineno, rec in lines if lines is not None else _lines(log, report, lenient, warn):
        try:
            replay.line(rec, lineno, ms)
        except SHAPE_ERRORS as exc:
            shape_error(exc, path=str(log), line=lineno, report=report, lenient=lenient, warn=warn)
    replay.flush()
    replay.answer_dangling()


def child_folder(folder: Path, child_id: str) -> Path | None:
    """A child's own session folder: beside its parent (same cwd), else in another bucket of the home."""
    for candidate in (folder.parent / child_id, *folder.parent.parent.glob(f"*/{child_id}")):
        if layout.is_session_dir(candidate):
            return candidate
    return None


def convert(source: Path, start: Any, *, lenient: bool = False, warn: Warn | None = None, session_id: str | None = None) -> EventBuilder:
    log = session_log(source, session_id)
    folder = log.parent  # its side files (summary, cache, checkpoints, children) lie beside it
    report = start.report
    lines = _lines(log, report, lenient, warn)
    if not lines:
        raise not_recognised(str(log), WHAT)
    meta = layout.summary(folder)
    info = _obj(meta.get("info"))
    first = lines[0][2]
    sid = info.get("id") or _obj(first.get("params") or first).get("sessionId") or folder.name
    b = start(session_id=str(sid), ts=meta.get("created_at") or _iso(lines[0][0], first),
              cwd=info.get("cwd") if isinstance(info.get("cwd"), str) else layout.bucket_cwd(folder.parent),
              model=meta.get("current_model_id"), parent_session_id=meta.get("parent_session_id"), source_path=log,
              window=_window(folder))
    replay = _Replay(b, folder, None)
    system = _system_prompt(folder) or replay.system
    if system:
        b.message("system", system, id="system", ts=b.first_ts)
    _replay(replay, log, report, lenient, warn, lines)
    for child in dict.fromkeys([*replay.children, *_listed_children(folder)]):
        found = child_folder(folder, child)
        if found is None:
            b.skip("subagent child folder missing")
            continue
        _replay(_Replay(b, found, child), found / layout.LOG, report, lenient, warn)
    if isinstance(meta.get("generated_title"), str) and meta["generated_title"]:
        b.title = meta["generated_title"]
    return b


def _window(folder: Path) -> int | None:
    """The context window grok last measured against (signals.json's `contextWindowTokens`)."""
    try:
        doc = orjson.loads((folder / "signals.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    w = doc.get("contextWindowTokens") if isinstance(doc, dict) else None
    return w if isinstance(w, int) and not isinstance(w, bool) and w > 0 else None


def _system_prompt(folder: Path) -> str | None:
    try:
        return (folder / "system_prompt.txt").read_text(encoding="utf-8") or None
    except (OSError, UnicodeDecodeError):
        return None


def _listed_children(folder: Path) -> list[str]:
    try:
        return sorted(p.name for p in (folder / "subagents").iterdir() if p.is_dir())
    except OSError:
        return []

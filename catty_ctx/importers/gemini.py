"""Gemini CLI chats (`tmp/<projectHash>/chats/session-*.jsonl`, or the older `.json`) → events.

The JSONL form starts with a metadata line, then message records (`user`, `gemini`, and
UI-only `info`/`error`/`warning`), `$set` lines that update the metadata and
`$rewindTo: <messageId>` lines that delete that message and everything after it. A
record written again with the same id replaces the earlier copy. A rewind becomes a
`rewind` event (plus `repair` drops when it cuts inside a turn), so the log keeps what was
undone while the view does not. The older form is one JSON object with `messages`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ..errors import NoConversation, UsageError
from ..formats.calls import gemini_call
from .common import SHAPE_ERRORS, EventBuilder, Warn, not_recognised, shape_error
from .detect import is_gemini_prompt_log
from .reading import iter_jsonl, load_json

WHAT = "a Gemini CLI session"
_MESSAGE_TYPES = ("user", "gemini")
_UI_TYPES = ("info", "error", "warning")


def find_session_file(source: Path, session_id: str | None) -> Path:
    if source.is_file():
        return source
    files = sorted(p for p in source.rglob("session-*") if p.suffix in (".jsonl", ".json"))
    if session_id:
        files = [p for p in files if session_id in p.stem]
    if len(files) == 1:
        return files[0]
    if not files:
        raise not_recognised(str(source), WHAT)
    raise UsageError(f"{source}: holds {len(files)} sessions; name one with --session ID")


def _parts_text(content: Any) -> tuple[str, list[tuple[str, str]]]:
    """Text and inline images of a Gemini content value (a string or a list of parts)."""
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    images: list[tuple[str, str]] = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            if isinstance(part.get("text"), str) and not part.get("thought"):
                texts.append(part["text"])
            inline = part.get("inlineData")
            if isinstance(inline, dict) and isinstance(inline.get("data"), str):
                images.append((str(inline.get("mimeType") or ""), inline["data"]))
    return "\n".join(texts), images


def _result_text(call: dict[str, Any]) -> str:
    """A tool call's result: the functionResponse output, else its display text."""
    for part in call.get("result") or ():
        resp = part.get("functionResponse") if isinstance(part, dict) else None
        if isinstance(resp, dict):
            body = resp.get("response")
            if isinstance(body, dict):
                for key in ("output", "error", "content"):
                    if isinstance(body.get(key), str):
                        return body[key]
                return orjson.dumps(body).decode()
    display = call.get("resultDisplay")
    if isinstance(display, str):
        return display
    return "" if display is None else orjson.dumps(display).decode()


class _Converter:
    def __init__(self, b: EventBuilder) -> None:
        self.b = b
        self.seq_of: dict[str, tuple[int, int]] = {}  # message id -> (first seq, turn)
        self.turn = 0

    def record(self, rec: dict[str, Any]) -> None:
        b = self.b
        rtype = rec.get("type")
        mid = str(rec.get("id"))
        ts = rec.get("timestamp")
        first = b.seq
        if rtype == "user":
            text, imgs = _parts_text(rec.get("content"))
            images = [i for i in (b.image(mt, data) for mt, data in imgs) if i]
            b.message("user", text, id=mid, ts=ts, images=images or None)
            self.turn += 1
        elif rtype == "gemini":
            text, imgs = _parts_text(rec.get("content"))
            images = [i for i in (b.image(mt, data) for mt, data in imgs) if i]
            b.message("assistant", text, id=mid, ts=ts, images=images or None)
            thoughts = rec.get("thoughts")
            if isinstance(thoughts, list) and thoughts:
                lines = [f"{t.get('subject', '')}: {t.get('description', '')}".strip(": ") for t in thoughts if isinstance(t, dict)]
                b.reasoning("\n".join(lines), ts=ts)
            calls = [c for c in rec.get("toolCalls") or () if isinstance(c, dict)]
            for c in calls:
                b.tool_call(str(c.get("id")), str(c.get("name") or ""), c.get("args"), ts=c.get("timestamp") or ts)
            tokens = rec.get("tokens")
            if isinstance(tokens, dict):
                self.usage(tokens, rec.get("model"), ts, rec.get("id"))
            for c in calls:
                if c.get("status") in ("scheduled", "validating", "executing", "awaiting_approval"):
                    continue  # still running when the file was written: a dangling call
                b.tool_result(str(c.get("id")), _result_text(c), is_error=c.get("status") in ("error", "cancelled"),
                              ts=c.get("timestamp") or ts)
        elif rtype in _UI_TYPES:
            b.skip(f"message:{rtype}")
            return
        else:
            b.skip(str(rtype))
            return
        self.seq_of.setdefault(mid, (first, self.turn))

    def usage(self, tokens: dict[str, Any], model: Any, ts: Any, reply_id: Any = None) -> None:
        def n(key: str) -> int:
            v = tokens.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0

        prompt, cached, thoughts = n("input"), n("cached"), n("thoughts")
        # As the usage ledger counts it (docs/usage.md): Gemini's prompt count includes the cached
        # part, so input is the uncached rest plus the tool-use prompt tokens (`tool`); thinking
        # is billed as output, so output is output + thoughts (reasoning: the thoughts alone).
        self.b.usage(model if isinstance(model, str) else None, input=max(prompt - cached, 0) + n("tool"),
                     output=n("output") + thoughts, cache_read=min(cached, prompt) if prompt else cached,
                     reasoning=thoughts, ts=ts, request_id=gemini_call(reply_id) if reply_id is not None and reply_id != "" else None)

    def rewind(self, target: str, ts: Any) -> None:
        hit = self.seq_of.get(target)
        if hit is None:
            self.b.skip("$rewindTo:unknown id")
            return
        first_seq, turn = hit
        starts = self.b.turn_starts
        if turn and starts[turn - 1] == first_seq:
            keep, cut_from = turn - 1, None  # the target opens its turn: drop whole turns
        else:
            keep, cut_from = turn, first_seq
        # the rewind removes later turns; drops remove the tail of a turn cut in the middle
        end = starts[turn] if len(starts) > turn else self.b.seq
        self.b.rewind(keep, ts=ts)
        if cut_from is not None:
            for seq in range(cut_from, end):
                self.b.drop(seq, "gemini $rewindTo", ts=ts)
        self.turn = keep
        del starts[keep:]
        self.seq_of = {k: v for k, v in self.seq_of.items() if v[0] < first_seq}


def _start(start: Any, meta: dict[str, Any], path: Path, ts: Any) -> EventBuilder:
    return start(session_id=str(meta.get("sessionId") or path.stem), ts=meta.get("startTime") or ts, source_path=path)


def convert(source: Path, start: Any, *, lenient: bool = False, warn: Warn | None = None, session_id: str | None = None) -> EventBuilder:
    path = find_session_file(source, session_id)
    report = start.report
    if path.suffix == ".json":
        doc = load_json(path)
        if is_gemini_prompt_log(doc):
            raise NoConversation(path, "Gemini CLI's log of the prompts typed; its conversations are the chats/session-* files")
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            raise not_recognised(str(path), WHAT)
        records = [r for r in doc["messages"] if isinstance(r, dict)]
        if not any(r.get("type") in _MESSAGE_TYPES for r in records):
            raise not_recognised(str(path), WHAT)
        conv = _Converter(_start(start, doc, path, records[0].get("timestamp") if records else None))
        for i, rec in enumerate(records):
            try:
                conv.record(rec)
            except SHAPE_ERRORS as exc:
                shape_error(exc, path=f"{path} (message {i})", line=None, report=report, lenient=lenient, warn=warn)
        return conv.b
    # JSONL: upserts by id mean a record is final only at the end, so collect first.
    meta: dict[str, Any] = {}
    ops: list[tuple[str, Any, int]] = []  # ("msg", record, line) | ("rewind", (id, ts), line)
    where: dict[str, int] = {}
    recognised = False
    for line in iter_jsonl(path, report=report, lenient=lenient, warn=warn, what=WHAT):
        rec = line.record
        if "$set" in rec:
            if isinstance(rec["$set"], dict):
                meta.update(rec["$set"])
            recognised = True
        elif "$rewindTo" in rec:
            target = str(rec["$rewindTo"])
            ops.append(("rewind", (target, rec.get("timestamp")), line.lineno))
            # records written again after a rewind are new, not updates of the removed ones
            cut = where.get(target, len(ops))
            where = {k: v for k, v in where.items() if v < cut}
            recognised = True
        elif "type" in rec and "id" in rec:
            recognised = recognised or rec.get("type") in _MESSAGE_TYPES
            key = str(rec["id"])
            if key in where:
                ops[where[key]] = ("msg", rec, line.lineno)
            else:
                where[key] = len(ops)
                ops.append(("msg", rec, line.lineno))
        elif "sessionId" in rec and "type" not in rec and not meta:
            meta = dict(rec)
            recognised = True
        else:
            report.skipped["unknown line"] += 1
    if not recognised:
        raise not_recognised(str(path), WHAT)
    first_ts = next((op[1].get("timestamp") for op in ops if op[0] == "msg"), None)
    conv = _Converter(_start(start, meta, path, first_ts))
    for kind, value, lineno in ops:
        try:
            if kind == "msg":
                conv.record(value)
            else:
                conv.rewind(*value)
        except SHAPE_ERRORS as exc:
            shape_error(exc, path=str(path), line=lineno, report=report, lenient=lenient, warn=warn)
    return conv.b

"""A Claude Code conversation (records in import order) → events: the lines of one response
merged, usage counted once per response, prompts, results, compaction summaries, queued
prompts. See `claude` for the format."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import orjson

from ..formats.calls import claude_call
from .claude_tree import Tree, queued_prompt
from .common import SHAPE_ERRORS, EventBuilder, Warn, content_blocks, shape_error, text_of

SYNTHETIC_MODEL = "<synthetic>"
_INTERRUPT_PREFIX = "[Request interrupted by user"
# Output of local slash / shell commands, written as user text by the harness: not a prompt.
_COMMAND_OUTPUT_PREFIXES = ("<local-command-stdout>", "<local-command-stderr>", "<bash-stdout>", "<bash-stderr>")
OFF_BRANCH_USAGE = "catty:usage-only"  # an item of the import sequence (a call with no message), never a record type


# -- usage (shared with the usage ledger) ------------------------------------------------------


def _count(usage: dict[str, Any], key: str) -> int:
    v = usage.get(key)
    return v if type(v) is int and v > 0 else 0  # a bool is not a count


def usage_fields(usage: Any) -> dict[str, Any] | None:
    """Anthropic usage → catty-ctx fields (input is uncached input already; the one-hour cache
    writes of `cache_creation`, priced apart, kept as `cache_write_1h`)."""
    if not isinstance(usage, dict):
        return None
    fields = {
        "input": _count(usage, "input_tokens"),
        "output": _count(usage, "output_tokens"),
        "cache_read": _count(usage, "cache_read_input_tokens"),
        "cache_write": _count(usage, "cache_creation_input_tokens"),
    }
    written = usage.get("cache_creation")
    hour = min(_count(written, "ephemeral_1h_input_tokens"), fields["cache_write"]) if isinstance(written, dict) else 0
    if hour:
        fields["cache_write_1h"] = hour
    return fields


def no_request(fields: dict[str, Any], request_id: Any) -> bool:
    """Whether a response's usage stands for no request: no request id and no token (a write-back's
    assistant record, docs/writeback.md; the usage ledger's rule)."""
    return not request_id and not any(fields[k] for k in ("input", "output", "cache_read", "cache_write"))


def bigger(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Is usage a larger snapshot than b? (partial copies of one response happen)."""
    def size(u: dict[str, Any]) -> tuple[int, int]:
        return (u["input"] + u["output"] + u["cache_read"] + u["cache_write"], u["output"])

    return size(a) > size(b)


# -- turning a chain into events ---------------------------------------------------------------


class _Response:
    """The lines of one assistant response (same message.id), merged."""

    __slots__ = (
        "api_error",
        "calls",
        "images",
        "last_ts",
        "mid",
        "model",
        "raw_usage",
        "request_id",
        "results",
        "session",
        "texts",
        "thinking",
        "ts",
        "uid",
        "usage",
    )

    def __init__(self, rec: dict[str, Any], msg: dict[str, Any]) -> None:
        self.mid = msg.get("id")
        self.uid = rec["uuid"]
        self.ts = rec.get("timestamp")
        self.last_ts = self.ts
        self.model = msg.get("model")
        self.request_id = rec.get("requestId")
        self.session = rec.get("sessionId")
        self.texts: list[str] = []
        self.images: list[dict[str, Any]] = []
        self.thinking: list[tuple[str, Any]] = []
        self.calls: list[tuple[str, str, Any, Any]] = []
        self.results: list[tuple[dict[str, Any], Any]] = []
        self.usage: dict[str, Any] | None = None
        self.raw_usage: Any = None
        self.api_error = rec.get("isApiErrorMessage") is True  # Claude Code's text for a failed request


class Converter:
    def __init__(self, b: EventBuilder, agent: str | None, seen_usage: set[tuple[Any, Any]], *, path: Path, tree: Tree,
                 lenient: bool, warn: Warn | None) -> None:
        self.b = b
        self.agent = agent
        self.open: _Response | None = None
        self.boundary: dict[str, Any] | None = None
        self.seen_usage = seen_usage
        self.path = str(path)
        self.tree = tree
        self.lenient = lenient
        self.warn = warn
        # seq of the first event each record became: a compaction's preserved segment names
        # the records it kept by uuid
        self.starts: dict[str, int] = {}

    def run(self, chain: list[dict[str, Any]]) -> None:
        for rec in chain:
            try:
                rtype = rec.get("type")
                convert = self._BY_TYPE.get(rtype) if isinstance(rtype, str) else None
                if convert is None:
                    self.b.skip(str(rtype))
                else:
                    convert(self, rec)
            except SHAPE_ERRORS as exc:
                self.open = None
                self.failed(exc, rec.get("uuid"))
        open_uid = self.open.uid if self.open else None
        try:
            self.flush()
        except SHAPE_ERRORS as exc:
            self.failed(exc, open_uid)

    def failed(self, exc: Exception, uid: Any) -> None:
        line = self.tree.lines.get(uid) if isinstance(uid, str) else None
        shape_error(exc, path=self.path, line=line, report=self.b.report, lenient=self.lenient, warn=self.warn)

    # assistant lines: merge by message.id
    def assistant(self, rec: dict[str, Any]) -> None:
        msg = rec.get("message")
        if not isinstance(msg, dict):
            self.b.skip("assistant:no message")
            return
        r = self.open
        if r is None or r.mid is None or r.mid != msg.get("id"):
            self.flush()
            r = self.open = _Response(rec, msg)
        r.last_ts = rec.get("timestamp") or r.last_ts
        if r.request_id is None:
            r.request_id = rec.get("requestId")
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                r.texts.append(block.get("text") or "")
            elif btype in ("tool_use", "server_tool_use"):
                r.calls.append((str(block.get("id")), str(block.get("name") or ""), block.get("input"), rec.get("timestamp")))
            elif btype == "thinking":
                r.thinking.append((block.get("thinking") or "", rec.get("timestamp")))
            elif btype == "redacted_thinking":
                r.thinking.append(("[redacted thinking]", rec.get("timestamp")))
            elif btype == "image":
                img = self.image(block)
                if img:
                    r.images.append(img)
            elif isinstance(btype, str) and btype.endswith("_tool_result"):
                r.results.append((block, rec.get("timestamp")))
            else:
                self.b.skip(f"block:{btype}")
        raw = msg.get("usage")
        if raw != r.raw_usage and r.model != SYNTHETIC_MODEL:  # the lines of a response mostly repeat it
            r.raw_usage = raw
            fields = usage_fields(raw)
            if fields is not None and (r.usage is None or bigger(fields, r.usage)):
                r.usage = fields

    def flush(self) -> None:
        r, self.open = self.open, None
        if r is None:
            return
        b, agent = self.b, self.agent
        # A text block of whitespace alone ("\n\n" before a tool_use, or a whole reply of it)
        # says nothing, and the provider refuses it in a request: left out.
        texts = [t for t in r.texts if t and not t.isspace()]
        self.starts.setdefault(r.uid, b.seq)
        b.message("assistant", "\n\n".join(texts) if len(texts) > 1 else (texts[0] if texts else ""),
                  id=r.uid, ts=r.ts, agent=agent, images=r.images or None, synthetic="api_error" if r.api_error else None)
        for text, ts in r.thinking:
            b.reasoning(text, ts=ts, agent=agent)
        for call_id, name, args, ts in r.calls:
            b.tool_call(call_id, name, args, ts=ts, agent=agent)
        # The usage measures the request that produced this response: it goes before the
        # results, which the next request's context holds on top of it.
        if r.usage is not None and not no_request(r.usage, r.request_id):
            key = (r.mid or r.uid, r.request_id)
            if key not in self.seen_usage:
                self.seen_usage.add(key)
                b.usage(r.model, **r.usage, ts=r.last_ts, agent=agent, request_id=claude_call(r.request_id, r.mid, r.session))
        for block, ts in r.results:
            self.result(block, ts)

    def off_branch_usage(self, item: dict[str, Any]) -> None:
        """A call made on an abandoned branch (or logged only as a progress record): paid for,
        so counted; an abandoned branch's call is marked, out of the view."""
        key = item["key"]
        if key in self.seen_usage or no_request(item["usage"], item["requestId"]):
            return
        self.seen_usage.add(key)
        self.b.usage(item["model"], **item["usage"], ts=item["timestamp"], agent=self.agent, request_id=claude_call(item["requestId"], item["key"][0], item.get("session")),
                     off_branch=item.get("off_branch", True))

    # user lines: prompts, tool results, injected text, compaction summaries
    def user(self, rec: dict[str, Any]) -> None:
        msg = rec.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        ts = rec.get("timestamp")
        if rec.get("isCompactSummary"):
            self.flush()
            boundary, self.boundary = self.boundary or {}, None
            meta = boundary["compactMetadata"] if isinstance(boundary.get("compactMetadata"), dict) else {}
            # Newer releases keep the last messages verbatim after the summary (the request
            # after the compaction re-sends them): the summary replaces only what precedes them.
            kept = meta.get("preservedSegment")
            head = kept.get("headUuid") if isinstance(kept, dict) else None
            first_kept = self.starts.get(head) if isinstance(head, str) else None
            self.b.compaction(
                text_of(content),
                id=str(boundary.get("uuid") or rec["uuid"]),
                ts=ts,
                agent=self.agent,
                summarizer="claude-code",
                trigger=meta.get("trigger"),
                tokens_before=meta.get("preTokens"),
                through_seq=first_kept - 1 if first_kept is not None else None,
            )
            return
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            self.b.skip("user:no content")
            return
        texts: list[str] = []
        images: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for block in content_blocks(blocks):
            btype = block.get("type")
            if btype == "tool_result":
                results.append(block)
            elif btype == "text":
                texts.append(block.get("text") or "")
            elif btype == "image":
                img = self.image(block)
                if img:
                    images.append(img)
            else:
                self.b.skip(f"block:{btype}")
        if results and not texts and not images and self.open is not None:
            self.open.results.extend((blk, ts) for blk in results)  # more lines of this response may follow
            return
        self.flush()
        if results or texts or images:
            self.starts.setdefault(rec["uuid"], self.b.seq)
        for blk in results:
            self.result(blk, ts)
        if texts or images:
            text = "\n".join(texts)
            synthetic = None
            if rec.get("isMeta"):
                synthetic = "meta"
            elif text.startswith(_INTERRUPT_PREFIX):
                synthetic = "interrupted"
            elif text.startswith(_COMMAND_OUTPUT_PREFIXES):
                synthetic = "command_output"
            self.b.message("user", text, id=rec["uuid"], ts=ts, agent=self.agent, images=images or None, synthetic=synthetic)

    def attachment(self, rec: dict[str, Any]) -> None:
        queued = queued_prompt(rec)
        if queued is None:
            att = rec.get("attachment")
            self.b.skip(f"attachment:{att.get('type') if isinstance(att, dict) else None}")
            return
        self.flush()
        origin = queued.get("origin")
        human = queued.get("commandMode") in (None, "prompt") and (not isinstance(origin, dict) or origin.get("kind") in (None, "human"))
        mode = queued.get("commandMode")
        synthetic = None if human else (mode.replace("-", "_") if isinstance(mode, str) and mode else "queued_command")
        self.b.message("user", text_of(queued["prompt"]), id=rec["uuid"], ts=rec.get("timestamp"), agent=self.agent,
                       synthetic=synthetic)

    def system(self, rec: dict[str, Any]) -> None:
        subtype = rec.get("subtype")
        if subtype == "compact_boundary":
            self.flush()
            self.boundary = rec
            return
        self.b.skip(f"system:{subtype}")

    def result(self, block: dict[str, Any], ts: Any) -> None:
        content = block.get("content")
        images: list[dict[str, Any]] = []
        if isinstance(content, list):
            texts = []
            for part in content:
                if isinstance(part, dict) and part.get("type") == "image":
                    img = self.image(part)
                    if img:
                        images.append(img)
                elif isinstance(part, dict) and isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif isinstance(part, str):
                    texts.append(part)
                else:
                    texts.append(orjson.dumps(part).decode())
            output = "\n".join(texts)
        else:
            output = text_of(content)
        self.b.tool_result(str(block.get("tool_use_id")), output, is_error=block.get("is_error") is True,
                           ts=ts, agent=self.agent, images=images or None)

    def image(self, block: dict[str, Any]) -> dict[str, Any] | None:
        src = block.get("source")
        if isinstance(src, dict) and src.get("type") == "base64" and isinstance(src.get("data"), str):
            return self.b.image(src.get("media_type"), src["data"])
        self.b.skip("image:not inline")
        return None

    # what each record type becomes (another type is skipped, and counted)
    _BY_TYPE: ClassVar[dict[str, Callable[[Converter, dict[str, Any]], None]]] = {
        "assistant": assistant, "user": user, "system": system, OFF_BRANCH_USAGE: off_branch_usage, "attachment": attachment,
    }

"""`export`: a session as a transcript people read and share (Markdown, HTML or plain text).

The transcript follows the log, not the view: every message, tool call and result in the
order they happened, each compaction marked where it ran with its summary, subagents'
events labelled with their agent. Long results are cut to a head and a tail with the seq
that `catty-ctx inspect SESSION --seq N` prints in full; images are placeholders.

Session text is data in every format: control and bidirectional characters are shown, not
obeyed (`visible`); in Markdown each text sits in a code fence longer than any backtick run
it holds, so no Markdown or HTML in it is ever read as such; in HTML everything is escaped
and the page forbids scripts outright (a Content-Security-Policy of `default-src 'none'`).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from html import escape

import orjson

from .defaults import EXPORT_FORMATS
from .errors import UsageError
from .redact import redact_text
from .session.events import Event
from .session.store import Session
from .visible import visible

FORMATS = EXPORT_FORMATS
HEAD_LINES = 40  # a long result keeps its first lines ...
TAIL_LINES = 10  # ... and its last ones
CUT_CHARS = 6_000  # a result longer than this (or than the lines above) is cut
ARGS_CHARS = 4_000  # tool-call arguments shown up to this many characters


@dataclass
class Block:
    """One entry of the transcript: a heading of our own words and values, and a body of session text."""

    title: str
    body: str
    kind: str  # message role, "tool_call", "tool_result", "compaction", "note"
    seq: int
    agent: str | None = None


def _cut(text: str, seq: int, display: str) -> str:
    lines = text.splitlines()
    if len(text) <= CUT_CHARS and len(lines) <= HEAD_LINES + TAIL_LINES:
        return text
    head = "\n".join(lines[:HEAD_LINES])[:CUT_CHARS // 2]
    tail = "\n".join(lines[-TAIL_LINES:])[-CUT_CHARS // 2:]
    omitted = len(text) - len(head) - len(tail)
    return f"{head}\n[… {omitted:,} characters not shown: catty-ctx inspect {display} --seq {seq} …]\n{tail}"


def _images(ev: Event) -> str:
    images = ev.get("images")
    if not isinstance(images, list) or not images:
        return ""
    marks = []
    for im in images:
        kind = im.get("media_type") if isinstance(im, dict) else None
        marks.append(f"[image{': ' + str(kind) if kind else ''}]")
    return "\n" + " ".join(marks)


def blocks(session: Session, *, redact: bool = False) -> Iterator[Block]:
    """The transcript's entries, in log order."""
    display = session.display
    names: dict[str, str] = {}  # call_id → tool name, for the result's heading

    def clean(text: str) -> str:
        return redact_text(text)[0] if redact else text

    for ev in session.events():
        kind, seq, agent = ev["kind"], ev["seq"], ev.get("agent")
        if kind == "session":
            source = ev.get("source") if isinstance(ev.get("source"), dict) else {}
            facts = [("session", ev.get("session_id")), ("agent", (source or {}).get("format") or "catty"), ("cwd", ev.get("cwd")),
                     ("model", ev.get("model")), ("started", ev.get("ts"))]
            yield Block("Session", "\n".join(f"{k}: {v}" for k, v in facts if v), "note", seq)
        elif kind == "message":
            role = str(ev.get("role"))
            label = role.capitalize() + (f" ({ev['synthetic']})" if ev.get("synthetic") else "")
            body = clean(str(ev.get("text") or ""))
            if ev.get("blob"):
                body += f"\n[the whole message is blob {ev['blob']}: catty-ctx blob {display} {ev['blob']}]"
            yield Block(label, body + _images(ev), role, seq, agent)
        elif kind == "tool_call":
            name = str(ev.get("name"))
            names[str(ev.get("call_id"))] = name
            args = ev.get("args")
            shown = args if isinstance(args, str) else orjson.dumps(args, option=orjson.OPT_INDENT_2).decode()
            if len(shown) > ARGS_CHARS:
                shown = shown[:ARGS_CHARS] + f"\n[… {len(shown) - ARGS_CHARS:,} characters more: catty-ctx inspect {display} --seq {seq} …]"
            yield Block(f"Tool call {name}", clean(shown), "tool_call", seq, agent)
        elif kind == "tool_result":
            output = str(ev.get("output") or "")
            size = ev.get("bytes") if isinstance(ev.get("bytes"), int) else len(output.encode())
            label = f"Result of {names.get(str(ev.get('call_id')), 'a tool call')}{' (error)' if ev.get('is_error') else ''}, {size:,} bytes"
            body = _cut(clean(output), seq, display)
            if ev.get("blob"):
                body += f"\n[the whole output is blob {ev['blob']}: catty-ctx blob {display} {ev['blob']}]"
            yield Block(label, body + _images(ev), "tool_result", seq, agent)
        elif kind == "compaction":
            through = ev.get("through_seq")
            yield Block(f"Compaction ({ev.get('mode')}, by {ev.get('summarizer')}): the context was summarised through seq {through}",
                        clean(str(ev.get("summary") or "")), "compaction", seq, agent)
        elif kind == "repair":
            yield Block(f"Repair: {ev.get('action')} ({ev.get('reason')})", clean(str(ev.get("text") or "")), "note", seq, agent)
        elif kind == "rewind":
            yield Block(f"Rewind to turn {ev.get('to_turn')}", "", "note", seq, agent)


def _heading(b: Block) -> str:
    who = f" · subagent {b.agent}" if b.agent else ""
    return visible(f"{b.title}{who} · seq {b.seq}")


# -- Markdown ----------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~])")


def _md_inline(text: str) -> str:
    """Our heading text (it holds values from the session: tool names, ids) with every Markdown
    and HTML character escaped."""
    return _MD_SPECIAL.sub(r"\\\1", text).replace("&", "&amp;")


def _fence(text: str) -> str:
    """TEXT in a backtick fence one longer than its longest backtick run: read as text only."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def markdown(items: Iterable[Block]) -> Iterator[str]:
    yield "# Transcript\n"
    for b in items:
        level = "##" if b.kind in ("user", "compaction", "note") else "###"
        yield f"\n{level} {_md_inline(_heading(b))}\n"
        if b.body:
            yield "\n" + _fence(visible(b.body)) + "\n"


# -- HTML --------------------------------------------------------------------------------

_CSS = ("body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f}"
        "section{border-left:4px solid #d0d4dc;padding:.2rem .9rem;margin:1rem 0}"
        "section.user{border-color:#3b82f6}section.assistant{border-color:#10b981}"
        "section.tool_call,section.tool_result{border-color:#a3a3a3;font-size:13px}"
        "section.compaction{border-color:#f59e0b;background:#fffbeb}h2{font-size:1rem;margin:.3rem 0}"
        "pre{white-space:pre-wrap;word-break:break-word;margin:.3rem 0}")


def html(items: Iterable[Block], title: str = "Transcript") -> Iterator[str]:
    yield ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
           f"<title>{escape(visible(title))}</title><style>{_CSS}</style></head><body>\n<h1>{escape(visible(title))}</h1>\n")
    for b in items:
        agent = f' data-agent="{escape(b.agent)}"' if b.agent else ""
        yield f'<section class="{escape(b.kind)}" data-seq="{b.seq}"{agent}><h2>{escape(_heading(b))}</h2>'
        if b.body:
            yield f"<pre>{escape(visible(b.body))}</pre>"
        yield "</section>\n"
    yield "</body></html>\n"


# -- plain text --------------------------------------------------------------------------


def plain_text(items: Iterable[Block]) -> Iterator[str]:
    for b in items:
        yield f"── {_heading(b)}\n"
        if b.body:
            yield visible(b.body).rstrip("\n") + "\n"
        yield "\n"


def export(session: Session, fmt: str = "md", *, redact: bool = False) -> Iterator[str]:
    """SESSION's transcript in FMT (md, html or txt), in pieces to write as they come."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format '{fmt}' (one of {', '.join(FORMATS)})")
    items = blocks(session, redact=redact)
    if fmt == "md":
        return markdown(items)
    if fmt == "html":
        return html(items, f"Transcript of {session.display}")
    return plain_text(items)

"""Facts a successor must keep after compaction: read from a session's `eval.json`, or derived.

A fact is an exact string of one kind: `state` (what is still in progress at the end: active
todos, the plan, edited files, running jobs and subagents), `instruction` (what the user or
an instruction file asked to hold always), `detail` (an exact early line, such as the error a
failed tool printed). Derivation is a pure function of the log, so the same session always
gives the same facts, and `eval --facts-only` prints them in the `eval.json` shape for a user
to save, edit and commit.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..errors import DataError
from ..session.events import is_real_user
from ..view.head import HeadState

KINDS = ("state", "instruction", "detail")
FACTS_NAME = "eval.json"
MAX_FACT_CHARS = 300  # a longer line is cut: the fact stays an exact substring of the log
_CONSTRAINT = re.compile(r"\b(always|never|don'?t|do not|must(?:n'?t| not)?)\b", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# Lines that name an error, most telling first: an exception beats a "FAILED" summary line.
_ERROR_WORDS = (
    re.compile(r"error|exception|traceback|fatal|panic|denied|not found|no such|cannot|can't|refused|invalid", re.I),
    re.compile(r"fail|exit|timed? ?out|abort", re.I),
)


@dataclass(frozen=True)
class Fact:
    kind: str
    text: str

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "text": self.text}


def load_facts(path: str | Path) -> list[Fact]:
    """The facts of an `eval.json`; anything but the documented shape is a data error naming it."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror})", path=str(p)) from None
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DataError(f"invalid JSON ({exc.msg})", path=str(p), line=exc.lineno) from None
    facts = doc.get("facts") if isinstance(doc, dict) else None
    if not isinstance(facts, list):
        raise DataError('not an eval facts file: expected {"facts": [{"kind", "text"}, ...]}', path=str(p))
    out: list[Fact] = []
    for i, f in enumerate(facts):
        if not isinstance(f, dict):
            raise DataError(f"facts[{i}] is not an object", path=str(p))
        if f.get("kind") not in KINDS:
            raise DataError(f"facts[{i}].kind must be one of {', '.join(KINDS)}", path=str(p))
        if not isinstance(f.get("text"), str) or not f["text"].strip():
            raise DataError(f"facts[{i}].text must be a non-empty string", path=str(p))
        out.append(Fact(f["kind"], f["text"]))
    return out


def facts_doc(facts: Iterable[Fact]) -> dict[str, Any]:
    """The `eval.json` document for these facts."""
    return {"facts": [f.as_dict() for f in facts]}


def _clip(line: str) -> str:
    return line[:MAX_FACT_CHARS].rstrip()


def constraints(text: str) -> list[str]:
    """Imperative sentences with always / never / don't / must, exactly as the user wrote them."""
    out = []
    for sentence in _SENTENCE_END.split(text):
        s = sentence.strip().lstrip("-*• ").strip()
        if len(s) >= 8 and _CONSTRAINT.search(s):
            out.append(_clip(s))
    return out


def error_line(output: str) -> str | None:
    """The line a failed tool result is remembered by: the first that names an error (an
    exception before a "failed" count), else the first with words in it (a bare `F.` says nothing)."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for words in _ERROR_WORDS:
        for ln in lines:
            if words.search(ln):
                return _clip(ln)
    for ln in lines:
        if len(ln) >= 4 and re.search(r"[A-Za-z]{2}", ln):
            return _clip(ln)
    return None


def _first_rule(text: str) -> str | None:
    """An instruction file is remembered by its first line that is not a heading."""
    for ln in text.splitlines():
        s = ln.strip()
        if s and not s.startswith("#"):
            return _clip(s.lstrip("-*• ").strip())
    return None


def derive_facts(events: Iterable[dict[str, Any]], plan: Any = None, *, since: int = 0) -> list[Fact]:
    """The facts of a session's main loop, by kind, each kind in a fixed order (deterministic).

    With the view's `plan`, what a rewind took off the live branch or a repair dropped is no
    fact: the successor was never meant to see it. With SINCE (a seq), the facts of a span: the
    user's constraints and the errors from SINCE on, the state as the whole log leaves it."""

    head = HeadState()
    seen: set[Fact] = set()
    by_kind: dict[str, list[Fact]] = {k: [] for k in KINDS}
    said: list[str] = []  # the user's constraints, after the instruction files

    def add(kind: str, text: Any) -> None:
        if isinstance(text, str) and text.strip():
            fact = Fact(kind, text.strip())
            if fact not in seen:
                seen.add(fact)
                by_kind[kind].append(fact)

    for ev in events:
        if ev.get("agent") is not None:
            continue  # a subagent's turns never reach the main loop's successor
        if plan is not None and (plan.is_excluded(ev["seq"]) or ev["seq"] in plan.drops):
            continue
        head.track(ev)
        kind = ev.get("kind")
        if ev["seq"] < since:
            continue
        if kind == "message" and is_real_user(ev) and isinstance(ev.get("text"), str):
            said.extend(constraints(ev["text"]))
        elif kind == "tool_result" and ev.get("is_error") and isinstance(ev.get("output"), str):
            add("detail", error_line(ev["output"]))
    # Instruction files and the state count as they stand at the end of the session.
    instructions = head.facets.get("instructions")
    for inst in instructions if isinstance(instructions, list) else ():
        if isinstance(inst, dict) and isinstance(inst.get("text"), str):
            add("instruction", _first_rule(inst["text"]))
    for c in said:
        add("instruction", c)
    cs = head.state()
    failed_only = set(cs["failed_edits"])  # the `edited_files` facet names a file at the call, before its result says it failed
    for t in cs["todos"]:
        add("state", t.get("text"))
    add("state", cs["plan"])
    for path in cs["edited_files"]:
        if path in failed_only:
            continue
        add("state", path)
    for j in cs["jobs"]:
        add("state", j.get("command"))
    for a in cs["subagents"]:
        add("state", a.get("description"))
    return [f for k in KINDS for f in by_kind[k]]

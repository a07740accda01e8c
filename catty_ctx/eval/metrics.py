"""Scoring a drive: which facts the successor still has, and the run's figures.

A `state` or `instruction` fact is kept when its exact text is in the resumed request. A
`detail` fact is recovered when it is there, or `segment grep` finds it in the archive, or
it is in a blob the request names. Counts are summed over a run's sessions before any
fraction is taken (pooled), so a session with many facts weighs what it holds.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import orjson

from ..session.blobs import blob_path
from ..session.segments import grep_segments
from .facts import KINDS, Fact

RECALLS = {"state": "state_recall", "instruction": "instruction_retention", "detail": "detail_recovery"}
_HANDLE_IN_TEXT = re.compile(r"\b[0-9a-f]{32}\b")


def request_text(items: Iterable[dict[str, Any]]) -> str:
    """Everything a model would read in these items: texts, tool outputs, call arguments."""
    parts: list[str] = []
    for it in items:
        for key in ("text", "output"):
            if isinstance(it.get(key), str):
                parts.append(it[key])
        for c in it.get("tool_calls") or ():
            args = c.get("args")
            parts.append(args if isinstance(args, str) else orjson.dumps(args).decode())
    return "\n".join(parts)


def _blob_texts(items: list[dict[str, Any]], text: str, session_dir: Path) -> Iterable[str]:
    """The payloads of the blobs the request names (a `blob` field or a handle in its text)."""

    handles = {it["blob"] for it in items if isinstance(it.get("blob"), str)} | set(_HANDLE_IN_TEXT.findall(text))
    for h in sorted(handles):
        try:
            yield blob_path(session_dir, h).read_bytes().decode("utf-8", "replace")
        except Exception:
            continue


def in_segments(session_dir: Path, fact: str) -> bool:
    """`segment grep` with a fixed string, line by line (every line of the fact must match)."""

    lines = [ln.strip() for ln in fact.splitlines() if ln.strip()]
    return bool(lines) and all(next(grep_segments(session_dir, ln), None) is not None for ln in lines)


def missed_facts(facts: list[Fact], items: list[dict[str, Any]], session_dir: Path) -> list[Fact]:
    """The facts the successor lost."""
    text = request_text(items)
    blobs: list[str] | None = None
    missed = []
    for f in facts:
        if f.text in text:
            continue
        if f.kind == "detail":
            if in_segments(session_dir, f.text):
                continue
            if blobs is None:
                blobs = list(_blob_texts(items, text, session_dir))
            if any(f.text in b for b in blobs):
                continue
        missed.append(f)
    return missed


@dataclass
class Tally:
    """Sums over one session or a whole run; `metrics()` turns them into the reported figures."""

    facts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    kept: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    violations: int = 0  # provider-invalid pairings found (integrity_violations)
    seconds: float = 0.0  # the compactions' summariser time: what the next request waited on
    background: float = 0.0  # pass 1's time, run ahead of the compaction (nobody waited on it)
    input_tokens: int = 0  # the summariser's calls: what they read ...
    output_tokens: int = 0  # ... and wrote
    summary_tokens: int = 0
    tokens_saved: int = 0  # the view before each compaction less the view after
    reuse_sum: float = 0.0  # cached-input ratios of the requests, summed ...
    requests: int = 0  # ... over this many
    prefires: int = 0  # two-pass: pass 1 runs ...
    hits: int = 0  # ... whose note the compaction used ...
    wasted: int = 0  # ... and the tokens of those it did not
    pass1_tokens: int = 0  # what every pass 1 spent
    refused: int = 0  # prefires refused: no note could ever be used beside the tail
    stress_checks: int = 0  # --stress: compactions checked with writes landing during them
    asked: int = 0  # successor check: questions put to the judge
    answered: int = 0  # and answers holding the fact

    def add(self, other: Tally) -> None:
        for k in KINDS:
            self.facts[k] += other.facts[k]
            self.kept[k] += other.kept[k]
        for f in fields(self):
            if f.name not in ("facts", "kept"):  # every other field is a sum
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Tally:
        return cls(**d)

    def metrics(self, *, two_pass: bool = False, judge: bool = False, stress: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            RECALLS[k]: round(self.kept[k] / self.facts[k], 4) if self.facts[k] else None for k in KINDS
        }
        out.update(
            integrity_violations=self.violations,
            summarizer_seconds=round(self.seconds + self.background, 3),
            user_wait_seconds=round(self.seconds, 3),
            background_seconds=round(self.background, 3),
            summarizer_input_tokens=self.input_tokens,
            summarizer_output_tokens=self.output_tokens,
            summary_tokens=self.summary_tokens,
            tokens_saved=self.tokens_saved,
            cached_input_ratio=round(self.reuse_sum / self.requests, 4) if self.requests else None,
        )
        if two_pass:
            out["prefire_hit_rate"] = round(self.hits / self.prefires, 4) if self.prefires else None
            out["wasted_tokens"] = self.wasted
            out["pass1_tokens"] = self.pass1_tokens
            out["prefires_refused"] = self.refused
        if stress:
            out["stress_checks"] = self.stress_checks
        if judge:
            out["successor_recall"] = round(self.answered / self.asked, 4) if self.asked else None
        return out


def tally(drive: Any, facts: list[Fact], missed: list[Fact]) -> Tally:
    """One session's sums from its drive and the facts it kept."""
    t = Tally()
    for f in facts:
        t.facts[f.kind] += 1
    for f in missed:
        t.kept[f.kind] -= 1
    for k in KINDS:
        t.kept[k] += t.facts[k]
    t.violations = drive.violations
    for s in drive.steps:
        t.seconds += s.summarizer_seconds
        t.background += s.background_seconds
        t.input_tokens += s.input_tokens
        t.output_tokens += s.output_tokens
        t.summary_tokens += s.summary_tokens
        t.tokens_saved += s.tokens_before - s.tokens_after
    t.reuse_sum = sum(drive.reuse)
    t.requests = len(drive.reuse)
    t.prefires, t.hits, t.wasted = drive.prefires, drive.prefire_hits, drive.wasted_tokens
    t.pass1_tokens, t.refused = drive.pass1_tokens, drive.prefires_refused
    t.stress_checks = drive.stress_checks
    return t


def lowest_recall(metrics: dict[str, Any]) -> float:
    """A session's worst recall figure (1.0 when it has no facts): the table lists the lowest."""
    values = [metrics[name] for name in RECALLS.values() if metrics.get(name) is not None]
    return min(values) if values else 1.0

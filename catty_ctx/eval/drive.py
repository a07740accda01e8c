"""Drive one session through N compactions on a copy, the way a live agent would.

The session's turns are split into N parts; each part is appended to a fresh copy turn by
turn (one request a turn), then compacted (forced when under the threshold), so the last step
is a compaction; then the copy is resumed. Everything goes through the library's own
mechanisms: `Session.append`, `compact_session` (with `prefire` and `two_pass` when asked),
the view, the provider shapes and their validators, `prefix_reuse`, `resume`. The source is
only read: its compaction events are left out (the strategy under test does its own), the
rest are appended with new seqs.
"""
from __future__ import annotations

import math
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..compact.ladder import INSTRUCTION, SYSTEM_PROMPT, WindowTooSmall
from ..compact.pipeline import compact_session
from ..defaults import DEFAULT_THRESHOLD, EVAL_COMPACTIONS, EVAL_MODE, SUMMARIZER
from ..errors import DataError
from ..fork import resume
from ..prune.reuse import prefix_reuse
from ..session.create import create_session
from ..session.events import Event, is_real_user
from ..session.store import Session, session_window
from ..view.fold import stream_view, view
from ..view.tokens import item_tokens, size_tokens
from .stress import Stress, provider_violations

APPEND_BATCH = 1_000  # events per append: one lock and one fsync for many lines
# Each request is rebuilt from the log, so a request after every turn costs turns x log size;
# past this many turns a session's requests are sampled evenly (each part's last turn and the
# request after each compaction are always taken).
MAX_REQUESTS = 150


@dataclass
class Strategy:
    """One run: a summariser in a mode, N compactions, two-pass or not."""

    summarizer: str = SUMMARIZER
    mode: str = EVAL_MODE
    compactions: int = EVAL_COMPACTIONS
    two_pass: bool = False
    summarizer_options: dict[str, Any] = field(default_factory=dict)
    stress: bool = False  # writes land while each compaction runs; integrity checked after each


@dataclass
class Step:
    """One compaction of the drive, as the library reported it (and its artifact recorded)."""

    tokens_before: int
    tokens_after: int
    summary_tokens: int
    summarizer_seconds: float  # the compaction's own summariser time: what the next request waited
    input_tokens: int
    output_tokens: int
    violations: int
    two_pass: dict[str, Any] | None = None
    background_seconds: float = 0.0  # pass 1, run ahead of the compaction: nobody waited on it


@dataclass
class Drive:
    """What one drive measured; `items` is the final resumed request."""

    steps: list[Step] = field(default_factory=list)
    reuse: list[float] = field(default_factory=list)  # prefix reuse of each request vs the one before
    prefires: int = 0
    prefire_hits: int = 0
    prefires_refused: int = 0  # refused: the window less the reserve cannot hold a note and the tail
    pass1_tokens: int = 0  # what every pass 1 spent (provider-reported, else estimated)
    wasted_tokens: int = 0
    violations: int = 0
    stress_checks: int = 0  # compactions checked under --stress
    items: list[dict[str, Any]] = field(default_factory=list)


def turn_starts(session: Session) -> tuple[list[int], int]:
    """Positions (among the events kept for the drive) where a turn of the main loop starts,
    and how many events are kept."""
    out = []
    n = 0
    for ev in session.events(warn=None):  # the facts pass has said what is wrong with the log
        if not _kept(ev):
            continue
        if is_real_user(ev):
            out.append(n)
        n += 1
    return out, n


def _kept(ev: Event) -> bool:
    return ev["kind"] not in ("session", "compaction")


def cut_points(starts: list[int], total: int, parts: int) -> list[int]:
    """Where parts 2..N start: at turn starts, evenly by turns (by events when turns are few)."""
    inner = [s for s in starts if 0 < s < total]
    if len(inner) < parts - 1:
        inner = list(range(1, total))  # too few turns: any event boundary will do
    if not inner:
        return []
    n = len(inner) + 1
    picks = sorted({inner[min(len(inner) - 1, math.ceil(k * n / parts) - 1)] for k in range(1, parts)})
    return picks


def _copy_blobs(src: Path | None, dest: Path) -> None:
    """The source's blobs come along, so the events that name them resolve (links are not followed)."""
    if src is None or not (src / "blobs").is_dir() or (src / "blobs").is_symlink():
        return
    (dest / "blobs").mkdir(exist_ok=True)
    for p in (src / "blobs").iterdir():
        if p.is_file() and not p.is_symlink():
            try:
                fd = os.open(p, os.O_RDONLY)
            except OSError as exc:  # the source's blob: bad input, named, not a bug
                raise DataError(f"cannot read ({exc.strerror})", path=str(p)) from None
            with os.fdopen(fd, "rb") as src_blob, open(dest / "blobs" / p.name, "wb") as out:
                shutil.copyfileobj(src_blob, out)


def start_copy(source: Session, dest: Path) -> Session:
    """A fresh session at DEST with the source's session event (its id, model, window, cwd)."""
    first = source.first_event() or {}
    window = session_window(source, first)
    copy = create_session(
        dest, session_id=first.get("session_id"), window=window, model=first.get("model"),
        cwd=first.get("cwd"), parent_session_id=first.get("parent_session_id"),
    )
    _copy_blobs(source.directory, dest)
    return copy


def _batches(source: Session, cuts: list[int], starts: list[int]) -> Iterator[tuple[bool, list[Event]]]:
    """The source's kept events a turn at a time, each batch with whether it ends a part."""
    bounds = set(starts[1:]) | set(cuts)  # what comes before the first turn goes with it
    cut_set = set(cuts)
    batch: list[Event] = []
    n = 0
    for ev in source.events(warn=None):
        if not _kept(ev):
            continue
        if n in bounds and batch:
            yield n in cut_set, batch
            batch = []
        batch.append(ev)
        n += 1
        if len(batch) >= APPEND_BATCH and n not in bounds:
            yield False, batch  # a long turn goes in pieces, with no request between them
            batch = []
    if batch:
        yield True, batch


def _lookahead(it: Iterator[tuple[bool, list[Event]]]) -> Iterator[tuple[bool, list[Event], bool]]:
    """(ends a part, batch, the next batch ends a part)."""
    prev = next(it, None)
    for cur in it:
        assert prev is not None
        yield prev[0], prev[1], cur[0]
        prev = cur
    if prev is not None:
        yield prev[0], prev[1], False


def append_copied(copy: Session, batch: list[Event], remap: dict[int, int]) -> None:
    """Append source events to the copy with its own seqs (a repair's target follows its event)."""
    base = copy.next_seq()
    out = []
    for j, ev in enumerate(batch):
        remap[ev["seq"]] = base + j
        new = {k: v for k, v in ev.items() if k not in ("v", "seq")}
        if ev["kind"] == "repair" and isinstance(ev.get("target_seq"), int):
            new["target_seq"] = remap.get(ev["target_seq"], ev["target_seq"])
        out.append(new)
    copy.append(out, warn=None)


def _resumed_violations(copy: Session) -> int:
    bad = 0
    for fmt in ("openai", "anthropic"):
        try:
            resume(copy, fmt)
        except DataError:
            bad += 1
    return bad


def _resumed_items(copy: Session) -> list[dict[str, Any]]:
    """The items `resume` would send (none when it refuses an empty view): what the facts are
    checked against."""

    try:
        items, _ = resume(copy, "items")
    except DataError:
        return []
    return items


class _Requests:
    """Each request of the drive against the one before it: the prune benchmark's prefix reuse."""

    def __init__(self) -> None:
        self.previous: list[bytes] | None = None
        self.ratios: list[float] = []

    def send(self, copy: Session) -> None:
        current = list(stream_view(copy))
        if self.previous is not None:
            self.ratios.append(prefix_reuse(self.previous, current).ratio)
        self.previous = [vi.canon for vi in current]


def _tokens(text: str) -> int:
    return size_tokens(len(text.encode()))


def _step(copy: Session, result: Any) -> Step:
    """A compaction's figures: sizes from the result, summariser cost from its artifact."""

    doc = orjson.loads((copy.directory / result.artifact).read_bytes()) if copy.directory and result.artifact else {}
    attempts = doc.get("attempts") or []
    seconds = sum(((a.get("timings") or {}).get("total_ms") or 0) for a in attempts) / 1000
    if not any(a.get("timings") for a in attempts):
        seconds = ((doc.get("timings") or {}).get("total_ms") or 0) / 1000
    items = (doc.get("input") or {}).get("items") or []
    prompt = _tokens(SYSTEM_PROMPT) + _tokens(INSTRUCTION) + sum(item_tokens(i) for i in items)
    return Step(
        tokens_before=result.tokens_before,
        tokens_after=result.tokens_after or 0,
        summary_tokens=_tokens(result.summary or ""),
        summarizer_seconds=seconds,
        # Each attempt sends the prompt again; a model answer is what each attempt printed.
        input_tokens=prompt * max(1, len(attempts)),
        output_tokens=size_tokens(sum((a.get("summary_chars") or 0) for a in attempts)),
        violations=provider_violations(view(copy)),
        two_pass=result.two_pass,
    )


def drive(source_path: Path, dest: Path, strategy: Strategy, *, threshold: float = DEFAULT_THRESHOLD,
          on_step: Callable[[], None] | None = None) -> Drive:
    """Drive a copy of the session at SOURCE_PATH (only read) at DEST through the strategy;
    ON_STEP is told after each compaction (the command's progress)."""

    out = Drive()
    requests = _Requests()
    options: dict[str, Any] = {
        "force": True, "threshold": threshold, "mode": strategy.mode, "summarizer": strategy.summarizer,
        "summarizer_options": strategy.summarizer_options,
    }
    note: dict[str, Any] | None = None  # the pass-1 note waiting for its compaction
    remap: dict[int, int] = {}
    with Session.open(source_path) as source:
        starts, total = turn_starts(source)
        cuts = cut_points(starts, total, strategy.compactions)
        copy = start_copy(source, dest)
        stress = Stress(copy) if strategy.stress else None
        if stress is not None:
            options["during"] = stress.during
        stride = max(1, math.ceil(len(starts) / MAX_REQUESTS))
        for n, (ends_part, batch, next_ends) in enumerate(_lookahead(_batches(source, cuts, starts))):
            append_copied(copy, batch, remap)
            if ends_part or n % stride == 0:
                requests.send(copy)
            # Pass 1 runs early: before the last turn of the part (or now, if this is it).
            if strategy.two_pass and note is None and (next_ends or ends_part):
                t0 = time.monotonic()
                try:
                    pre = compact_session(copy, prefire=True, **options)
                except WindowTooSmall:  # refused: pass 2 could never use its note (nothing spent)
                    out.prefires_refused += 1
                    pre = None
                if pre is not None and pre.status == "prefired":
                    out.prefires += 1
                    spent = int((pre.two_pass or {}).get("spent_tokens") or 0)
                    out.pass1_tokens += spent
                    note = {"tokens": spent, "seconds": time.monotonic() - t0}
            if not ends_part:
                continue
            if stress is not None:
                stress.before()
            res = compact_session(copy, two_pass=strategy.two_pass, **options)
            if stress is not None and res.status == "compacted":
                out.violations += stress.check()
            if on_step is not None:
                on_step()
            if res.status != "compacted":
                continue
            step = _step(copy, res)
            step.summarizer_seconds += float((res.two_pass or {}).get("waited_ms") or 0) / 1000  # a pass 1 in flight, waited on
            if note is not None:
                step.background_seconds += note["seconds"]
                if (res.two_pass or {}).get("hit"):
                    out.prefire_hits += 1
                # What pass 1 really spent on notes that bought nothing (stale, no room, replaced).
                out.wasted_tokens += int((res.two_pass or {}).get("wasted_tokens") or 0)
                note = None
            out.steps.append(step)
            out.violations += step.violations
            requests.send(copy)  # the successor's first request
    if note is not None:
        out.wasted_tokens += note["tokens"]
    out.stress_checks = stress.checks if stress is not None else 0
    out.violations += _resumed_violations(copy)
    out.items = _resumed_items(copy)
    out.reuse = requests.ratios
    return out

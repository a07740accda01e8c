"""Two-pass compaction: prefire pass 1 early, use it only on an exact prefix match (reference 3.7).

`prefire` summarises the first ~95% of the view (by estimated tokens, snapped so an assistant
with tool calls and its results stay together) and caches NOTE1 keyed by the prefix length,
the summariser id and the SPEC fingerprint of that prefix. `lookup` hits only when all three
match the live view. grok-build keys its cache with a text-only hash (weakness #1), so a
changed tool argument, id or result in the prefix can hit a stale note; here every field of
every item counts, and the pass-2 tail is fitted to the budget (weakness #3).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import orjson

from ..events import now_ts
from ..fingerprint import prefix_fp
from ..store import atomic_write, session_folder
from ..tokens import item_tokens
from .artifacts import ARTIFACT_DIR
from ..head import SUMMARY_PREAMBLE
from .ladder import FITTED_RESERVE, Summarizer, SummaryRequest, fit_items

CACHE_NAME = "prefire.json"
CACHE_SCHEMA = 1
SPLIT = 0.95
NOTE1_MIN_BLOCK = 1_000
NOTE1_CAP = 12_000
_BLOCK = re.compile(r"<summary>(.*?)</summary>", re.S)

Item = dict[str, Any]


def cache_path(session_dir: Path) -> Path:
    return session_dir / ARTIFACT_DIR / CACHE_NAME


def split_point(items: Sequence[Item], fraction: float = SPLIT) -> int:
    """How many leading items make ~fraction of the estimated tokens, never splitting an
    assistant from the results of its calls (0 when no useful prefix exists)."""
    fraction = min(0.95, max(0.05, fraction))
    weights = [item_tokens(it) for it in items]
    target = sum(weights) * fraction
    k, acc = 0, 0
    while k < len(items) - 1 and acc + weights[k] <= target:  # the tail keeps at least one item
        acc += weights[k]
        k += 1
    # A tool result may not open the tail: move its assistant (and its results) there too.
    while k > 0 and items[k].get("role") == "tool":
        k -= 1
    return k


def note1(raw: str) -> str:
    """The last <summary> block over 1,000 characters, else the whole output; capped."""
    blocks = [b.strip() for b in _BLOCK.findall(raw) if len(b.strip()) > NOTE1_MIN_BLOCK]
    text = blocks[-1] if blocks else raw.strip()
    return text[:NOTE1_CAP]


@dataclass
class PrefireResult:
    status: str  # prefired | nothing_to_prefire | failed
    prefix_len: int
    fp: str | None
    pass1_latency_ms: float | None
    note_chars: int
    error: str | None = None


def prefire(
    session_dir: Path, items: Sequence[Item], summarizer: Summarizer, *, window: int, state: dict[str, Any], redact: bool = True
) -> PrefireResult:
    """Pass 1 on the prefix, now; the cache is written, no event is appended."""
    k = split_point(items)
    if k == 0:
        return PrefireResult("nothing_to_prefire", 0, None, None, 0)
    prefix = list(items[:k])
    t0 = time.monotonic()
    res = summarizer.summarize(SummaryRequest(items=prefix, state=state, window=window))
    latency = round((time.monotonic() - t0) * 1000, 1)
    if res.summary is None:
        return PrefireResult("failed", k, None, latency, 0, res.error)
    note = note1(res.raw or res.summary)
    if redact:  # the cache is stored beside the artifacts and shared like them
        from ..redact import redact_text

        note = redact_text(note)[0]
    fp = prefix_fp(prefix)
    doc = {
        "schema_version": CACHE_SCHEMA,
        "created_at": now_ts(),
        "prefix_len": k,
        "summarizer": summarizer.id,
        "fp": fp,
        "note1": note,
        "pass1_latency_ms": latency,
        "attempts": res.attempts,
    }
    path = cache_path(session_dir)
    session_folder(path.parent)  # never a link out of the session
    atomic_write(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    return PrefireResult("prefired", k, fp, latency, len(note))


@dataclass
class Lookup:
    hit: bool
    stale: bool
    note: str | None
    prefix_len: int
    pass1_latency_ms: float | None
    why: str | None = None  # the key part that differed

    def record(self) -> dict[str, Any]:
        return {"hit": self.hit, "stale": self.stale, "pass1_latency_ms": self.pass1_latency_ms, "waited_ms": 0}


def lookup(session_dir: Path, items: Sequence[Item], summarizer_id: str) -> Lookup:
    """Hit only when prefix length, summariser and prefix fingerprint all match the live view."""
    path = cache_path(session_dir)
    if not path.is_file():
        return Lookup(False, False, None, 0, None)
    try:
        doc = orjson.loads(path.read_bytes())
        k = int(doc["prefix_len"])
        note = str(doc["note1"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return Lookup(False, True, None, 0, None, "unreadable cache")
    latency = doc.get("pass1_latency_ms")
    if not 0 < k <= len(items):
        return Lookup(False, True, None, k, latency, "prefix length")
    if doc.get("summarizer") != summarizer_id:
        return Lookup(False, True, None, k, latency, "summariser")
    if doc.get("fp") != prefix_fp(items[:k]):
        return Lookup(False, True, None, k, latency, "prefix fingerprint")
    return Lookup(True, False, note, k, latency)


def pass2_items(items: Sequence[Item], hit: Lookup, window: int, tool_schema_tokens: int = 0) -> list[Item]:
    """Pass 2's input: the leading system item, NOTE1 as a summary carrier, the fitted live tail."""
    lead: list[Item] = [items[0]] if items and items[0].get("role") == "system" else []
    carrier = {"role": "user", "text": f"{SUMMARY_PREAMBLE}\n\n<summary>\n{hit.note}\n</summary>", "synthetic": "compaction_summary"}
    used = sum(item_tokens(i) for i in lead) + item_tokens(carrier)
    budget = max(0, window - FITTED_RESERVE - tool_schema_tokens - used)
    return lead + [carrier] + fit_items(list(items[hit.prefix_len:]), budget)


def discard(session_dir: Path) -> None:
    """A committed compaction consumed the note: the cache can never match again."""
    try:
        cache_path(session_dir).unlink()
    except FileNotFoundError:
        pass

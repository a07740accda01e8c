"""Two-pass compaction: prefire pass 1 early, use it only on an exact prefix match (docs/design.md#m7).

Pass 1 may still be running when pass 2 comes: `prefire` leaves a marker
(`compaction_requests/prefire.running`: pid, host, start) for as long as it runs, and pass 2
waits for it up to a bound, recording the real wait, or gives up and runs a single pass.
Pass 1 writes its own request artifact, and the tokens it spent travel in the cache: the
compaction that consumes the note, or finds it stale (then they are counted as wasted),
records them in the ledger. Each of those `usage` events is named by `prefire_call` (its
pass's artifact id and index), which it keeps when appended: the usage ledger counts it from
the cache until then, and once either way (`usage.prefire`). A second prefire that replaces a
note nobody used carries the old note's events forward into the new cache: `--prefire`
appends no event (docs/spec.md#commands), and the spend must not be lost with the note.

`prefire` summarises the first ~95% of the view (by estimated tokens, snapped so an assistant
with tool calls and its results stay together) and caches NOTE1 keyed by the prefix length,
the summariser id and the fingerprint of that prefix (docs/spec.md#fingerprints). `lookup` hits only when all three
match the live view. grok-build keys its cache with a text-only hash (docs/design.md#w1), so a
changed tool argument, id or result in the prefix can hit a stale note; here every field of
every item counts, and the note is used only when the whole live tail fits beside it (docs/design.md#w3);
otherwise one pass runs, the event saying why (`fallback`).
"""
from __future__ import annotations

import os
import re
import socket
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import xxhash

from ..defaults import NOTE1_CAP, NOTE1_MIN_BLOCK, PREFIRE_SPLIT
from ..errors import WriteError
from ..redact import redact_text
from ..session.events import now_ts
from ..session.files import create_exclusive
from ..session.layout import PREFIRE_NAME, prefire_origin, prefire_spend
from ..session.store import atomic_write, session_folder
from ..view.fingerprint import prefix_fp
from ..view.head import SUMMARY_PREAMBLE
from ..view.tokens import item_tokens
from .artifacts import ARTIFACT_DIR, artifact_doc, artifact_relpath, write_artifact
from .ladder import FITTED_RESERVE, INSTRUCTION, SYSTEM_PROMPT, Summarizer, SummaryRequest, SummaryResult

CACHE_NAME = PREFIRE_NAME
MARKER_NAME = "prefire.running"
CACHE_SCHEMA = 1
WAIT_S = 60.0  # how long pass 2 waits for a pass 1 in flight before it runs a single pass
POLL_S = 0.05
MARKER_MAX_AGE_S = 3600.0  # a marker older than this is stale, whatever process has its pid now
SPLIT = PREFIRE_SPLIT
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


def prompt_key() -> str:
    """The prompt part of a note's key: a note written for another prompt is not this one's."""
    return xxhash.xxh3_64_hexdigest(f"{SYSTEM_PROMPT}\0{INSTRUCTION}".encode())


def carrier(note: str) -> Item:
    """NOTE1 as pass 2 sends it: a summary carrier."""
    return {"role": "user", "text": f"{SUMMARY_PREAMBLE}\n\n<summary>\n{note}\n</summary>", "synthetic": "compaction_summary"}


def room_for_pass2(items: Sequence[Item], k: int, window: int, tool_schema_tokens: int = 0) -> tuple[int, int]:
    """(what pass 2 would send at most with a note cut from a pass 1 at K, its budget): the
    leading system item, a note of the full cap and the live tail after K, against window less
    the fitted reserve and the tool schemas. When the first exceeds the second, no note of pass 1
    can ever be used, so running it is pure waste (docs/compact.md#two-pass-compaction)."""
    lead = item_tokens(items[0]) if items and items[0].get("role") == "system" else 0
    need = lead + item_tokens(carrier("x" * NOTE1_CAP)) + sum(item_tokens(i) for i in items[k:])
    return need, window - FITTED_RESERVE - tool_schema_tokens


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
    result: SummaryResult | None = None  # pass 1's answer
    artifact: str | None = None  # its request artifact, relative to the session
    spent_tokens: int = 0  # what its calls cost (provider-reported, else estimated)


def marker_path(session_dir: Path) -> Path:
    return session_dir / ARTIFACT_DIR / MARKER_NAME


def in_flight(session_dir: Path) -> dict[str, Any] | None:
    """The marker of a pass 1 running now, or None (none, unreadable, or its process gone)."""
    try:
        doc = orjson.loads(marker_path(session_dir).read_bytes())
        pid, host, started = int(doc["pid"]), str(doc["host"]), float(doc["started"])
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None
    if time.time() - started >= MARKER_MAX_AGE_S:
        return None  # no pass 1 runs this long: its pid may belong to another process by now
    if host != socket.gethostname():
        return doc  # another host's process cannot be checked: its age alone decides
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # it died without removing its marker
    except PermissionError:
        pass  # alive, another user's
    return doc


def wait_for_pass1(session_dir: Path, bound_s: float) -> tuple[float, bool, bool]:
    """Wait while a pass 1 is in flight, up to `bound_s`: (waited ms, was one in flight, timed out)."""
    t0 = time.monotonic()
    if in_flight(session_dir) is None:
        return 0.0, False, False
    while in_flight(session_dir) is not None:
        if time.monotonic() - t0 >= bound_s:
            return round((time.monotonic() - t0) * 1000, 1), True, True
        time.sleep(POLL_S)
    return round((time.monotonic() - t0) * 1000, 1), True, False


def prefire(
    session_dir: Path, items: Sequence[Item], summarizer: Summarizer, *, window: int, state: dict[str, Any], redact: bool = True,
    session_id: str | None = None, spend: Any = None,
) -> PrefireResult:
    """Pass 1 on the prefix, now; its artifact and the cache are written, no event is appended.
    `spend(result)` gives the usage events of its calls, kept in the cache for the ledger."""
    k = split_point(items)
    if k == 0:
        return PrefireResult("nothing_to_prefire", 0, None, None, 0)
    prefix = list(items[:k])
    fp = prefix_fp(prefix)
    cached = _valid_note(session_dir, k, fp, summarizer.id)
    if cached is not None:  # the same prefix, summariser and prompt: the note is there, paid for
        return PrefireResult("cached", k, fp, cached.get("pass1_latency_ms"), len(str(cached.get("note1") or "")),
                             artifact=cached.get("artifact"), spent_tokens=spent_tokens(prefire_spend(cached)))
    marker = marker_path(session_dir)
    session_folder(marker.parent)  # never a link out of the session
    if not _claim(marker, {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time(), "prefix_len": k, "summarizer": summarizer.id}):
        return PrefireResult("in_flight", k, None, None, 0)
    try:
        t0 = time.monotonic()
        request = SummaryRequest(items=prefix, state=state, window=window)
        res = summarizer.summarize(request)
        latency = round((time.monotonic() - t0) * 1000, 1)
        aid = f"prefire-{uuid.uuid4()}"
        doc1 = artifact_doc(
            compaction_id=aid, session_id=session_id, trigger="prefire", mode="summary", through_seq=_last_seq(prefix),
            prefix_fp=fp, request=request, result=res, tokens_before=sum(item_tokens(i) for i in prefix), tokens_after=None, threshold=0.0,
        )
        write_artifact(session_dir, doc1, redact=redact)
        if res.summary is None:
            return PrefireResult("failed", k, None, latency, 0, res.error, res)
        return _write_cache(session_dir, k, fp, res, summarizer, latency, redact, artifact_relpath(aid), spend(res) if spend else [])
    finally:
        try:
            if orjson.loads(marker.read_bytes()).get("pid") == os.getpid():
                marker.unlink()
        except (OSError, orjson.JSONDecodeError, AttributeError):
            pass


def _claim(marker: Path, doc: dict[str, Any]) -> bool:
    """Create the marker, exclusively: of two prefires started together only one runs pass 1.
    A marker whose process is gone (or too old) is moved aside and the claim tried once more."""
    data = orjson.dumps(doc)
    try:
        if create_exclusive(marker, data):
            return True
        if in_flight(marker.parent.parent) is not None:
            return False
        marker.unlink()  # stale: its pass 1 died without removing it
    except FileNotFoundError:
        pass  # removed meanwhile by its owner or another claimant
    except OSError as exc:
        raise WriteError(f"{marker}: cannot write ({exc.strerror})") from None
    try:
        return create_exclusive(marker, data)
    except OSError as exc:
        raise WriteError(f"{marker}: cannot write ({exc.strerror})") from None


def _last_seq(items: Sequence[Item]) -> int:
    seqs = [i["seq"] for i in items if isinstance(i.get("seq"), int)]
    return max(seqs) if seqs else -1


def _write_cache(
    session_dir: Path, k: int, fp: str, res: SummaryResult, summarizer: Summarizer, latency: float, redact: bool,
    artifact: str, spend: list[dict[str, Any]],
) -> PrefireResult:
    note = note1(res.raw or res.summary or "")
    if redact:  # the cache is stored beside the artifacts and shared like them
        note = redact_text(note)[0]
    path = cache_path(session_dir)
    session_folder(path.parent)  # never a link out of the session
    # The events of this pass named now, and those of an earlier note this one replaces, not
    # yet in the log, kept: the ledger reads them here, a compaction appends them.
    spend = _unrecorded(path) + prefire_spend({"artifact": artifact, "spend": spend})
    doc = {
        "schema_version": CACHE_SCHEMA,
        "created_at": now_ts(),
        "prefix_len": k,
        "summarizer": summarizer.id,
        "fp": fp,
        "prompt": prompt_key(),
        "note1": note,
        "pass1_latency_ms": latency,
        "attempts": res.attempts,
        "artifact": artifact,
        "spend": spend,  # usage events of pass 1's calls, recorded by the compaction that reads this
    }
    atomic_write(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    own = artifact[: -len(".json")].rsplit("/", 1)[-1] + ":"
    return PrefireResult("prefired", k, fp, latency, len(note), result=res, artifact=artifact,
                         spent_tokens=spent_tokens(e for e in spend if str(e.get("prefire_call")).startswith(own)))


def spent_tokens(events: Any) -> int:
    """What usage events cost in tokens: input, output and cached input (the provider's figures,
    else the estimate the event carries)."""
    return sum(int(e.get("input") or 0) + int(e.get("output") or 0) + int(e.get("cache_read") or 0) for e in events)


def _valid_note(session_dir: Path, k: int, fp: str, summarizer_id: str) -> dict[str, Any] | None:
    """The cache when it holds a note for exactly this key (prefix length and fingerprint,
    summariser, prompt), else None."""
    try:
        doc = orjson.loads(cache_path(session_dir).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(doc, dict) or not doc.get("note1"):
        return None
    key = (doc.get("prefix_len"), doc.get("fp"), doc.get("summarizer"), doc.get("prompt"))
    return doc if key == (k, fp, summarizer_id, prompt_key()) else None


def _unrecorded(path: Path) -> list[dict[str, Any]]:
    """The usage events of the cache at PATH (a note about to be replaced), named; none when
    there is none or it cannot be read."""
    try:
        return prefire_spend(orjson.loads(path.read_bytes()))
    except (OSError, orjson.JSONDecodeError):
        return []


@dataclass
class Lookup:
    hit: bool
    stale: bool
    note: str | None
    prefix_len: int
    pass1_latency_ms: float | None
    why: str | None = None  # the key part that differed
    spend: list[dict[str, Any]] = field(default_factory=list)  # pass 1's usage events
    waited_ms: float = 0.0  # how long pass 2 waited for a pass 1 in flight
    in_flight: bool = False
    timed_out: bool = False
    no_room: bool = False  # the note matched but the live tail after it does not fit beside it
    unused: bool = False  # a single-pass compaction (no --two-pass) folded the prefix the note was for
    own: str = ""  # `prefire_call` prefix of the note's own pass (the rest was carried from notes it replaced)

    @property
    def settled(self) -> bool:
        """The note was read and decided on (used, stale, or no room beside it): its spend goes
        into the log with this compaction and the cache is dropped."""
        return self.hit or self.stale or self.no_room or self.unused

    @property
    def lost(self) -> bool:
        """No part of the note reached a summary: all of its spend is waste."""
        return self.stale or self.no_room or self.unused

    def wasted(self, event: dict[str, Any]) -> bool:
        """Whether the pass-1 usage EVENT bought nothing: its note was not used, or it was
        carried from a note this one replaced."""
        return self.lost or bool(self.own and not str(event.get("prefire_call")).startswith(self.own))

    def spend_events(self) -> list[dict[str, Any]]:
        """Pass 1's usage events as the ledger records them: the wasted ones marked `wasted`."""
        return [{**e, "wasted": True} if self.wasted(e) else e for e in self.spend]

    @property
    def wasted_tokens(self) -> int:
        """Tokens pass 1 spent on notes that cannot be used: all of them when stale, else those
        of the notes this one replaced (carried in its cache)."""
        return spent_tokens(e for e in self.spend if self.wasted(e))

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"hit": self.hit, "stale": self.stale, "pass1_latency_ms": self.pass1_latency_ms, "waited_ms": self.waited_ms}
        if self.in_flight:
            out.update(in_flight=True, timed_out=self.timed_out)
        if self.lost:  # why a note there was not used: one pass instead
            out["fallback"] = "no_room" if self.no_room else "single_pass" if self.unused else "stale"
        wasted = self.wasted_tokens
        if self.lost or wasted:
            out["wasted_tokens"] = wasted
        return out


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
    spend = prefire_spend(doc)  # (named as the ledger named them while they waited here)
    if not 0 < k <= len(items):
        return Lookup(False, True, None, k, latency, "prefix length", spend, own=_own(doc))
    if doc.get("summarizer") != summarizer_id:
        return Lookup(False, True, None, k, latency, "summariser", spend, own=_own(doc))
    if doc.get("fp") != prefix_fp(items[:k]):
        return Lookup(False, True, None, k, latency, "prefix fingerprint", spend, own=_own(doc))
    if doc.get("prompt", prompt_key()) != prompt_key():  # (a note from before the prompt was keyed: its own prompt)
        return Lookup(False, True, None, k, latency, "prompt", spend, own=_own(doc))
    return Lookup(True, False, note, k, latency, None, spend, own=_own(doc))


def _own(doc: dict[str, Any]) -> str:
    """The `prefire_call` prefix of the events of a cache's own pass ("" when it names no artifact)."""
    origin = prefire_origin(doc)
    return origin + ":" if origin else ""


def pass2_items(items: Sequence[Item], hit: Lookup, window: int, tool_schema_tokens: int = 0) -> list[Item] | None:
    """Pass 2's input: the leading system item, NOTE1 as a summary carrier, the whole live tail.

    None when the live tail does not fit beside the note within the fitted budget: a tail cut
    to fit would summarise the note and an older part of the tail without the latest turn (at a
    window under the fitted reserve, the note alone), so the caller runs a single pass.
    """
    lead: list[Item] = [items[0]] if items and items[0].get("role") == "system" else []
    note = carrier(hit.note or "")
    tail = list(items[hit.prefix_len:])
    used = sum(item_tokens(i) for i in lead) + item_tokens(note) + sum(item_tokens(i) for i in tail)
    if not tail or used > window - FITTED_RESERVE - tool_schema_tokens:
        return None
    return [*lead, note, *tail]


def recorded(session_dir: Path, spend: Sequence[dict[str, Any]]) -> None:
    """SPEND (pass-1 events) was appended by a compaction that committed nothing: the note stays
    for the next one, without those events, so that it does not append them again."""
    names = {e.get("prefire_call") for e in spend}
    path = cache_path(session_dir)
    try:
        doc = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return
    if not isinstance(doc, dict):
        return
    left = [e for e in prefire_spend(doc) if e.get("prefire_call") not in names]
    if len(left) != len(doc.get("spend") or ()):
        atomic_write(path, orjson.dumps({**doc, "spend": left}, option=orjson.OPT_INDENT_2) + b"\n")


def discard(session_dir: Path, hit: Lookup | None = None) -> None:
    """A committed compaction consumed the note HIT read (its spend is in the log now): the
    cache can never match again. When a prefire replaced it meanwhile (pass 2 ran for a while),
    the new note stays, less the events of the old one it carried (they were just appended)."""
    path = cache_path(session_dir)
    if hit is not None and hit.own:
        try:
            doc = orjson.loads(path.read_bytes())
        except FileNotFoundError:
            return
        except (OSError, orjson.JSONDecodeError):
            doc = None
        if isinstance(doc, dict) and _own(doc) != hit.own:
            recorded(session_dir, hit.spend)
            return
    try:
        path.unlink()
    except FileNotFoundError:
        pass

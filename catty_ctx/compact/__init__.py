"""Compaction: the pipeline and its commit protocol (docs/design.md#m6, #m7, #m8; docs/spec.md#commands).

One streaming pass measures the view (tokens, prefix fingerprint, the items to summarise)
and, on the side, the state the new head will carry. If the session is over its threshold
(or forced), the summariser runs outside the lock; then the request artifact is written
(temp + fsync + rename) and the `compaction` event is appended last under the session lock:
the event is the commit point, so a crash at any moment leaves a loadable session, and the
log before is a byte-identical prefix of the log after.

Kept import-light: importing `compact.segments` (fork, segment, report) runs this package, so
the pipeline's stages (summarisers, two-pass, artifacts, the repairs a broken view needs)
load where a compaction uses them.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..announce import Announcer
from ..cluster import each
from ..defaults import COMPACT_DEADLINE, COMPACT_MODE, COMPACT_MODES, DEFAULT_THRESHOLD, SEGMENT_DETAIL, SUMMARIZER
from ..errors import CattyError, ExitCode, LockBusy, UsageError
from ..events import DEFAULT_WINDOW, SPAN_KINDS, Event
from ..files import clear_dead_temps
from ..fingerprint import prefix_fp
from ..head import HeadState, build_head, continuation_state
from ..layout import REQUESTS_DIR
from ..ownership import require_ours
from ..store import DEFAULT_LOCK_TIMEOUT, Session, find_sessions, is_root, session_window
from ..tokens import item_tokens, over_threshold, percent_of
from ..view import ViewStats, head_items, iter_view, plan_file

MODES = COMPACT_MODES
# How a session stands against its threshold, in every mode's rows (compact, --check, --prefire).
OVER, BELOW = "over_threshold", "below_threshold"
PREFIRE_LEAD = 10.0  # a ROOT prefires sessions within this many points of their threshold


@dataclass
class Measure:
    """One pass over a session: the view's size and fingerprint, and the next head's state."""

    session_id: str | None
    window: int
    tokens: int
    fp: str
    last_seq: int
    previous: Event | None  # the latest compaction now in force
    head: HeadState
    first: Event | None = None  # the session event
    items: list[dict[str, Any]] = field(default_factory=list)
    span: list[Event] = field(default_factory=list)  # what a segment archives (segments mode)
    repaired: list[str] = field(default_factory=list)  # what the repaired view fixed, if anything

    @property
    def span_from(self) -> int:
        """The first seq this compaction folds that no earlier one did."""
        return self.previous["through_seq"] + 1 if self.previous is not None else 0

    @property
    def nothing_new(self) -> bool:
        """No event after the last compaction (or nothing but the session event)."""
        if self.previous is not None:
            return self.last_seq <= self.previous["seq"]
        return self.last_seq <= 0




def measure(session: Session, *, keep_items: bool = True, keep_span: bool = False) -> Measure:
    """Stream the view once; tap the events for the state of a head that would fold them all
    (and, for a segment, the events after the previous compaction)."""
    plan = plan_file(session.log_path)
    head = HeadState()
    last = [-1]
    span: list[Event] = []
    span_from = plan.compaction["through_seq"] + 1 if plan.compaction else 0

    def tap(events: Iterator[Event]) -> Iterator[Event]:
        ranges = plan.excluded
        r_i = 0
        track = head.track
        for ev in events:
            seq = ev["seq"]
            last[0] = seq
            # The same filter the view applies before tracking its own head.
            while r_i < len(ranges) and seq >= ranges[r_i][1]:
                r_i += 1
            if (r_i >= len(ranges) or seq < ranges[r_i][0]) and ev.get("agent") is None:
                track(ev)
                if keep_span and seq >= span_from and ev["kind"] in SPAN_KINDS:
                    span.append(ev)
            yield ev

    # start-up: loaded when a compaction needs it (see the module note)
    from ..integrity import PairingChecker

    stats = ViewStats()
    items: list[dict[str, Any]] = []
    checker = PairingChecker()
    for vi in iter_view(tap(session.events()), plan, stats=stats):
        if keep_items:
            items.append(vi.item)
            checker.feed(vi.item)
    fp = stats.fp
    repaired: list[str] = []
    if keep_items and not checker.finish().ok:
        # A summariser gets what a provider would: the repaired view (dangling calls
        # answered, orphans and duplicates gone). Only a broken view pays this second pass
        # (start-up: and loads the repairs).
        from ..repair import repaired_items

        items, repaired = repaired_items(session)
        fp = prefix_fp(items)
    if keep_items:
        # What the summariser gets must be a request a provider takes; the log's repairs
        # above cover what it records, this covers what the view makes of it (a compaction
        # made while a call ran leaves its result after the head) and empty messages.
        # (start-up: see the module note)
        from ..pairing import repair_items

        items, fixed = repair_items(items)
        if fixed:
            repaired += fixed
            fp = prefix_fp(items)
    ev0 = stats.first
    return Measure(
        session_id=ev0.get("session_id") if ev0 else None,
        window=session_window(session, ev0),
        tokens=stats.tokens,
        fp=fp,
        last_seq=last[0],
        previous=plan.compaction,
        head=head,
        first=ev0,
        items=items,
        span=span,
        repaired=repaired,
    )


@dataclass
class CompactResult:
    """What happened to one session (a row of `compact`'s output)."""

    path: str
    session_id: str | None
    status: str  # compacted | would_compact | prefired | nothing_to_compact | OVER | BELOW
    tokens_before: int
    window: int
    percent: float
    threshold: float
    id: str | None = None
    through_seq: int | None = None
    tokens_after: int | None = None
    summarizer: str | None = None
    summary_chars: int | None = None
    artifact: str | None = None
    head: str | None = None
    segment: str | None = None
    two_pass: dict[str, Any] | None = None
    prefix_len: int | None = None
    summary: str | None = None
    event: Event | None = None

    def row(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("event", "summary")}


def checked_head(comp: Event, head: HeadState) -> str:
    """Validate the new head with the pairing rules: `full`, or `minimal` (grok-build's
    minimal safe history: system items and the summary) when the full one would break them."""
    # start-up: loaded when a compaction needs it (see the module note)
    from ..integrity import PairingChecker

    checker = PairingChecker()
    for it in build_head(comp, head):
        checker.feed(it)
    return "full" if checker.finish().ok else "minimal"


def choose_head(comp: Event, m: Measure) -> str:
    """The post-compaction check: the full head when it pairs and fits the window; else the
    minimal safe history (system items and the summary); and when not even that fits, a
    WindowTooSmall error: nothing is committed."""
    # start-up: loaded when a compaction needs it (see the module note)
    from .ladder import WindowTooSmall

    kind = checked_head(comp, m.head)
    if kind == "full" and m.window > 0 and head_tokens(comp, m) > m.window:
        kind = "minimal"
    if kind == "minimal" and m.window > 0:
        need = head_tokens({**comp, "head": "minimal"}, m)
        if need > m.window:
            raise WindowTooSmall(
                f"the window ({m.window:,} tokens) is too small: even the minimal history after "
                f"compaction (system items and the summary) takes {need:,} tokens; nothing was compacted"
            )
    return kind


def head_tokens(comp: Event, m: Measure) -> int:
    return sum(item_tokens(it) for it in new_head(comp, m))


def new_head(comp: Event, m: Measure) -> list[dict[str, Any]]:
    """The head the view will rebuild for `comp`, exactly (announcer listing included)."""

    window = m.first.get("window") if m.first else None
    return head_items(comp, m.head, Announcer(window if type(window) is int and window > 0 else DEFAULT_WINDOW))


def compact_session(
    session: Session,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    force: bool = False,
    mode: str = COMPACT_MODE,
    detail: str = SEGMENT_DETAIL,
    summarizer: str = SUMMARIZER,
    summarizer_options: dict[str, Any] | None = None,
    dry_run: bool = False,
    check: bool = False,
    two_pass: bool = False,
    prefire: bool = False,
    prefire_from: float | None = None,
    prefire_wait: float | None = None,
    redact: bool = True,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    deadline: float | None = COMPACT_DEADLINE,
) -> CompactResult:
    """Compact one session if it is over `threshold` % of its window (or `force`).

    A summariser still without an answer after `deadline` seconds is cut off: the summary is
    then the offline extractive one, the head the minimal safe history, and the event says so.

    `prefire` runs two-pass's pass 1 now instead (on a ROOT only for sessions at or above
    `prefire_from` %) and appends nothing; `two_pass` uses a matching pass-1 note, waiting up
    to `prefire_wait` seconds for a pass 1 still in flight.
    """
    if mode not in MODES:
        raise UsageError(f"unknown mode '{mode}' (use {', '.join(MODES)})")
    if not (check and session.origin is not None):  # a check of a native session read in memory writes nothing
        require_ours(session)  # before any side file (artifact, prefire note), in every mode
    if session.directory is not None and not dry_run and not check:
        for folder in (REQUESTS_DIR, "segments"):  # what a compaction killed mid-write left
            clear_dead_temps(session.directory / folder)
    # start-up: loaded when a compaction needs it (see the module note)
    from .segments import DETAILS

    if detail not in DETAILS:
        raise UsageError(f"unknown detail '{detail}' (use {', '.join(DETAILS)})")
    m = measure(session, keep_items=not check, keep_span=mode == "segments" and not check)
    base: dict[str, Any] = {
        "path": str(session.directory or session.display),
        "session_id": m.session_id,
        "tokens_before": m.tokens,
        "window": m.window,
        "percent": percent_of(m.tokens, m.window),
        "threshold": threshold,
    }
    over = over_threshold(m.tokens, m.window, threshold)
    if check:
        return CompactResult(status=OVER if over and not m.nothing_new else BELOW, **base)
    if m.nothing_new:
        return CompactResult(status="nothing_to_compact", **base)
    if prefire:
        return _prefire(session, m, base, summarizer, summarizer_options, prefire_from, dry_run, redact, lock_timeout)
    if not over and not force:
        return CompactResult(status=BELOW, **base)
    if not dry_run:
        directory = session.require_directory("compact")

    # start-up: loaded when a compaction needs it (see the module note)
    from .ladder import SummarizerError, SummaryRequest, tool_schema_tokens
    from .summarizers import get_summarizer

    summ = get_summarizer(summarizer, **(summarizer_options or {}))
    state = continuation_state(m.head)
    schema = tool_schema_tokens(m.head.facets.get("prompt_context"))
    request = SummaryRequest(items=m.items, state=state, window=m.window, tool_schema_tokens=schema, deadline=deadline)
    hit = None
    if two_pass and session.directory is not None:
        # start-up: loaded when a compaction needs it (see the module note)
        from .twopass import WAIT_S, Lookup, lookup, pass2_items, wait_for_pass1

        waited, flying, timed_out = (0.0, False, False) if dry_run else wait_for_pass1(session.directory, WAIT_S if prefire_wait is None else prefire_wait)
        # A pass 1 still running after the wait: its note is not there yet, one pass now.
        hit = Lookup(False, False, None, 0, None) if timed_out else lookup(session.directory, m.items, summ.id)
        hit.waited_ms, hit.in_flight, hit.timed_out = waited, flying, timed_out
        if hit.hit:
            pass2 = pass2_items(m.items, hit, m.window, schema)
            if pass2 is None:  # the live tail does not fit beside the note: one pass over the view
                hit.hit, hit.no_room = False, True
            else:
                request = SummaryRequest(items=pass2, state=state, window=m.window, tool_schema_tokens=schema, deadline=deadline)
    result = summ.summarize(request)
    cut_off = None
    if result.error_class == "deadline":
        # The backstop: an offline summary of the whole view now, kept with the late attempts.
        cut_off = {"seconds": deadline, "summarizer": summ.id, "stage": result.stage, "fallback": "extractive"}
        late = result
        result = get_summarizer("extractive").summarize(SummaryRequest(items=m.items, state=state, window=m.window, tool_schema_tokens=schema))
        result.attempts = late.attempts + result.attempts
    cid = str(uuid.uuid4())
    trigger = "threshold" if over else "manual"
    comp: Event = {
        "kind": "compaction",
        "id": cid,
        "mode": mode,
        "through_seq": m.last_seq,
        "summary": result.summary or "",
        "summarizer": summ.id if cut_off is None else result.summarizer,
        "trigger": trigger,
        "tokens_before": m.tokens,
        "tokens_after": 0,
        "prefix_fp": m.fp,
    }
    if mode == "transcript":  # the hint names the events this summary newly folds
        comp["from_seq"] = m.span_from if m.previous is not None else (m.first["seq"] + 1 if m.first else 0)
    if hit is not None:
        comp["two_pass"] = hit.record()
    if cut_off is not None:
        comp["deadline"] = cut_off
    # start-up: loaded when a compaction needs it (see the module note)
    from .artifacts import artifact_doc, artifact_relpath, write_artifact
    head_kind = "full"

    def finish(segment: str | None) -> tuple[dict[str, Any], CompactResult]:
        """The head (as the view will build it), its size, the artifact, the result row."""
        if segment is not None:
            comp["segment"] = segment
        if head_kind != "full":
            comp["head"] = head_kind
        comp["tokens_after"] = sum(item_tokens(it) for it in new_head(comp, m))
        doc = artifact_doc(
            compaction_id=cid, session_id=m.session_id, trigger=trigger, mode=mode, through_seq=m.last_seq,
            prefix_fp=m.fp, request=request, result=result, tokens_before=m.tokens,
            tokens_after=comp["tokens_after"] if result.summary is not None else None, threshold=threshold, head=head_kind,
        )
        row = CompactResult(
            status="would_compact" if dry_run else "compacted", id=cid, through_seq=m.last_seq,
            tokens_after=comp["tokens_after"], summarizer=summ.id, summary_chars=len(result.summary or ""),
            head=head_kind, summary=result.summary, segment=segment, two_pass=comp.get("two_pass"), **base,
        )
        if hit is not None:
            doc["two_pass"] = {**hit.record(), "prefix_len": hit.prefix_len, "why_stale": hit.why}
        doc["input"]["repaired"] = m.repaired
        return doc, row

    # start-up: loaded when a compaction needs it (see the module note)
    from .spend import spend_events

    spend = [] if dry_run else spend_events(summ, result, purpose="compaction")
    if hit is not None and hit.settled and not dry_run:
        spend = hit.spend + spend  # pass 1's calls, recorded by the compaction that read its note
    if result.summary is None:
        doc, _ = finish(None)
        if not dry_run:
            write_artifact(directory, doc, redact=redact)
            if spend:  # the calls were made: their cost is recorded though nothing is committed
                session.append(spend, lock_timeout=lock_timeout, warn=None, allow_duplicate_ids=True)
                _recorded(directory, hit)
        code = ExitCode.DATA if result.error_class in ("deterministic", "too_small") else ExitCode.TEMP_FAIL
        where = "" if dry_run else f" (request saved in {artifact_relpath(cid)})"
        raise SummarizerError(f"{session.display}: {summ.id}: {result.error}{where}", exit_code=code)
    segment = None
    if mode == "segments" and session.directory is not None:
        # start-up: loaded when a compaction needs it (see the module note)
        from .segments import next_number

        segment = f"segment_{next_number(session.directory):03d}.md"  # the number it will most likely get
    # start-up: loaded when a compaction needs it (see the module note)
    from .ladder import WindowTooSmall

    try:
        head_kind = choose_head({**comp, **({"segment": segment} if segment else {})}, m)
        if cut_off is not None:
            head_kind = "minimal"  # the backstop's head: system items and the summary, nothing else to go wrong
    except WindowTooSmall as exc:
        if spend:  # the calls were made: their cost is recorded though nothing is committed
            session.append(spend, lock_timeout=lock_timeout, warn=None, allow_duplicate_ids=True)
            _recorded(directory, hit)
        raise WindowTooSmall(f"{session.display}: {exc}") from None
    if dry_run:
        return finish(segment)[1]
    comp["artifact"] = artifact_relpath(cid)
    # Under one lock: the check that no other compaction landed, the segment number, the side
    # files, then the event (the commit point).
    with session.lock(lock_timeout):
        now = plan_file(session.log_path).compaction
        if (now or {}).get("id") != (m.previous or {}).get("id"):
            raise LockBusy(f"{session.display}: another compaction landed while this one ran; run compact again")
        segment = None
        if mode == "segments":
            # start-up: loaded when a compaction needs it (see the module note)
            from .segments import write_segment

            segment = write_segment(directory, m.span, result.summary, detail=detail, compaction_id=cid).file
        doc, out = finish(segment)
        write_artifact(directory, doc, redact=redact)
        # The spend first, the compaction (the commit point) last, in one append.
        written = session.append_locked([*spend, comp], warn=None)  # the lock is already held
    if hit is not None and hit.settled:
        # start-up: loaded when a compaction needs it (see the module note)
        from .twopass import discard

        discard(directory, hit)  # consumed, or never to match again: its spend is in the log now
    out.artifact = comp["artifact"]
    out.event = written[-1]
    return out


def _recorded(directory: Path | None, hit: Any) -> None:
    """A compaction that commits nothing appended the note's pass-1 events: drop them from the cache."""
    if directory is not None and hit is not None and hit.settled and hit.spend:
        # start-up: loaded when a compaction needs it (see the module note)
        from .twopass import recorded

        recorded(directory, hit.spend)


def _prefire(
    session: Session, m: Measure, base: dict[str, Any], summarizer: str, options: dict[str, Any] | None,
    from_pct: float | None, dry_run: bool, redact: bool, lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> CompactResult:
    # start-up: loaded when a compaction needs it (see the module note)
    from .ladder import SummarizerError
    from .summarizers import get_summarizer
    from .twopass import prefire, split_point

    directory = session.require_directory("compact --prefire")
    if from_pct is not None and base["percent"] < from_pct:
        return CompactResult(status=BELOW, **base)  # below the point where pass 1 starts
    summ = get_summarizer(summarizer, **(options or {}))
    if dry_run:  # pass 1 is the expensive part: say where it would cut, run nothing
        return CompactResult(status="would_prefire", summarizer=summ.id, prefix_len=split_point(m.items), **base)
    # start-up: loaded when a compaction needs it (see the module note)
    from .spend import spend_events

    pre = prefire(directory, m.items, summ, window=m.window, state=continuation_state(m.head), redact=redact,
                  session_id=m.session_id, spend=lambda res: spend_events(summ, res, purpose="prefire"))
    if pre.status == "failed":
        raise SummarizerError(f"{session.display}: {summ.id}: pass 1 failed: {pre.error}")
    return CompactResult(
        status=pre.status, summarizer=summ.id, prefix_len=pre.prefix_len,
        two_pass={"pass1_latency_ms": pre.pass1_latency_ms, "note_chars": pre.note_chars, "fp": pre.fp}, artifact=pre.artifact, **base,
    )


def compact_path(path: Path, **options: Any) -> CompactResult:
    """Compact (or check) the session at PATH: one unit of a ROOT, here or on a cluster worker."""
    with _open(path, options) as s:
        return compact_session(s, **options)


def _open(target: Any, options: dict[str, Any]) -> Session:
    """A check reads a native session as its import; a compaction opens the source itself (and
    refuses another agent's file)."""
    # start-up: a native session's importers load only when one is read
    from ..sources import open_session

    return open_session(target, warn=None) if options.get("check") else Session.open(target)


def compact_target(
    target: str,
    *,
    on_error: Callable[[str, CattyError], None] | None = None,
    sessions: Iterable[Path] | None = None,
    engine: Any = None,
    progress: Callable[[Iterator[Any]], Iterator[Any]] | None = None,
    **options: Any,
) -> Iterator[CompactResult]:
    """Compact SESSION, or each session under ROOT over its threshold, in order, here or on
    ENGINE's cluster (`cluster.Engine`); errors go to on_error. `sessions` may pass ROOT's
    sessions in; PROGRESS wraps the per-session outcomes."""
    if target != "-" and is_root(target):
        if options.get("prefire"):
            # On a ROOT, prefire the sessions that are getting close (the cron use).
            options.setdefault("prefire_from", options.get("threshold", DEFAULT_THRESHOLD) - PREFIRE_LEAD)
        outcomes = each(compact_path, sessions if sessions is not None else find_sessions(target), engine, **options)
        for path, result in progress(outcomes) if progress is not None else outcomes:
            if isinstance(result, CattyError):
                if on_error is None:
                    raise result
                on_error(str(path), result)
                continue
            yield result
        return
    with _open(target, options) as s:
        yield compact_session(s, **options)

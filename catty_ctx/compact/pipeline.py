"""Compaction: the pipeline and its commit protocol (docs/design.md#m6, #m7, #m8; docs/spec.md#commands).

One streaming pass measures the view (tokens, prefix fingerprint, the items to summarise)
and, on the side, the state the new head will carry. If the session is over its threshold
(or forced), the summariser runs outside the lock; then the request artifact is written
(temp + fsync + rename) and the `compaction` event is appended last under the session lock:
the event is the commit point, so a crash at any moment leaves a loadable session, and the
log before is a byte-identical prefix of the log after.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from ..defaults import COMPACT_DEADLINE, COMPACT_MODE, COMPACT_MODES, DEFAULT_LOCK_TIMEOUT, DEFAULT_THRESHOLD, PREFIRE_LEAD, SEGMENT_DETAIL, SUMMARIZER
from ..errors import CattyError, ExitCode, LockBusy, UsageError
from ..fleet.runner import RootRun
from ..formats.ownership import require_ours
from ..session.events import Event
from ..session.files import clear_dead_temps
from ..session.layout import REQUESTS_DIR
from ..session.segments import DETAILS, next_number, write_segment
from ..session.store import Session
from ..sources import open_session, resolve, root_sessions
from ..view.boundary import new_view_repairs
from ..view.fold import plan_file
from ..view.head import continuation_state
from ..view.tokens import BELOW, OVER, item_tokens, over_threshold, percent_of
from .artifacts import artifact_doc, artifact_relpath, write_artifact
from .ladder import FITTED_RESERVE, Summarizer, SummarizerError, SummaryRequest, WindowTooSmall
from .measure import Measure, checked_head, choose_head, head_tokens, measure, new_head  # noqa: F401 - the package's names
from .spend import spend_events
from .summarizers import get_summarizer
from .twopass import WAIT_S, Lookup, cache_path, discard, lookup, pass2_items, prefire, recorded, room_for_pass2, split_point, wait_for_pass1

MODES = COMPACT_MODES
# How a session stands against its threshold, in every mode's rows (compact, --check, --prefire).


@dataclass
class CompactResult:
    """What happened to one session (a row of `compact`'s output)."""

    path: str
    session_id: str | None
    status: str  # compacted | would_compact | prefired | cached | no_room | nothing_to_compact | OVER | BELOW
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


@dataclass(frozen=True)
class CompactOptions:
    """How to compact one session: `compact`'s options as one record (as PruneOptions is prune's)."""

    threshold: float = DEFAULT_THRESHOLD  # compact at this % of the window
    force: bool = False  # compact below the threshold too
    mode: str = COMPACT_MODE  # summary | transcript | segments
    detail: str = SEGMENT_DETAIL  # how much of each item a segment keeps
    summarizer: str | Summarizer = SUMMARIZER
    summarizer_options: dict[str, Any] | None = None
    dry_run: bool = False  # write nothing
    check: bool = False  # only say whether the session is over its threshold
    two_pass: bool = False  # use a matching pass-1 note
    prefire: bool = False  # run pass 1 now instead, append nothing
    prefire_from: float | None = None  # on a ROOT, prefire only sessions at or above this %
    prefire_wait: float | None = None  # wait this long for a pass 1 still in flight
    redact: bool = True  # redact the artifacts
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    deadline: float | None = COMPACT_DEADLINE  # cut a summariser off after this many seconds
    # Called once the summariser answered, before the commit, outside the lock: what an agent
    # writes meanwhile (eval --stress appends there; docs/eval.md#stress).
    during: Callable[[], None] | None = None


@dataclass
class Plan:
    """The `plan` stage's answer for a session that goes on to be summarised."""

    m: Measure
    base: dict[str, Any]  # the fields every result row of this session has
    over: bool  # over its threshold (else forced)


@dataclass
class Input:
    """The `summary_input` stage's answer: what the summariser is asked."""

    request: Any  # ladder.SummaryRequest
    hit: Any  # two-pass's Lookup of a pass-1 note, or None without --two-pass


@dataclass
class Summary:
    """The `summarise` stage's answer: the ladder's result, and the deadline's cut when it came."""

    result: Any  # ladder.SummaryResult
    summarizer: str  # the summariser asked (its id)
    cut_off: dict[str, Any] | None = None


def compact_session(session: Session, opts: CompactOptions | None = None, **options: Any) -> CompactResult:
    """Compact one session if it is over `threshold` % of its window (or `force`): OPTS, or
    the fields of CompactOptions as keywords.

    The stages, each testable alone: `plan` (measure; stop when below, checking or nothing
    new), `summary_input` (the request, two-pass's note), `summarise` (the ladder; a summariser
    still without an answer after `deadline` seconds is cut off: the summary is then the offline
    extractive one, the head the minimal safe history, and the event says so), `choose_final_head`
    and `commit` (the side files, then the event, under the lock). `prefire` runs two-pass's
    pass 1 now instead (on a ROOT only for sessions at or above `prefire_from` %) and appends
    nothing; `two_pass` uses a matching pass-1 note, waiting up to `prefire_wait` seconds for a
    pass 1 still in flight.
    """
    opts = opts if opts is not None else CompactOptions(**options)
    planned = plan(session, opts)
    if isinstance(planned, CompactResult):
        return planned
    if opts.prefire:
        return _prefire(session, planned.m, planned.base, opts)

    summ = get_summarizer(opts.summarizer, **(opts.summarizer_options or {}))
    inp = summary_input(session, planned.m, opts, summ)
    summary = summarise(summ, inp, planned.m, opts)
    if opts.during is not None and not opts.dry_run:
        opts.during()
    comp = draft_event(planned, opts, inp, summary)
    spend = _spend(summ, summary, inp, opts)
    if summary.result.summary is None:
        _fail(session, planned, opts, inp, summary, comp, spend)
    segment = _segment_guess(session, opts)
    try:
        head = choose_final_head(comp, planned.m, summary, segment)
    except WindowTooSmall as exc:
        _record_spend(session, spend, inp, opts)
        raise WindowTooSmall(f"{session.display}: {exc}") from None
    if opts.dry_run:
        return finished(planned, opts, inp, summary, comp, segment, head)[2]
    return commit(session, planned, opts, inp, summary, {**comp, "artifact": artifact_relpath(comp["id"])}, head, spend)


def plan(session: Session, opts: CompactOptions) -> Plan | CompactResult:
    """The first stage: check the options, clear what a killed compaction left, measure the
    view; the result row when there is nothing to summarise (a check, nothing new since the
    last compaction, below the threshold unforced), else the Plan."""
    if opts.mode not in MODES:
        raise UsageError(f"unknown mode '{opts.mode}' (use {', '.join(MODES)})")
    if not (opts.check and session.origin is not None):  # a check of a native session read in memory writes nothing
        require_ours(session)  # before any side file (artifact, prefire note), in every mode
    if session.directory is not None and not opts.dry_run and not opts.check:
        for folder in (REQUESTS_DIR, "segments"):  # what a compaction killed mid-write left
            clear_dead_temps(session.directory / folder)

    if opts.detail not in DETAILS:
        raise UsageError(f"unknown detail '{opts.detail}' (use {', '.join(DETAILS)})")
    m = measure(session, keep_items=not opts.check, keep_span=opts.mode == "segments" and not opts.check)
    base: dict[str, Any] = {
        "path": str(session.directory or session.display),
        "session_id": m.session_id,
        "tokens_before": m.tokens,
        "window": m.window,
        "percent": percent_of(m.tokens, m.window),
        "threshold": opts.threshold,
    }
    over = over_threshold(m.tokens, m.window, opts.threshold)
    if opts.check:
        return CompactResult(status=OVER if over and not m.nothing_new else BELOW, **base)
    if m.nothing_new:
        return CompactResult(status="nothing_to_compact", **base)
    if not opts.prefire and not over and not opts.force:
        return CompactResult(status=BELOW, **base)
    if not opts.dry_run and not opts.prefire:
        session.require_directory("compact")
    return Plan(m, base, over)


def summary_input(session: Session, m: Measure, opts: CompactOptions, summ: Any) -> Input:
    """The second stage: the request the summariser gets (the view and the state to carry);
    with --two-pass, a matching pass-1 note and the live tail after it instead."""
    state = continuation_state(m.head)
    schema = m.schema
    request = SummaryRequest(items=m.items, state=state, window=m.window, tool_schema_tokens=schema, deadline=opts.deadline)
    if session.directory is None:
        return Input(request, None)
    if not opts.two_pass:  # a note left by --prefire is folded unused: its spend is recorded as waste
        found = lookup(session.directory, m.items, summ.id) if cache_path(session.directory).is_file() else None
        if found is not None:
            found.hit, found.stale, found.unused = False, False, True
        return Input(request, found)

    wait = WAIT_S if opts.prefire_wait is None else opts.prefire_wait
    waited, flying, timed_out = (0.0, False, False) if opts.dry_run else wait_for_pass1(session.directory, wait)
    # A pass 1 still running after the wait: its note is not there yet, one pass now.
    hit = Lookup(False, False, None, 0, None) if timed_out else lookup(session.directory, m.items, summ.id)
    hit.waited_ms, hit.in_flight, hit.timed_out = waited, flying, timed_out
    if hit.hit:
        pass2 = pass2_items(m.items, hit, m.window, schema)
        if pass2 is None:  # the live tail does not fit beside the note: one pass over the view
            hit.hit, hit.no_room = False, True
        else:
            request = SummaryRequest(items=pass2, state=state, window=m.window, tool_schema_tokens=schema, deadline=opts.deadline)
    return Input(request, hit)


def summarise(summ: Any, inp: Input, m: Measure, opts: CompactOptions) -> Summary:
    """The third stage: the summariser's ladder; past the deadline, the offline extractive
    summary of the whole view, kept with the late attempts."""
    result = summ.summarize(inp.request)
    if result.error_class != "deadline":
        return Summary(result, summ.id)

    cut_off = {"seconds": opts.deadline, "summarizer": summ.id, "stage": result.stage, "fallback": "extractive"}
    late = result
    request = inp.request
    result = get_summarizer("extractive").summarize(SummaryRequest(items=m.items, state=request.state, window=m.window,
                                                                   tool_schema_tokens=request.tool_schema_tokens))
    result.attempts = late.attempts + result.attempts
    return Summary(result, summ.id, cut_off)


def draft_event(planned: Plan, opts: CompactOptions, inp: Input, summary: Summary) -> Event:
    """The compaction event as far as the summary makes it: without its head, segment, artifact
    and tokens after (`finished` adds them)."""
    m = planned.m
    comp: Event = {
        "kind": "compaction",
        "id": str(uuid.uuid4()),
        "mode": opts.mode,
        "through_seq": m.last_seq,
        "summary": summary.result.summary or "",
        "summarizer": summary.summarizer if summary.cut_off is None else summary.result.summarizer,
        "trigger": "threshold" if planned.over else "manual",
        "tokens_before": m.tokens,
        "tokens_after": 0,
        "prefix_fp": m.fp,
    }
    if opts.mode == "transcript":  # the hint names the events this summary newly folds
        comp["from_seq"] = m.span_from if m.previous is not None else (m.first["seq"] + 1 if m.first else 0)
    if inp.hit is not None:
        comp["two_pass"] = inp.hit.record()
    if summary.cut_off is not None:
        comp["deadline"] = summary.cut_off
    return comp


def choose_final_head(comp: Event, m: Measure, summary: Summary, segment: str | None) -> str:
    """The fourth stage: `full` or `minimal` (`choose_head`). The backstop's head too: a hung
    summariser is exactly when the running state (jobs, subagents, instruction files, memory,
    plan) must not vanish, and the full head is checked like any other (pairing, the window);
    only a head that fails the check falls back to the minimal safe history."""
    return choose_head({**comp, **({"segment": segment} if segment else {})}, m)


def finished(planned: Plan, opts: CompactOptions, inp: Input, summary: Summary, comp: Event, segment: str | None,
             head: str) -> tuple[Event, dict[str, Any], CompactResult]:
    """The event complete (its segment, head and tokens after), its artifact and the result row."""
    m, result = planned.m, summary.result
    done: Event = {**comp, **({"segment": segment} if segment is not None else {}), **({"head": head} if head != "full" else {})}
    done["tokens_after"] = sum(item_tokens(it) for it in new_head(done, m))

    doc = artifact_doc(
        compaction_id=comp["id"], session_id=m.session_id, trigger=comp["trigger"], mode=opts.mode, through_seq=m.last_seq,
        prefix_fp=m.fp, request=inp.request, result=result, tokens_before=m.tokens,
        tokens_after=done["tokens_after"] if result.summary is not None else None, threshold=opts.threshold, head=head,
    )
    if inp.hit is not None:
        doc["two_pass"] = {**inp.hit.record(), "prefix_len": inp.hit.prefix_len, "why_stale": inp.hit.why}
    doc["input"]["repaired"] = m.repaired
    row = CompactResult(
        status="would_compact" if opts.dry_run else "compacted", id=comp["id"], through_seq=m.last_seq,
        tokens_after=done["tokens_after"], summarizer=summary.summarizer, summary_chars=len(result.summary or ""),
        head=head, summary=result.summary, segment=segment, two_pass=comp.get("two_pass"), **planned.base,
    )
    return done, doc, row


def commit(session: Session, planned: Plan, opts: CompactOptions, inp: Input, summary: Summary, comp: Event, head: str,
           spend: list[Event]) -> CompactResult:
    """The last stage, under one lock: the check that no other compaction landed, the segment,
    the artifact, then the spend and the event (the commit point) in one append."""
    m = planned.m
    directory = session.require_directory("compact")
    with session.lock(opts.lock_timeout):
        now = plan_file(session.log_path).compaction
        if (now or {}).get("id") != (m.previous or {}).get("id"):
            raise LockBusy(f"{session.display}: another compaction landed while this one ran; run compact again")
        segment = None
        if opts.mode == "segments":
            segment = write_segment(directory, m.span, summary.result.summary, detail=opts.detail, compaction_id=comp["id"]).file
        done, doc, out = finished(planned, opts, inp, summary, comp, segment, head)
        write_artifact(directory, doc, redact=opts.redact)
        # The replacement is a boundary: a result that came in for a call the summary folded
        # (while the summariser ran) is an orphan now, written as such in the same append
        # (docs/design.md#m5b); calls still running are left alone.
        repairs = new_view_repairs(session, [*spend, done], "compaction", closed_only=True)
        written = session.append_locked([*spend, done, *repairs], warn=None)  # the lock is already held
        written = written[: len(written) - len(repairs)]
    hit = inp.hit
    if hit is not None and hit.settled:
        discard(directory, hit)  # consumed, or never to match again: its spend is in the log now
    out.artifact = done["artifact"]
    out.event = written[-1]
    return out


def _spend(summ: Any, summary: Summary, inp: Input, opts: CompactOptions) -> list[Event]:
    """The summariser's calls as spend events (pass 1's first, recorded by the compaction that read its note)."""
    if opts.dry_run:
        return []

    spend = spend_events(summ, summary.result, purpose="compaction")
    hit = inp.hit
    return hit.spend_events() + spend if hit is not None and hit.settled else spend


def _record_spend(session: Session, spend: list[Event], inp: Input, opts: CompactOptions) -> None:
    """A compaction that commits nothing still records the calls it made (their cost)."""
    if spend:
        session.append(spend, lock_timeout=opts.lock_timeout, warn=None, allow_duplicate_ids=True)
        _recorded(session.directory, inp.hit)


def _fail(session: Session, planned: Plan, opts: CompactOptions, inp: Input, summary: Summary, comp: Event,
          spend: list[Event]) -> NoReturn:
    """No summary: the artifact (the exact request) and the spend are kept, nothing is committed."""
    result = summary.result
    if not opts.dry_run:
        _done, doc, _row = finished(planned, opts, inp, summary, comp, None, "full")
        write_artifact(session.require_directory("compact"), doc, redact=opts.redact)
        _record_spend(session, spend, inp, opts)
    code = ExitCode.DATA if result.error_class in ("deterministic", "too_small") else ExitCode.TEMP_FAIL
    where = "" if opts.dry_run else f" (request saved in {artifact_relpath(comp['id'])})"
    raise SummarizerError(f"{session.display}: {summary.summarizer}: {result.error}{where}", exit_code=code)


def _segment_guess(session: Session, opts: CompactOptions) -> str | None:
    """The segment a compaction in segments mode will most likely write (the head's listing names it)."""
    if opts.mode != "segments" or session.directory is None:
        return None

    return f"segment_{next_number(session.directory):03d}.md"


def _recorded(directory: Path | None, hit: Any) -> None:
    """A compaction that commits nothing appended the note's pass-1 events: drop them from the cache."""
    if directory is not None and hit is not None and hit.settled and hit.spend:
        recorded(directory, hit.spend)


def _prefire(session: Session, m: Measure, base: dict[str, Any], opts: CompactOptions) -> CompactResult:
    """Two-pass's pass 1 now (its note for a later compaction); nothing is appended."""
    directory = session.require_directory("compact --prefire")
    if opts.prefire_from is not None and not over_threshold(m.tokens, m.window, opts.prefire_from):
        return CompactResult(status=BELOW, **base)  # below the point where pass 1 starts
    summ = get_summarizer(opts.summarizer, **(opts.summarizer_options or {}))
    k = split_point(m.items)
    need, budget = room_for_pass2(m.items, k, m.window, m.schema)
    if k and need > budget:  # pass 2 could never use the note: pass 1 would be spent for nothing
        if opts.prefire_from is not None:  # a ROOT's sweep (cron): a row saying so, not a failure each time
            return CompactResult(status="no_room", summarizer=summ.id, prefix_len=k, **base)
        raise WindowTooSmall(f"{session.display}: --prefire refused: pass 2 needs up to {need:,} tokens (the note and the live tail) "
                             f"and the window ({m.window:,}) less the {FITTED_RESERVE:,}-token reserve leaves {max(budget, 0):,}")
    if opts.dry_run:  # pass 1 is the expensive part: say where it would cut, run nothing
        return CompactResult(status="would_prefire", summarizer=summ.id, prefix_len=k, **base)

    pre = prefire(directory, m.items, summ, window=m.window, state=continuation_state(m.head), redact=opts.redact,
                  session_id=m.session_id, spend=lambda res: spend_events(summ, res, purpose="prefire"))
    if pre.status == "failed":
        raise SummarizerError(f"{session.display}: {summ.id}: pass 1 failed: {pre.error}")
    return CompactResult(
        status=pre.status, summarizer=summ.id, prefix_len=pre.prefix_len,
        two_pass={"pass1_latency_ms": pre.pass1_latency_ms, "note_chars": pre.note_chars, "fp": pre.fp, "spent_tokens": pre.spent_tokens},
        artifact=pre.artifact, **base,
    )


def compact_path(path: Path, **options: Any) -> CompactResult:
    """Compact (or check) the session at PATH: one unit of a ROOT, here or on a cluster worker."""
    with _open(path, options) as s:
        return compact_session(s, **options)


def _open(target: Any, options: dict[str, Any]) -> Session:
    """A check reads a native session as its import; a compaction opens the source itself (and
    refuses another agent's file)."""
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
    if resolve(target).is_root:
        if options.get("prefire"):
            # On a ROOT, prefire the sessions that are getting close (the cron use).
            options.setdefault("prefire_from", options.get("threshold", DEFAULT_THRESHOLD) - PREFIRE_LEAD)
        found = sessions if sessions is not None else root_sessions(target, allow_empty=True)
        report = (lambda path, exc: on_error(str(path), exc)) if on_error is not None else None
        yield from RootRun(compact_path, found, engine, on_error=report, progress=progress, **options)
        return
    with _open(target, options) as s:
        yield compact_session(s, **options)

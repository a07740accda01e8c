"""`catty-ctx compact`: summarise what a session's view holds, commit it as a compaction event.

This command starts without the CLI framework (see `fastpath`): an agent or a hook runs
`compact S --check` (or an extractive compaction) after a turn, and typer's import would be
much of such a run.
"""
from __future__ import annotations

from ..agent_compact import compact_agent
from ..compact.artifacts import replay as run_replay
from ..compact.pipeline import compact_session, compact_target
from ..defaults import (
    COMPACT_DEADLINE,
    COMPACT_MODE,
    COMPACT_MODES,
    CONNECT_TIMEOUT,
    DEFAULT_LOCK_TIMEOUT,
    DEFAULT_THRESHOLD,
    MAX_RESPONSE_BYTES,
    MIN_SUMMARY_CHARS,
    SEGMENT_DETAIL,
    SEGMENT_DETAILS,
    SUMMARIZER,
)
from ..errors import CattyError, ExitCode, UsageError
from ..fleet.cluster import Engine, engine_for, refuse_writes
from ..fleet.runner import most_severe
from ..fleet.urls import refuse_writes as refuse_url_writes
from ..sources import resolve, root_sessions
from ..subagents import open_agent
from ..view.tokens import OVER
from .errors import warn
from .fastpath import CLUSTER, flag, parse_one, shared, value
from .fastpath import declare as declare_command
from .output import Column, emit, progress_iter, record, rows_out, show, write_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_COLUMNS = [Column("path", "path"), Column("status"), Column("tokens_before", "num"), Column("percent", "num", "%"), Column("tokens_after", "num"),
            Column("through_seq", "num"), Column("summarizer", "id"), Column("artifact", "path"), Column("segment", "path"), Column("two_pass", "text")]

# The options of `compact`, declared once (see `fastpath`); the shared ones bring their own help (None here).
PARAMS = (
    value("threshold", "--threshold", kind=float, metavar="PCT", help="Compact when the view's estimated tokens are >= PCT % of the window.", min=0, max=100),
    flag("force", "--force", help="Compact even below the threshold (not when nothing happened since the last compaction)."),
    flag("check", "--check", help="Only report: exit 1 when a session is over its threshold, 0 otherwise."),
    value("mode", "--mode", metavar="MODE", help="What the summary carrier points at: nothing (summary), the seq range of updates.jsonl (transcript), or a new "
            "segments/segment_NNN.md archive of the span (segments).", choices=COMPACT_MODES),
    value("detail", "--detail", metavar="LEVEL", help="How much of each item a segment keeps (segments mode): none, minimal, balanced or verbose.", choices=SEGMENT_DETAILS),
    value("summarizer", "--summarizer", metavar="WHO", help="Who writes the summary: extractive (offline extraction), cmd:CMD (a command: prompt on stdin, summary on stdout; no shell) "
      "or openai:MODEL (an OpenAI-compatible endpoint: OPENAI_BASE_URL, OPENAI_API_KEY)."),
    value("min_summary_chars", "--min-summary-chars", kind=int, metavar="N", help="A model summary shorter than this is degenerate and retried.", min=0),
    value("timeout", "--timeout", kind=float, metavar="SECONDS", help="The whole time one call of a cmd: or openai: summariser may take, connection, answer and body included "
      "(default 600 for cmd:, 300 for openai:); a call past it is cut and retried.", min=0.1),
    value("max_response_bytes", "--max-response-bytes", kind=int, metavar="BYTES", help="Cut an openai: summariser's answer longer than this (a stream's bytes in all); the attempt fails.", min=1),
    value("deadline", "--deadline", kind=float, metavar="SECONDS", help="The whole summariser ladder may take this long (default 300); then the compaction goes on with the offline extractive "
            "summary and the minimal head (system items and the summary), and the event records it as `deadline`.", min=0.1),
    flag("two_pass", "--two-pass", help="Use the note of an earlier --prefire when its prefix length, summariser and prefix fingerprint all match the live view; else one pass."),
    flag("prefire", "--prefire", help="Run pass 1 of two-pass now on ~95% of the view and cache its note; append no event. A ROOT prefires sessions within 10 points "
      "of their threshold."),
    value("prefire_wait", "--prefire-wait", kind=float, metavar="SECONDS", help="With --two-pass: wait up to this long for a --prefire still running on the session (default 60), then compact in one pass.", min=0),
    value("replay", "--replay", metavar="ARTIFACT", help="Run the input saved in a request artifact (a file of a session's compaction_requests/ folder) through --summarizer and print "
      "the summary and timings; no session is touched."),
    flag("no_redact", "--no-redact", help="Keep credentials in the request artifact (by default keys, tokens and passwords become [REDACTED:kind])."),
    shared("dry_run"),
    shared("lock_timeout"),
    shared("allow_empty"),
    shared("as_json"),
    *CLUSTER,
    shared("allow_remote_writes"),
    shared("agent"),
)
EPILOG = ("Examples: catty-ctx compact S --force; catty-ctx compact ROOT --check (exit 1 when one is over); "
          "catty-ctx compact S --summarizer openai:gpt-4.1-mini; "
          "catty-ctx compact --replay S/compaction_requests/ID.json --summarizer cmd:./my-model.sh")
COMPACT_DOC = """Compact a session: summarise its view and append a `compaction` event.

    The request artifact (compaction_requests/<id>.json: the exact summariser input, output,
    attempts and timings) is written first and the event last, under the session lock. A ROOT
    compacts every session over its threshold; with --scheduler, on a Dask cluster (--check,
    or with --allow-remote-writes).
    """


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`).
    SESSION|ROOT may be left out (with --replay)."""
    return parse_one(args, PARAMS, "target", required=0)


def declare() -> None:
    """Register `compact` on the typer application (help, completion, docs, unusual spellings), from PARAMS."""
    target = ("SESSION|ROOT", "A session directory, or a ROOT folder holding sessions at any depth (--check also takes a file or -).")
    declare_command("compact", run, PARAMS, COMPACT_DOC, EPILOG, {"target": target})


def run(target: str | None = None, threshold: float = DEFAULT_THRESHOLD, force: bool = False, check: bool = False, mode: str = COMPACT_MODE,
        detail: str = SEGMENT_DETAIL, summarizer: str = SUMMARIZER, min_summary_chars: int = MIN_SUMMARY_CHARS, timeout: float | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        two_pass: bool = False, prefire: bool = False, prefire_wait: float | None = None, replay: str | None = None, no_redact: bool = False,
        dry_run: bool = False, lock_timeout: float = DEFAULT_LOCK_TIMEOUT, allow_empty: bool = False, as_json: bool = False,
        scheduler: str | None = None, connect_timeout: float = CONNECT_TIMEOUT, allow_remote_writes: bool = False,
        deadline: float = COMPACT_DEADLINE, agent: str | None = None) -> None:
    """Compact TARGET (or, with --replay, rerun an artifact); the rows go to stdout, warnings and errors to stderr."""

    options: dict[str, Any] = {"min_chars": min_summary_chars}
    if timeout is not None:
        options["timeout"] = timeout
    if summarizer.startswith("openai:"):
        options["max_response_bytes"] = max_response_bytes
    if summarizer == "extractive":
        options = {}
    if replay is not None:
        if target is not None:
            raise UsageError("--replay takes an artifact, not a SESSION")

        out = run_replay(replay, summarizer, **options)
        emit(out, as_json=as_json, show=_show_replay)
        if out["summary"] is None:
            raise CattyError(f"{replay}: {out['summarizer']}: {out['error']}", exit_code=ExitCode.TEMP_FAIL if out["error_class"] != "deterministic" else ExitCode.DATA)
        return
    if target is None:
        raise UsageError("compact needs a SESSION or ROOT (or --replay ARTIFACT)")
    if agent is not None and (prefire or two_pass or target == "-" or resolve(target).is_root):
        raise UsageError(f"compact --agent {agent} compacts one subagent of one session (not a ROOT nor a stream), in one pass")

    errors: list[CattyError] = []

    def on_error(path: str, exc: CattyError) -> None:
        errors.append(exc)
        warn(str(exc))

    sessions = None
    progress = None
    context: Any = engine_for(None if target == "-" else scheduler, connect_timeout)
    if resolve(target).is_root:
        if not (check or dry_run):
            refuse_url_writes(target, "compact")
            if isinstance(context, Engine):
                refuse_writes("compact ROOT", allow_remote_writes)
        sessions = root_sessions(target, allow_empty=allow_empty)
        total = len(sessions)

        def progress(outcomes: Any) -> Any:
            return progress_iter(outcomes, label="sessions", total=total)
    if agent is not None:
        if check:  # a measure of its view, which any session (a native one too) can give
            with open_agent(target, agent, warn=warn) as sub:
                results = [compact_session(sub, threshold=threshold, force=force, mode=mode, summarizer=summarizer, detail=detail,
                                           summarizer_options=options, redact=not no_redact, check=True, deadline=deadline)]
        else:
            results = [compact_agent(target, agent, threshold=threshold, force=force, mode=mode, summarizer=summarizer, detail=detail,
                                     summarizer_options=options, redact=not no_redact, dry_run=dry_run, deadline=deadline,
                                     lock_timeout=lock_timeout)]
    else:
        with context as engine:
            results = list(
                compact_target(
                    target, on_error=on_error, sessions=sessions, engine=engine, progress=progress, threshold=threshold, force=force,
                    mode=mode, summarizer=summarizer, detail=detail, summarizer_options=options, two_pass=two_pass, prefire=prefire,
                    prefire_wait=prefire_wait, redact=not no_redact, dry_run=dry_run, check=check, lock_timeout=lock_timeout, deadline=deadline,
                )
            )
    for r in results:
        if r.status in ("compacted", "would_compact") and (r.tokens_after or 0) > (r.tokens_before or 0):
            warn(f"{r.path}: the view grew ({r.tokens_before:,} → {r.tokens_after:,} tokens): the rebuilt head is larger than "
                 "what it replaced (a session this small gains nothing from compaction)")
    rows = [r.row() for r in results]
    if as_json and len(rows) == 1 and not errors:
        write_json(rows[0] if not resolve(target).is_root else {"sessions": rows})
    else:
        rows_out(iter(rows), _COLUMNS, as_json=as_json, key="sessions")
    # The most severe of the sessions' codes (docs/spec.md#a-root-of-sessions).
    # A check never says "fine" over a ROOT it could not read whole (each folder or file named as the walk met it).
    unread = bool(getattr(sessions, "unreadable", None))
    code = most_severe([*(e.exit_code for e in errors),
                        *([ExitCode.CHECK_FAILED] if check and (unread or any(r.status == OVER for r in results)) else [])])
    if code:
        raise SystemExit(code)



def _show_replay(out: dict[str, Any]) -> None:
    timings = out.get("timings") or {}
    show(record(None, [("summarizer", out["summarizer"]), ("stage", out["stage"]), ("attempts", len(out["attempts"])), *sorted(timings.items())]))
    if out.get("summary"):
        show(out["summary"])

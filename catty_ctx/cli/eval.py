"""`catty-ctx eval`: measure what a compaction strategy keeps, on copies of a corpus."""
from __future__ import annotations

from typing import Annotated, Any

import typer

from ..defaults import CONNECT_TIMEOUT, EVAL_COMPACTIONS, EVAL_JOBS, EVAL_MODE, MAX_RESPONSE_BYTES, MIN_SUMMARY_CHARS, SUMMARIZER
from ..errors import UsageError
from ..eval.facts import facts_doc
from ..eval.metrics import lowest_recall
from ..eval.native import evaluate_native
from ..eval.pipeline import WORST_SHOWN, EvalOptions, corpus_facts, evaluate, open_corpus
from ..eval.replay import replay as replay_requests
from ..fleet.cluster import engine_for
from .app import app
from .errors import handle_errors, warn
from .options import ConnectTimeoutOpt, JsonOpt, SchedulerOpt
from .output import Column, emit, progress_iter, show, table, text, write_json

# Table columns: (heading, metric). The JSON carries the metrics under their own names.
_COLUMNS = [
    ("state", "state_recall"),
    ("instr", "instruction_retention"),
    ("detail", "detail_recovery"),
    ("violations", "integrity_violations"),
    ("wait s", "user_wait_seconds"),
    ("bg s", "background_seconds"),
    ("summ in", "summarizer_input_tokens"),
    ("summ out", "summarizer_output_tokens"),
    ("summary", "summary_tokens"),
    ("saved", "tokens_saved"),
    ("cached", "cached_input_ratio"),
    ("prefire hit", "prefire_hit_rate"),
    ("pass1", "pass1_tokens"),
    ("wasted", "wasted_tokens"),
    ("successor", "successor_recall"),
]


@app.command(
    "eval",
    epilog=(
        "Examples: catty-ctx eval ~/sessions; "
        "catty-ctx eval ~/sessions --summarizer extractive --summarizer cmd:./my-model.sh --mode summary --mode segments --json; "
        "catty-ctx eval S --facts-only > S/eval.json; "
        "catty-ctx eval ~/sessions --summarizer cmd:./my-model.sh --min-recall 0.9 (exit 1 below it); "
        "catty-ctx eval --native ~/.claude/projects (each compaction Claude Code made: its summary alone, and with our reminder)"
    ),
)
@handle_errors
def eval_cmd(
    corpus: Annotated[str, typer.Argument(metavar="CORPUS", help="A session, a folder of sessions at any depth, or - for an event stream on stdin. Only read: eval works on copies.")],
    summarizer: Annotated[list[str] | None, typer.Option("--summarizer", metavar="SPEC", help="A summariser to evaluate: extractive, cmd:CMD or openai:MODEL (repeat for several; default extractive).")] = None,
    mode: Annotated[list[str] | None, typer.Option("--mode", metavar="summary|segments", help="A compaction mode to evaluate (repeat for several; default segments). Every summariser runs in every mode.")] = None,
    compactions: Annotated[int, typer.Option("--compactions", min=1, metavar="N", help="Compactions per session: its turns are split into N parts, each appended then compacted.")] = EVAL_COMPACTIONS,
    facts: Annotated[str | None, typer.Option("--facts", metavar="auto|file", help="Where the facts come from: the session's eval.json (file), or derived from the log (auto). Default: eval.json where a session has one.")] = None,
    facts_only: Annotated[bool, typer.Option("--facts-only", help="Print the facts (as an eval.json document) and run nothing.")] = False,
    two_pass: Annotated[bool, typer.Option("--two-pass", help="Prefire pass 1 before each part's last turn and compact with --two-pass; adds prefire_hit_rate and wasted_tokens.")] = False,
    stress: Annotated[bool, typer.Option("--stress", help="While each compaction runs, a late tool result, a cancelled turn and a new turn land; the view is checked after each (integrity_violations; adds stress_checks).")] = False,
    judge: Annotated[str | None, typer.Option("--judge", metavar="cmd:CMD|openai:MODEL", help="Successor check: ask this model each fact from the resumed request alone; adds successor_recall.")] = None,
    min_recall: Annotated[float | None, typer.Option("--min-recall", min=0, max=1, metavar="X", help="Exit 1 when a run fails or any recall figure of a run is below X.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, metavar="J", help="Sessions evaluated in J parallel processes.")] = EVAL_JOBS,
    out: Annotated[str | None, typer.Option("--out", metavar="DIR", help="Keep the driven copies in DIR (new or empty) for inspection; default a temporary folder, removed.")] = None,
    min_summary_chars: Annotated[int, typer.Option("--min-summary-chars", min=0, metavar="N", help="A model summary shorter than this is degenerate and retried (as compact).")] = MIN_SUMMARY_CHARS,
    retries: Annotated[int | None, typer.Option("--retries", min=0, metavar="N", help="Ask a cmd: or openai: summariser again up to N times per stage after a temporary failure (exit 75, HTTP 5xx or 429, a timeout) or a degenerate summary (default 2). A deterministic failure (any other exit status, an HTTP 4xx) is never asked again.")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.1, metavar="SECONDS", help="The whole time one call of a cmd: or openai: summariser or judge may take, connection, answer and body included (default 600 for cmd:, 300 for openai:).")] = None,
    max_response_bytes: Annotated[int, typer.Option("--max-response-bytes", min=1, metavar="BYTES", help="Cut an openai: summariser's or judge's answer longer than this (a stream's bytes in all).")] = MAX_RESPONSE_BYTES,
    native: Annotated[bool, typer.Option("--native", help="CORPUS is a ROOT of agents' own sessions (Claude Code, Codex, Grok Build): score each compaction the agent recorded, its summary alone and with our reminder.")] = False,
    replay: Annotated[bool, typer.Option("--replay", help="CORPUS is a ROOT of Grok Build sessions: summarise each compaction request grok kept again with each --summarizer, and score both summaries on the span's facts.")] = False,
    as_json: JsonOpt = False,
    scheduler: SchedulerOpt = None,
    connect_timeout: ConnectTimeoutOpt = CONNECT_TIMEOUT,
) -> None:
    """Score compaction strategies: does the successor keep the state, the instructions, the details?

    Each session is copied and driven through N compactions per summariser x mode (its own
    turns appended between them, as a live agent would), then resumed. The facts it must keep
    (eval.json, or derived: active todos and plan, edited files, running jobs and subagents,
    the user's always/never/must constraints, failed tools' error lines) are looked for in the
    resumed request, the segments archive and the blobs it names. Also measured: pairings a
    provider would refuse, summariser time and tokens, tokens saved, prompt-cache prefix reuse.
    Exit 0 when every run completed, whatever the scores; a session that cannot be read is
    reported and left out, and the exit is the most severe code the sessions met. With --scheduler the sessions run on a
    Dask cluster whose workers see the corpus (and --out) by the same paths.
    """
    if replay:
        given = [name for name, value in (("--native", native), ("--mode", mode), ("--two-pass", two_pass), ("--judge", judge),
                                          ("--facts", facts), ("--facts-only", facts_only), ("--scheduler", scheduler), ("--out", out))
                 if value]
        if given:
            raise UsageError(f"--replay re-summarises grok's own compaction requests: {', '.join(given)} does not apply")
        options: dict[str, Any] = {"min_chars": min_summary_chars, "max_response_bytes": max_response_bytes}
        if timeout is not None:
            options["timeout"] = timeout
        doc = replay_requests(corpus, summarizer or [], **options)
        emit(doc, as_json=as_json, show=_show_replay, lines=[*doc["replay"]["requests"], {"total": doc["replay"]["total"]}])
        return
    if native:
        given = [name for name, value in (("--summarizer", summarizer), ("--mode", mode), ("--two-pass", two_pass), ("--stress", stress), ("--judge", judge),
                                          ("--facts", facts), ("--facts-only", facts_only), ("--scheduler", scheduler),
                                          ("--jobs", jobs != EVAL_JOBS), ("--compactions", compactions != EVAL_COMPACTIONS),
                                          ("--retries", retries is not None)) if value]
        if given:
            raise UsageError(f"--native scores the agents' own compactions: {', '.join(given)} does not apply")
        _native(corpus, out, as_json, min_recall)
        return

    opts = EvalOptions(
        summarizers=summarizer or [SUMMARIZER], modes=mode or [EVAL_MODE], compactions=compactions, facts=facts,
        two_pass=two_pass, stress=stress, judge=judge, jobs=jobs, out=out, summarizer_options={"min_chars": min_summary_chars}, timeout=timeout,
        max_response_bytes=max_response_bytes, retries=retries,
    )
    c = open_corpus(corpus)
    try:
        if facts_only:
            _print_facts(c, opts, as_json)
            return

        with engine_for(scheduler, connect_timeout) as engine:
            done = evaluate(c, opts, progress=lambda it, n: progress_iter(it, label="eval", total=n), engine=engine,
                            on_error=lambda _session, exc: warn(str(exc)))
    finally:
        c.close()
    if done.report is not None:  # (no session could be read: nothing was evaluated)
        emit(done.report, as_json=as_json, show=_show, lines=done.report["runs"])
        for row in done.report["runs"]:
            if row.get("error"):
                warn(f"{row['summarizer']} x {row['mode']}: {row['error']}")
        for line in done.below(min_recall):
            warn(f"below --min-recall: {line}")
    code = done.exit_code(min_recall)  # the most severe (docs/spec.md#a-root-of-sessions)
    if code:
        raise SystemExit(code)


def _print_facts(c: Any, opts: Any, as_json: bool) -> None:
    opts.check()
    found, run = corpus_facts(c, opts.facts or "auto", on_error=lambda _session, exc: warn(str(exc)))
    if len(c.paths) == 1:
        for facts in found.values():
            write_json(facts_doc(facts), pretty=True)
    elif found:
        write_json({"sessions": [{"path": c.labels[i], **facts_doc(f)} for i, f in found.items()]}, pretty=not as_json)
    code = run.exit_code()  # the most severe (docs/spec.md#a-root-of-sessions)
    if code:
        raise SystemExit(code)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}" if value < 10 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _show(report: dict[str, Any]) -> None:
    runs = report["runs"]
    present = [(h, m) for h, m in _COLUMNS if any(m in (r["metrics"] or {}) for r in runs)]
    headings = ["summarizer", "mode", "sessions", "facts"] + [h for h, _ in present]
    rows = []
    for r in runs:
        metrics = r["metrics"] or {}
        cells = [r["summarizer"], r["mode"], r["sessions"], r["facts"]]
        if r.get("error"):
            cells += ["failed"] + [""] * (len(present) - 1)
        else:
            cells += [_cell(metrics.get(m)) for _, m in present]
        rows.append(cells)
    columns = [Column("summarizer", "id"), Column("mode"), *(Column(h, "num") for h in headings[2:])]
    parts = [table(None, columns, rows)]
    for r in runs:
        worst = sorted((e for e in r["per_session"]), key=lambda e: (e["metrics"] is not None, lowest_recall(e["metrics"] or {})))
        worst = [e for e in worst if e["metrics"] is None or lowest_recall(e["metrics"]) < 1.0][:WORST_SHOWN]
        if not worst and not r.get("error"):
            continue
        parts.append(text(f"{r['summarizer']} x {r['mode']}: worst sessions"))
        for e in worst:
            if e["metrics"] is None:
                line = f"  failed: {e.get('error')}"
            else:
                missed = "; ".join(f"{f['kind']}: {f['text'][:60]}" for f in e["missed"][:3])
                line = f"  {e['path']}: lowest recall {lowest_recall(e['metrics']):.2f}, missed {len(e['missed'])} ({missed})"
            parts.append(text(line))  # session text is data: never read as markup
    show(*parts)


def _native(root: str, out: str | None, as_json: bool, min_recall: float | None) -> None:
    done = evaluate_native(root, out=out, progress=lambda it, n: progress_iter(it, label="eval --native", total=n),
                           on_error=lambda _session, exc: warn(str(exc)))
    if done.report is not None:  # (no session could be read: nothing was scored)
        doc = done.report["native"]
        emit(done.report, as_json=as_json, show=_show_native, lines=[*doc["compactions"], {"total": doc["total"]}])
        for entry in doc["compactions"]:
            if entry.get("error"):
                warn(entry["error"] + (f" (kept in {entry['folder']})" if entry.get("folder") else ""))
        for line in done.below(min_recall):
            if "compaction" not in line or not any(line == e.get("error") for e in doc["compactions"]):
                warn(f"below --min-recall: {line}")
    code = done.exit_code(min_recall)  # the most severe (docs/spec.md#a-root-of-sessions)
    if code:
        raise SystemExit(code)


def _show_replay(report: dict[str, Any]) -> None:
    doc = report["replay"]
    specs = list(doc["total"]["replay_recall"])
    columns = [Column("session", "path"), Column("request", "path"), Column("facts", "num"), Column("grok", "num"),
               *(Column(spec, "num") for spec in specs)]
    rows = []
    for r in doc["requests"]:
        found = {p["summarizer"]: (_cell(p["recall"]) if not p["error"] else "failed") for p in r["replays"]}
        rows.append([r["session"], r["request"], r["facts"], _cell(r["grok"]["recall"]), *(found.get(spec, "") for spec in specs)])
    t = doc["total"]
    rows.append([f"total ({t['requests']} requests)", "", t["facts"], _cell(t["grok_recall"]), *(_cell(t["replay_recall"][s]) for s in specs)])
    show(table(None, columns, rows))


def _show_native(report: dict[str, Any]) -> None:
    doc = report["native"]
    columns = [Column("session", "path"), Column("agent"), Column("#", "num"), Column("facts", "num"),
               Column("summary", "num"), Column("+reminder", "num")]
    rows = []
    for e in doc["compactions"]:
        if e.get("error"):
            rows.append([e["session"], e["agent"], e["compaction"], e["facts"], "failed", ""])
        else:
            rows.append([e["session"], e["agent"], e["compaction"], e["facts"], _cell(e["summary_recall"]), _cell(e["reminder_recall"])])
    t = doc["total"]
    rows.append([f"total ({t['sessions']} sessions)", "", t["compactions"], t["facts"], _cell(t["summary_recall"]), _cell(t["reminder_recall"])])
    parts = [table(None, columns, rows)]
    kinds = "; ".join(f"{k} {v['summary']}/{v['facts']} -> {v['reminder']}/{v['facts']}" for k, v in t["by_kind"].items() if v["facts"])
    parts.append(text(f"by kind (summary -> +reminder): {kinds}; details found through the mirror: {t['recovered']}"))
    for e in doc["compactions"]:
        lost = (e.get("missed") or {}).get("reminder") or []
        if lost:
            shown = "; ".join(f"{f['kind']}: {f['text'][:60]}" for f in lost[:3])
            parts.append(text(f"  {e['session']} #{e['compaction']}: missed with the reminder {len(lost)} ({shown})"))
    show(*parts)

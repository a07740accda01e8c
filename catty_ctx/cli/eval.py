"""`catty-ctx eval`: measure what a compaction strategy keeps, on copies of a corpus."""
from __future__ import annotations

from typing import Annotated, Any

import typer

from ..defaults import CONNECT_TIMEOUT, EVAL_COMPACTIONS, EVAL_JOBS, EVAL_MODE, MAX_RESPONSE_BYTES, MIN_SUMMARY_CHARS, SUMMARIZER
from ..errors import ExitCode
from . import app
from .errors import handle_errors, warn
from .options import ConnectTimeoutOpt, JsonOpt, SchedulerOpt
from .output import Column, emit, progress_iter, show, table, text, write_json

# Table columns: (heading, metric). The JSON carries the metrics under their own names.
_COLUMNS = [
    ("state", "state_recall"),
    ("instr", "instruction_retention"),
    ("detail", "detail_recovery"),
    ("violations", "integrity_violations"),
    ("summ s", "summarizer_seconds"),
    ("summ in", "summarizer_input_tokens"),
    ("summ out", "summarizer_output_tokens"),
    ("summary", "summary_tokens"),
    ("saved", "tokens_saved"),
    ("cached", "cached_input_ratio"),
    ("prefire hit", "prefire_hit_rate"),
    ("wasted", "wasted_tokens"),
    ("successor", "successor_recall"),
]


@app.command(
    "eval",
    epilog=(
        "Examples: catty-ctx eval ~/sessions; "
        "catty-ctx eval ~/sessions --summarizer extractive --summarizer cmd:./my-model.sh --mode summary --mode segments --json; "
        "catty-ctx eval S --facts-only > S/eval.json; "
        "catty-ctx eval ~/sessions --summarizer cmd:./my-model.sh --min-recall 0.9 (exit 1 below it)"
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
    judge: Annotated[str | None, typer.Option("--judge", metavar="cmd:CMD|openai:MODEL", help="Successor check: ask this model each fact from the resumed request alone; adds successor_recall.")] = None,
    min_recall: Annotated[float | None, typer.Option("--min-recall", min=0, max=1, metavar="X", help="Exit 1 when a run fails or any recall figure of a run is below X.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, metavar="J", help="Sessions evaluated in J parallel processes.")] = EVAL_JOBS,
    out: Annotated[str | None, typer.Option("--out", metavar="DIR", help="Keep the driven copies in DIR (new or empty) for inspection; default a temporary folder, removed.")] = None,
    min_summary_chars: Annotated[int, typer.Option("--min-summary-chars", min=0, metavar="N", help="A model summary shorter than this is degenerate and retried (as compact).")] = MIN_SUMMARY_CHARS,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.1, metavar="SECONDS", help="The whole time one call of a cmd: or openai: summariser or judge may take, connection, answer and body included (default 600 for cmd:, 300 for openai:).")] = None,
    max_response_bytes: Annotated[int, typer.Option("--max-response-bytes", min=1, metavar="BYTES", help="Cut an openai: summariser's or judge's answer longer than this (a stream's bytes in all).")] = MAX_RESPONSE_BYTES,
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
    Exit 0 when every run completed, whatever the scores. With --scheduler the sessions run on a
    Dask cluster whose workers see the corpus (and --out) by the same paths.
    """
    # start-up: the library loads when the command runs, not for --help or another command
    from ..eval import EvalOptions, below, open_corpus, run_eval

    opts = EvalOptions(
        summarizers=summarizer or [SUMMARIZER], modes=mode or [EVAL_MODE], compactions=compactions, facts=facts,
        two_pass=two_pass, judge=judge, jobs=jobs, out=out, summarizer_options={"min_chars": min_summary_chars}, timeout=timeout,
        max_response_bytes=max_response_bytes,
    )
    c = open_corpus(corpus)
    try:
        if facts_only:
            _print_facts(c, opts, as_json)
            return
        from ..cluster import engine_for  # start-up: the library loads when the command runs

        with engine_for(scheduler, connect_timeout) as engine:
            report = run_eval(c, opts, progress=lambda it, n: progress_iter(it, label="eval", total=n), engine=engine)
    finally:
        c.close()
    emit(report, as_json=as_json, show=_show, lines=report["runs"])
    for row in report["runs"]:
        if row.get("error"):
            warn(f"{row['summarizer']} x {row['mode']}: {row['error']}")
    failed = any(row.get("error") for row in report["runs"])
    if min_recall is not None:
        low = below(report, min_recall)
        for line in low:
            warn(f"below --min-recall: {line}")
        if low:
            raise typer.Exit(ExitCode.CHECK_FAILED)
    if failed:
        raise typer.Exit(ExitCode.CHECK_FAILED)


def _print_facts(c: Any, opts: Any, as_json: bool) -> None:
    # start-up: the library loads when the command runs, not for --help or another command
    from ..eval import derive_all
    from ..eval.facts import facts_doc

    opts.check()
    all_facts = derive_all(c, opts.facts or "auto")
    if len(all_facts) == 1:
        write_json(facts_doc(all_facts[0]), pretty=True)
    else:
        write_json({"sessions": [{"path": label, **facts_doc(f)} for label, f in zip(c.labels, all_facts)]}, pretty=not as_json)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}" if value < 10 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _show(report: dict[str, Any]) -> None:
    # start-up: the library loads when the command runs, not for --help or another command
    from ..eval import WORST_SHOWN
    from ..eval.metrics import lowest_recall

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

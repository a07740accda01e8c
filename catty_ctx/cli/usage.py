"""`catty-ctx usage`: the token and cost ledger over Claude Code, Codex, Gemini CLI, opencode and catty sessions.

This command starts without the CLI framework (see `fastpath`): `parse_args` reads the plain
spellings of its options and `run` does the work, so a cron job asking again about unchanged
files pays for the interpreter and the cached answer only. Both that parser and the typer
command `declare` registers are made from one table, `PARAMS`.
"""
# No `from __future__ import annotations`: typer evaluates the annotations made in `declare`.
import gc
import os
from typing import Annotated

from ..defaults import CONNECT_TIMEOUT, USAGE_BY
from ..errors import UsageError
from ..usage.pipeline import strict_refusal, usage
from .errors import end_now, warn
from .fastpath import CLUSTER, flag, parse, shared, value
from .fastpath import declare as declare_command
from .output import ByteProgress, Column, console, emit_rendered, json_bytes, lines_bytes, show, stderr_tty, table

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..usage.outcome import Ledger, Scan

BY_HELP = ("Rows by KEY: model, day, week (ISO), month, session, project, agent (main loop vs each subagent) or block "
           "(5-hour windows from each window's first call, with burn rate and the current one's projection).")
PATHS_HELP = ("A Claude Code config dir or projects tree, a Codex home or sessions tree, a Gemini CLI home or chat, opencode's data "
              "folder, storage, opencode.db or export, a catty session or ROOT, one log file, or - for a log on stdin; told apart by "
              "content. None: the agents' standard homes that exist.")

# The options of `usage`, declared once: (parameter of `run`, option names, value type (None: a flag),
# metavar, help). The shared options (--json, --scheduler, --connect-timeout) bring their own help (None here).
PARAMS = (
    value("by", "--by", metavar="KEY", help=BY_HELP, choices=USAGE_BY),
    value("since", "--since", metavar="DATE", help="Only calls on or after this day (YYYY-MM-DD), in the report's time zone."),
    value("until", "--until", metavar="DATE", help="Only calls on or before this day (YYYY-MM-DD)."),
    shared("as_json"),
    value("prices", "--prices", metavar="FILE", help="A price table (LiteLLM's field names) whose entries win over the price library's "
     "(private models, other terms)."),
    flag("no_cache", "--no-cache", help="Read every file in full; neither read nor write the caches."),
    value("jobs", "--jobs", "-j", kind=int, metavar="N", help="Parse files in N processes (default: one per CPU).", min=1),
    flag("strict", "--strict", help="Unreadable lines are an error (exit 65) instead of being skipped and counted; "
     "every line of every log is checked, not only those that can hold usage."),
    value("tz", "--timezone", metavar="TZ", help="IANA time zone for days, weeks and months (default: the local one)."),
    flag("allow_empty", "--allow-empty", help="A PATH holding no session is an empty ledger (exit 0), not a usage error (exit 2)."),
    flag("verbose", "--verbose", "-v", help="Name on stderr the homes read (no PATH) and the price source."),
    *CLUSTER,
)


def parse_args(args: "list[str]") -> "dict[str, Any] | None":
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`;
    no path: the agents' homes)."""
    got = parse(args, PARAMS)
    if got is None:
        return None
    opts, paths = got
    return {"paths": paths, **opts}


def run(paths: "list[str] | None" = None, by: str = "model", since: "str | None" = None, until: "str | None" = None, as_json: bool = False,
        prices: "str | None" = None, no_cache: bool = False, jobs: "int | None" = None, strict: bool = False,
        tz: "str | None" = None, allow_empty: bool = False, verbose: bool = False, scheduler: "str | None" = None,
        connect_timeout: float = CONNECT_TIMEOUT) -> None:
    """Scan, fold and print the ledger; warnings and errors go to stderr."""
    if by not in USAGE_BY:
        raise UsageError(f"--by must be one of {', '.join(USAGE_BY)}, not '{by}'")

    bar = _ProgressBar() if stderr_tty() else None
    # The collector stays paused past the answer (the pipeline pauses it for the scan): let go at
    # once, the scan's hundreds of thousands of young objects would cost a collection before the
    # output, for a process that then ends (see end_now). Resumed when this is not the program.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _run(paths, by, since, until, as_json, prices, no_cache, jobs, strict, tz, allow_empty, verbose, scheduler, connect_timeout, bar)
    finally:
        if collecting:
            gc.enable()


def _run(paths: "list[str] | None", by: str, since: "str | None", until: "str | None", as_json: bool, prices: "str | None", no_cache: bool,
         jobs: "int | None", strict: bool, tz: "str | None", allow_empty: bool, verbose: bool, scheduler: "str | None",
         connect_timeout: float, bar: "_ProgressBar | None") -> None:
    def render(ledger: "Ledger", scan: "Scan") -> "dict[str, bytes]":
        """The two piped forms, kept with a cached answer: printing it again needs no JSON library."""
        return {"json": json_bytes(ledger.document(scan)), "lines": lines_bytes(ledger.rows)}

    engine = None
    if scheduler is not None or os.environ.get("CATTY_CTX_SCHEDULER"):
        from ..fleet.cluster import engine_for

        engine = engine_for(scheduler, connect_timeout)
    try:
        ledger, scan = usage(paths or (), by=by, since=since, until=until, timezone_name=tz, prices_file=prices, jobs=jobs,
                             use_cache=not no_cache, progress=bar, strict=strict, render=render, allow_empty=allow_empty,
                             engine=engine.__enter__() if engine is not None else None)
    finally:
        if bar is not None:
            bar.close()
        if engine is not None:
            engine.__exit__(None, None, None)
    if verbose:
        for source in ledger.sources or ():
            warn(f"reading {source['agent']} home {source['path']}")
        if ledger.prices_source:
            p = ledger.prices_source
            named = f"{p['library']} {p['version']}" if p.get("library") else "no price library"
            warn(f"prices: {named}" + "".join(f" + {f}" for f in p.get("files") or ()))
    for message in scan.warnings:
        warn(message)
    refusal = strict_refusal(scan) if strict else None
    if refusal is not None:
        raise refusal
    if scan.bad_lines:
        for sample in scan.bad_samples:
            warn(f"{sample}; skipped")
        warn(f"{scan.bad_lines} unreadable line{'s' if scan.bad_lines != 1 else ''} skipped")
    if ledger.incomplete:
        warn("a session's usage is incomplete (a subagent is still running, or was when a call was logged): costs are withheld")
    emit_rendered(as_json=as_json, show=lambda: _show(ledger), document=lambda: ledger.document(scan),
                  rendered=lambda: ledger.rendered or render(ledger, scan))
    end_now()  # (the scan's records are freed by the exit, not one by one: see end_now)


def declare() -> None:
    """Register `usage` on the typer application (help, completion, docs, unusual spellings), from PARAMS."""
    import typer

    epilog = ("Examples: catty-ctx usage --by day --since 2026-01-01 (every agent's home); catty-ctx usage ~/.claude --by day; "
              "catty-ctx usage ~/.codex --by model --json | jq .totals; "
              "catty-ctx usage sessions/ --by agent")
    declare_command("usage", run, PARAMS, USAGE_DOC, epilog,
                    {"paths": Annotated[list[str] | None, typer.Argument(metavar="[PATH]...", help=PATHS_HELP)]})


USAGE_DOC = """Tokens, calls and cost of Claude Code, Codex, Gemini CLI, opencode and catty sessions, with totals.

    Rows hold input, output, cache reads and writes, reasoning, calls and cost, by model,
    day, week, month, session, project or agent.

    Provider calls are counted once: Claude Code's per-content-block copies, resumed and
    forked copies, and side-question replays are collapsed; Codex counts a call only when its
    cumulative totals moved. With no PATH the agents' standard homes are read. Costs come from
    the genai-prices library at each call's date, offline (--prices adds or overrides). Lines that cannot be read are skipped and counted (the first few
    named on stderr). Unchanged files are read from a cache, grown ones from where they ended.
    """


def _money(v: "float | None") -> str:
    return "—" if v is None else f"${v:,.2f}"


def _short(n: int) -> str:
    """1,234,567 → 1.23M: a narrow terminal keeps every column whole (--json has the exact counts)."""
    for unit, size in (("B", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return str(n)


def _show(ledger: "Ledger") -> None:
    keys = [ledger.by, "input", "output", "cache_read", "cache_write", "reasoning", "calls", "cost_usd"]
    cols = [Column(ledger.by, "path" if ledger.by == "project" else "text"), *(Column(k, "num") for k in keys[1:-1]), Column("cost_usd", "num", "cost")]
    number = (lambda n: f"{n:,}") if console().width >= 130 else _short

    blocks = ledger.by == "block"
    if blocks:
        cols.append(Column("cost/h", "num", "cost"))

    def cells(key: str, r: "dict[str, Any]") -> "list[Any]":
        cost = _money(r["cost_usd"]) + ("*" if r["partial"] else "")
        more = [_money(r.get("cost_per_hour"))] if blocks else []
        return [key, *(number(r[c]) for c in keys[1:7]), cost, *more]

    body = [cells(str(r[ledger.by]) + (" (now)" if r.get("active") else ""), r) for r in ledger.rows]
    body.append(cells("total", ledger.totals) if not blocks else [*cells("total", ledger.totals)[:-1], ""])
    parts = [table(None, cols, body)]
    notes = []
    running = next((r for r in ledger.rows if r.get("projection")), None) if blocks else None
    if running is not None:
        p = running["projection"]
        notes.append(f"current block ends {running['end']}: at {_money(running['cost_per_hour'])}/h, "
                     f"{p['tokens']:,} tokens and {_money(p['cost_usd'])} by then ({p['minutes_left']:g} min left)")
    if any(r["partial"] for r in ledger.rows):
        notes.append("* partial: some calls have no price" + (", or the ledger is incomplete" if ledger.incomplete else ""))
    source = ledger.prices_source or {}
    named = f"{source['library']} {source['version']}" if source.get("library") else "no price library"
    notes.append(f"prices: {named}{' + ' + ', '.join(source['files']) if source.get('files') else ''}; "
                 f"{ledger.duplicates:,} duplicate records collapsed")
    show(*parts, "\n".join(notes))


class _ProgressBar:
    """The shared bytes bar, opened once the scan knows how much it has to read."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._update: Any = None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            self._bar = ByteProgress(total, "reading logs").__enter__()
            self._update = self._bar.callback
        if self._update is not None:
            self._update(done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)

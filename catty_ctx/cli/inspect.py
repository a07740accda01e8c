"""`catty-ctx inspect`: what a session, a ROOT of sessions, or a piped stream holds.

This command starts without the CLI framework (see `fastpath`): `parse_args` reads the plain
spellings of its options, so an agent or a hook asking about a session after every turn pays
for the interpreter and the library only. That parser and the typer command `declare`
registers are made from one table, `PARAMS`.
"""
from __future__ import annotations

from pathlib import Path as PathType

import orjson

from ..defaults import CONNECT_TIMEOUT
from ..errors import ExitCode, NoConversation, UsageError
from ..fleet.cluster import engine_for
from ..fleet.runner import skip_note
from ..inspect.session import find_event, inspect_root, inspect_session, view_rows
from ..inspect.stats import root_stats
from ..sources import open_session, resolve, root_sessions
from ..subagents import agent_rows, open_agent
from ..view.snapshot import context_report
from .errors import warn
from .fastpath import CLUSTER, TARGET_ARG, flag, parse_one, shared, value
from .fastpath import declare as declare_command
from .output import ByteProgress, Column, emit, progress_iter, record, rows_out, show, show_table, table, text, write_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

AGENT_COLUMNS: list[str | Column] = [Column("agent", "id"), "status", "type", Column("turns", "num"), Column("calls", "num"), "model", Column("tokens", "num"),
                 Column("cost_usd", "num"), Column("parent_call", "id"), Column("description", "text")]
STATS_COLUMNS: list[str | Column] = [Column("metric", "text"), "unit", *(Column(k, "num") for k in ("count", "min", "p50", "p90", "p95", "p99", "max", "mean")),
                 Column("constant", "text"), Column("value", "num"), Column("over", "num")]

# The options of `inspect`, declared once (see `fastpath`); the shared ones bring their own help (None here).
PARAMS = (
    flag("items", "--items", help="List the view's items with their tokens and cumulative fingerprint."),
    value("seq", "--seq", kind=int, metavar="N", help="Print the event with this seq in full.", min=0),
    flag("context", "--context", help="The prompt-context snapshot: every part with its source; unknown parts marked."),
    flag("agents", "--agents",
         help="List the session's subagents: status, type, turns, tokens and cost (as 'usage --by agent' counts them), the parent's call."),
    shared("agent"),
    flag("stats", "--stats",
         help="The distributions the constants should be calibrated on: tool output and turn sizes, the context at each compaction, "
              "the time between compactions (of a ROOT's sessions, or one session)."),
    shared("allow_empty"),
    shared("as_json"),
    *CLUSTER,
)
EPILOG = ("Examples: catty-ctx inspect fixtures/sessions/demo; "
          "catty-ctx inspect S --items --json | jq '.items[-1].fp'; "
          "catty-ctx prune S | catty-ctx inspect -")
INSPECT_DOC = """Counts, turns, estimated tokens against the window, largest items, compactions,
    integrity problems and the prefix fingerprint of a session's view.

    `-` reads an event stream, or an item stream (what prune and resume print) and reports
    on that request. A ROOT lists its sessions, a row each (on a Dask cluster with --scheduler).
    """


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`)."""
    return parse_one(args, PARAMS, "target")


def declare() -> None:
    """Register `inspect` on the typer application (help, completion, docs, unusual spellings), from PARAMS."""
    declare_command("inspect", run, PARAMS, INSPECT_DOC, EPILOG, {"target": TARGET_ARG})


def run(target: str, items: bool = False, seq: int | None = None, context: bool = False, agents: bool = False, agent: str | None = None,
        stats: bool = False, allow_empty: bool = False, as_json: bool = False, scheduler: str | None = None,
        connect_timeout: float = CONNECT_TIMEOUT) -> None:
    """Inspect TARGET and print the report; warnings and errors go to stderr."""
    if stats:
        _stats(target, allow_empty=allow_empty, as_json=as_json)
        return
    if resolve(target).is_root:
        for flag_name, given in (("--context", context), ("--agents", agents), ("--agent", agent is not None)):
            if given:
                raise UsageError(f"{target}: {flag_name} needs one session, not a ROOT")

        def on_error(path: Path, exc: Exception) -> None:
            warn(str(exc))

        found = root_sessions(target, allow_empty=allow_empty)
        cols = [Column("path", "path"), Column("session_id", "id"), *(Column(k, "num") for k in ("events", "turns", "tokens")),
                Column("percent", "num", "%"), Column("compactions", "num"), Column("problems", "num")]
        with engine_for(scheduler, connect_timeout) as engine:
            rows = inspect_root(PathType(target), on_error=on_error, sessions=found, engine=engine,
                                progress=lambda it: progress_iter(it, label="sessions", total=len(found)))
            rows_out(rows, cols, as_json=as_json, key="sessions", show_rows=lambda got: show_table(map(_root_cells, got), cols))
        if rows.exit_code():
            raise SystemExit(rows.exit_code())  # the most severe of the sessions' (docs/spec.md#a-root-of-sessions)
        return

    if agents and agent is not None:
        raise UsageError("--agents lists the subagents; --agent ID shows one")
    with open_agent(target, agent, warn=warn) as session:
        if agents:
            rows_out(iter(agent_rows(session)), AGENT_COLUMNS, as_json=as_json, key="agents")
            return
        if seq is not None:
            write_json(find_event(session, seq))  # an event is one document whatever the output
            return
        if context:
            rep = context_report(session)
            emit(rep, as_json=as_json, show=_show_context)
            return
        if items:
            rows_out(view_rows(session), [], as_json=as_json, key="items", show_rows=_show_items)
            return

        with ByteProgress(session.log_path.stat().st_size, "reading") as bar:
            report = inspect_session(session, warn=warn, progress=bar.callback)
    emit(report, as_json=as_json, show=_show_report)


def _stats(target: str, *, allow_empty: bool, as_json: bool) -> None:
    """`inspect ROOT --stats`: the distributions, a row per quantity (one document with --json)."""
    root = resolve(target).is_root
    found = root_sessions(target, allow_empty=allow_empty) if root else [target]
    failed: list[str] = []

    def on_error(path: Any, exc: Exception) -> None:
        if root and isinstance(exc, NoConversation):  # (no session: named, the exit as without it, as every ROOT command)
            warn(skip_note(exc))
            return
        failed.append(str(exc))
        warn(str(exc))

    doc = root_stats(progress_iter(iter(found), label="sessions", total=len(found)), open_session=lambda t: open_session(t, warn=warn),
                     on_error=on_error)
    if as_json:
        write_json(doc)
    else:
        rows = [{"metric": name, **row} for name, row in doc["distributions"].items()]
        # The estimator's error per model, as rows of the same table (metric estimate_ratio:MODEL).
        rows += [{"metric": f"estimate_ratio:{model}", **row} for model, row in doc["estimator"].items()]
        rows_out(iter(rows), STATS_COLUMNS, as_json=False, key="distributions")
    if failed:
        raise SystemExit(int(ExitCode.DATA))


def _preview(item: dict[str, Any], width: int = 60) -> Any:
    """The item's text on one line, cut at WIDTH; a synthetic item says what it is, in italics."""

    body = item.get("text") if "text" in item else item.get("output", "")
    if item.get("tool_calls"):
        body = (body or "") + " → " + ", ".join(str(c.get("name", "?")) for c in item["tool_calls"])
    body = " ".join(str(body).split())
    line = text(body[:width] + ("…" if len(body) > width else ""))
    if item.get("synthetic"):
        line = text(text(f"({item['synthetic']})", style="italic"), " ", line)
    return line


def _show_items(rows: Any) -> None:
    body = ((r["index"], r["item"].get("seq"), r["item"]["role"], r["tokens"], r["fp"][:12], _preview(r["item"])) for r in rows)
    cols: list[str | Column] = [Column("index", "num"), Column("seq", "num"), "role", Column("tokens", "num"), "fp", Column("text", "text")]
    show(table(None, cols, body))


def _show_context(rep: dict[str, Any]) -> None:
    def short(v: Any) -> str:
        value = v if isinstance(v, str) else orjson.dumps(v).decode()
        return value if len(value) <= 70 else value[:69] + "…"

    rows = ([name, short(p["value"]) if p["known"] else "unknown", p["source"], p["seq"]] for name, p in rep["parts"].items())
    cols: list[str | Column] = ["part", Column("value", "text"), Column("source", "text"), Column("seq", "num")]
    show(table(f"prompt context of {rep['session_id'] or rep['path']}", cols, rows))


def _root_cells(rep: dict[str, Any]) -> dict[str, Any]:
    """A session's row of the ROOT table: its report with compactions and problems counted."""
    return {**rep, "compactions": len(rep["compactions"]), "problems": sum(rep["problems"].values())}


def tokens_line(rep: dict[str, Any]) -> str:
    """`tokens` of a report, saying where the figure comes from."""
    figure = f"{rep['tokens']:,} of {rep['window']:,} ({rep['percent']}%)"
    if rep["tokens_from"] == "provider_usage":
        return f"{figure}: provider usage at seq {rep['usage_seq']} + {rep['pending_tokens']:,} estimated after it"
    return f"{figure}: estimated from the items"


def _show_report(rep: dict[str, Any]) -> None:
    source = rep.get("source") or {}
    head = [
        ("session", rep["session_id"] or rep["path"]),
        *([("agent", source["agent"]), ("source", source["path"])] if source else []),
        *([(k, source[k]) for k in ("cwd", "model", "title") if source.get(k)]),
        *([("stream", "a request read as items: the counts are of items, not events")] if rep["stream"] == "items" else [("events", rep["events"])]),
        ("turns", rep["turns"]),
        ("view items", rep["items"]),
        ("tokens", tokens_line(rep)),
        ("threshold", f"{rep['status']} ({rep['threshold']:g}% of the window)"),
        ("fingerprint", rep["fp"]),
    ]
    parts = [record(None, head)]
    if rep["kinds"]:
        parts.append(table("kinds", ["kind", "count"], sorted(rep["kinds"].items()), right=["count"]))
    if rep["roles"]:
        parts.append(table("roles", ["role", "count"], sorted(rep["roles"].items()), right=["count"]))
    if rep["largest"]:
        parts.append(table("largest items", ["index", "seq", "role", "tokens"], ([r["index"], r["seq"], r["role"], r["tokens"]] for r in rep["largest"]), right=["index", "seq", "tokens"]))
    if rep["compactions"]:
        cols: list[str | Column] = [Column("seq", "num"), Column("id", "id"), "mode", Column("through_seq", "num")]
        parts.append(table("compactions", cols, ([c.get("seq"), c.get("id"), c.get("mode"), c.get("through_seq")] for c in rep["compactions"])))
    parts.append(table("problems", ["problem", "count"], rep["problems"].items(), right=["count"]))
    show(*parts)

"""`catty-ctx prune`: the pruned request view on stdout; the log is never touched.

This command starts without the CLI framework (see `fastpath`): an agent prunes its request
before every call, and typer's import would be most of that run.
"""
from __future__ import annotations

import sys

import orjson

from ..defaults import (
    PRUNE_CLEAR_AT_LEAST,
    PRUNE_HIGH_PERCENT,
    PRUNE_IMAGE_HIGH_MIB,
    PRUNE_IMAGE_LOW_MIB,
    PRUNE_KEEP,
    PRUNE_KEEP_TURNS,
    PRUNE_LOW_PERCENT,
    PRUNE_MIN_PERCENT,
    PRUNE_OMIT_AGE,
    PRUNE_STRATEGIES,
    PRUNE_STRATEGY,
    PRUNE_TRIM_HEAD,
    PRUNE_TRIM_OVER,
    PRUNE_TRIM_TAIL,
)
from ..errors import UsageError
from ..inspect.session import is_item_stream, iter_item_lines
from ..prune.options import MIB, PruneOptions, PruneStats
from ..prune.pipeline import prune, prune_item_stream
from ..prune.reuse import PrefixReuse, item_lines_canon
from ..session.events import DEFAULT_WINDOW
from ..subagents import open_agent
from ..visible import end, stdout_binary
from .errors import warn
from .fastpath import SESSION_ARG, flag, parse_one, shared, value
from .fastpath import declare as declare_command
from .output import console, record, stderr_tty

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from ..view.fold import ViewItem

# The help's panels of the strategies' own options.
TIERS = "Tiers (tiered)"
BATCHES = "Batches (cache-aware)"
KNOBS = "clear_tool_uses knobs (both strategies)"

# The options of `prune`, declared once (see `fastpath`).
PARAMS = (
    value("window", "--window", kind=int, metavar="N", help="Context window in tokens (default: the session's, else 200,000).", min=1),
    value("strategy", "--strategy", metavar="cache-aware|tiered", help="cache-aware: rewrite the prefix in rare batches; tiered: grok-build's age tiers on every request.", choices=PRUNE_STRATEGIES),
    value("min_percent", "--min-percent", kind=float, metavar="PCT", help="tiered runs only when the request is at least this % of the window.", min=0, panel=TIERS),
    value("keep_turns", "--keep-turns", kind=int, metavar="N", help="Never touch results of the N most recent turns (age < N; age = real user messages after the result).", min=0),
    value("omit_age", "--omit-age", kind=int, metavar="N", help="From this age on a result becomes a placeholder.", min=0, panel=TIERS),
    value("trim_over", "--trim-over", kind=int, metavar="CHARS", help="Younger results longer than this keep only their head and tail.", min=0, panel=TIERS),
    value("trim_head", "--trim-head", kind=int, metavar="CHARS", help="Characters kept from the start of a trimmed result.", min=0, panel=TIERS),
    value("trim_tail", "--trim-tail", kind=int, metavar="CHARS", help="Characters kept from the end of a trimmed result.", min=0, panel=TIERS),
    value("high", "--high", kind=float, metavar="PCT", help="A batch starts when the request reaches this % of the window.", min=0, panel=BATCHES),
    value("low", "--low", kind=float, metavar="PCT", help="A batch clears the oldest results until the request is at most this %.", min=0, panel=BATCHES),
    value("image_high", "--image-high", kind=float, metavar="MIB", help="Remove the oldest user images when the request body reaches this many MiB ...", min=0),
    value("image_low", "--image-low", kind=float, metavar="MIB", help="... until it is at most this many MiB.", min=0),
    value("keep", "--keep", kind=int, metavar="N", help="Never touch the N most recent tool results.", min=0, panel=KNOBS),
    value("clear_at_least", "--clear-at-least", kind=int, metavar="TOKENS", help="Make no rewrite that clears fewer tokens (a broken cache prefix must be worth it).", min=0, panel=KNOBS),
    value("exclude_tools", "--exclude-tools", metavar="A,B", help="Tools whose results are never touched.", panel=KNOBS),
    flag("clear_inputs", "--clear-inputs", help="Also clear the arguments of calls whose results became placeholders.", panel=KNOBS),
    value("session_ref", "--session-ref", metavar="TEXT", help="How placeholders name the session in their inspect command (default: SESSION as given)."),
    value("previous", "--previous", metavar="FILE", help="An earlier prune output: report the unchanged prefix (items, tokens) on stderr."),
    flag("stats", "--stats", help="Report the request's tokens before/after (with and without the provider overhead), results trimmed and cleared, on stderr (one JSON line)."),
    shared("agent"),
)
EPILOG = ("Examples: catty-ctx prune S --stats > request.jsonl; "
          "catty-ctx prune S --previous request.jsonl > next.jsonl; "
          "catty-ctx prune S --strategy tiered --omit-age 8 | catty-ctx inspect -")
PRUNE_DOC = """Print the pruned request view, one item a line (the items of the view); the log is untouched.

    Old tool results are shortened in the request copy only; every placeholder names the
    original's seq and the inspect command that prints it. `-` reads an event stream (or an
    item stream, as prune itself prints). Details and the age rule: docs/prune.md.
    """


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`)."""
    return parse_one(args, PARAMS, "session")


def declare() -> None:
    """Register `prune` on the typer application (help, completion, docs, unusual spellings), from PARAMS."""
    declare_command("prune", run, PARAMS, PRUNE_DOC, EPILOG, {"session": SESSION_ARG})


def _report(key: str, doc: dict[str, Any]) -> None:
    """A figure for the reader on stderr: a small table on a terminal, one JSON line (`{KEY: DOC}`) for a script."""
    if stderr_tty():
        console(stderr=True).print(record(key, [(k, ", ".join(map(str, v)) if isinstance(v, list) else v) for k, v in doc.items()]))
    else:
        sys.stderr.write(orjson.dumps({key: doc}).decode() + "\n")


def run(session: str, window: int | None = None, strategy: str = PRUNE_STRATEGY, min_percent: float = PRUNE_MIN_PERCENT,
        keep_turns: int = PRUNE_KEEP_TURNS, omit_age: int = PRUNE_OMIT_AGE, trim_over: int = PRUNE_TRIM_OVER,
        trim_head: int = PRUNE_TRIM_HEAD, trim_tail: int = PRUNE_TRIM_TAIL, high: float = PRUNE_HIGH_PERCENT,
        low: float = PRUNE_LOW_PERCENT, image_high: float = PRUNE_IMAGE_HIGH_MIB, image_low: float = PRUNE_IMAGE_LOW_MIB,
        keep: int = PRUNE_KEEP, clear_at_least: int = PRUNE_CLEAR_AT_LEAST, exclude_tools: str = "", clear_inputs: bool = False,
        session_ref: str | None = None, previous: str | None = None, stats: bool = False, agent: str | None = None) -> None:
    """Prune SESSION's view and print it, an item a line; the reports go to stderr."""
    opts = PruneOptions(
        strategy=strategy,
        min_percent=min_percent,
        keep_turns=keep_turns,
        omit_age=omit_age,
        trim_over=trim_over,
        trim_head=trim_head,
        trim_tail=trim_tail,
        high_percent=high,
        low_percent=low,
        image_high=int(image_high * MIB),
        image_low=int(image_low * MIB),
        keep=keep,
        clear_at_least=clear_at_least,
        exclude_tools=frozenset(t.strip() for t in exclude_tools.split(",") if t.strip()),
        clear_inputs=clear_inputs,
        session_ref=session_ref or (PruneOptions.session_ref if session == "-" else session),
    )
    problem = opts.check()
    if problem:
        raise UsageError(problem)
    prev_lines = item_lines_canon(previous) if previous is not None else None
    st = PruneStats()
    out: Iterable[ViewItem]
    with open_agent(session, agent, warn=warn) as s:
        if s.stdin and is_item_stream(s):
            out = prune_item_stream(iter_item_lines(s, warn=warn), opts, window or DEFAULT_WINDOW, st)
        else:
            out = prune(s, opts, window=window, stats=st)
        reuse = PrefixReuse()
        if prev_lines is not None:
            out = reuse.track(prev_lines, out)
        stream = stdout_binary()  # on a terminal, controls in the items shown, not obeyed
        for vi in out:
            stream.write(vi.canon + b"\n")
        end(stream)
    if prev_lines is not None:
        _report("previous", reuse.as_dict())
    if stats:
        _report("stats", st.as_dict())
    if st.over_window:
        warn(f"the pruned request ({st.request_tokens_after:,} tokens) is still over the window ({st.window:,}): compact the session")

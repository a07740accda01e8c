"""`catty-ctx prune`: the pruned request view on stdout; the log is never touched."""
from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ..defaults import PRUNE_CLEAR_AT_LEAST, PRUNE_HIGH_PERCENT, PRUNE_IMAGE_HIGH_MIB, PRUNE_IMAGE_LOW_MIB, PRUNE_KEEP, PRUNE_KEEP_TURNS, PRUNE_LOW_PERCENT, PRUNE_MIN_PERCENT, PRUNE_OMIT_AGE, PRUNE_STRATEGY, PRUNE_TRIM_HEAD, PRUNE_TRIM_OVER, PRUNE_TRIM_TAIL
from ..errors import UsageError
from . import app
from .errors import handle_errors, warn
from .options import SessionArg

_T = "Tiers (tiered)"
_C = "Batches (cache-aware)"
_A = "clear_tool_uses knobs (both strategies)"


@app.command(
    "prune",
    epilog=(
        "Examples: catty-ctx prune S --stats > request.jsonl; "
        "catty-ctx prune S --previous request.jsonl > next.jsonl; "
        "catty-ctx prune S --strategy tiered --omit-age 8 | catty-ctx inspect -"
    ),
)
@handle_errors
def prune_cmd(
    session: SessionArg,
    window: Annotated[Optional[int], typer.Option("--window", metavar="N", min=1, help="Context window in tokens (default: the session's, else 200,000).")] = None,
    strategy: Annotated[str, typer.Option("--strategy", metavar="cache-aware|tiered", help="cache-aware: rewrite the prefix in rare batches; tiered: grok-build's age tiers on every request.")] = PRUNE_STRATEGY,
    min_percent: Annotated[float, typer.Option("--min-percent", metavar="PCT", min=0, help="tiered runs only when the request is at least this % of the window.", rich_help_panel=_T)] = PRUNE_MIN_PERCENT,
    keep_turns: Annotated[int, typer.Option("--keep-turns", metavar="N", min=0, help="Never touch results of the N most recent turns (age < N; age = real user messages after the result).")] = PRUNE_KEEP_TURNS,
    omit_age: Annotated[int, typer.Option("--omit-age", metavar="N", min=0, help="From this age on a result becomes a placeholder.", rich_help_panel=_T)] = PRUNE_OMIT_AGE,
    trim_over: Annotated[int, typer.Option("--trim-over", metavar="CHARS", min=0, help="Younger results longer than this keep only their head and tail.", rich_help_panel=_T)] = PRUNE_TRIM_OVER,
    trim_head: Annotated[int, typer.Option("--trim-head", metavar="CHARS", min=0, help="Characters kept from the start of a trimmed result.", rich_help_panel=_T)] = PRUNE_TRIM_HEAD,
    trim_tail: Annotated[int, typer.Option("--trim-tail", metavar="CHARS", min=0, help="Characters kept from the end of a trimmed result.", rich_help_panel=_T)] = PRUNE_TRIM_TAIL,
    high: Annotated[float, typer.Option("--high", metavar="PCT", min=0, help="A batch starts when the request reaches this % of the window.", rich_help_panel=_C)] = PRUNE_HIGH_PERCENT,
    low: Annotated[float, typer.Option("--low", metavar="PCT", min=0, help="A batch clears the oldest results until the request is at most this %.", rich_help_panel=_C)] = PRUNE_LOW_PERCENT,
    image_high: Annotated[float, typer.Option("--image-high", metavar="MIB", min=0, help="Remove the oldest user images when the request body reaches this many MiB ...")] = PRUNE_IMAGE_HIGH_MIB,
    image_low: Annotated[float, typer.Option("--image-low", metavar="MIB", min=0, help="... until it is at most this many MiB.")] = PRUNE_IMAGE_LOW_MIB,
    keep: Annotated[int, typer.Option("--keep", metavar="N", min=0, help="Never touch the N most recent tool results.", rich_help_panel=_A)] = PRUNE_KEEP,
    clear_at_least: Annotated[int, typer.Option("--clear-at-least", metavar="TOKENS", min=0, help="Make no rewrite that clears fewer tokens (a broken cache prefix must be worth it).", rich_help_panel=_A)] = PRUNE_CLEAR_AT_LEAST,
    exclude_tools: Annotated[str, typer.Option("--exclude-tools", metavar="A,B", help="Tools whose results are never touched.", rich_help_panel=_A)] = "",
    clear_inputs: Annotated[bool, typer.Option("--clear-inputs", help="Also clear the arguments of calls whose results became placeholders.", rich_help_panel=_A)] = False,
    session_ref: Annotated[Optional[str], typer.Option("--session-ref", metavar="TEXT", help="How placeholders name the session in their inspect command (default: SESSION as given).")] = None,
    previous: Annotated[Optional[str], typer.Option("--previous", metavar="FILE", help="An earlier prune output: report the unchanged prefix (items, tokens) on stderr.")] = None,
    stats: Annotated[bool, typer.Option("--stats", help="Report the request's tokens before/after (with and without the provider overhead), results trimmed and cleared, on stderr (one JSON line).")] = False,
) -> None:
    """Print the pruned request view, one item a line (SPEC item shape); the log is untouched.

    Old tool results are shortened in the request copy only; every placeholder names the
    original's seq and the inspect command that prints it. `-` reads an event stream (or an
    item stream, as prune itself prints). Details and the age rule: docs/prune.md.
    """
    # start-up: the library loads when the command runs, not for --help or another command
    import orjson

    from ..events import DEFAULT_WINDOW
    from ..prune import MIB, PruneOptions, PruneStats, item_lines_canon, PrefixReuse, prune, prune_item_stream
    from ..inspect import is_item_stream, iter_item_lines
    from ..store import Session

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
    with Session.open(session) as s:
        if s.stdin and is_item_stream(s):
            out = prune_item_stream(iter_item_lines(s, warn=warn), opts, window or DEFAULT_WINDOW, st)
        else:
            out = prune(s, opts, window=window, stats=st)
        reuse = PrefixReuse()
        if prev_lines is not None:
            out = reuse.track(prev_lines, out)
        write = sys.stdout.buffer.write
        for vi in out:
            write(vi.canon + b"\n")
        sys.stdout.flush()
    if prev_lines is not None:
        sys.stderr.write(orjson.dumps({"previous": reuse.as_dict()}).decode() + "\n")
    if stats:
        sys.stderr.write(orjson.dumps({"stats": st.as_dict()}).decode() + "\n")
    if st.over_window:
        warn(f"the pruned request ({st.request_tokens_after:,} tokens) is still over the window ({st.window:,}): compact the session")

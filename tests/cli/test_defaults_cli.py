"""The command line's defaults are the library's: each option, as the parser sees it, defaults
to the value the mechanism uses when called without it."""
from __future__ import annotations

import dataclasses
import inspect

import pytest
import typer

from catty_ctx.session import blobs, store
from catty_ctx.cli.app import app, load_commands
from catty_ctx.compact.pipeline import CompactOptions
from catty_ctx.eval.pipeline import EvalOptions
from catty_ctx.fork import resume
from catty_ctx.prune.options import MIB, PruneOptions

_PRUNE = PruneOptions()
_EVAL = EvalOptions()
_COMPACT = {f.name: f.default for f in dataclasses.fields(CompactOptions)}

# (command, option, the library's value)
LIBRARY_DEFAULTS = [
    ("append", "--lock-timeout", store.DEFAULT_LOCK_TIMEOUT),
    ("append", "--max-user-bytes", blobs.USER_LIMIT),
    ("append", "--max-tool-bytes", blobs.TOOL_LIMIT),
    ("import", "--max-user-bytes", blobs.USER_LIMIT),
    ("import", "--max-tool-bytes", blobs.TOOL_LIMIT),
    ("instructions", "--lock-timeout", store.DEFAULT_LOCK_TIMEOUT),
    ("repair", "--lock-timeout", store.DEFAULT_LOCK_TIMEOUT),
    ("compact", "--lock-timeout", _COMPACT["lock_timeout"]),
    ("compact", "--threshold", _COMPACT["threshold"]),
    ("compact", "--mode", _COMPACT["mode"]),
    ("compact", "--detail", _COMPACT["detail"]),
    ("compact", "--summarizer", _COMPACT["summarizer"]),
    ("eval", "--compactions", _EVAL.compactions),
    ("eval", "--jobs", _EVAL.jobs),
    ("resume", "--format", inspect.signature(resume).parameters["fmt"].default),
    ("prune", "--strategy", _PRUNE.strategy),
    ("prune", "--min-percent", _PRUNE.min_percent),
    ("prune", "--keep-turns", _PRUNE.keep_turns),
    ("prune", "--omit-age", _PRUNE.omit_age),
    ("prune", "--trim-over", _PRUNE.trim_over),
    ("prune", "--trim-head", _PRUNE.trim_head),
    ("prune", "--trim-tail", _PRUNE.trim_tail),
    ("prune", "--high", _PRUNE.high_percent),
    ("prune", "--low", _PRUNE.low_percent),
    ("prune", "--image-high", _PRUNE.image_high / MIB),
    ("prune", "--image-low", _PRUNE.image_low / MIB),
    ("prune", "--keep", _PRUNE.keep),
    ("prune", "--clear-at-least", _PRUNE.clear_at_least),
]


def _option_default(command: str, option: str) -> object:
    load_commands()
    cmd = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    return next(p.default for p in cmd.params if option in p.opts)


@pytest.mark.parametrize(("command", "option", "value"), LIBRARY_DEFAULTS, ids=[f"{c} {o}" for c, o, _ in LIBRARY_DEFAULTS])
def test_an_options_default_is_the_librarys(command: str, option: str, value: object) -> None:
    assert _option_default(command, option) == value


def test_compact_min_summary_chars_is_the_ladders() -> None:
    from catty_ctx.compact.ladder import MIN_SUMMARY_CHARS

    assert _option_default("compact", "--min-summary-chars") == MIN_SUMMARY_CHARS
    assert _option_default("eval", "--min-summary-chars") == MIN_SUMMARY_CHARS

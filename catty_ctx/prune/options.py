"""The options of request-copy pruning (every constant of the mechanism) and its counts."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MIB = 1 << 20
STRATEGIES = ("cache-aware", "tiered")


@dataclass(frozen=True)
class PruneOptions:
    """Every constant of the mechanism; the defaults are grok-build's (and Anthropic's)."""

    strategy: str = "cache-aware"
    min_percent: float = 50.0  # tiered runs only when the request is at least this % of the window
    keep_turns: int = 3  # results younger than this many turns are never touched
    omit_age: int = 10  # tiered: from this age on, a placeholder
    trim_over: int = 4000  # tiered: in between, results longer than this (characters) are trimmed
    trim_head: int = 1500
    trim_tail: int = 1500
    high_percent: float = 90.0  # cache-aware: a batch starts when the request reaches this %
    low_percent: float = 30.0  # cache-aware: ... and clears until it is at most this %
    image_high: int = 47 * MIB
    image_low: int = 25 * MIB
    keep: int = 0  # the most recent tool results never touched (clear_tool_uses `keep`; keep_turns already guards)
    clear_at_least: int = 0  # a rewrite must clear at least this many tokens
    exclude_tools: frozenset[str] = frozenset()
    clear_inputs: bool = False
    session_ref: str = "SESSION"  # how placeholders name the session in their command

    def check(self) -> str | None:
        """A reason these options make no sense, or None."""
        if self.strategy not in STRATEGIES:
            return f"unknown strategy {self.strategy!r} (choose {' or '.join(STRATEGIES)})"
        if self.low_percent > self.high_percent:
            return "--low must not be above --high"
        if self.image_low > self.image_high:
            return "--image-low must not be above --image-high"
        if self.keep_turns < 0 or self.omit_age < 0 or self.keep < 0:
            return "ages and counts must not be negative"
        return None


@dataclass
class PruneStats:
    strategy: str = ""
    window: int = 0
    items: int = 0
    # The request's size: the items' estimates plus the provider overhead the latest usage
    # shows (what `inspect SESSION` reports) ...
    request_tokens_before: int = 0
    request_tokens_after: int = 0
    # ... and the items' estimates alone (what `inspect -` reports of the request printed).
    item_tokens_before: int = 0
    item_tokens_after: int = 0
    trimmed: int = 0  # results kept head + tail
    tool_uses_cleared: int = 0  # results replaced by a placeholder
    inputs_cleared: int = 0  # calls whose arguments were cleared
    images_removed: int = 0
    tokens_cleared: int = 0
    batches: int = 0  # cache-aware: rewrites of the prefix over the session's history
    over_window: bool = False
    repaired: list[str] = field(default_factory=list)  # pairing fixes the request needed

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

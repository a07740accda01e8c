"""The options of request-copy pruning (every constant of the mechanism) and its counts."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import defaults

MIB = 1 << 20
STRATEGIES = defaults.PRUNE_STRATEGIES


@dataclass(frozen=True)
class PruneOptions:
    """Every constant of the mechanism; the defaults (catty_ctx.defaults) are grok-build's (and Anthropic's)."""

    strategy: str = defaults.PRUNE_STRATEGY
    min_percent: float = defaults.PRUNE_MIN_PERCENT
    keep_turns: int = defaults.PRUNE_KEEP_TURNS
    omit_age: int = defaults.PRUNE_OMIT_AGE
    trim_over: int = defaults.PRUNE_TRIM_OVER
    trim_head: int = defaults.PRUNE_TRIM_HEAD
    trim_tail: int = defaults.PRUNE_TRIM_TAIL
    high_percent: float = defaults.PRUNE_HIGH_PERCENT
    low_percent: float = defaults.PRUNE_LOW_PERCENT
    image_high: int = int(defaults.PRUNE_IMAGE_HIGH_MIB * MIB)  # bytes of the request body
    image_low: int = int(defaults.PRUNE_IMAGE_LOW_MIB * MIB)
    keep: int = defaults.PRUNE_KEEP
    clear_at_least: int = defaults.PRUNE_CLEAR_AT_LEAST
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

"""Patterns a user or a model gives (`search`, `segment grep`, the recall server's
`recall_search`), run with a bound on their time (docs/reliability.md#bounded-patterns).

A regular expression can backtrack for ever: `(o+)+x` on a line of o's. Python's `re` cannot
be stopped once it runs (it holds the GIL: not even another thread gets to run, so a server
could not answer a ping), and a process per question would cost its start and the open
session. So a regular expression runs on the `regex` engine (Python's syntax), whose search
takes a timeout and releases the GIL while it matches; a question has a budget of matching
time beyond what a linear search would take (REGEX_BUDGET seconds per session it reads), and
a pattern that spends it is refused in one line. A fixed string is escaped and runs on `re`: it cannot backtrack.
"""
from __future__ import annotations

import re
import time

from . import defaults
from .errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# What a search may take before its time counts against the budget: a pattern that does not
# backtrack reads a text in well under a microsecond a character, so only the time beyond this
# (a blow-up, or a loaded machine) is spent; a long session of plain matches never runs out.
_CALL_ALLOWANCE = 50e-6
_CHAR_ALLOWANCE = 1e-6
# The engine's timeout is checked now and then: it stops up to about three times later than
# asked, so each search is given a third of what is left.
_OVERSHOOT = 3.0


class PatternTooSlow(UsageError):
    """A regular expression that spent its budget of matching time (a backtracking blow-up)."""


class Pattern:
    """TEXT as a pattern: a regular expression with REGEX (its matching time bounded by BUDGET
    seconds until `reset`), else a fixed string; IGNORE_CASE for both."""

    def __init__(self, text: str, *, regex: bool = False, ignore_case: bool = False, budget: float | None = None) -> None:
        self.text = text
        self.regex = regex
        self.budget = defaults.REGEX_BUDGET if budget is None else budget
        self.spent = 0.0
        self.compiled: Any
        self.across: Any  # the same pattern over many lines at once (^ and $ at each line)
        if not regex:
            self.compiled = self.across = re.compile(re.escape(text), re.IGNORECASE if ignore_case else 0)
            return
        import regex as engine

        flags = engine.VERSION0 | (engine.IGNORECASE if ignore_case else 0)
        try:
            self.compiled = engine.compile(text, flags)
            self.across = engine.compile(text, flags | engine.MULTILINE)
        except (engine.error, OverflowError, ValueError, RecursionError) as exc:
            raise UsageError(f"bad regular expression {text!r}: {exc}") from None

    def reset(self) -> None:
        """A new session: the budget again."""
        self.spent = 0.0

    def holds(self, text: str) -> bool:
        """Whether TEXT (many lines) may hold a line that matches: one search over all of them
        (a bounded search costs a little each time: lines are asked one by one only when this
        is true)."""
        return self._search(self.across, text) is not None

    def search(self, line: str) -> Any:
        """The first match of the pattern in LINE, or None; PatternTooSlow once the budget is spent."""
        return self._search(self.compiled, line)

    def _search(self, compiled: Any, line: str) -> Any:
        if not self.regex:
            return compiled.search(line)
        allowed = _CALL_ALLOWANCE + len(line) * _CHAR_ALLOWANCE
        left = self.budget - self.spent
        start = time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            return compiled.search(line, timeout=max((left + allowed) / _OVERSHOOT, 0.001), concurrent=True)
        except TimeoutError:
            raise PatternTooSlow(f"the regular expression {self.text!r} spent its {self.budget:g} s of matching time on one "
                                 "session's text (does it backtrack, like (a+)+b?): simplify it, or raise regex_budget") from None
        finally:
            self.spent += max(0.0, time.monotonic() - start - allowed)

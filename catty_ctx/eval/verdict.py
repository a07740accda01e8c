"""What an eval found, and its exit by the rule of a ROOT (docs/spec.md#a-root-of-sessions)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..fleet.runner import RootRun


@dataclass
class Evaluation:
    """The report (the `--json` document; None when no session of the corpus could be read),
    the run that read the corpus's sessions (those that could not be read were reported and left
    out), whether a run or a compaction failed, and what falls under a --min-recall."""

    report: dict[str, Any] | None
    sessions: RootRun
    failed: bool = False
    shortfall: Callable[[dict[str, Any], float], list[str]] | None = None

    def below(self, min_recall: float | None) -> list[str]:
        """What falls under MIN_RECALL (nothing without one)."""
        if self.report is None or min_recall is None or self.shortfall is None:
            return []
        return self.shortfall(self.report, min_recall)

    def exit_code(self, min_recall: float | None = None) -> int:
        """The most severe code of the sessions that could not be read, and a check's finding (1)
        when a run failed or a figure fell below MIN_RECALL."""
        return self.sessions.exit_code(check_failed=self.failed or bool(self.below(min_recall)))

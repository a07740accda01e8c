"""`eval --stress`: what lands while a compaction runs, and the integrity after each (docs/eval.md#stress).

A live agent keeps writing while its summariser works: a tool that was running finishes, the
user interrupts the turn, a new turn starts. Before each compaction of the drive a turn opens
with two tool calls still running; while the summariser runs (after its answer, before the
commit, outside the lock, as an agent's writes land) one call's result comes in late, the
user cancels the turn (the other call never answers) and a new turn is appended — all through
the same boundary-repairing append the command line uses. After the commit the view is
checked: every pairing problem a provider would refuse (a dangling call of a closed turn, an
orphan or duplicate result) and every refusal of the two provider shapes is a violation.
"""
from __future__ import annotations

from typing import Any

from ..errors import DataError
from ..session.store import Session
from ..view.boundary import append_with_repairs
from ..view.fold import view
from ..view.integrity import PairingChecker
from ..view.providers import FORMATS, sendable

STRESS_TOOL = "stress_probe"


def provider_violations(items: list[dict[str, Any]]) -> int:
    """How many of the two provider shapes reject these items (0, 1 or 2)."""
    ok, _ = sendable(items)
    bad = 0
    for build, validate in FORMATS.values():
        try:
            validate(build(ok))
        except DataError:
            bad += 1
    return bad


class Stress:
    """The writes around one session's compactions, and the checks after them."""

    def __init__(self, copy: Session) -> None:
        self.copy = copy
        self.n = 0
        self.checks = 0  # compactions checked
        self.violations = 0  # problems found after them

    def _ids(self) -> tuple[str, str]:
        return f"stress-{self.n}-late", f"stress-{self.n}-cancelled"

    def before(self) -> None:
        """A turn whose two tools are still running when the compaction starts."""
        self.n += 1
        late, cancelled = self._ids()
        append_with_repairs(self.copy, [
            {"kind": "message", "id": f"stress-{self.n}-u", "role": "user", "text": f"Stress turn {self.n}: run both probes."},
            {"kind": "message", "id": f"stress-{self.n}-a", "role": "assistant", "text": "Running both probes."},
            {"kind": "tool_call", "call_id": late, "name": STRESS_TOOL, "args": {"probe": "late"}},
            {"kind": "tool_call", "call_id": cancelled, "name": STRESS_TOOL, "args": {"probe": "cancelled"}},
        ], warn=None)

    def during(self) -> None:
        """While the summariser runs: a late result, the turn cancelled, a new turn."""
        late, _cancelled = self._ids()
        append_with_repairs(self.copy, [{"kind": "tool_result", "call_id": late, "output": "probe finished late", "is_error": False}], warn=None)
        append_with_repairs(self.copy, [  # (its own write: the repair it needs says `cancelled`)
            {"kind": "message", "id": f"stress-{self.n}-stop", "role": "user", "text": "[Request interrupted by user]", "synthetic": "interrupted"},
        ], warn=None)
        append_with_repairs(self.copy, [
            {"kind": "message", "id": f"stress-{self.n}-next", "role": "user", "text": f"Stress turn {self.n}: carry on."},
            {"kind": "message", "id": f"stress-{self.n}-reply", "role": "assistant", "text": "Carrying on."},
        ], warn=None)

    def check(self) -> int:
        """The view's violations after a commit (counted, and returned)."""
        items = view(self.copy)
        checker = PairingChecker(keep=1 << 30)
        for item in items:
            checker.feed(item)
        found = len(checker.finish().found) + provider_violations(items)
        self.checks += 1
        self.violations += found
        return found

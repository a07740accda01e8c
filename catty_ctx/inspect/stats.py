"""Calibration: the distributions the constants should be chosen from (docs/design.md#m13,
`inspect ROOT --stats`).

The seed's numbers (a 40 KB tool output, 20,000 characters of terminal, 85 % of the window,
…) are one runtime's choices. This reads a ROOT's sessions once each and gives, for the
quantities those constants cut, their distribution on one's own traces: tool output sizes
(terminal outputs apart), turn sizes, the context at each compaction and the time between
compactions, each with the share over the constant that applies to it today; and, per model,
the estimator's error: the estimate of each request the view shows (`bytes_per_token`,
`image_tokens`) over the prompt size its provider reported, so the divisor can be set from
one's own traces.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from .. import defaults
from ..errors import CattyError
from ..session.blobs import ShellCalls
from ..session.events import DEFAULT_WINDOW, is_real_user
from ..view.fold import ViewStats, exclusion, iter_view, plan_file

PERCENTILES = (50, 90, 95, 99)
# metric -> (unit, what it is, the constant that cuts it: its name in the config file, or None)
METRICS: dict[str, tuple[str, str, str | None]] = {
    "tool_output_bytes": ("bytes", "a tool result's output (terminal outputs apart)", "tool_limit"),
    "terminal_output_chars": ("characters", "a shell tool's output", "shell_limit"),
    "user_message_bytes": ("bytes", "a user message", "user_limit"),
    "turn_tokens": ("tokens", "a turn's messages, calls and results (estimated, 4 bytes a token)", None),
    "turn_tool_calls": ("calls", "the tool calls of a turn", None),
    "compaction_context_percent": ("% of window", "the context when a compaction ran", "default_threshold"),
    "compaction_context_tokens": ("tokens", "the context when a compaction ran", None),
    "seconds_between_compactions": ("seconds", "from one compaction to the next in a session", None),
}


def _ts(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class _Collect:
    """The samples of one session, streamed."""

    def __init__(self, out: dict[str, list[float]]) -> None:
        self.out = out
        self.shells = ShellCalls()
        self.turn_tokens = 0
        self.turn_calls = 0
        self.in_turn = False
        self.window = DEFAULT_WINDOW
        self.last_compaction: float | None = None

    def _close_turn(self) -> None:
        if self.in_turn:
            self.out["turn_tokens"].append(self.turn_tokens)
            self.out["turn_tool_calls"].append(self.turn_calls)
        self.turn_tokens = self.turn_calls = 0

    def feed(self, ev: dict[str, Any]) -> None:
        kind = ev["kind"]
        if kind == "session" and type(ev.get("window")) is int and ev["window"] > 0:
            self.window = ev["window"]
        shell = self.shells.see(ev)
        if ev.get("agent") is not None:
            return  # the main loop's turns; a subagent's are its own (inspect --agent)
        if kind == "message":
            text: str = ev["text"] if isinstance(ev.get("text"), str) else ""
            size = ev["bytes"] if type(ev.get("bytes")) is int else len(text.encode("utf-8", "surrogatepass"))
            if is_real_user(ev):
                self._close_turn()
                self.in_turn = True
                self.out["user_message_bytes"].append(size)
            self.turn_tokens += size // 4
        elif kind == "tool_call":
            self.turn_calls += 1
            args = ev.get("args")
            self.turn_tokens += (len(args) if isinstance(args, str) else len(str(args))) // 4
        elif kind == "tool_result":
            output: str = ev["output"] if isinstance(ev.get("output"), str) else ""
            size = ev["bytes"] if type(ev.get("bytes")) is int else len(output.encode("utf-8", "surrogatepass"))
            self.turn_tokens += size // 4
            if shell:
                self.out["terminal_output_chars"].append(size if "blob" in ev else len(output))
            else:
                self.out["tool_output_bytes"].append(size)
        elif kind == "compaction":
            before = ev.get("tokens_before")
            if type(before) is int:
                self.out["compaction_context_tokens"].append(before)
                self.out["compaction_context_percent"].append(round(100 * before / self.window, 2))
            at = _ts(ev.get("ts"))
            if at is not None and self.last_compaction is not None:
                self.out["seconds_between_compactions"].append(round(at - self.last_compaction, 3))
            self.last_compaction = at

    def finish(self) -> None:
        self._close_turn()


def distribution(values: list[float], constant: float | None = None) -> dict[str, Any]:
    """Count, min, percentiles (nearest rank), max, mean; with CONSTANT the share above it."""
    if not values:
        return {"count": 0}
    v = sorted(values)
    n = len(v)
    out: dict[str, Any] = {"count": n, "min": v[0]}
    for p in PERCENTILES:
        out[f"p{p}"] = v[max(0, -(-p * n // 100) - 1)]
    out["max"] = v[-1]
    out["mean"] = round(sum(v) / n, 2)
    if constant is not None:
        out["over"] = round(sum(1 for x in v if x > constant) / n, 4)
    return out


def _estimates(session: Any, col: _Collect, ratios: dict[str, list[float]]) -> None:
    """Feed COL every event of SESSION while the view streams, and add to RATIOS, per model,
    estimate / provider prompt of each main-loop request on the live view (after the latest
    compaction, off any rewound branch: before them the view held other items)."""
    plan = plan_file(session.log_path)
    excluded = exclusion(plan.excluded)
    after = plan.compaction["through_seq"] if plan.compaction else -1
    vstats = ViewStats()

    def tap(events: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
        for ev in events:
            col.feed(ev)
            if ev["kind"] == "usage" and ev.get("agent") is None and ev["seq"] > after and not excluded(ev["seq"]):
                prompt = sum(int(ev.get(k) or 0) for k in ("input", "cache_read", "cache_write"))
                if prompt > 0 and isinstance(ev.get("model"), str):
                    estimate = vstats.sum_tokens + (vstats.schema_tokens or 0)
                    ratios.setdefault(ev["model"], []).append(round(estimate / prompt, 4))
            yield ev

    for _ in iter_view(tap(session.events(warn=None)), plan, stats=vstats):
        pass


def root_stats(sessions: Iterable[Any], *, open_session: Callable[[Any], Any], on_error: Callable[[Any, Exception], None]) -> dict[str, Any]:
    """The distributions over SESSIONS (each opened with OPEN_SESSION; a broken one reported
    through ON_ERROR and left out)."""
    samples: dict[str, list[float]] = {name: [] for name in METRICS}
    ratios: dict[str, list[float]] = {}
    read = 0
    for target in sessions:
        try:
            with open_session(target) as session:
                col = _Collect(samples)
                _estimates(session, col, ratios)
                col.finish()
            read += 1
        except CattyError as exc:
            on_error(target, exc)
    dists: dict[str, Any] = {}
    for name, (unit, what, constant) in METRICS.items():
        value = getattr(defaults, constant.upper()) if constant else None
        row = {"unit": unit, "what": what, **distribution(samples[name], value)}
        if constant:
            row["constant"] = constant
            row["value"] = value
        dists[name] = row
    # The estimator against the providers: estimate / reported prompt, per model (1.0 is exact;
    # above 1 it over-counts). Median and p90 say which bytes_per_token fits one's own traces.
    estimator = {model: {"unit": "estimate / actual", **distribution(v)} for model, v in sorted(ratios.items())}
    return {"sessions": read, "distributions": dists, "estimator": estimator}

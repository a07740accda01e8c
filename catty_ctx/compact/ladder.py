"""The summariser interface and grok-build's retry rules and input ladder (docs/design.md#m6).

The types every summariser speaks (`SummaryRequest`, `SummaryResult`, `Summarizer`), the
prompt, and `run_ladder`, which the model summarisers of `summarizers.py` share: up to 3
attempts per stage with backoff; transient errors (5xx, 429, timeouts, dropped connections) and degenerate summaries are retried,
deterministic errors stop; an input-overflow error moves to the next stage of the ladder
verbatim → fitted (window − 32,768 − tool-schema tokens) → lossy (70% of the window, tool
results dropped, calls written as "[Called tools: …]", images as "[image]").
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..defaults import ATTEMPTS_PER_STAGE, FITTED_RESERVE, LOSSY_FRACTION, MIN_SUMMARY_CHARS, RETRY_BACKOFF
from ..errors import CattyError, ExitCode
from ..view.fold import tool_schema_tokens  # noqa: F401 - re-exported (the ladder's budgets leave room for them)
from ..view.tokens import item_tokens, size_tokens

Item = dict[str, Any]

BACKOFF_S = RETRY_BACKOFF
CMD_TIMEOUT_S = 600.0
HTTP_TIMEOUT_S = 300.0  # the whole of one request: connection, answer, body

SYSTEM_PROMPT = (
    "You summarise a coding agent's conversation so that the agent can continue the work "
    "after its context is cleared. Be precise: keep file paths, commands, error messages, "
    "identifiers and every constraint the user stated."
)
INSTRUCTION = """Write a summary of the conversation above, wrapped in <summary> … </summary>, with these nine sections:
1. Primary Request and Intent: what the user asked for, in detail.
2. Key Technical Concepts: technologies, libraries, names that matter.
3. Files and Code Sections: files read, edited or created, and why; key code.
4. Errors and Fixes: each error met, and how it was fixed (or that it was not).
5. Problem Solving: what was tried, what was decided.
6. All User Messages: every message the user wrote (not tool results), with its constraints.
7. Pending Tasks: what is still to be done.
8. Current Work: exactly what was being worked on just before this summary.
9. Optional Next Step: the next step, only if it follows directly from the latest request.
If an earlier summary appears in the conversation, fold its content into yours: nothing it kept may be lost."""


class SummarizerError(CattyError):
    """The summariser could not produce a summary (exit 75: retry later; 65: refused input)."""

    exit_code = ExitCode.TEMP_FAIL


class WindowTooSmall(SummarizerError):
    """Nothing of the conversation fits the window: no compaction is committed (exit 65)."""

    exit_code = ExitCode.DATA


class Transient(Exception):
    pass


class Deterministic(Exception):
    pass


class Overflow(Exception):
    pass


# -- timings ---------------------------------------------------------------------------------


class StreamTimer:
    """Streaming timings in O(1) memory: first and last delta, delta count, largest gap."""

    __slots__ = ("deltas", "ends", "first", "last", "max_gap", "start")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.start = clock()
        self.ends: float | None = None  # when the compaction's deadline passes (monotonic), if it has one
        self.first: float | None = None
        self.last: float | None = None
        self.deltas = 0
        self.max_gap = 0.0

    def time_left(self, bound: float) -> float:
        """BOUND (a call's own timeout) or what is left of the deadline, whichever is less."""
        if self.ends is None:
            return bound
        return max(0.05, min(bound, self.ends - time.monotonic()))

    def delta(self, now: float) -> None:
        if self.first is None:
            self.first = now
        elif self.last is not None and now - self.last > self.max_gap:
            self.max_gap = now - self.last
        self.last = now
        self.deltas += 1

    def report(self, end: float) -> dict[str, Any]:
        ms = lambda s: round(s * 1000, 1)  # noqa: E731
        return {
            "ttft_ms": ms(self.first - self.start) if self.first is not None else None,
            "stream_ms": ms(self.last - self.first) if self.first is not None and self.last is not None else None,
            "deltas": self.deltas,
            "max_gap_ms": ms(self.max_gap),
            "total_ms": ms(end - self.start),
        }


# -- requests and results --------------------------------------------------------------------


@dataclass
class SummaryRequest:
    """What a summariser gets: the view items to fold, the state to keep, the window."""

    items: list[Item]
    state: dict[str, Any] = field(default_factory=dict)
    window: int = 200_000
    tool_schema_tokens: int = 0
    deadline: float | None = None  # seconds the whole ladder may take (None: no bound)


@dataclass
class SummaryResult:
    summary: str | None
    summarizer: str
    stage: str | None = None
    error: str | None = None
    error_class: str | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, Any] = field(default_factory=dict)
    raw: str | None = None  # the whole answer of the successful attempt (two-pass NOTE1 reads it)

    def to_json(self) -> dict[str, Any]:
        return {
            "summarizer": self.summarizer,
            "summary": self.summary,
            "stage": self.stage,
            "error": self.error,
            "error_class": self.error_class,
            "attempts": self.attempts,
            "timings": self.timings,
        }


class Summarizer:
    """One interface: `summarize(request) -> SummaryResult` (never raises for model errors)."""

    id = "summarizer"

    def summarize(self, req: SummaryRequest) -> SummaryResult:  # pragma: no cover - interface
        raise NotImplementedError


# -- prompt and the input ladder -------------------------------------------------------------


def _one_line(value: Any, limit: int = 0) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text[:limit] + "…" if limit and len(text) > limit else text


def render_transcript(items: Iterable[Item]) -> str:
    """Items as a plain transcript: a model reads it whatever its tool-call format."""
    out: list[str] = []
    for it in items:
        role = it.get("role")
        if role == "tool":
            flag = " (error)" if it.get("is_error") else ""
            shots = "".join(" [image]" for _ in it.get("images") or ())  # a screenshot tool's images
            out.append(f"[tool result {it.get('call_id')}{flag}]\n{it.get('output', '')}{shots}")
            continue
        tag = f"{role} ({it['synthetic']})" if it.get("synthetic") else str(role)
        text = it.get("text") or ""
        if it.get("images"):
            text += "".join(" [image]" for _ in it["images"])
        calls = it.get("tool_calls") or ()
        lines = [f"[{tag}]"] + ([text] if text else [])
        lines += [f"→ call {c.get('call_id')}: {c.get('name')}({_one_line(c.get('args'))})" for c in calls]
        out.append("\n".join(lines))
    return "\n\n".join(out)


@dataclass
class Prompt:
    system: str
    user: str

    def messages(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user}]

    def text(self) -> str:
        return f"{self.system}\n\n{self.user}"


def build_prompt(items: Sequence[Item]) -> Prompt:
    return Prompt(SYSTEM_PROMPT, f"<conversation>\n{render_transcript(items)}\n</conversation>\n\n{INSTRUCTION}")


def fit_items(items: Sequence[Item], budget: int) -> list[Item]:
    """Keep the leading system item, then whole items walking back from the end within budget;
    the kept tail never starts on a tool result (its call would be missing)."""
    lead: list[Item] = [items[0]] if items and items[0].get("role") == "system" else []
    used = sum(item_tokens(i) for i in lead)
    tail: list[Item] = []
    for it in reversed(items[len(lead):]):
        t = item_tokens(it)
        if used + t > budget:
            break
        used += t
        tail.append(it)
    tail.reverse()
    while tail and tail[0].get("role") == "tool":
        tail.pop(0)
    return lead + tail


def lossy_items(items: Iterable[Item]) -> list[Item]:
    """Tool results dropped, calls as "[Called tools: a, b]", images as "[image]"."""
    out: list[Item] = []
    for it in items:
        if it.get("role") == "tool":
            continue
        new = {k: v for k, v in it.items() if k not in ("tool_calls", "images")}
        text = new.get("text") or ""
        if it.get("images"):
            text += " [image]" * len(it["images"])
        if it.get("tool_calls"):
            names = ", ".join(str(c.get("name")) for c in it["tool_calls"])
            text = (text + "\n" if text else "") + f"[Called tools: {names}]"
        new["text"] = text
        out.append(new)
    return out


def _stage_items(stage: str, req: SummaryRequest) -> list[Item]:
    if stage == "verbatim":
        return req.items
    if stage == "fitted":
        return fit_items(req.items, max(0, req.window - FITTED_RESERVE - req.tool_schema_tokens))
    return fit_items(lossy_items(req.items), max(0, int(req.window * LOSSY_FRACTION) - req.tool_schema_tokens))


STAGES = ("verbatim", "fitted", "lossy")


def holds_conversation(items: Sequence[Item]) -> bool:
    """A fitted input worth sending: something besides the leading system item. With a
    window of 32,768 tokens or less the fitted budget is 0, and grok-build would send the
    system item alone and call what came back a summary."""
    return any(it.get("role") != "system" for it in items)
_SUMMARY_BLOCK = re.compile(r"<summary>(.*?)</summary>", re.S)
_ANALYSIS_BLOCK = re.compile(r"<analysis>.*?</analysis>", re.S)


def extract_summary(text: str) -> str:
    """The last <summary> block, else the whole answer without its <analysis>."""
    blocks = _SUMMARY_BLOCK.findall(text)
    if blocks:
        return blocks[-1].strip()
    return _ANALYSIS_BLOCK.sub("", text).strip()


# A model call answers its text, or its text and the tokens the provider reported for it
# ({"input": n, "output": n}, maybe "cache_read", "reasoning", "request_id").
CallOnce = Callable[[Prompt, StreamTimer], "str | tuple[str, dict[str, Any] | None]"]


def call_usage(prompt: Prompt, text: str, reported: dict[str, Any] | None) -> dict[str, Any]:
    """The spend of one answered call: the provider's count, else an estimate (flagged) by
    the estimator's rule, bytes / 4, of what went in and what came out."""
    if reported:
        return dict(reported)
    return {"input": size_tokens(len(prompt.text().encode())), "output": size_tokens(len(text.encode())), "estimated": True}


def run_ladder(
    sid: str,
    req: SummaryRequest,
    call_once: CallOnce,
    *,
    attempts: int = ATTEMPTS_PER_STAGE,
    backoff: float = BACKOFF_S,
    min_chars: int = MIN_SUMMARY_CHARS,
    sleep: Callable[[float], None] = time.sleep,
) -> SummaryResult:
    """Retry rules and the overflow ladder around one model call, within `req.deadline` seconds:
    no attempt starts after it and no wait outlasts it (the call's own bound is the caller's,
    see `time_left`)."""
    result = SummaryResult(None, sid)
    last_error = "no attempt made"
    too_small = False
    ends = None if req.deadline is None else time.monotonic() + req.deadline

    def out_of_time(stage: str) -> bool:
        if ends is None or time.monotonic() < ends:
            return False
        result.error = f"the compaction's deadline ({req.deadline:g} s) passed before the summariser answered ({last_error})"
        result.error_class, result.stage = "deadline", stage
        return True

    for stage in STAGES:
        items = _stage_items(stage, req)
        too_small = stage != "verbatim" and not holds_conversation(items)
        if too_small:  # nothing to send at this stage: the next one has a larger budget
            result.attempts.append({"stage": stage, "attempt": 0, "input_items": len(items), "outcome": "too_small"})
            continue
        prompt = build_prompt(items)
        overflow = False
        for n in range(1, attempts + 1):
            if out_of_time(stage):
                return result
            timer = StreamTimer()
            timer.ends = ends
            record: dict[str, Any] = {"stage": stage, "attempt": n, "input_items": len(items)}
            try:
                answer = call_once(prompt, timer)
            except Overflow as exc:
                record.update(outcome="overflow", error=str(exc))
                overflow = True
            except Transient as exc:
                record.update(outcome="transient", error=str(exc))
                last_error = str(exc)
            except Deterministic as exc:
                record.update(outcome="deterministic", error=str(exc), timings=timer.report(time.monotonic()))
                result.attempts.append(record)
                result.error, result.error_class, result.stage = str(exc), "deterministic", stage
                return result
            else:
                text, reported = answer if isinstance(answer, tuple) else (answer, None)
                record["usage"] = call_usage(prompt, text, reported)
                summary = extract_summary(text)
                record["summary_chars"] = len(summary)
                timings = timer.report(time.monotonic())
                record["timings"] = timings
                if len(summary) >= min_chars:
                    record["outcome"] = "success"
                    result.attempts.append(record)
                    result.summary, result.stage, result.timings, result.raw = summary, stage, timings, text
                    return result
                record["outcome"] = "degenerate"
                last_error = f"degenerate summary ({len(summary)} characters, fewer than {min_chars})"
            record.setdefault("timings", timer.report(time.monotonic()))
            result.attempts.append(record)
            if overflow:
                break
            if n < attempts and record["outcome"] != "degenerate":
                # A service that failed may answer after a wait; a short answer is the model's
                # own doing, asked again at once (waiting 3 s and 6 s bought nothing but time).
                wait = backoff * (2 ** (n - 1))
                sleep(wait if ends is None else max(0.0, min(wait, ends - time.monotonic())))
        if not overflow:
            result.error, result.error_class, result.stage = f"{last_error} after {attempts} attempts", "exhausted", stage
            return result
        last_error = "input too long for the model"
    if too_small:
        result.error = (f"the window ({req.window:,} tokens) is too small: the model refused the whole input, "
                        "and no fitted input holds more than the system item; nothing was compacted")
        result.error_class, result.stage = "too_small", "lossy"
        return result
    result.error, result.error_class, result.stage = "input too long for the model even after the lossy stage", "overflow", "lossy"
    return result

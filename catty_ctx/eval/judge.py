"""The successor check: a model given only the resumed request is asked about each fact.

Each question shows the first half of a fact (by words, or by characters for one word) and
asks for it in full, word for word; the answer counts when it contains the fact's exact text.
The judge is a `cmd:CMD` (question on stdin, answer on stdout) or an `openai:MODEL`
endpoint, reached through the summarisers' own single-call transport (compact/transport.py:
no redirect to another origin, one deadline per question, a cap on the answer; no retries: a
judge that fails fails the session, since its figures would mean nothing).
"""
from __future__ import annotations

import re
from typing import Any

from ..compact.ladder import Prompt, StreamTimer, render_transcript
from ..compact.summarizers import get_summarizer
from ..errors import CattyError, ExitCode, UsageError
from .facts import Fact

SYSTEM = (
    "You are checking what an agent still knows after its context was compacted. Answer only "
    "from the conversation you are given. Quote text exactly as it appears there."
)


class JudgeError(CattyError):
    exit_code = ExitCode.TEMP_FAIL


def question(fact: Fact) -> str:
    """Ask for the fact in full from its first half."""
    words = list(re.finditer(r"\S+", fact.text))
    # Exactly as written, spaces and all.
    shown = fact.text[: words[len(words) // 2 - 1].end()] if len(words) >= 2 else fact.text[: max(1, len(fact.text) // 2)]
    what = {"state": "work still in progress", "instruction": "instruction", "detail": "detail"}[fact.kind]
    return (
        f"A {what} in the conversation above begins with «{shown}». "
        "Quote the whole of it, word for word, on one line, and nothing else."
    )


class Judge:
    def __init__(self, spec: str, *, timeout: float | None = None, max_response_bytes: int | None = None) -> None:
        kind = spec.partition(":")[0]
        if kind not in ("cmd", "openai"):
            raise UsageError(f"unknown judge '{spec}' (use cmd:CMD or openai:MODEL)")
        options: dict[str, Any] = {"timeout": timeout} if timeout is not None else {}
        if max_response_bytes is not None:
            options["max_response_bytes"] = max_response_bytes
        self.spec = spec
        self.model = get_summarizer(spec, **options)

    def ask(self, context: str, fact: Fact) -> str:
        prompt = Prompt(SYSTEM, f"<conversation>\n{context}\n</conversation>\n\n{question(fact)}")
        try:
            answer = self.model.call_once(prompt, StreamTimer())  # type: ignore[attr-defined]  # every model summarizer has call_once
        except Exception as exc:
            raise JudgeError(f"judge {self.spec}: {exc}") from None
        # A model summariser may hand back (text, the provider's usage): the judge wants the text.
        return answer[0] if isinstance(answer, tuple) else answer

    def check(self, items: list[dict[str, Any]], facts: list[Fact]) -> int:
        """How many facts the judge gives back in full."""

        context = render_transcript(items)
        return sum(1 for f in facts if f.text in self.ask(context, f))

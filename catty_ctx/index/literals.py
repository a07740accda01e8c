"""The strings a match must hold, for asking the index (docs/search.md#the-index).

A fixed string is its own needle, as JSON writes it (the bytes `search` looks for in a file).
A regular expression gives the runs of plain characters its every match holds: literals in
sequence at its top level (none under an alternation or an optional part), kept only when
they are made of characters no JSON writer escapes, so that a file holding a match holds them
as they are. None: nothing is certain, every file is a candidate.
"""
from __future__ import annotations

import importlib
import re
import string
import sys

# The standard library's own parser of patterns (re._parser; sre_parse before 3.11).
sre_parse = importlib.import_module("re._parser" if sys.version_info >= (3, 11) else "sre_parse")

_PLAIN = frozenset(string.ascii_letters + string.digits + " _-.,:;()[]{}=+*#@!?%$'|~^`")


def needles(pattern: str, *, regex: bool, ignore_case: bool, needle: bytes | None) -> list[str] | None:
    """The strings every file holding a match of PATTERN holds (NEEDLE: a fixed string's bytes as
    `search` looks for them), or None when none is known."""
    if not regex:
        return None if needle is None else [needle.decode("utf-8")]
    try:
        parsed = sre_parse.parse(pattern, re.I if ignore_case else 0)
    except (re.error, RecursionError):
        return None
    runs: list[str] = []
    run: list[str] = []
    for op, arg in parsed:
        if op is sre_parse.LITERAL and chr(arg) in _PLAIN:
            run.append(chr(arg))
            continue
        if run:
            runs.append("".join(run))
        run = []
    if run:
        runs.append("".join(run))
    found = [r for r in runs if len(r) >= 3]
    return found or None


def folds_case(pattern: str) -> bool:
    """Whether the regular expression PATTERN sets case folding for all of itself (`(?i)`)."""
    try:
        return bool(sre_parse.parse(pattern).state.flags & re.I)
    except (re.error, RecursionError):
        return True

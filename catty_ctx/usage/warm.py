"""A question asked before about unchanged files, answered before the rest of catty-ctx loads (docs/usage.md#speed-and-the-cache).

`usage` asks the answer cache first, as `pipeline.usage` does, by the same steps and the same
key (`answers.question`, `answers.query_key`) over the same walk (`walk.survey`, its folder
listings kept). This module imports only what that needs (no enum, typing, re, datetime unless
a date is asked): the command line's entry point calls it before the CLI loads, and prints the
answer's kept bytes when there is one. Anything else, and any doubt, is the full run's.
"""
from __future__ import annotations

import os

from ..fleet.urlname import is_url
from .answers import answers_path, query_key, question, read_answers
from .pricefiles import price_files
from .walk import Listings, homes, survey

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .walk import Survey


# What the entry point's lookup read and walked when it found no answer to print: the full run that
# follows in the same process takes it (`taken`) rather than reading and walking again.
_left: tuple[list[str], dict[str, Any], Listings, Survey] | None = None


def cached(paths: list[str], *, by: str = "model", since: str | None = None, until: str | None = None,
           timezone_name: str | None = None, prices_file: str | None = None, allow_empty: bool = False,
           leave_walk: bool = False) -> dict[str, Any] | None:
    """The kept answer `pipeline.usage` would serve (with the cache, not --strict, no cluster) for
    these arguments: the ledger's fields, the scan's counts and the printed forms (see
    `pipeline._usage`); None when there is none (or PATHS hold a URL or stdin, which are never cached).
    An error (a missing PATH, an unreadable price table, a bad date) is raised as the full run
    would raise it, before anything is looked up. LEAVE_WALK (the entry point, whose full run follows
    at once unless it prints the answer, `forget` then): the answer cache as read and the walk are left for `taken`."""
    global _left
    _left = None
    sources = None
    if not paths:
        sources, _looked = homes()
        if not sources:
            return None
        paths = [folder for _agent, folder in sources]
    if any(p == "-" or is_url(p) for p in paths):
        return None
    lo, hi = days_asked(since, until)
    prices = price_files(prices_file)
    kept = read_answers(answers_path(paths))
    answers = kept.get("answers")
    if type(answers) is not dict or not answers:
        return None
    listings = Listings(kept.get("dirs"))
    found = survey(paths, listings)
    hit = None if refused_empty(found, sources, allow_empty) else \
        answers.get(query_key(found, question(by, timezone_name, lo, hi, prices, allow_empty, sources)))  # (an empty PATH: refused in full)
    if leave_walk:
        _left = (list(paths), kept, listings, found)
    return hit if type(hit) is dict else None


def taken(paths: Sequence[str | os.PathLike[str]]) -> tuple[dict[str, Any], Listings, Survey] | None:
    """What the entry point's lookup left of PATHS (`cached(leave_walk=True)`): the answer cache as read,
    the folder listings and the walk; once, then None."""
    global _left
    left, _left = _left, None
    if left is None or left[0] != [os.fspath(p) for p in paths]:
        return None
    return left[1], left[2], left[3]


def forget() -> None:
    """Drop what the entry point's lookup left (its answer was printed: no full run follows)."""
    global _left
    _left = None


def days_asked(since: str | None, until: str | None) -> tuple[str | None, str | None]:
    """The days --since and --until name, checked (`times.parse_day`: a bad one raises); datetime is
    imported only when a date is asked."""
    if not (since or until):
        return None, None
    from .times import parse_day

    return parse_day(since) if since else None, parse_day(until) if until else None


def refused_empty(found: Survey, sources: list[tuple[str, str]] | None, allow_empty: bool) -> bool:
    """Whether a PATH named (not a home looked for) holds no log and --allow-empty was not given: the
    full run refuses it (`pipeline._refusal`), once the others are read; no answer is kept for it."""
    return sources is None and not allow_empty and any(not files for _arg, files in found)


def printed(hit: dict[str, Any] | None, form: str) -> bytes | None:
    """What `usage` prints to a pipe in FORM ("json": --json, "lines": JSON Lines) for HIT when
    it prints nothing to stderr (no unreadable line, no incomplete session: their warnings are
    the full run's), else None."""
    if hit is None or hit.get("bad_lines") or type(hit.get("ledger")) is not dict or hit["ledger"].get("incomplete") is not False:
        return None
    rendered = hit.get("rendered")
    data = rendered.get(form) if type(rendered) is dict else None
    return data if type(data) is bytes else None

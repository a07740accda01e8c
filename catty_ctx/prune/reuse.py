"""Comparing requests: the common prefix of two requests (what a prompt cache reuses)."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import DataError, UsageError
from ..session.jsonl import json_lines
from ..view.fingerprint import canonical
from ..view.fold import ViewItem

# -- comparing requests ----------------------------------------------------------------------


@dataclass
class PrefixReuse:
    items: int = 0  # items of the common prefix
    tokens: int = 0  # their tokens
    request_items: int = 0
    request_tokens: int = 0
    first_change_index: int | None = None
    first_change_seq: Any = None

    @property
    def ratio(self) -> float:
        return self.tokens / self.request_tokens if self.request_tokens else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["reuse"] = round(self.ratio, 4)
        return d

    def track(self, previous: Iterable[bytes], current: Iterable[ViewItem]) -> Iterator[ViewItem]:
        """Pass `current` through, measuring its common prefix with `previous` on the way."""
        prev = iter(previous)
        same = True
        for vi in current:
            self.request_items += 1
            self.request_tokens += vi.tokens
            if same:
                if next(prev, None) == vi.canon:
                    self.items += 1
                    self.tokens += vi.tokens
                else:
                    same = False
                    self.first_change_index = self.request_items - 1
                    self.first_change_seq = vi.item.get("seq")
            yield vi


def prefix_reuse(previous: Iterable[bytes], current: Iterable[ViewItem]) -> PrefixReuse:
    """The longest common prefix of two requests (canonical item equality, which is what the
    fingerprint chain hashes), in items and in the current request's tokens."""
    res = PrefixReuse()
    for _ in res.track(previous, current):
        pass
    return res


def item_lines_canon(path: str) -> list[bytes]:
    """Canonical forms of the items of an item stream file (an earlier prune output)."""

    out = []
    try:
        with open(path, "rb") as f:
            # Every line of it is checked: a bad last line is an error, as any other.
            for lineno, item in json_lines(f, path):
                if not isinstance(item, dict) or "role" not in item:
                    raise DataError("not a view item (an object with 'role')", path=path, line=lineno)
                out.append(canonical(item))
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None
    return out

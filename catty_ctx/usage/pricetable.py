"""The price library's data shipped with the package: names resolved as the library resolves them, without loading it (docs/usage.md#cost).

genai-prices' import (pydantic and a 1.6 MB data module) costs a first run, one with no price
index yet, more than reading a home of logs. So each release ships `pricetable.bin`: the
library's providers and models as it orders them, with their match rules and price periods
(`library._periods`), made from the installed library by `python -m catty_ctx.usage.library`.
It stands for that library only: it is read when the installed library is the very one it was
made from (its version and the size and digest of its data module); beside any other, the
library itself is asked, as before. A name is resolved here as `library._from_library` resolves
it: the same candidates, and `find_provider_model`'s rules (the provider by id or by its model
rule, then its models in order, its fallback providers', and a compact date suffix spelled out).
"""
from __future__ import annotations

import os
import re
import zlib
from datetime import date

import msgspec
import xxhash

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Resolved = tuple[str, str, list[Any]] | None  # as `library.Resolved` (which imports this module): provider, model, periods

FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pricetable.bin")
# The library's compact date suffix, which its lookup spells out when a name matches no model as
# written (genai-prices 0.2.5; the test of every name against the library holds it to the library's).
COMPACT_DATE = r"(-)(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?=-|:|$)"
_LITELLM = "litellm"


class Table:
    """The shipped providers, each (id, provider rule, model rule, fallback provider ids, models: (id, rule, periods)).

    A provider's models are kept as their own MessagePack, decoded when a name is first looked up
    among them: a run prices a few models of a few providers, and decoding the 2,300 models of all
    was most of the table's load."""

    def __init__(self, providers: list[Any], compact_date: str) -> None:
        self.providers = providers
        self.by_id = {p[0]: p for p in providers}
        self.compact_date = re.compile(compact_date)
        self._regex: dict[str, re.Pattern[str]] = {}

    def resolve(self, candidates: list[tuple[str | None, str]]) -> Resolved:
        """`library._from_library` over CANDIDATES (provider id or None, model reference)."""
        for provider_id, ref in candidates:
            got = self._provider_model(ref, provider_id)
            if got is not None:
                provider, model = got
                if model[2]:
                    return provider[0], model[0], [(first, tuple(at), tuple(above)) for first, at, above in model[2]]
        return None

    def _provider_model(self, ref: str, provider_id: str | None) -> tuple[Any, Any] | None:
        """genai-prices' `find_provider_model(ref, None, provider_id, None)`; None where it raises LookupError."""
        ref = ref.lower()
        if provider_id and provider_id.lower() == _LITELLM and "/" in ref:
            actual, rest = ref.split("/", 1)
            if actual and self._by_id(actual) is not None:
                provider_id, ref = actual, rest
        provider = self._provider(ref, provider_id)
        if provider is None:
            return None
        model = self._model(provider, ref)
        return (provider, model) if model is not None else None

    def _by_id(self, provider_id: str) -> Any:
        wanted = provider_id.lower().strip()
        found = self.by_id.get(wanted)
        if found is not None:
            return found
        return next((p for p in self.providers if p[1] is not None and self._match(p[1], wanted)), None)

    def _provider(self, ref: str, provider_id: str | None) -> Any:
        if provider_id is not None:
            found = self._by_id(provider_id)
            if found is not None or provider_id.lower() != _LITELLM:
                return found
        if ref:
            return next((p for p in self.providers if p[2] is not None and self._match(p[2], ref)), None)
        return None

    def _model(self, provider: Any, ref: str) -> Any:
        ref = ref.lower()
        model = self._match_model(provider, ref, True)
        if model is not None:
            return model
        spelled = self.compact_date.sub(_spelled_date, ref)
        return self._match_model(provider, spelled, True) if spelled != ref else None

    def _match_model(self, provider: Any, ref: str, fall_back: bool) -> Any:
        if type(provider[4]) is bytes:
            provider[4] = msgspec.msgpack.decode(provider[4])
        for model in provider[4]:
            if self._match(model[1], ref.lower()):
                return model
        if provider[3] and fall_back:
            for fallback in provider[3]:
                other = self.by_id.get(fallback)
                if other is not None:
                    model = self._match_model(other, ref, False)  # (one step of fallback, as the library takes)
                    if model is not None:
                        return model
        return None

    def _match(self, rule: Any, text: str) -> bool:
        """genai-prices' clause of RULE on TEXT: ["equals", s], ["starts_with", s], ["ends_with", s],
        ["contains", s], ["regex", pattern], ["or", rules] or ["and", rules]."""
        kind, arg = rule
        if kind == "equals":
            return bool(text.lower() == arg)
        if kind == "starts_with":
            return text.lower().startswith(arg)
        if kind == "contains":
            return arg in text.lower()
        if kind == "ends_with":
            return text.lower().endswith(arg)
        if kind == "regex":
            pattern = self._regex.get(arg)
            if pattern is None:
                pattern = self._regex[arg] = re.compile(arg)
            return pattern.search(text) is not None
        if kind == "or":
            return any(self._match(r, text) for r in arg)
        return all(self._match(r, text) for r in arg)


def _spelled_date(match: re.Match[str]) -> str:
    """genai-prices' compact date suffix (`-20251211`) spelled out (`-2025-12-11`); a day that is no date stays."""
    year, month, day = (int(match.group(i)) for i in range(2, 5))
    try:
        date(year, month, day)
    except ValueError:
        return match.group(0)
    return f"{match.group(1)}{year:04d}-{month:02d}-{day:02d}"


def stamp(version: str, data_file: str) -> tuple[str, int, str] | None:
    """What names the installed library's data: its version and its data module's size and digest (None: not readable)."""
    try:
        with open(data_file, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return version, len(data), xxhash.xxh64_hexdigest(data)


def load(version: str, data_file: str) -> Table | None:
    """The shipped table when it was made from the installed library (VERSION, its DATA_FILE); else None."""
    try:
        with open(FILE, "rb") as f:
            doc = msgspec.msgpack.decode(zlib.decompress(f.read()))
    except (OSError, zlib.error, msgspec.DecodeError):
        return None
    if type(doc) is not dict or tuple(doc.get("stamp") or ()) != stamp(version, data_file):
        return None
    return Table(doc["providers"], doc["compact_date"])


def write(path: str, made: tuple[str, int, str], providers: list[Any]) -> None:
    """Write the table of PROVIDERS (see `Table`), made from the library MADE names (`stamp`), to PATH."""
    packed = [[*p[:4], msgspec.msgpack.encode(p[4])] for p in providers]  # (each provider's models decoded when looked up: see Table)
    data = zlib.compress(msgspec.msgpack.encode({"stamp": list(made), "compact_date": COMPACT_DATE, "providers": packed}), 9)
    with open(path, "wb") as f:
        f.write(data)


def rule(clause: Any) -> list[Any]:
    """A genai-prices clause as the table keeps it (its strings lower-cased, as the library compares them)."""
    name = type(clause).__name__
    if name == "ClauseOr":
        return ["or", [rule(c) for c in clause.or_]]
    if name == "ClauseAnd":
        return ["and", [rule(c) for c in clause.and_]]
    if name == "ClauseRegex":
        return ["regex", clause.regex]
    field = {"ClauseEquals": "equals", "ClauseStartsWith": "starts_with", "ClauseEndsWith": "ends_with", "ClauseContains": "contains"}[name]
    return [field, getattr(clause, field).lower()]

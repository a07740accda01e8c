"""Prices: the price library (genai-prices, see `library`) at each call's date, under the user's own tables, and the tier rule.

A user's price table (`--prices FILE`, and `$XDG_CONFIG_HOME/catty-ctx/prices.json` when it
exists) covers private models or other terms: USD per token with LiteLLM's field names
(`input_cost_per_token`, …, and each with `_above_200k_tokens`). Its entries win over the
library for the models they name.
"""
from __future__ import annotations

import os
import re

from ..errors import DataError
from . import library
from .pricefiles import digest_of, price_files

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from .library import Rates
    from .records import Record

TIER_TOKENS = library.TIER_TOKENS  # the long-context tier of the `*_above_200k_tokens` prices
TIER_SUFFIX = "_above_200k_tokens"
DAY = 86_400


class Prices:
    """The user's tables (model → LiteLLM-named prices per token) over the price library's prices at a call's date."""

    def __init__(self, table: dict[str, dict[str, Any]], date: str | None = None, digest: str = "",
                 files: list[str] | None = None, use_library: bool = True) -> None:
        self.table = table
        self.date = date
        self.digest = digest  # of the files the table came from and the library's version: part of the answer cache's key
        self.files = files or []
        self.use_library = use_library and bool(library.version()[0])
        self.resolved: dict[str, Any] = {}  # model → the library's answer (see `library.resolve`)
        self._memo: dict[str, dict[str, Any] | None] = {}
        self._norm: dict[str, str] | None = None

    @property
    def source(self) -> dict[str, Any]:
        """Where the prices came from, as the document names it."""
        return {"library": library.NAME if self.use_library else None, "version": library.version()[0] or None, "files": self.files}

    def lookup(self, model: str) -> dict[str, Any] | None:
        """The user's price entry of MODEL: exact name, else without provider prefix and date suffix."""
        try:
            return self._memo[model]
        except KeyError:
            pass
        entry = self.table.get(model)
        if entry is None and self.table:
            if self._norm is None:
                self._norm = {}
                for name in self.table:
                    self._norm.setdefault(_normal_model(name), name)
            normal = self._norm.get(_normal_model(model))
            entry = self.table.get(normal) if normal else None
        self._memo[model] = entry
        return entry

    def prepare(self, models: Iterable[str]) -> None:
        """Resolve MODELS the user's tables do not price through the library (its price index), once."""
        if not self.use_library:
            return
        wanted = [m for m in dict.fromkeys(models) if m not in self.resolved and self.lookup(m) is None]
        if wanted:
            self.resolved.update(library.resolve(wanted))

    def rates(self, model: str, day: int, above: bool) -> Rates | None:
        """MODEL's rates (see `rates`) on DAY (days since 1970, UTC); None: no price."""
        entry = self.lookup(model)
        if entry is not None:
            return rates(entry, above)
        if not self.use_library:
            return None
        if model not in self.resolved:
            self.prepare([model])
        return library.rates_on(self.resolved.get(model), day, above)

    def priced_by(self, model: str) -> dict[str, Any] | None:
        """What prices MODEL: the user's table, or the library's provider and model; None: nothing."""
        if self.lookup(model) is not None:
            return {"table": True}
        self.prepare([model])
        got = self.resolved.get(model)
        return None if got is None else {"provider": got[0], "model": got[1]}


def _normal_model(name: str) -> str:
    n = name.lower().rsplit("/", 1)[-1]
    n = re.sub(r"^(?:anthropic|openai|us|eu|apac)\.", "", n)
    n = re.sub(r"(?:-v\d+(?::\d+)?|@\d{8}|-\d{8}|@latest|-latest)$", "", n)
    return n


def _price_entries(doc: Any, origin: str) -> dict[str, dict[str, Any]]:
    if type(doc) is not dict:
        raise DataError("a price table is a JSON object of model → prices", path=origin)
    return {k: v for k, v in doc.items() if type(v) is dict and not k.startswith("_") and k != "sample_spec"}


def load_prices(override: str | os.PathLike[str] | None = None, files: list[tuple[str, bytes]] | None = None,
                use_library: bool = True) -> Prices:
    """The user's tables (the configured one, then OVERRIDE, whose entries replace its own) over the price library."""
    import msgspec

    files = files if files is not None else price_files(override)
    table: dict[str, dict[str, Any]] = {}
    stamp = None
    for path, data in files:
        try:
            doc = msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            raise DataError(f"not valid JSON ({exc})", path=path) from None
        table.update(_price_entries(doc, path))
        meta = doc.get("_meta") if type(doc) is dict else None
        stamp = (meta.get("date") if type(meta) is dict else None) or stamp
    return Prices(table, stamp, digest_of(files), [path for path, _ in files], use_library=use_library)


def rates(p: dict[str, Any] | None, above: bool) -> Rates | None:
    """A model's rates per input, output, cache write, cache read and one-hour cache write token (None: no price).

    The tier rule: a call whose prompt (input + cache reads + cache writes) is more than
    200,000 tokens is priced entirely at the `*_above_200k_tokens` rates, where the model has
    them; cache rates a model lacks fall back to its input rate, a one-hour write rate to the
    cache write rate (LiteLLM's `cache_creation_input_token_cost_above_1hr`).
    """
    if p is None or p.get("input_cost_per_token") is None or p.get("output_cost_per_token") is None:
        return None

    def rate(name: str, fallback: float) -> float:
        if above:
            v = p.get(name + TIER_SUFFIX)
            if v is not None:
                return float(v)
        v = p.get(name)
        return float(v) if v is not None else fallback

    r_in = rate("input_cost_per_token", 0.0)
    r_write = rate("cache_creation_input_token_cost", r_in)
    return (r_in, rate("output_cost_per_token", 0.0), r_write, rate("cache_read_input_token_cost", r_in),
            rate("cache_creation_input_token_cost_above_1hr", r_write))


def price_tokens(p: dict[str, Any] | None, inp: int, out: int, cache_read: int, cache_write: int, above: bool,
                 cache_write_1h: int = 0) -> float | None:
    """Price token counts at a model's rates (None: no price); see `rates` for the tier rule."""
    r = rates(p, above)
    return None if r is None else cost_at(r, inp, out, cache_read, cache_write, cache_write_1h)


def cost_at(r: tuple[float, ...], inp: int, out: int, cache_read: int, cache_write: int, cache_write_1h: int = 0) -> float:
    """The cost of token counts at rates R; CACHE_WRITE_1H of the CACHE_WRITE tokens at the one-hour rate
    (rates kept by an older version have none: the write rate)."""
    hour = r[4] if len(r) > 4 else r[2]
    return inp * r[0] + out * r[1] + (cache_write - cache_write_1h) * r[2] + cache_write_1h * hour + cache_read * r[3]


def call_cost(rec: Record, prices: Prices) -> float | None:
    """One call's cost: the provider's when it reported one, else priced at its date."""
    if rec.cost is not None:
        return float(rec.cost)
    above = rec.input + rec.cache_read + rec.cache_write > TIER_TOKENS
    r = prices.rates(rec.model, int(rec.ts // DAY), above)
    return None if r is None else cost_at(r, rec.input, rec.output, rec.cache_read, rec.cache_write, rec.cache_write_1h)

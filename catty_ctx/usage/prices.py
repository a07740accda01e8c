"""Prices: a dated table in USD per token with LiteLLM's field names, and the long-context tier rule."""
from __future__ import annotations

import os

import xxhash

from ..errors import DataError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .records import Record

TIER_TOKENS = 200_000  # the long-context tier of the `*_above_200k_tokens` prices
TIER_SUFFIX = "_above_200k_tokens"
BUNDLED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "prices.json")


class Prices:
    """Per-model prices in USD per token, LiteLLM's field names; `date` says when they were true."""

    def __init__(self, table: dict[str, dict[str, Any]], date: str | None = None, digest: str = "") -> None:
        self.table = table
        self.date = date
        self.digest = digest  # of the files the table came from: part of the answer cache's key
        self._memo: dict[str, dict[str, Any] | None] = {}
        self._norm: dict[str, str] | None = None

    def lookup(self, model: str) -> dict[str, Any] | None:
        """The price entry of MODEL: exact name, else without provider prefix and date suffix."""
        try:
            return self._memo[model]
        except KeyError:
            pass
        entry = self.table.get(model)
        if entry is None:
            if self._norm is None:
                self._norm = {}
                for name in self.table:
                    self._norm.setdefault(_normal_model(name), name)
            name = self._norm.get(_normal_model(model))
            entry = self.table.get(name) if name else None
        self._memo[model] = entry
        return entry


def _normal_model(name: str) -> str:
    # start-up: prices is on the cached path (its digest); the table is read only for a fold
    import re

    n = name.lower().rsplit("/", 1)[-1]
    n = re.sub(r"^(?:anthropic|openai|us|eu|apac)\.", "", n)
    n = re.sub(r"(?:-v\d+(?::\d+)?|@\d{8}|-\d{8}|@latest|-latest)$", "", n)
    return n


def _price_entries(doc: Any, origin: str) -> dict[str, dict[str, Any]]:
    if type(doc) is not dict:
        raise DataError("a price table is a JSON object of model → prices", path=origin)
    return {k: v for k, v in doc.items() if type(v) is dict and not k.startswith("_") and k != "sample_spec"}


def price_files(override: str | os.PathLike[str] | None) -> list[tuple[str, bytes]]:
    """(name, bytes) of the bundled table and of OVERRIDE: read, not parsed (their digest keys the answer cache)."""
    with open(BUNDLED, "rb") as f:
        files = [("prices.json", f.read())]
    if override is not None:
        path = os.fspath(override)
        try:
            with open(path, "rb") as f:
                files.append((path, f.read()))
        except OSError as exc:
            raise UsageError(f"{path}: cannot read price table ({exc.strerror})") from None
    return files


def digest_of(files: list[tuple[str, bytes]]) -> str:
    h = xxhash.xxh64()
    for _name, data in files:
        h.update(data)
    return h.hexdigest()


def load_prices(override: str | os.PathLike[str] | None = None, files: list[tuple[str, bytes]] | None = None) -> Prices:
    """The bundled table, with the entries of OVERRIDE (a LiteLLM-style file) replacing its own."""
    # start-up: prices is on the cached path (its digest); the table is read only for a fold
    import msgspec

    files = files if files is not None else price_files(override)
    bundled = msgspec.json.decode(files[0][1])
    table = _price_entries(bundled, "prices.json")
    stamp = bundled.get("_meta", {}).get("date")
    for path, data in files[1:]:
        try:
            doc = msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            raise DataError(f"not valid JSON ({exc})", path=path) from None
        table.update(_price_entries(doc, path))
        meta = doc.get("_meta") if type(doc) is dict else None
        stamp = (meta.get("date") if type(meta) is dict else None) or f"{stamp} + {os.path.basename(path)}"
    return Prices(table, stamp, digest_of(files))


def rates(p: dict[str, Any] | None, above: bool) -> tuple[float, float, float, float] | None:
    """A model's rates per input, output, cache write and cache read token (None: no price).

    The tier rule: a call whose prompt (input + cache reads + cache writes) is more than
    200,000 tokens is priced entirely at the `*_above_200k_tokens` rates, where the model has
    them; cache rates a model lacks fall back to its input rate.
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
    return r_in, rate("output_cost_per_token", 0.0), rate("cache_creation_input_token_cost", r_in), rate("cache_read_input_token_cost", r_in)


def price_tokens(p: dict[str, Any] | None, inp: int, out: int, cache_read: int, cache_write: int, above: bool) -> float | None:
    """Price token counts at a model's rates (None: no price); see `rates` for the tier rule."""
    r = rates(p, above)
    return None if r is None else cost_at(r, inp, out, cache_read, cache_write)


def cost_at(r: tuple[float, float, float, float], inp: int, out: int, cache_read: int, cache_write: int) -> float:
    return inp * r[0] + out * r[1] + cache_write * r[2] + cache_read * r[3]


def call_cost(rec: Record, prices: Prices) -> float | None:
    """One call's cost: the provider's when it reported one, else priced from the table."""
    if rec.cost is not None:
        return float(rec.cost)
    above = rec.input + rec.cache_read + rec.cache_write > TIER_TOKENS
    return price_tokens(prices.lookup(rec.model), rec.input, rec.output, rec.cache_read, rec.cache_write, above)

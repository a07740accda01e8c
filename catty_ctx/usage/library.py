"""The price library (genai-prices), resolved once per model and kept in the usage cache.

genai-prices is a maintained table of dated prices per provider and model, with the matching
rules for the names models go by. Its import costs a quarter of a second (pydantic and a
1.6 MB data module), more than a whole warm run, so the ledger never imports it to answer a
question it can answer from the *price index*: for each model name a run met, the provider
and model the library matched and its price periods (the day each begins, the per-token rates
at and above the 200,000-token tier), kept in one cache file per library version. Only a name
the index has not seen yet loads the library, once; a name the library does not know is kept
as unknown too. The library is used as installed: its bundled data, never its updater (not
even imported: no network at run time).

Names are tried as agents and gateways write them: Bedrock (`us.anthropic.claude-…-v1:0`,
priced as Bedrock prices them), Vertex (`claude-…@20250929`), gateway prefixes
(`openrouter/…`, `anthropic/…`), a date or `-latest` suffix, and a `-preview` release of the name.
"""
from __future__ import annotations

import marshal
import os
import sys

from .cachefiles import cache_file, read_bytes, write_cache_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    # (first day, as days since 1970-01-01, or None: always) and the rates at and above the tier:
    # per input, output, cache write, cache read and one-hour cache write token.
    Rates = tuple[float, float, float, float, float]
    Period = tuple[int | None, Rates, Rates]
    Resolved = tuple[str, str, list[Period]] | None  # (provider, model, periods), None: unknown

NAME = "genai-prices"
TIER_TOKENS = 200_000  # the long-context tier: a call whose prompt is past it is priced wholly at the tier's rates
_PACKAGE = "genai_prices"
_DIST_PREFIX = "genai_prices-"
_version: tuple[str, str] | None = None
_data_file = ""


def version() -> tuple[str, str]:
    """(the library's version, a key of its installed data), without importing it; ("", "") when not installed.

    Read from its distribution folder's name beside the package, so the answer cache can name
    the prices it used in one directory listing.
    """
    global _version, _data_file
    if _version is not None:
        return _version
    _version = ("", "")
    for entry in sys.path:
        folder = os.path.join(entry or ".", _PACKAGE)
        try:
            st = os.stat(os.path.join(folder, "data.py"))
        except OSError:
            continue
        try:
            names = os.listdir(entry or ".")
        except OSError:
            names = []
        dist = next((n for n in names if n.startswith(_DIST_PREFIX) and n.endswith(".dist-info")), "")
        found = dist[len(_DIST_PREFIX):-len(".dist-info")] or "unknown"
        _version = (found, f"{found}:{st.st_size}:{st.st_mtime_ns}")
        _data_file = os.path.join(folder, "data.py")
        break
    return _version


def data_file() -> str:
    """The installed library's data module ("" when it is not installed)."""
    version()
    return _data_file


def _index_file() -> str:
    return cache_file("prices-index", version()[1])  # (not a cache of the logs: kept under --no-cache too)


def resolve(models: Iterable[str]) -> dict[str, Resolved]:
    """The price periods of MODELS: from the price index, the library consulted only for the names it lacks."""
    data = read_bytes(_index_file())
    index: dict[str, Any] = {}
    if data is not None:
        try:
            got = marshal.loads(data)
        except (EOFError, ValueError, TypeError):
            got = None
        if type(got) is dict:
            index = got
    missing = [m for m in models if m not in index]
    if missing and version()[0]:
        table = _shipped()
        for name in missing:
            index[name] = table.resolve(_candidates(name)) if table is not None else _from_library(name)
        try:
            write_cache_file(_index_file(), marshal.dumps(index))
        except OSError:
            pass  # (the index is a shortcut: the library answers again next time)
    return {m: index.get(m) for m in models}


_tables: dict[tuple[str, str], Any] = {}


def _shipped() -> Any:
    """The shipped price table made from the installed library (`pricetable.load`: the library's data
    as shipped, no import of it; None when it was made from another version), loaded once a process."""
    key = (version()[0], data_file())
    if key not in _tables:
        from . import pricetable

        _tables[key] = pricetable.load(*key)
    return _tables[key]


def ahead() -> None:
    """Load the shipped table now when no price index exists yet (a first run): a cold scan calls
    this while its workers parse (`workers.deal`), so that resolving the models read is lookups only."""
    if version()[0] and not os.path.exists(_index_file()):
        _shipped()


def _candidates(name: str) -> list[tuple[str | None, str]]:
    """(provider id or None: any, model reference) to try for NAME, in order."""
    import re

    n = name.strip().lower()
    out: list[tuple[str | None, str]] = []
    if re.match(r"^(?:[a-z]{2,6}\.)?anthropic\.", n) or ".anthropic." in n:
        out.append(("aws", n))  # Bedrock, at Bedrock's prices
    if "@" in n:
        out.append(("google", n))  # Vertex
    if "/" in n:
        out.append(("openrouter", n.removeprefix("openrouter/")))
        provider, _, rest = n.rpartition("/")
        out.append((provider.rsplit("/", 1)[-1] or None, rest))
        n = rest
    out.append((None, n))
    bare = re.sub(r"^(?:[a-z]{2,6}\.)?(?:anthropic|openai|meta|google)\.", "", n)
    bare = re.sub(r"(?:-v\d+(?::\d+)?|@[\w.-]+|-\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$", "", bare)
    for ref in dict.fromkeys((bare, bare.replace(".", "-") if bare.startswith("claude") else bare, bare + "-preview")):
        out.append((None, ref))
    return out


def snapshot() -> Any:
    """The library's bundled price data, loaded without its package's front module: that one
    imports the updater (an HTTP client fetching newer prices), which the ledger never runs, so
    it is not even loaded (and its import time is saved)."""
    import importlib.util
    import types

    stand_in = _PACKAGE not in sys.modules  # (imported by the caller: its front module is there)
    if stand_in:
        spec = importlib.util.find_spec(_PACKAGE)
        if spec is None or spec.submodule_search_locations is None:
            raise ImportError(_PACKAGE)
        front = types.ModuleType(_PACKAGE)
        front.__path__ = list(spec.submodule_search_locations)
        front.__spec__ = spec
        sys.modules[_PACKAGE] = front
    try:
        from genai_prices import data_snapshot

        return data_snapshot.get_snapshot()  # (its data module loads here)
    finally:
        if stand_in:
            del sys.modules[_PACKAGE]  # (a later `import genai_prices` runs the real front module, reusing these)


def _from_library(name: str) -> Resolved:
    data = snapshot()
    for provider_id, ref in _candidates(name):
        try:
            provider, model = data.find_provider_model(ref, None, provider_id, None)
        except (LookupError, ValueError):
            continue
        periods = _periods(model)
        if periods:
            return provider.id, model.id, periods
    return None


def _periods(model: Any) -> list[Period]:
    """A model's price periods (prices by time of day, such as off-peak discounts, are left out: the base ones stand)."""
    from datetime import date

    from genai_prices.types import ModelPrice, StartDateConstraint

    prices = model.prices
    out: list[Period] = []
    for item in [prices] if isinstance(prices, ModelPrice) else prices:
        mp = item if isinstance(item, ModelPrice) else item.prices
        constraint = None if isinstance(item, ModelPrice) else item.constraint
        if constraint is not None and not isinstance(constraint, StartDateConstraint):
            continue
        first = (constraint.start_date - date(1970, 1, 1)).days if constraint is not None else None
        got = _rates(mp)
        if got is not None:
            out.append((first, *got))
    out.sort(key=lambda p: -1 << 40 if p[0] is None else p[0])
    return out


def _rates(mp: Any) -> tuple[Rates, Rates] | None:
    """(rates at, rates above the 200,000-token tier) of a ModelPrice, None without input and output prices."""

    def pair(v: Any) -> tuple[float, float] | None:
        if v is None:
            return None
        tiers = getattr(v, "tiers", None)
        if tiers is None:
            return float(v) / 1e6, float(v) / 1e6
        above = v.base
        for tier in tiers:
            if tier.start <= TIER_TOKENS:
                above = tier.price
        return float(v.base) / 1e6, float(above) / 1e6

    inp, out = pair(mp.input_mtok), pair(mp.output_mtok)
    if inp is None or out is None:
        return None
    cw = pair(mp.cache_write_mtok) or inp
    cr = pair(mp.cache_read_mtok) or inp
    hour = pair(getattr(mp, "cache_write_1h_mtok", None)) or cw  # (Anthropic's one-hour writes: 2x input)
    return (inp[0], out[0], cw[0], cr[0], hour[0]), (inp[1], out[1], cw[1], cr[1], hour[1])


def rates_on(resolved: Resolved, day: int, above: bool) -> Rates | None:
    """The rates of RESOLVED on DAY (days since 1970-01-01, UTC): the last period begun by then."""
    if resolved is None:
        return None
    periods = resolved[2]
    chosen = periods[0]
    for p in periods:
        if p[0] is None or p[0] <= day:
            chosen = p
    return chosen[2] if above else chosen[1]


def build_table(path: str | None = None) -> tuple[str, int, str]:
    """Write the shipped price table (`pricetable`) of the installed library to PATH (the package's); its stamp."""
    from . import pricetable

    made = pricetable.stamp(version()[0], data_file()) if version()[0] else None
    if made is None:
        raise SystemExit(f"{NAME} is not installed")
    providers = [[p.id, pricetable.rule(p.provider_match) if p.provider_match is not None else None,
                  pricetable.rule(p.model_match) if p.model_match is not None else None, list(p.fallback_model_providers or []),
                  [[m.id, pricetable.rule(m.match), _periods(m)] for m in p.models]]
                 for p in snapshot().providers]
    pricetable.write(path or pricetable.FILE, made, providers)
    return made


if __name__ == "__main__":
    made_from, size, digest = build_table()
    print(f"price table made from genai-prices {made_from} (data module: {size} bytes, xxh64 {digest})")

"""Numbers and text as the report prints them; every piece of session text goes through `esc`."""
from __future__ import annotations

from html import escape
from typing import Any

import orjson


def esc(value: Any) -> str:
    """Session text as HTML text: never markup, whatever it holds."""
    return escape("" if value is None else str(value), quote=True)


def text(value: str) -> str:
    """Session text as an element's content (quotes need no escaping there, only <, > and &)."""
    return escape(value, quote=False)


def num(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return esc(value)


def compact_number(value: float) -> str:
    """150000 → 150k, 1200000 → 1.2M (axis labels)."""
    v = float(value)
    if v >= 1_000_000:
        return f"{v / 1_000_000:.1f}".rstrip("0").rstrip(".") + "M"
    if v >= 1_000:
        return f"{v / 1_000:.1f}".rstrip("0").rstrip(".") + "k"
    return f"{v:.0f}"


def money(value: Any) -> str:
    if value is None:
        return "unknown"
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"


def script_json(data: Any) -> str:
    """JSON to sit inside a <script> element: no '<' can close it or open a comment."""

    return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode().replace("<", "\\u003c")

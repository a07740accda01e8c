"""Times of the usage ledger: log time stamps to epoch seconds, report days in a time zone.

Imports nothing heavy: `parse_day` runs before the answer cache is consulted.
"""
from __future__ import annotations

from datetime import date, datetime, timezone

from ..errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import tzinfo
    from typing import Any

_convert: Any = None  # msgspec.convert, bound on first use (this module is on the cached-answer path)
_DATETIME: Any = None
_UTC: Any = None
_NOT_RFC3339: Any = None


def epoch(value: Any) -> float | None:
    """RFC 3339 / ISO 8601 → seconds since the epoch; a naive time is taken as UTC.

    RFC 3339 is read by msgspec, as the typed decoders read a time stamp into a datetime, so a
    line read either way gets the same float to the last bit (`moment`); the other ISO forms
    (a date alone, no seconds, the basic form) go through datetime.
    """
    global _convert, _DATETIME, _UTC, _NOT_RFC3339
    if type(value) is not str or len(value) < 10:
        return None
    if _convert is None:
        import msgspec

        _convert, _DATETIME, _UTC, _NOT_RFC3339 = msgspec.convert, datetime, timezone.utc, msgspec.ValidationError
    try:
        dt = _convert(value, _DATETIME)
    except _NOT_RFC3339:
        return _iso_epoch(value)
    return dt.timestamp() if dt.tzinfo is not None else dt.replace(tzinfo=_UTC).timestamp()


def moment(dt: Any) -> float:
    """A decoded datetime → seconds since the epoch, a naive one taken as UTC (what `epoch` gives for its text)."""
    if dt.tzinfo is not None:
        return dt.timestamp()

    return dt.replace(tzinfo=timezone.utc).timestamp()


def _iso_epoch(value: str) -> float | None:
    text = value[:-1] + "+00:00" if value[-1] in "Zz" else value
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def parse_day(text: str) -> str:
    """YYYY-MM-DD or YYYYMMDD → YYYY-MM-DD, or UsageError."""
    t = text.strip()
    if len(t) == 8 and t.isdigit():
        t = f"{t[:4]}-{t[4:6]}-{t[6:]}"
    try:
        return date.fromisoformat(t).isoformat()
    except ValueError:
        raise UsageError(f"'{text}' is not a date (YYYY-MM-DD)") from None


def timezone_named(name: str | None) -> tzinfo | None:
    """An IANA zone (or UTC); None means the local zone."""
    if not name:
        return None
    if name.upper() in ("UTC", "Z"):
        return timezone.utc
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"unknown time zone '{name}'") from None


def day_start(day: str, tz: tzinfo | None) -> float:
    """The epoch at which DAY (YYYY-MM-DD) starts in TZ (None: local)."""
    d = date.fromisoformat(day)
    return datetime(d.year, d.month, d.day, tzinfo=tz).timestamp()


def day_of(tz: tzinfo | None) -> Callable[[float], str]:
    """ts → its day in TZ (None: local), remembering the last day's bounds (calls come sorted)."""
    bounds: list[Any] = [1.0, 0.0, ""]  # start, end, day: empty until the first call

    def day(ts: float) -> str:
        if bounds[0] <= ts < bounds[1]:
            return bounds[2]
        try:
            d = datetime.fromtimestamp(ts, tz).date()
            start = datetime(d.year, d.month, d.day, tzinfo=tz).timestamp()
            nxt = date.fromordinal(d.toordinal() + 1)
            end = datetime(nxt.year, nxt.month, nxt.day, tzinfo=tz).timestamp()
        except (OverflowError, ValueError, OSError):
            # a stamp at the calendar's edge (year 1 or 9999) whose day in TZ falls outside it:
            # its UTC day, which exists (the stamp was parsed), and nothing remembered
            return datetime.fromtimestamp(ts, timezone.utc).date().isoformat()
        if not start <= ts < end:  # a day that starts at a gap in the clock: do not remember it
            return d.isoformat()
        bounds[:] = [start, end, d.isoformat()]
        return bounds[2]

    return day


def iso_week(day: str) -> str:
    y, w, _ = date.fromisoformat(day).isocalendar()
    return f"{y}-W{w:02d}"

"""Times of the usage ledger: log time stamps to epoch seconds, report days in a time zone.

Imports nothing heavy: `parse_day` runs before the answer cache is consulted.
"""
from __future__ import annotations

from ..errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    # start-up: datetime and zoneinfo load only when a date is parsed or a zone named
    from datetime import tzinfo
    from typing import Any, Callable

_DAYS: dict[str, float] = {}
_MINUTES: dict[str, float | str] = {}  # "YYYY-MM-DDTHH:MM:" → its epoch, or "bad", or "iso" (not this form)


def epoch(value: Any) -> float | None:
    """RFC 3339 / ISO 8601 → seconds since the epoch; a naive time is taken as UTC.

    The common `YYYY-MM-DDTHH:MM:SS.fffZ` form is computed from a per-minute memo (one dict
    lookup and one float() per call: this runs once per usage line); anything else goes
    through datetime.
    """
    if type(value) is not str or len(value) < 10:
        return None
    if len(value) == 24 and value[23] == "Z" and value[19] == ".":
        head = value[:17]
        base = _MINUTES.get(head)
        if base is None:
            if len(_MINUTES) > 100_000:
                _MINUTES.clear()
            base = _MINUTES[head] = _minute_epoch(head)
        if type(base) is float:
            try:
                sec = float(value[17:23])
            except ValueError:
                return None
            return base + sec if 0 <= sec < 61 else None
        if base == "bad":
            return None
    return _iso_epoch(value)


def _minute_epoch(head: str) -> float | str:
    if head[10] != "T" or head[13] != ":" or head[16] != ":":
        return "iso"
    day = _DAYS.get(head[:10])
    if day is None:
        day = _iso_epoch(head[:10] + "T00:00:00Z")
        if day is None:
            return "bad"
        _DAYS[head[:10]] = day
    try:
        h, m = int(head[11:13]), int(head[14:16])
    except ValueError:
        return "bad"
    return day + h * 3600 + m * 60 if 0 <= h < 24 and 0 <= m < 60 else "bad"


def _iso_epoch(value: str) -> float | None:
    # start-up: datetime and zoneinfo load only when a date is parsed or a zone named
    from datetime import datetime, timezone

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
    # start-up: datetime and zoneinfo load only when a date is parsed or a zone named
    from datetime import date

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
        # start-up: datetime and zoneinfo load only when a date is parsed or a zone named
        from datetime import timezone

        return timezone.utc
    # start-up: datetime and zoneinfo load only when a date is parsed or a zone named
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"unknown time zone '{name}'") from None


def day_start(day: str, tz: tzinfo | None) -> float:
    """The epoch at which DAY (YYYY-MM-DD) starts in TZ (None: local)."""
    # start-up: datetime and zoneinfo load only when a date is parsed or a zone named
    from datetime import date, datetime

    d = date.fromisoformat(day)
    return datetime(d.year, d.month, d.day, tzinfo=tz).timestamp()


def day_of(tz: tzinfo | None) -> Callable[[float], str]:
    """ts → its day in TZ (None: local), remembering the last day's bounds (calls come sorted)."""
    # start-up: datetime and zoneinfo load only when a date is parsed or a zone named
    from datetime import date, datetime

    bounds = [1.0, 0.0, ""]  # start, end, day: empty until the first call

    def day(ts: float) -> str:
        if bounds[0] <= ts < bounds[1]:
            return bounds[2]  # type: ignore[return-value]
        d = datetime.fromtimestamp(ts, tz).date()
        start = datetime(d.year, d.month, d.day, tzinfo=tz).timestamp()
        nxt = date.fromordinal(d.toordinal() + 1)
        end = datetime(nxt.year, nxt.month, nxt.day, tzinfo=tz).timestamp()
        if not start <= ts < end:  # a day that starts at a gap in the clock: do not remember it
            return d.isoformat()
        bounds[:] = [start, end, d.isoformat()]
        return bounds[2]  # type: ignore[return-value]

    return day


def iso_week(day: str) -> str:
    # start-up: datetime and zoneinfo load only when a date is parsed or a zone named
    from datetime import date

    y, w, _ = date.fromisoformat(day).isocalendar()
    return f"{y}-W{w:02d}"

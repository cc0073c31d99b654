"""Time conversions: Unix milliseconds inside, RFC 3339 in UTC outside.

Every instant written reads back (the year is always four digits). ``instant_or_none`` is the
one place that refuses an instant outside 1970-9999, such as GitHub's year-one placeholder.
See docs/endpoint.md.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from craft_apps.kernel.compat import UTC, fromisoformat

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FIRST_YEAR, LAST_YEAR = 1970, 9999  # the instants we keep; anything else reads as null


def ms_to_datetime(ms: int) -> datetime:
    return EPOCH + timedelta(milliseconds=ms)


def datetime_to_ms(value: datetime) -> int:
    if value.tzinfo is None:
        raise ValueError("naive datetime")
    return (value - EPOCH) // timedelta(milliseconds=1)


def format_rfc3339(value: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS[.mmm]Z`` in UTC; the milliseconds only when not zero."""
    utc = value.astimezone(UTC)
    # Not strftime: its %Y drops the leading zeros of a year below 1000 on glibc.
    text = f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}"
    millis = utc.microsecond // 1000
    if millis:
        text += f".{millis:03d}"
    return text + "Z"


def format_ms(ms: int) -> str:
    return format_rfc3339(ms_to_datetime(ms))


def parse_rfc3339(text: str) -> datetime:
    """An RFC 3339 timestamp with ``Z`` or an offset, as an aware UTC datetime.

    Raises ``ValueError`` for anything else, including timestamps without a zone.
    """
    if not isinstance(text, str) or "T" not in text.upper():
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    parsed = fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp without a zone: {text!r}")
    return parsed.astimezone(UTC)


def instant_or_none(text: str) -> datetime | None:
    """``parse_rfc3339``, but None for an instant outside 1970-9999 (in UTC).

    Raises ``ValueError`` for text that is not an RFC 3339 timestamp with a zone.
    """
    try:
        parsed = parse_rfc3339(text)
    except OverflowError:  # a zone offset that moves the instant past year 1 or 9999
        return None
    return parsed if FIRST_YEAR <= parsed.year <= LAST_YEAR else None


def format_duration(ms: int) -> str:
    """A duration for people, rounded down: 45 s, 3 min 20 s, 2 h 5 min, 3 d 4 h."""
    seconds = max(0, ms) // 1000
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"

"""Time conversions shared by every edge: Unix milliseconds inside, RFC 3339 UTC outside.

Internally every instant is an ``int`` of Unix milliseconds (SQLite, Redis and the lease all
compare integers). At the JSON edge an instant is RFC 3339 in UTC ending in ``Z``, with
milliseconds only when they are not zero (``2026-10-08T14:52:50Z``, ``...50.125Z``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from craft_apps.compat import UTC, fromisoformat

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ms_to_datetime(ms: int) -> datetime:
    return EPOCH + timedelta(milliseconds=ms)


def datetime_to_ms(value: datetime) -> int:
    if value.tzinfo is None:
        raise ValueError("naive datetime")
    return (value - EPOCH) // timedelta(milliseconds=1)


def format_rfc3339(value: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS[.mmm]Z`` in UTC; the milliseconds only when not zero."""
    utc = value.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
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

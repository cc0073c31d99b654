"""Shared test data: fixed instants (and the suite's release builder)."""

from __future__ import annotations

from datetime import datetime

from craft_apps.kernel.compat import UTC
from craft_apps.kernel.instants import datetime_to_ms
from tests.support import release

__all__ = ["BASE_MS", "release", "t"]

BASE_MS = datetime_to_ms(datetime(2026, 10, 10, 12, 0, tzinfo=UTC))


def t(minute: float) -> int:
    """``minute`` minutes after 2026-10-10T12:00Z, in Unix ms."""
    return BASE_MS + round(minute * 60_000)

"""The reports' Prometheus counters (answers by status; reports not counted, by reason) and the
one log line per reason and process."""

from __future__ import annotations

import contextlib
import logging
import threading

from prometheus_client import Counter

logger = logging.getLogger(__name__)

QUEUE_FULL = "queue_full"
UNWRITABLE = "unwritable"

# Not registered at import, like the endpoint's (api.metrics builds the registry of a scrape).
ANSWERS = Counter(
    "craft_apps_report_answers",
    "Answers of POST /v1/craft_apps/reports, by HTTP status (202: accepted; 400, 413, 405: refused).",
    ["status"],
    registry=None,
)
NOT_COUNTED = Counter(
    "craft_apps_reports_not_counted",
    "Accepted install reports left out of the counts, by reason "
    "(install_rate, address_rate, queue_full, unwritable).",
    ["reason"],
    registry=None,
)
COUNTED = Counter(
    "craft_apps_reports_counted",
    "Install reports written to the counts by this host's web processes.",
    registry=None,
)


class Said:
    """The reasons already logged by this process."""

    def __init__(self) -> None:
        self.reasons: set[str] = set()
        self.lock = threading.Lock()


_said = Said()


def answered(status: int) -> None:
    """Counts one answer; never fails the request (an unusable metrics directory is a check)."""
    with contextlib.suppress(Exception):  # api.metrics says once that counting fails
        ANSWERS.labels(str(status)).inc()


def not_counted(reason: str, detail: str, count: int = 1) -> None:
    """Counts reports left out for ``reason``; logs the first time for each reason."""
    with contextlib.suppress(Exception):  # as in answered
        NOT_COUNTED.labels(reason).inc(count)
    with _said.lock:
        first = reason not in _said.reasons
        _said.reasons.add(reason)
    if first:
        logger.warning("Install reports: %s (%s); counted in craft_apps_reports_not_counted.", detail, reason)


def counted(count: int) -> None:
    COUNTED.inc(count)

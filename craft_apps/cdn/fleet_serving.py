"""Which version each host of the fleet serves, shared through Redis for the CDN purge.

Each host's purge thread writes, on every look, the lowest version its live web processes
serve to ``<prefix>cdn:serving:<hostname>``, kept for ``STALE_MS``: a host that stops writing
drops out on its own. The hostnames are listed in ``<prefix>cdn:serving_hosts``. The host that
purges a change reads the other hosts' versions and waits until each serves it too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import redis
from redis.client import Pipeline

from craft_apps.cdn.readiness import STALE_MS
from craft_apps.content.served_versions import ServedReport
from craft_apps.fleet.connection import describe_error

logger = logging.getLogger(__name__)

HOST_KEY = "cdn:serving:"  # after the fleet's key prefix, then the hostname
HOSTS_KEY = "cdn:serving_hosts"
HOSTS_TTL_MS = 10 * 60 * 1000  # the list of hostnames outlives a host gone for this long
NO_VERSION = "none"  # a process that never read the database


def lowest_served(reports: Sequence[ServedReport], now_ms: int) -> ServedReport | None:
    """The live report with the lowest version (None ranks lowest); None when none is live."""
    live = [report for report in reports if now_ms - report.at_ms <= STALE_MS]
    if not live:
        return None
    return min(live, key=lambda report: -1 if report.version is None else report.version)


class FleetServing:
    """Shares this host's served version in Redis and reads the other hosts'."""

    def __init__(self, client: redis.Redis, key_prefix: str, hostname: str) -> None:
        self._client = client
        self._prefix = key_prefix
        self.hostname = hostname
        self._trouble: str | None = None

    def publish(self, reports: Sequence[ServedReport], now_ms: int) -> None:
        """Writes the lowest version this host's live web processes serve, if any is live."""
        lowest = lowest_served(reports, now_ms)
        if lowest is None:
            return
        value = NO_VERSION if lowest.version is None else str(lowest.version)
        hosts = self._prefix + HOSTS_KEY

        def write(pipe: Pipeline) -> None:
            pipe.set(self._prefix + HOST_KEY + self.hostname, value, px=STALE_MS)
            pipe.sadd(hosts, self.hostname)
            pipe.pexpire(hosts, HOSTS_TTL_MS)

        self._ask(write)

    def others(self, now_ms: int) -> tuple[ServedReport, ...]:
        """Each other live host's version, as a report made at ``now_ms``; () if Redis can't say."""
        listed = self._ask(lambda pipe: pipe.smembers(self._prefix + HOSTS_KEY))[0] or set()
        names = sorted(_text(name) for name in listed)  # type: ignore[attr-defined]
        keys = [self._prefix + HOST_KEY + name for name in names if name != self.hostname]
        if not keys:
            return ()
        values = self._ask(lambda pipe: pipe.mget(keys))[0] or []
        return tuple(ServedReport(0, _version(value), now_ms) for value in values if value is not None)  # type: ignore[attr-defined]

    def _ask(self, build: Callable[[Pipeline], object]) -> list[object]:
        """Runs the commands ``build`` adds to a pipeline; [None] when Redis can't answer."""
        try:
            pipe = self._client.pipeline(transaction=False)
            build(pipe)
            answers: list[object] = pipe.execute()
        except redis.RedisError as err:
            reason = describe_error(err)
            if self._trouble is None:
                logger.warning(
                    "Craft apps CDN purge: Redis can't share which version each host serves (%s); "
                    "a purge waits for this host's web processes only.",
                    reason,
                )
            self._trouble = reason
            return [None]
        if self._trouble is not None:
            logger.info("Craft apps CDN purge: Redis shares which version each host serves again.")
            self._trouble = None
        return answers


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _version(value: object) -> int | None:
    """The version a host wrote; None (it serves no version yet) for anything else."""
    text = _text(value)
    return int(text) if text.isdigit() else None

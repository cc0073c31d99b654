"""The reports' counts in the fleet's Redis, under ``<prefix>reports:``.

``RedisCounts(client, key_prefix)`` is a store (``counts``): ``add(reports, now_ms)`` counts a
batch in two round trips (counters, first-outcome marks, a HyperLogLog of installs, installs per
day) and returns how many were a first outcome; ``counts(apps)`` and ``daily(apps, days)`` read
them. Every key expires ``KEEP_DAYS`` after its last write. The keys: docs/reports.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import redis

from craft_apps.fleet.errors import RedisOperation, RedisTrouble, redis_trouble
from craft_apps.reports.counts import (
    KEEP_S,
    VERSIONS_KEPT,
    Counted,
    DailyInstalls,
    OutcomeCounts,
    ReleaseCounts,
    ReportsUnavailable,
    day_of,
)
from craft_apps.reports.report import OUTCOMES


class RedisCounts:
    """The counts in Redis, shared by every host of the fleet."""

    where = "redis"

    def __init__(self, client: redis.Redis, key_prefix: str) -> None:
        self.client = client
        self.prefix = f"{key_prefix}reports:"

    def _release(self, app: str, version: str, outcome: str) -> str:
        return f"{self.prefix}{app}:{version}:{outcome}"

    def add(self, reports: Sequence[Counted], now_ms: int) -> int:
        """Two round trips: the counters and first-outcome marks, then the new installs."""
        try:
            with redis_trouble("writing install reports", RedisOperation.WRITE):
                firsts = self._count(reports, now_ms)
                new = [r for r, first in zip(reports, firsts, strict=True) if first]
                pipe = self.client.pipeline(transaction=False)
                day = day_of(now_ms)
                for report in new:
                    installs = self._release(report.app, report.version, report.outcome) + ":installs"
                    pipe.pfadd(installs, report.install)
                    pipe.expire(installs, KEEP_S)
                    daily = f"{self.prefix}{report.app}:{report.version}:day:{day}"
                    pipe.incr(daily)
                    pipe.expire(daily, KEEP_S)
                pipe.execute()
        except RedisTrouble as err:
            raise ReportsUnavailable(str(err)) from err
        return len(new)

    def _count(self, reports: Sequence[Counted], now_ms: int) -> list[bool]:
        """Counts each report; says for each whether it is its install's first for the version."""
        pipe = self.client.pipeline(transaction=False)
        for report in reports:
            counter = self._release(report.app, report.version, report.outcome) + ":reports"
            versions = f"{self.prefix}{report.app}:versions"
            pipe.set(f"{self.prefix}seen:{report.release}", 1, nx=True, ex=KEEP_S)
            pipe.incr(counter)
            pipe.expire(counter, KEEP_S)
            pipe.zadd(versions, {report.version: now_ms})
            pipe.zremrangebyrank(versions, 0, -VERSIONS_KEPT - 1)
            pipe.expire(versions, KEEP_S)
        answers = pipe.execute()
        return [bool(answers[i]) for i in range(0, len(answers), 6)]

    def _versions(self, pipe: redis.client.Pipeline, apps: Sequence[str]) -> list[tuple[str, str]]:
        """Each app's kept versions, newest report first."""
        for app in apps:
            pipe.zrevrange(f"{self.prefix}{app}:versions", 0, -1)
        return [
            (app, _text(version))
            for app, versions in zip(apps, pipe.execute(), strict=True)
            for version in versions
        ]

    def daily(self, apps: Sequence[str], days: Sequence[str]) -> list[DailyInstalls]:
        try:
            with redis_trouble("reading install reports", RedisOperation.READ):
                pipe = self.client.pipeline(transaction=False)
                releases = self._versions(pipe, apps)
                for app, version in releases:
                    pipe.mget([f"{self.prefix}{app}:{version}:day:{day}" for day in days])
                answers = pipe.execute() if days else [[] for _ in releases]
        except RedisTrouble as err:
            raise ReportsUnavailable(str(err)) from err
        return [
            DailyInstalls(app, version, {day: _number(n) for day, n in zip(days, found, strict=False)})
            for (app, version), found in zip(releases, answers, strict=True)
        ]

    def counts(self, apps: Sequence[str]) -> list[ReleaseCounts]:
        try:
            with redis_trouble("reading install reports", RedisOperation.READ):
                pipe = self.client.pipeline(transaction=False)
                releases = self._versions(pipe, apps)
                for app, version in releases:
                    for outcome in OUTCOMES:
                        pipe.get(self._release(app, version, outcome) + ":reports")
                        pipe.pfcount(self._release(app, version, outcome) + ":installs")
                answers = pipe.execute()
        except RedisTrouble as err:
            raise ReportsUnavailable(str(err)) from err
        return [
            _release_counts(app, version, answers[i * 8 : i * 8 + 8])
            for i, (app, version) in enumerate(releases)
        ]


def _release_counts(app: str, version: str, answers: Sequence[object]) -> ReleaseCounts:
    outcomes = {
        outcome: OutcomeCounts(reports=_number(answers[2 * i]), installs=_number(answers[2 * i + 1]))
        for i, outcome in enumerate(OUTCOMES)
    }
    return ReleaseCounts(app, version, outcomes)


def _number(value: object) -> int:
    try:
        return max(0, int(_text(value))) if value is not None else 0
    except ValueError:
        return 0  # another writer's value under our key: counted as none


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)

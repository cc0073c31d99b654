"""Choosing the poll mode and rate-limiting the Redis trouble log (fake times, no Redis)."""

from __future__ import annotations

import logging

import pytest
from redis.exceptions import AuthenticationError
from redis.exceptions import ConnectionError as RedisConnectionError

from craft_apps.fleet.errors import RedisOperation, RedisTrouble
from craft_apps.fleet.trouble import RedisTroubleLog
from craft_apps.kernel.domain import PollMode
from tests.fleet.helpers import BASE_MS

LOGGER = "craft_apps.fleet.trouble"
READ, WRITE, BACKOFF = RedisOperation.READ, RedisOperation.WRITE, RedisOperation.BACKOFF


def at(seconds: float) -> int:
    return BASE_MS + round(seconds * 1000)


def test_coordinates_only_when_enabled_and_redis_answers() -> None:
    assert PollMode.choose(True, True) is PollMode.COORDINATED
    assert PollMode.choose(True, False) is PollMode.STANDALONE
    assert PollMode.choose(False, True) is PollMode.STANDALONE
    assert PollMode.choose(False, False) is PollMode.STANDALONE


def test_warns_once_per_ten_minutes_while_redis_keeps_failing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    log = RedisTroubleLog()
    err = RedisTrouble("reading the shared releases: ConnectionError: connection refused", READ)
    assert not log.is_failing

    assert log.failed(err, at(0))
    assert log.is_failing
    assert not log.failed(err, at(30))
    assert not log.failed(err, at(599))
    assert log.failed(err, at(600))
    assert not log.failed(err, at(601))

    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert "connection refused" in warnings[0] and "not logged" not in warnings[0]
    assert "(2 similar errors not logged)" in warnings[1]
    assert all("\n" not in message for message in warnings)

    caplog.clear()
    log.succeeded(READ, at(700))
    log.succeeded(READ, at(730))
    assert not log.is_failing
    infos = [r for r in caplog.records if r.levelno == logging.INFO]
    assert [r.getMessage() for r in infos] == [
        "Craft app releases: Redis is back after 700 s; coordinating with the fleet again."
    ]

    caplog.clear()
    assert log.failed(err, at(730)), "a new outage warns right away"
    assert "not logged" not in caplog.records[0].getMessage(), "the count starts again"


def test_succeeding_without_trouble_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    RedisTroubleLog().succeeded(READ, at(0))
    assert caplog.records == []


def test_a_clock_stepped_back_does_not_silence_the_log() -> None:
    log = RedisTroubleLog()
    assert log.failed(RedisTrouble("down", READ), at(1000))
    assert log.failed(RedisTrouble("down", READ), at(10)), "an hour-long silence would hide an outage"


def test_messages_carry_no_password_and_stay_on_one_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    err = RedisConnectionError("Error connecting to redis://poller:s3cret@db.internal:6379/0\nrefused")
    RedisTroubleLog().failed(err, at(0))
    message = caplog.records[0].getMessage()
    assert "s3cret" not in message and "\n" not in message
    assert "redis://***@db.internal:6379/0" in message
    caplog.clear()
    RedisTroubleLog().failed(AuthenticationError("AUTH failed, password=hunter2"), at(0))
    assert "hunter2" not in caplog.records[0].getMessage()


def test_trouble_ends_only_when_the_operation_that_failed_works(caplog: pytest.LogCaptureFixture) -> None:
    """Reads work, writes are refused (OOM, a read-only replica, a denied command): one lasting
    trouble, warned about every 10 minutes, not a "back"/"unavailable" pair every tick."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    log = RedisTroubleLog()
    refused = RedisTrouble("writing craftApps:releases:app:photocraft: OutOfMemoryError: OOM", WRITE)
    logged = []
    for tick in range(40):  # 20 minutes of ticks, 30 s apart
        log.succeeded(READ, at(30 * tick))
        logged.append(log.failed(refused, at(30 * tick)))
        log.succeeded(BACKOFF, at(30 * tick))  # another operation working changes nothing
    assert [n for n, was_logged in enumerate(logged) if was_logged] == [0, 20]
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.WARNING]
    assert "OutOfMemoryError" in caplog.records[0].getMessage()
    assert "(19 similar errors not logged)" in caplog.records[1].getMessage()

    caplog.clear()
    log.succeeded(WRITE, at(1200))
    assert not log.is_failing
    assert [r.getMessage() for r in caplog.records] == [
        "Craft app releases: Redis is back after 1200 s; coordinating with the fleet again."
    ]


def test_every_failed_operation_must_work_again(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    log = RedisTroubleLog()
    assert log.failed(RedisTrouble("writing: READONLY", WRITE), at(0))
    assert not log.failed(RedisTrouble("reading: refused", READ), at(30)), "the same trouble"
    assert not log.failed(RedisConnectionError("refused"), at(31)), "a plain error counts as a read"
    log.succeeded(READ, at(60))
    assert log.is_failing, "the writes still fail"
    log.succeeded(WRITE, at(90))
    assert not log.is_failing
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == [
        "Craft app releases: Redis is back after 90 s; coordinating with the fleet again."
    ]

"""Choosing the poll mode and rate-limiting the Redis trouble log (fake times, no Redis)."""

from __future__ import annotations

import logging

import pytest
from redis.exceptions import AuthenticationError
from redis.exceptions import ConnectionError as RedisConnectionError

from craft_apps.fleet.store import RedisTrouble
from craft_apps.fleet.trouble import PollMode, RedisTroubleLog
from tests.fleet.helpers import BASE_MS

LOGGER = "craft_apps.fleet.trouble"


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
    err = RedisTrouble("reading the shared releases: ConnectionError: connection refused")
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
    log.succeeded(at(700))
    log.succeeded(at(730))
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
    RedisTroubleLog().succeeded(at(0))
    assert caplog.records == []


def test_a_clock_stepped_back_does_not_silence_the_log() -> None:
    log = RedisTroubleLog()
    assert log.failed(RedisTrouble("down"), at(1000))
    assert log.failed(RedisTrouble("down"), at(10)), "an hour-long silence would hide an outage"


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

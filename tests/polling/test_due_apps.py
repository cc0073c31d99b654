"""``polling.due_apps.DueApps`` on its own, with a real Redis: an app is due once it is no
longer fresh; with the fleet, the first host to claim a due app asks about it and the others
skip it, a fleet backing off ends the round, and Redis trouble leaves the host asking alone."""

from __future__ import annotations

from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from craft_apps.kernel.domain import AppState, Backoff, PollMode
from craft_apps.polling.due_apps import DueApps, Turn
from craft_apps.testing.clock import FakeClock
from tests.polling.steps import steps
from tests.support import PHOTOCRAFT, S

KEY = PHOTOCRAFT.key


def due_apps(state_dir: Path, client: redis.Redis | None, clock: FakeClock, name: str = "host-a") -> DueApps:
    return steps(state_dir, clock, client, name=name).due


def test_an_app_is_due_once_it_is_no_longer_fresh(state_dir: Path, fake_clock: FakeClock) -> None:
    due = due_apps(state_dir, None, fake_clock)
    assert due.is_due(KEY, fake_clock.now_ms()), "never fetched"
    due.state.memory[KEY] = AppState(fetched_ms=fake_clock.now_ms(), repo=PHOTOCRAFT.repo)
    assert not due.is_due(KEY, fake_clock.now_ms())
    fake_clock.advance(1800)
    assert due.is_due(KEY, fake_clock.now_ms())


def test_alone_every_due_app_is_asked(state_dir: Path, fake_clock: FakeClock) -> None:
    due = due_apps(state_dir, None, fake_clock)
    assert due.turn(KEY, PollMode.STANDALONE) == (Turn.ASK, PollMode.STANDALONE)


def test_the_first_host_to_claim_asks_and_the_others_skip(
    state_dir: Path, fake_clock: FakeClock, redis_client: redis.Redis
) -> None:
    first = due_apps(state_dir, redis_client, fake_clock, "host-a")
    second = due_apps(state_dir, redis_client, fake_clock, "host-b")
    assert first.turn(KEY, PollMode.COORDINATED) == (Turn.ASK, PollMode.COORDINATED)
    assert second.turn(KEY, PollMode.COORDINATED) == (Turn.SKIP, PollMode.COORDINATED)


def test_a_fleet_backing_off_ends_the_round(
    state_dir: Path, fake_clock: FakeClock, redis_client: redis.Redis
) -> None:
    due = due_apps(state_dir, redis_client, fake_clock)
    assert due.shared is not None
    due.shared.entries.write_backoff(Backoff(until_ms=fake_clock.now_ms() + 60 * S, trouble=1))
    assert due.turn(KEY, PollMode.COORDINATED) == (Turn.STOP, PollMode.COORDINATED)
    assert due.state.backoff.is_active(fake_clock.now_ms()), "the fleet's backoff is this host's now"


def test_redis_trouble_leaves_the_host_asking_alone(state_dir: Path, fake_clock: FakeClock) -> None:
    # Nothing listens on port 1; asked once, not again after a backoff.
    unreachable = redis.Redis(port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    due = due_apps(state_dir, unreachable, fake_clock)
    assert due.turn(KEY, PollMode.COORDINATED) == (Turn.ASK, PollMode.STANDALONE)
    assert due.redis_log.is_failing

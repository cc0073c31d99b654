"""Refreshes asked for ahead of schedule: every poller notices within a second, one asks GitHub,
the others take its answer; a flood asks at most once per 10 s and never past a backoff.

Hosts share a real redis-server and the in-process GitHub stand-in, on one fake clock; each
host's one-second looks are stepped by hand (``step``), as ``WakeUps.wait`` makes them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from craft_apps.api.refresh import request_refresh
from craft_apps.fleet.due import SharedDueMarks
from craft_apps.fleet.store import SharedStore
from craft_apps.kernel.domain import Backoff
from craft_apps.kernel.source import FetchOutcome
from craft_apps.polling.schedule import MIN_REQUEST_GAP_MS, REFRESH_GAP_MS
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.fleet.server import RedisServer
from tests.polling.wakeup_hosts import APPS, PUBLISHED, Host, github_on
from tests.support import PHOTOCRAFT, S


@pytest.fixture
def github(fake_clock: FakeClock) -> Iterator[FakeGitHub]:
    with github_on(fake_clock) as server:
        yield server


class Fleet:
    def __init__(
        self, tmp_path: Path, clock: FakeClock, github: FakeGitHub, server: RedisServer | None, n: int
    ):
        self.clock = clock
        self.github = github
        self.admin = None if server is None else server.client()
        self.hosts = [
            Host(f"host-{i}", tmp_path, clock, github, None if server is None else server.client())
            for i in range(n)
        ]
        for host in self.hosts:
            host.wakeups.look(at_tick=True)
            host.poller.tick()
        alone = 1 if server is not None else n  # with the fleet, the first host asked for all
        assert len(github.requests) == len(APPS) * alone
        github.reset_requests()

    def deliver(
        self, receiver: int = 0, delivery: str | None = None, *, to_redis: bool = True, to_host: bool = True
    ) -> None:
        """What the webhook view does on host ``receiver``."""
        fleet = SharedDueMarks(self.admin) if self.admin is not None and to_redis else None
        outcome = request_refresh(
            [PHOTOCRAFT.key],
            now_ms=self.clock.now_ms(),
            host=self.hosts[receiver].marks if to_host else None,
            fleet=fleet,
            delivery=delivery,
        )
        assert outcome.marked

    def step(self, seconds: float = 1.0) -> None:
        """One look of every host, as each host's wait makes it every second."""
        self.clock.advance(seconds)
        for host in self.hosts:
            if host.wakeups.look():
                host.poller.tick()

    def asked(self) -> list[float]:
        return [r.time for r in self.github.requests_for(PHOTOCRAFT.repo)]


@pytest.fixture
def fleet(tmp_path: Path, fake_clock: FakeClock, github: FakeGitHub, redis_server: RedisServer, redis_client):
    return Fleet(tmp_path, fake_clock, github, redis_server, 3)


def test_a_refresh_wakes_every_host_one_asks_and_every_state_file_shows_the_release(
    fleet: Fleet, github: FakeGitHub
):
    fleet.step(600)  # long after the first round, well before the next
    github.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "0.6.0", PUBLISHED))
    fleet.deliver(receiver=2)
    assert not any(host.shows("0.6.0") for host in fleet.hosts)
    fleet.step()
    assert len(fleet.asked()) == 1, "one host asked GitHub"
    assert all(host.shows("0.6.0") for host in fleet.hosts), "within a second on every host"
    assert [r.repo for r in github.requests] == [PHOTOCRAFT.repo], "only about that app"
    for _ in range(30):
        fleet.step()
    assert len(fleet.asked()) == 1, "answered: nobody asks again"


def test_the_hosts_that_lost_the_claim_take_the_winners_answer(fleet: Fleet, github: FakeGitHub):
    winner, waiting = fleet.hosts[0], fleet.hosts[1:]
    real = winner.poller.github
    looked: list[bool] = []

    class SlowGitHub:
        """The winner's request takes 3 s, while the others look every second."""

        def fetch_latest_release(self, repo: str, etag: str | None) -> FetchOutcome:
            for _ in range(3):
                fleet.clock.advance(1)
                for host in waiting:
                    looked.append(host.wakeups.look())
                    host.poller.tick()
            return real.fetch_latest_release(repo, etag)

    winner.poller.github = SlowGitHub()
    fleet.step(600)
    github.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "0.6.0", PUBLISHED))
    fleet.deliver(receiver=1)
    fleet.step()
    assert looked == [True] * 6, "they looked every second, awaiting the answer"
    assert len(fleet.asked()) == 1, "only the winner asked"
    assert all(host.shows("0.6.0") for host in fleet.hosts), "the others at their next look"
    for _ in range(15):
        fleet.step()
    assert len(fleet.asked()) == 1


def test_when_the_winner_never_answers_another_host_asks_after_the_claim_window(fleet: Fleet):
    fleet.step(600)
    fleet.deliver()
    claimer = fleet.hosts[0].poller.shared
    assert claimer is not None and claimer.claims.claim(PHOTOCRAFT.key, fleet.clock.now_ms(), REFRESH_GAP_MS)
    claimed_at = fleet.clock.now_ms() / S
    fleet.hosts = fleet.hosts[1:]  # the claimer died
    for _ in range(15):
        fleet.step()
    asked = fleet.asked()
    assert len(asked) == 1 and REFRESH_GAP_MS / S <= asked[0] - claimed_at <= 13


def test_a_flood_of_webhooks_asks_github_about_the_app_at_most_once_per_10_s(fleet: Fleet):
    fleet.step(600)
    start_ms = fleet.clock.now_ms()
    for n in range(1000):  # a minute of deliveries, to any host, each its own
        due_ms = start_ms + n * 60
        fleet.clock.set_ms(max(fleet.clock.now_ms(), due_ms))
        fleet.deliver(receiver=n % 3, delivery=f"d-{n}", to_host=n % 100 == 0)  # a state file is slower
        if n % 17 == 16:  # about every second
            fleet.step(0)
    for _ in range(20):
        fleet.step()
    asked = fleet.asked()
    assert 4 <= len(asked) <= 7, asked
    gaps = [later - earlier for earlier, later in itertools.pairwise(asked)]
    assert min(gaps) >= MIN_REQUEST_GAP_MS / S


def test_a_refresh_never_overrides_a_backoff(fleet: Fleet):
    assert fleet.admin is not None
    fleet.step(600)
    backoff = Backoff(until_ms=fleet.clock.now_ms() + 120 * S, trouble=1)
    SharedStore(fleet.admin, hostname="admin").entries.write_backoff(backoff)
    fleet.deliver()
    for _ in range(120):
        fleet.step()
    assert fleet.asked() == []
    fleet.step()
    for host in fleet.hosts:  # their next ordinary ticks
        host.poller.tick()
    assert len(fleet.asked()) == 1, "asked once the backoff is over"


def test_a_refresh_answered_before_a_restart_is_not_asked_again(
    fleet: Fleet, tmp_path: Path, github, redis_server
):
    fleet.step(600)
    fleet.deliver()
    fleet.step()
    assert len(fleet.asked()) == 1
    fleet.step(300)
    newcomer = Host("host-new", tmp_path, fleet.clock, github, redis_server.client())
    newcomer.poller.warm_start()
    newcomer.wakeups.look(at_tick=True)
    newcomer.poller.tick()
    assert newcomer.poller.requests.pending() == {}
    assert len(fleet.asked()) == 1


def test_a_mark_that_missed_redis_is_passed_on_to_the_fleet(fleet: Fleet, github: FakeGitHub):
    fleet.step(600)
    github.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "0.6.0", PUBLISHED))
    fleet.deliver(receiver=1, to_redis=False)  # the web worker couldn't write to Redis
    receiver = fleet.hosts[1]
    assert [m.shared for m in receiver.marks.marks()] == [False]
    assert receiver.wakeups.look(at_tick=True)
    assert receiver.marks.marks() == [], "taken"
    assert fleet.admin is not None and fleet.admin.hexists("craftApps:releases:due", PHOTOCRAFT.key)
    receiver.poller.tick()
    fleet.step()
    assert len(fleet.asked()) == 1 and all(host.shows("0.6.0") for host in fleet.hosts)


def test_alone_the_receiving_host_asks_and_the_others_keep_their_schedule(
    tmp_path: Path, fake_clock: FakeClock, github: FakeGitHub
):
    fleet = Fleet(tmp_path, fake_clock, github, None, 2)
    fleet.step(600)
    github.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "0.6.0", PUBLISHED))
    fleet.deliver(receiver=1)
    fleet.step()
    assert len(fleet.asked()) == 1
    assert fleet.hosts[1].shows("0.6.0") and not fleet.hosts[0].shows("0.6.0")
    for n in range(60):  # a flood, alone: still once per 10 s
        fleet.deliver(receiver=1, delivery=f"d-{n}")
        fleet.step()
    asked = fleet.asked()
    assert 4 <= len(asked) <= 7, asked
    assert min(b - a for a, b in itertools.pairwise(asked)) >= MIN_REQUEST_GAP_MS / S


class ScriptedClock(FakeClock):
    """A fake clock that runs ``events`` when its time passes theirs, as a web worker would."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[int, Callable[[], object]]] = []

    def sleep(self, seconds: float) -> bool:
        result = super().sleep(seconds)
        due = [event for event in self.events if event[0] <= self.now_ms()]
        self.events = [event for event in self.events if event[0] > self.now_ms()]
        for _, action in due:
            action()
        return result


def test_the_wait_between_ticks_wakes_within_a_second_and_ends_on_time(
    tmp_path: Path, redis_server: RedisServer, redis_client
):
    clock = ScriptedClock()
    github = FakeGitHub(now=lambda: clock.now_ms() / 1000).load_demo().start()
    host = Host("host-a", tmp_path, clock, github, redis_server.client())
    host.poller.tick()
    github.reset_requests()
    clock.advance(600)
    start_ms = clock.now_ms()
    marked_at = start_ms + 5_300
    clock.events.append(
        (
            marked_at,
            lambda: request_refresh(
                ["photocraft"], now_ms=marked_at, host=None, fleet=SharedDueMarks(redis_client)
            ),
        )
    )
    assert host.wakeups.wait(30) is True
    assert clock.now_ms() == start_ms + 30_000, "the tick's schedule is kept"
    assert all(s <= 1.0 for s in clock.sleeps)
    asked = [round(r.time * S) for r in github.requests_for(PHOTOCRAFT.repo)]
    github.stop()
    assert len(asked) == 1 and 0 < asked[0] - marked_at <= 1_000


def test_the_wait_ends_at_once_on_a_stop(tmp_path: Path, github: FakeGitHub):
    class Stopped(FakeClock):
        def sleep(self, seconds: float) -> bool:
            return False

    host = Host("host-a", tmp_path, Stopped(), github, None)
    assert host.wakeups.wait(30) is False

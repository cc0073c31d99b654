"""A host started after a yank, in a fleet sharing its releases, their history and the release
controls through a real redis-server: its web processes (two gunicorn workers) and its poller
(``poll_craft_releases --once``, which starts warm from Redis) start together, and from the
first answer that lists the app as fetched to the last, no answer names the yanked release;
each serves the one before it, from the history the first host shared, whether its processes
can read the site's database or not. The fleet's first host (a poller in the test process)
fetched from the GitHub stand-in and read the controls from the database."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from craft_apps.content.channels import HistoryApps
from craft_apps.controls.kept import decode
from craft_apps.fleet.store import SharedStore
from craft_apps.kernel.domain import PollMode
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.fake_github import FakeGitHub
from tests.content.workers_support import Workers, database_for_the_workers, database_locked
from tests.controls.support import Served, burst, host_poller, require, site_env, yank
from tests.fleet.hosts import poller_env, start_once
from tests.fleet.server import RedisServer
from tests.support import ONE_AT_A_TIME, PHOTOCRAFT

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]

HISTORY_KEY = "craftApps:releases:history:photocraft"
CONTROLS_KEY = "craftApps:releases:controls"


def fleet_env(github: FakeGitHub, redis: RedisServer, database: dict[str, str]) -> dict[str, str]:
    return {
        **poller_env(github, redis.url, (PHOTOCRAFT,)),
        **{f"DJANGO_DB_{key}": value for key, value in database.items()},
    }


def first_host_shares(github: FakeGitHub, redis: RedisServer, tmp_path: Path) -> None:
    """The fleet's first host polls once (in this process, on a fake clock set to now): photocraft
    needs history, so it fetches the release list too, and shares the entry and the history."""
    clock = FakeClock(time.time_ns() // 1_000_000)
    shared = SharedStore(redis.client(), hostname="host-a")
    poller = host_poller(tmp_path / "host-a", github, clock, HistoryApps(), shared)
    require(poller.tick().mode is PollMode.COORDINATED, "host A polled with the fleet")
    client = redis.client()
    require(client.exists("craftApps:releases:app:photocraft"), "host A shared the entry")
    require(client.exists(HISTORY_KEY), "host A shared the history")
    require(client.exists(CONTROLS_KEY), "host A shared the controls it read")
    asked = sorted(r.path.split("?")[0].rsplit("/", 1)[-1] for r in github.requests)
    require(asked == ["latest", "releases"], f"host A asked for the latest and the list: {asked}")
    github.reset_requests()


def wrong(answer: Served) -> bool:
    """A fetched answer that names the yanked release, or serves another than the one before it."""
    return answer.fetched and (answer.mentions("v1.3.0") or answer.latest != "v1.2.0")


def sample_new_host(
    env: dict[str, str],
    database: dict[str, str],
    tmp_path: Path,
    wrong: Callable[[Served], bool] = wrong,
) -> list[Served]:
    """Starts host B's web processes and its poller together, on a new state directory; every
    answer from the start until both workers served the app fetched after the poller ended (or
    until the first wrong answer: the poller is stopped then)."""
    state_dir = tmp_path / "host-b"
    site = Workers(site_env(state_dir, database), tmp_path / "gunicorn.log")
    poller = start_once(env, state_dir, 1)
    answers: list[Served] = []
    try:
        deadline = time.monotonic() + 60
        while not any(wrong(a) for a in answers):
            try:
                answers += burst(site)
            except OSError:  # not listening yet
                require(site.process.poll() is None, site.output())
                time.sleep(0.02)
            pids = {a.pid for a in answers if a.fetched}
            if poller.poll() is not None and len(pids) == 2:
                if poller.returncode != 0:
                    pytest.fail(f"host B's poller exited {poller.returncode}: {poller.communicate()[1]!r}")
                break
            require(time.monotonic() < deadline, site.output())
    finally:
        if poller.poll() is None:
            poller.kill()
            poller.wait()
        site.stop()
    return answers


def assert_never_the_yanked(answers: list[Served], wrong: Callable[[Served], bool] = wrong) -> None:
    fetched = [a for a in answers if a.fetched]
    require(fetched, "the new host served the app")
    bad = [(a.pid, a.latest, a.rollout) for a in fetched if wrong(a)]
    assert not bad, f"{len(bad)} of {len(fetched)} answers since the first fetched one: {bad[:5]}"


def test_a_host_started_after_a_yank_never_serves_it_from_its_first_answer(
    tmp_path: Path, github: FakeGitHub, redis_server: RedisServer, redis_client
):
    yank("v1.3.0")
    with database_for_the_workers() as (database, _):
        env = fleet_env(github, redis_server, database)
        first_host_shares(github, redis_server, tmp_path)
        answers = sample_new_host(env, database, tmp_path)
    assert github.requests == [], "host B took the entry and the history from Redis"
    assert_never_the_yanked(answers)


def test_a_host_restarted_while_the_database_is_locked_keeps_the_yank_its_workers_read(
    tmp_path: Path, github: FakeGitHub, redis_server: RedisServer, redis_client
):
    """Its web processes kept the controls they read (``STATE_DIR/release_controls.json``): the
    restarted ones apply them before the database answers, so every answer that lists the app,
    from the first, serves the release before the yanked one."""
    yank("v1.3.0")
    with database_for_the_workers() as (database, _):
        env = fleet_env(github, redis_server, database)
        first_host_shares(github, redis_server, tmp_path)
        assert_never_the_yanked(sample_new_host(env, database, tmp_path))
        require((tmp_path / "host-b" / "release_controls.json").exists(), "host B kept the controls")
        with database_locked():
            answers = sample_new_host(env, database, tmp_path)
    assert_never_the_yanked(answers)


def test_a_host_started_while_the_database_cant_be_read_applies_the_yank_the_fleet_shared(
    tmp_path: Path, github: FakeGitHub, redis_server: RedisServer, redis_client
):
    """A new state directory (no kept file) and a site's database its processes can't open: its
    poller keeps the controls host A read and shared before it publishes the fleet's releases,
    so its workers apply them from their first answer."""
    yank("v1.3.0")
    first_host_shares(github, redis_server, tmp_path)
    unreachable = {"ENGINE": "sqlite3", "NAME": str(tmp_path / "no-such-directory" / "site.sqlite3")}
    answers = sample_new_host(fleet_env(github, redis_server, unreachable), unreachable, tmp_path)
    assert github.requests == [], "host B took the entry and the history from Redis"
    assert_never_the_yanked(answers)
    require((tmp_path / "host-b" / "release_controls.json").exists(), "host B's poller kept them")


def test_a_flushed_controls_key_comes_back_at_the_pollers_next_tick(
    tmp_path: Path, github: FakeGitHub, redis_server: RedisServer, redis_client
):
    """A running poller that reads the site's database writes the fleet's controls again after a
    FLUSHALL (or a Redis restarted without persistence), though they haven't changed."""
    yank("v1.3.0")
    clock = FakeClock(time.time_ns() // 1_000_000)
    shared = SharedStore(redis_server.client(), hostname="host-a")
    poller = host_poller(tmp_path / "host-a", github, clock, HistoryApps(fresh_s=0), shared)
    poller.tick()
    require(redis_client.exists(CONTROLS_KEY), "host A shared the controls it read")
    redis_client.flushall()
    clock.advance(30)
    poller.tick()
    found = shared.controls.read(decode)
    assert found is not None, "the key is back after one tick"
    assert [(c.action, c.tag) for c in found[0]] == [("yank", "v1.3.0")]

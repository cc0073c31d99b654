"""Guarded rollouts with real processes: two hosts (each its own gunicorn with two workers and
its own state file) on one real Redis and the test's database, the GitHub stand-in, reports
posted over HTTP.

- A pause written from reports posted to host A is served by every worker of both hosts within
  2 s, and holds when healthy reports follow and the schedule's next step has come. No request
  reaches the workers' runtime after their first answers (reports don't): the guard's check runs
  on its own.
- A host's workers that no request ever reached (the middleware ``api.startup`` started their
  watch with the process) pause a rollout whose counts in Redis cross the threshold.
- 1,000 simulated launchers (the documented rule: launcher ``n`` installs the rollout's release
  when ``n % 100`` is below its percentage) find photocraft v1.3.0 at 10 % and report: with 5 %
  of the updated ones failing, the rollout pauses within 10 s of the reports crossing the
  threshold with the minimum reached and stays paused past its next step; with 1 % (one of the
  100 updated, the nearest above 0.5 % that 100 installs can show), it moves on at its step.

The workers read the wall clock: v1.3.0's publish time on the stand-in is set so that its 50 %
step falls ``STEP_IN_S`` after the test starts (a schedule is a function of the publish time)."""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import redis

from craft_apps.conf import DEFAULT_REDIS_KEY_PREFIX
from craft_apps.controls.guard import Mark
from craft_apps.kernel.compat import UTC
from craft_apps.reports.counts import Counted
from craft_apps.reports.redis_counts import RedisCounts
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.content.workers_support import Workers, database_for_the_workers
from tests.controls.guarded_fleet import (
    TAG,
    Posted,
    crossing,
    fleet,
    guarded,
    mark,
    minimum_reached,
    pause_lines,
    paused_on,
    report,
    served_by_both,
    until_mark,
)
from tests.controls.support import Served, get, require
from tests.fleet.server import RedisServer
from tests.support import ONE_AT_A_TIME, PHOTOCRAFT

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]

APPLIED_S = 2.0  # the promise: every worker of every host serves the guard's write within 2 s
PAUSED_WITHIN_S = 10.0  # the promise: a pause within 10 s of the threshold crossed with the minimum
SCHEDULE = "+0m 10, +1m 50"
STEP_IN_S = 15.0  # from the test's start to v1.3.0's 50 % step: the hosts start and the launchers report
LAUNCHERS = 1000
MIN_INSTALLS = 80  # of the 100 launchers a 10 % rollout updates
THRESHOLD = 2.0  # the policy's default failing share
AT_10 = ("v1.2.0", ("v1.3.0", 10))


def installs(answer: Served, n: int) -> str | None:
    """The documented launcher rule (docs/controls.md) for launcher ``n``'s number ``n % 100``."""
    if answer.rollout is not None and n % 100 < answer.rollout[1]:
        return answer.rollout[0]
    return answer.latest


def counted(client: redis.Redis, reports: int) -> None:
    """Waits for the fleet's counts of v1.3.0 to hold ``reports`` reports (the exact counters;
    the writers' batches are the signal)."""
    deadline = time.monotonic() + 20
    while True:
        found = [
            sum(o.reports for o in c.outcomes.values())
            for c in RedisCounts(client, DEFAULT_REDIS_KEY_PREFIX).counts(["photocraft"])
        ]
        if found and found[0] >= reports:
            return
        require(time.monotonic() < deadline, f"the counts hold {reports} reports: {found}")
        time.sleep(0.05)


def published(github: FakeGitHub, step_at: datetime) -> None:
    """v1.2.0 three days ago, v1.3.0 a minute before ``step_at`` (its 50 % step)."""
    github.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "1.2.0", step_at - timedelta(days=3)))
    github.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "1.3.0", step_at - timedelta(minutes=1)))


def all_serve(sites: list[Workers], expected: tuple[str, tuple[str, int]]) -> None:
    for name, site in zip("AB", sites, strict=True):
        found = served_by_both(site)
        assert found == {pid: {expected} for pid in found}, f"host {name}: {found}"


def test_a_pause_from_reports_to_host_a_is_served_by_both_hosts_within_2_s_and_holds(
    tmp_path: Path, redis_server: RedisServer, redis_client: redis.Redis
):
    now = datetime.now(UTC).replace(microsecond=0)
    with FakeGitHub() as github, database_for_the_workers() as (database, _):
        published(github, now - timedelta(seconds=30))  # the 50 % step's time has come
        guarded(SCHEDULE, min_installs=50, since=now - timedelta(days=1))
        with fleet(tmp_path, github, database, redis_server.url) as sites:
            site_a = sites[0]
            all_serve(sites, AT_10)  # the step waits for the minimum of installs
            failing = set(random.Random(40).sample(range(60), 5))
            list(
                site_a._pool.map(
                    lambda n: report(site_a, n, "failed" if n in failing else "installed"), range(60)
                )
            )
            paused = until_mark(lambda m: m.paused, "the guard paused v1.3.0")
            time.sleep(max(0.0, paused.at_ms / 1000 + APPLIED_S - time.time()))  # nobody asks meanwhile
            for name, site in zip("AB", sites, strict=True):
                assert set(paused_on(site).values()) == {1.0}, f"host {name}'s workers serve the pause"
            all_serve(sites, AT_10)
            list(site_a._pool.map(lambda n: report(site_a, n, "installed"), range(60, 360)))
            counted(redis_client, 360)  # 1.4 % failing now: healthy, were it not paused
            time.sleep(2.5)  # two rounds of every worker's check, which must write nothing
            assert mark() == paused, "never moves on after a pause"
            all_serve(sites, AT_10)
            lines = pause_lines(sites)
    assert len(lines) == 1 and "paused itself at 10 % (" in lines[0], lines


def until_paused_and_logged(site: Workers, timeout: float) -> tuple[Mark, list[str]]:
    """Wait for the row's pause of v1.3.0 and ``site``'s line saying it; return both."""
    deadline = time.monotonic() + timeout
    while (found := mark()) is None or not found.paused or not (lines := pause_lines([site])):
        assert time.monotonic() < deadline, f"paused with no request: the row holds {found}\n{site.output()}"
        time.sleep(0.05)
    return found, lines


def test_workers_no_request_reached_pause_a_rollout_whose_counts_cross_the_threshold(
    tmp_path: Path, redis_server: RedisServer, redis_client: redis.Redis
):
    now = datetime.now(UTC).replace(microsecond=0)
    with FakeGitHub() as github, database_for_the_workers() as (database, _):
        published(github, now - timedelta(seconds=30))  # the 50 % step's time has come
        guarded(SCHEDULE, min_installs=20, since=now - timedelta(days=1))
        with fleet(tmp_path, github, database, redis_server.url, names=("host-a",)) as (site,):
            failing = [Counted("photocraft", "1.3.0", "failed", f"i{n}", f"r{n}") for n in range(5)]
            healthy = [Counted("photocraft", "1.3.0", "installed", f"i{n}", f"r{n}") for n in range(5, 25)]
            RedisCounts(redis_client, DEFAULT_REDIS_KEY_PREFIX).add(
                failing + healthy, int(time.time() * 1000)
            )
            # The signals: the row's pause and its log line. The bound covers the workers' start
            # on a busy machine; without a watch started at the process's start, neither comes.
            paused, lines = until_paused_and_logged(site, timeout=60)
    assert paused.percentage == 10 and len(lines) == 1 and "paused itself at 10 % (" in lines[0], lines


def launch(sites: list[Workers], failing: set[int]) -> list[Posted]:
    """Every launcher asks a host (A or B in turn); then each the rule gave v1.3.0 reports. Every
    launcher asks before any reports: the next step waits for the minimum of installs, so it
    can't change what a launcher is told however slowly the asks go on a loaded machine."""
    order = random.Random(7).sample(range(LAUNCHERS), LAUNCHERS)

    def updates(n: int) -> bool:
        return installs(get(sites[n % 2]), n) == TAG

    def one(n: int) -> Posted:
        failed = n in failing
        return Posted(report(sites[n % 2], n, "failed" if failed else "installed"), failed)

    with ThreadPoolExecutor(8) as pool:
        updated = [n for n, yes in zip(order, pool.map(updates, order), strict=True) if yes]
        return list(pool.map(one, updated))


@pytest.mark.parametrize("failing_share", [5, 1])
def test_1000_launchers_pause_a_failing_rollout_on_both_hosts_and_a_healthy_one_moves_on(
    tmp_path: Path, redis_server: RedisServer, redis_client: redis.Redis, failing_share: int
):
    step_at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=STEP_IN_S)
    updated = [n for n in range(LAUNCHERS) if n % 100 < 10]
    failing = set(random.Random(5).sample(updated, failing_share))
    with FakeGitHub() as github, database_for_the_workers() as (database, _):
        published(github, step_at)
        guarded(SCHEDULE, min_installs=MIN_INSTALLS, since=step_at - timedelta(days=1))
        with fleet(tmp_path, github, database, redis_server.url) as sites:
            all_serve(sites, AT_10)
            posted = launch(sites, failing)
            require(len(posted) == len(updated), f"the 100 updated launchers reported: {len(posted)}")
            if failing_share == 5:
                paused_on_both(sites, posted, step_at)
            else:
                moved_on(sites, posted, step_at)


def paused_on_both(sites: list[Workers], posted: list[Posted], step_at: datetime) -> None:
    crossed = crossing(posted, MIN_INSTALLS, THRESHOLD)
    require(crossed is not None, "the reports cross the threshold with the minimum reached")
    assert crossed is not None
    paused = until_mark(lambda m: m.paused, "the guard paused v1.3.0")
    assert crossed - 1.0 <= paused.at_ms / 1000 <= crossed + PAUSED_WITHIN_S, (paused, crossed)
    after_step = max(step_at.timestamp(), paused.at_ms / 1000) + APPLIED_S
    time.sleep(max(0.0, after_step - time.time()))  # the 50 % step's time has come
    all_serve(sites, AT_10)
    for site in sites:
        assert set(paused_on(site).values()) == {1.0}
    assert mark() == paused, "stays paused"


def moved_on(sites: list[Workers], posted: list[Posted], step_at: datetime) -> None:
    assert crossing(posted, MIN_INSTALLS, THRESHOLD) is None
    due = max(step_at.timestamp(), minimum_reached(posted, MIN_INSTALLS))
    moved = until_mark(lambda m: m.percentage == 50, "the guard took the 50 % step", timeout=STEP_IN_S + 30)
    assert not moved.paused and step_at.timestamp() <= moved.at_ms / 1000 <= due + PAUSED_WITHIN_S, moved
    time.sleep(max(0.0, moved.at_ms / 1000 + APPLIED_S - time.time()))
    all_serve(sites, ("v1.2.0", ("v1.3.0", 50)))

"""`--once`'s exit status and what every tick adds to the host's counters, in process: the runner
on a fake clock, GitHub as the local stand-in (a real HTTP server), Redis a real server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from craft_apps.github.client import GitHubClient
from craft_apps.host.counters import read_counters
from craft_apps.host.due import HostDueMarks
from craft_apps.host.store import StateStore
from craft_apps.polling.process import EXIT_OK, PollerRunner, RunnerOptions
from craft_apps.polling.tally import EXIT_STALE
from craft_apps.testing.clock import START_MS, FakeClock
from craft_apps.testing.fake_github import FakeGitHub, RateLimited429Fault, StatusFault
from tests.fleet.server import RedisServer
from tests.support import TWO_APPS, apps_setting, stand_in

APPS = TWO_APPS
INTERVAL_S = 1800

# The runner closes the site's old database connections before each tick, as the command does:
# one a database test before it left open in this process is touched then.
pytestmark = pytest.mark.django_db


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with stand_in() as server:
        yield server


@pytest.fixture
def site(settings, github: FakeGitHub, state_dir: Path) -> Path:
    settings.CRAFT_APPS = {
        "STATE_DIR": str(state_dir),
        "GITHUB_API_URL": github.url,
        "APPS": apps_setting(),
        "POLL_INTERVAL_SECS": INTERVAL_S,
    }
    return state_dir


def run_once(at_ms: int = START_MS) -> int:
    runner = PollerRunner(
        make_source=GitHubClient.from_settings,
        clock=FakeClock(at_ms),
        options=RunnerOptions(once=True, keep_lease_in_background=False),
    )
    return runner.run()


def test_a_good_round_exits_0_and_is_counted_with_the_quota(site: Path):
    assert run_once() == EXIT_OK
    counters = read_counters(StateStore(site))
    # Each app's latest, and its release list with its first latest (``history.ListsOwed``).
    assert counters.requests == {"fetched": 4, "not_modified": 0, "failed": 0, "rate_limited": 0}
    assert counters.quota is not None and (counters.quota.remaining, counters.quota.limit) == (56, 60)
    assert counters.quota.seen_ms >= START_MS
    assert (counters.mode, counters.redis_errors) == ("standalone", 0)
    assert counters.tick_ms is not None and counters.stopped_ms is not None, "a clean stop is recorded"
    assert run_once(START_MS + INTERVAL_S * 1000) == EXIT_OK  # every app revalidated
    assert read_counters(StateStore(site)).requests["not_modified"] == 2


def test_failed_requests_leaving_an_app_out_of_date_exit_3(site: Path, github: FakeGitHub):
    github.set_fault(APPS[0].repo, StatusFault(502))
    assert run_once() == EXIT_STALE
    requests = read_counters(StateStore(site)).requests
    assert (requests["fetched"], requests["failed"]) == (2, 1)  # the other app's latest and list


def test_a_rate_limit_leaving_apps_out_of_date_exits_3(site: Path, github: FakeGitHub):
    github.set_fault(None, RateLimited429Fault(60))
    assert run_once() == EXIT_STALE
    assert read_counters(StateStore(site)).requests["rate_limited"] == 1


def test_a_failure_while_every_app_is_still_within_its_interval_exits_0(site: Path, github: FakeGitHub):
    assert run_once() == EXIT_OK
    github.set_fault(None, StatusFault(503))
    due_but_in_time = START_MS + (INTERVAL_S - 10) * 1000
    assert run_once(due_but_in_time) == EXIT_OK
    assert read_counters(StateStore(site)).requests["failed"] == 2
    # Past the interval the next failed round says so; the backoff then keeps it saying so.
    assert run_once(START_MS + (INTERVAL_S + 60) * 1000) == EXIT_STALE


def test_redis_errors_and_the_mode_are_counted(site: Path, settings, fresh_redis_server: RedisServer):
    settings.CACHES = {
        **settings.CACHES,
        "craft_apps": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": fresh_redis_server.url + "?client_name=craft_apps_poller",
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 1},
        },
    }
    assert run_once() == EXIT_OK
    assert read_counters(StateStore(site)).mode == "coordinated"
    fresh_redis_server.kill()
    assert run_once(START_MS + INTERVAL_S * 1000) == EXIT_OK
    counters = read_counters(StateStore(site))
    assert counters.mode == "standalone" and counters.redis_errors >= 1


def test_a_restarted_poller_keeps_10_s_between_two_requests_about_an_app(site: Path, github: FakeGitHub):
    """The gap between two requests about one app is counted from the state file's last answer,
    which a new process reads back, not from the process's memory alone."""
    assert run_once() == EXIT_OK  # both apps fetched at START_MS
    github.reset_requests()
    marks = HostDueMarks(site)
    marks.mark([APPS[0].key], START_MS + 2_000, shared=False)  # a webhook, 2 s later
    assert run_once(START_MS + 6_000) == EXIT_OK  # another process, 6 s after the last answer
    assert github.requests == [], "asked again 6 s after the last request"
    # Held back, not dropped: the mark waits on the state file for the next run.
    assert [mark.app for mark in marks.marks()] == [APPS[0].key], "the refresh is kept"
    assert run_once(START_MS + 12_000) == EXIT_OK  # 12 s after: the kept refresh is answered
    assert [r.repo for r in github.requests] == [APPS[0].repo]

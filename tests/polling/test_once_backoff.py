"""`poll_craft_releases --once` after trouble, as real processes against the GitHub stand-in: a
run a backoff (this host's, or the fleet's after a rate limit) or an app's next try keeps from
asking names what kept it and when that ends, and exits 3. The backoffs last a minute or more,
far longer than a process takes to start: no timer is waited for."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from craft_apps.testing.fake_github import FakeGitHub, RateLimited429Fault, StatusFault
from tests.fleet.server import RedisServer
from tests.polling.processes import APPS, Poller, poller_environment

pytestmark = pytest.mark.slow

INSTANT = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"


def test_a_run_in_this_hosts_backoff_names_it_and_its_end(pollers: Callable[..., Poller], github: FakeGitHub):
    github.set_fault(None, StatusFault(503))
    first = pollers("--once")
    assert first.finish() == 3, first.output()
    assert re.search(
        rf"2 requests failed; this host's backoff now lasts until {INSTANT} \(in ", first.output()
    )
    asked = len(github.requests)
    second = pollers("--once")
    assert second.finish() == 3, second.output()
    assert len(github.requests) == asked, "nothing asked during the backoff"
    found = re.search(
        rf"asked GitHub nothing: this host's backoff lasts until {INSTANT} \(in (\d+ s|1 min( \d+ s)?)\), "
        r"after 1 troubled rounds in a row; 2 apps are older than the interval: "
        r"artcraft-launcher, photocraft\.",
        second.output(),
    )
    assert found, second.output()


def test_a_run_while_an_app_waits_for_its_next_try_names_the_app_and_when(
    pollers: Callable[..., Poller], github: FakeGitHub
):
    github.set_fault(APPS[0].repo, StatusFault(502))  # the other app is fetched: no backoff
    assert pollers("--once").finish() == 3
    asked = len(github.requests)
    second = pollers("--once")
    assert second.finish() == 3, second.output()
    assert len(github.requests) == asked
    assert re.search(
        rf"asked GitHub nothing; photocraft waits for its next try until {INSTANT} \(in \d+ s\) "
        r"after 1 failures; 1 apps are older than the interval: photocraft\.",
        second.output(),
    ), second.output()


def test_a_run_in_the_fleets_rate_limit_backoff_names_it(
    github: FakeGitHub, state_dir: Path, tmp_path: Path, fresh_redis_server: RedisServer
):
    github.set_fault(None, RateLimited429Fault(60))
    runs = []
    for n, directory in enumerate((state_dir, tmp_path / "other-host")):
        env = poller_environment(github, directory, CRAFT_APPS_REDIS_URL=fresh_redis_server.url)
        run = Poller(env, tmp_path / f"host-{n}.log", "--once")
        assert run.finish() == 3, run.output()
        runs.append(run)
    assert "rate limited; the fleet's backoff now lasts until" in runs[0].output()
    assert len(github.requests) == 1, "the second host asked nothing"
    assert re.search(
        rf"asked GitHub nothing: the fleet's backoff lasts until {INSTANT} \(in \d+ min( \d+ s)?\), "
        r"after 1 troubled rounds in a row; 2 apps are older than the interval",
        runs[1].output(),
    ), runs[1].output()

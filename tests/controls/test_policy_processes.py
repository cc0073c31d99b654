"""The release policies with real processes: a release published on the GitHub stand-in while
photocraft's stable channel is ``staged`` reaches 5 % of launchers at once and 100 % only at its
schedule's step, on two hosts (each its own gunicorn with two workers, its own poller and state
file) started at different times, which agree at the same instant; and with ``approval``, an
approval saved in the admin reaches both idle workers within 2 s.

The workers read the wall clock: the release's publish time on the stand-in is set so that its
schedule's last step falls a few seconds after it is published (a launcher rule is a function
of the publish time and the clock, so this is the same as waiting an hour)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from craft_apps.content.channels import HistoryApps
from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppState
from craft_apps.polling.poller import Poller
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.content.workers_support import FETCHED_MS, Workers, database_for_the_workers, workers
from tests.controls.support import (
    V110,
    V120,
    V130,
    Served,
    admin_session,
    burst,
    get,
    host_poller,
    require,
    site_env,
    until_both,
)
from tests.support import ONE_AT_A_TIME, PHOTOCRAFT, publish_history

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]

EDIT_BOUND_S = 2.0  # the promise: every worker applies an approval within 2 s, requests or not
STEP_IN_S = 40.0  # how long after its publication on the stand-in the 100 % step is: host B starts meanwhile
REMADE_S = 1.0  # an answer asked this long after the step has it (the cache looks every 0.1 s)


def installs(answer: Served, n: int) -> str | None:
    """The documented launcher rule (docs/controls.md): a launcher whose number is ``n`` (0-99)
    installs the rollout's release when ``n`` is below its percentage, else ``latest_release``."""
    if answer.rollout is not None and n < answer.rollout[1]:
        return answer.rollout[0]
    return answer.latest


def policy(kind: str, schedule: str, since: datetime) -> ReleasePolicy:
    """A policy saved as the admin saves one, in effect from ``since``."""
    row = ReleasePolicy(
        app_key="photocraft", channel="stable", policy=kind, schedule=schedule, reason="brakes"
    )
    row.full_clean()
    row.save()
    ReleasePolicy.objects.filter(pk=row.pk).update(effective_from=since)  # a write bumps the marker
    return row


@contextmanager
def host(
    tmp_path: Path, name: str, github: FakeGitHub, database: dict[str, str]
) -> Iterator[tuple[Workers, Poller, FakeClock]]:
    """One host: two gunicorn workers on its own state directory, and its poller (in this
    process), which polls the stand-in once when the host starts."""
    state_dir = tmp_path / name
    clock = FakeClock(time.time_ns() // 1_000_000)
    poller = host_poller(state_dir, github, clock, HistoryApps())
    poller.tick()
    site = Workers(site_env(state_dir, database), tmp_path / f"{name}.log")
    try:
        listening(site)
        until_both(site, lambda a: a.fetched, 30, f"{name} answers with photocraft fetched")
        yield site, poller, clock
    finally:
        site.stop()


def listening(site: Workers) -> None:
    """Waits for gunicorn to answer (its port is the signal)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            get(site)
            return
        except OSError:
            require(site.process.poll() is None and time.monotonic() < deadline, site.output())
            time.sleep(0.02)


def until_both_mention(site: Workers, tag: str) -> list[Served]:
    """Every answer until both workers served one naming ``tag`` (they look at the state file
    every 0.1 s)."""
    answers: list[Served] = []
    deadline = time.monotonic() + 10
    while len({a.pid for a in answers if a.mentions(tag)}) < 2:
        require(time.monotonic() < deadline, f"both workers name {tag}\n{site.output()}")
        answers += [answer for _, _, answer in timed(site)]
    return answers


def timed(site: Workers) -> list[tuple[float, float, Served]]:
    """Twelve concurrent answers, each with when its request started and ended (wall clock)."""

    def one(_: int) -> tuple[float, float, Served]:
        started = time.time()
        answer = get(site)
        return started, time.time(), answer

    return list(site._pool.map(one, range(12)))


def test_a_staged_release_reaches_5_percent_at_once_and_100_only_at_its_step_on_two_hosts(tmp_path: Path):
    now = datetime.now(UTC)
    with FakeGitHub() as github, database_for_the_workers() as (database, _):
        github.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "1.2.0", now - timedelta(days=3)))
        policy("staged", "+0m 5, +1m 100", since=now - timedelta(days=1))
        with host(tmp_path, "host-a", github, database) as (site_a, poller_a, clock_a):
            require(get(site_a).latest == "v1.2.0", "host A serves v1.2.0 before the new release")
            published = (datetime.now(UTC) - timedelta(seconds=60 - STEP_IN_S)).replace(microsecond=0)
            github.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "1.3.0", published))
            full_at = (published + timedelta(minutes=1)).timestamp()
            clock_a.advance(3600)  # host A's poller is due again: it finds the new release
            poller_a.tick()
            first = until_both_mention(site_a, "v1.3.0")
            staged = [a for a in first if a.mentions("v1.3.0")]
            assert all(a.latest == "v1.2.0" and a.rollout == ("v1.3.0", 5) for a in staged), staged
            assert installs(staged[0], 4) == "v1.3.0" and installs(staged[0], 5) == "v1.2.0"
            with host(tmp_path, "host-b", github, database) as (site_b, _, _):
                samples = sample_until_full(site_a, site_b, full_at)
    before = [a for _, ended, a in samples if ended < full_at]
    after = [a for started, _, a in samples if started > full_at + REMADE_S]
    require(before and after, f"answers on both sides of the step: {len(before)}, {len(after)}")
    assert {(a.latest, a.rollout) for a in before} == {("v1.2.0", ("v1.3.0", 5))}
    assert {(a.latest, a.rollout) for a in after} == {("v1.3.0", None)}
    assert len({a.pid for a in before}) == 4, "both workers of both hosts answered before the step"
    assert len({a.pid for a in after}) == 4, "both workers of both hosts answered after the step"


def sample_until_full(site_a: Workers, site_b: Workers, full_at: float) -> list[tuple[float, float, Served]]:
    """Answers of both hosts from now until a few seconds past the step."""
    samples: list[tuple[float, float, Served]] = []
    while time.time() < full_at + REMADE_S + 3:
        samples += timed(site_a) + timed(site_b)
        time.sleep(0.05)
    return samples


def test_approval_holds_a_release_until_an_approval_in_the_admin_reaches_both_idle_workers(tmp_path: Path):
    day = datetime(2026, 10, 1, tzinfo=UTC)
    old, older = replace(V120, published_at=day), replace(V110, published_at=day - timedelta(days=1))
    new = replace(V130, published_at=day + timedelta(days=2))
    state = AppState(latest_release=new, fetched_ms=FETCHED_MS)
    with database_for_the_workers() as (database, _), workers(tmp_path, database, state=state) as site:
        publish_history(tmp_path / "state", "photocraft", (new, old, older), repo="storytold/photocraft")
        row = policy("approval", "+0h 5, +24h 100", since=day + timedelta(days=1))  # before v1.3.0
        until_both(site, held, 10, "both workers hold v1.3.0 back")
        session = admin_session(site)
        url = f"http://127.0.0.1:{site.port}/admin/craft_apps/releasepolicy/"
        page = session.get(url, timeout=5)
        assert "v1.3.0: waits for an approval" in page.text
        form = {
            "action": "approve",
            "_selected_action": str(row.pk),
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        }
        done = session.post(url, data=form, timeout=5, headers={"Referer": url}, allow_redirects=False)
        require(done.status_code == 302, f"the action ran: {done.status_code}")
        approved = time.monotonic()
        time.sleep(max(0.0, approved + EDIT_BOUND_S - time.monotonic()))  # nobody asks meanwhile
        answers = burst(site)
    assert len({a.pid for a in answers}) == 2, "both workers answered"
    assert all(a.latest == "v1.3.0" and a.rollout is None for a in answers), [
        (a.pid, a.latest) for a in answers
    ]


def held(answer: Served) -> bool:
    return answer.fetched and answer.latest == "v1.2.0" and not answer.mentions("v1.3.0")

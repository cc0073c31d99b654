"""A rollout prepared before its release is published (issue 32 item 2), with real processes:
two hosts, each two gunicorn workers of the demo site and a poller asking the GitHub stand-in
(in this process, on a clock of the test's), on one site database in a file.

The operator saves, in the admin of a running host, a rollout at 25 % of v1.3.0 while GitHub
has only v1.2.0: the admin keeps it and warns, naming the tags the host knows. A second host
starts after. Then GitHub publishes v1.3.0 and each host's poller brings it: on each host, from
the first answer that names v1.3.0 on, every answer of both workers offers it as the rollout at
25 %, with v1.2.0 as ``latest_release``; none serves v1.3.0 to everybody first."""

from __future__ import annotations

import html
import re
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from craft_apps.content.channels import HistoryApps
from craft_apps.content.models import ReleaseControl
from craft_apps.polling.poller import Poller
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.content.support import alert
from tests.content.workers_support import Workers, database_for_the_workers
from tests.controls.conftest import DAY
from tests.controls.support import Served, admin_session, burst, host_poller, require, site_env, until_both
from tests.support import ONE_AT_A_TIME, PHOTOCRAFT

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]

INTERVAL_S = 1800  # the poller's interval: advancing its clock by it makes photocraft due
SIGNAL = "Controls saved before this alert"  # an alert written after the control


@pytest.fixture
def github_without_v130() -> Iterator[FakeGitHub]:
    """photocraft's v1.1.0 and v1.2.0, the latest; v1.3.0 not published yet."""
    with FakeGitHub() as server:
        for day, version in enumerate(("1.1.0", "1.2.0")):
            server.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, version, DAY + timedelta(days=day)))
        yield server


def save_in_the_admin(site: Workers, fields: dict[str, str]) -> str:
    """Posts the add form of the running site's admin; the page it lands on, as text."""
    session = admin_session(site)
    url = f"http://127.0.0.1:{site.port}/admin/craft_apps/releasecontrol/add/"
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', session.get(url, timeout=5).text)
    require(token, "the add form has its CSRF token")
    assert token is not None
    page = session.post(url, data={**fields, "csrfmiddlewaretoken": token[1]}, timeout=5)
    return html.unescape(page.text)


def sample_while(sites: list[Workers], work: threading.Thread) -> list[list[Served]]:
    """Each site's answers from before ``work`` starts until it ended and both workers of every
    site served v1.3.0 (or one served it other than staged: the test stops there and says so)."""
    answers: list[list[Served]] = [[] for _ in sites]
    work.start()
    deadline = time.monotonic() + 60
    while work.is_alive() or not all(ended(mine) for mine in answers):
        for site, mine in zip(sites, answers, strict=True):
            mine += burst(site)
        outputs = "\n".join(site.output() for site in sites)
        require(time.monotonic() < deadline, f"v1.3.0 not on every worker after 60 s\n{outputs}")
    work.join()
    return answers


def ended(answers: list[Served]) -> bool:
    naming = [a for a in answers if a.mentions("v1.3.0")]
    return len({a.pid for a in naming}) == 2 or not all(staged(a) for a in naming)


def listening(site: Workers) -> None:
    """Waits for gunicorn to answer (the signal: a connection accepted)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            burst(site)
            return
        except OSError:  # not listening yet
            require(site.process.poll() is None and time.monotonic() < deadline, site.output())
            time.sleep(0.05)


def staged(answer: Served) -> bool:
    return answer.latest == "v1.2.0" and answer.rollout == ("v1.3.0", 25)


def host(tmp_path: Path, name: str, github: FakeGitHub, clock: FakeClock, database: dict[str, str]) -> Host:
    """A host: its poller (in this process) polls once, then its two workers start and serve."""
    state_dir = tmp_path / name
    poller = host_poller(state_dir, github, clock, HistoryApps(fresh_s=0, now_ms=clock.now_ms))
    poller.tick()
    site = Workers(site_env(state_dir, database), tmp_path / f"{name}.log")
    listening(site)
    return Host(poller, site)


@dataclass(frozen=True)
class Host:
    poller: Poller
    site: Workers


ROLLOUT_FORM = {
    "app_key": "photocraft",
    "action": "rollout",
    "tag": "v1.3.0",
    "channel": "",
    "percentage": "25",
    "schedule": "",
    "reason": "Prepared before the release: a quarter first.",
}


def test_a_rollout_saved_before_its_release_starts_at_its_percentage_the_moment_it_appears(
    tmp_path: Path, github_without_v130: FakeGitHub
):
    """Host A runs before the control is saved (in its admin); host B starts after. Both pollers
    bring v1.3.0, one after the other, while both hosts' workers are asked."""
    github = github_without_v130
    clock = FakeClock(time.time_ns() // 1_000_000)
    with database_for_the_workers() as (database, _), ExitStack() as stack:
        a = host(tmp_path, "host-a", github, clock, database)
        stack.callback(a.site.stop)
        until_both(a.site, lambda s: s.latest == "v1.2.0", 30, "host A serves v1.2.0")
        page = save_in_the_admin(a.site, ROLLOUT_FORM)
        assert "was added successfully" in page, page[:3000]
        assert "Photocraft has no release tagged v1.3.0 that this host knows (it knows v1.2.0" in page, (
            "the warning, naming what the host knows"
        )
        require(ReleaseControl.objects.get().tag == "v1.3.0", "the rollout is saved")
        b = host(tmp_path, "host-b", github, clock, database)
        stack.callback(b.site.stop)
        # A worker that serves the alert read the database after the control was written
        # (a look reads the notices, then the controls): the signal that it has the control.
        alert(title=SIGNAL)
        for site in (a.site, b.site):
            until_both(site, lambda s: s.mentions(SIGNAL) and s.latest == "v1.2.0", 30, "the control read")
            require(all(not s.mentions("v1.3.0") for s in burst(site)), "v1.3.0 isn't known yet")

        github.publish(PHOTOCRAFT.repo, demo_release(PHOTOCRAFT, "1.3.0", DAY + timedelta(days=2)))
        clock.advance(INTERVAL_S)
        both_poll = threading.Thread(target=lambda: (a.poller.tick(), b.poller.tick()))
        answers = sample_while([a.site, b.site], both_poll)
    for name, mine in zip(("host A", "host B"), answers, strict=True):
        naming = [answer for answer in mine if answer.mentions("v1.3.0")]
        require(naming, f"{name}'s poller brought v1.3.0")
        wrong = [(x.pid, x.latest, x.rollout) for x in naming if not staged(x)]
        assert not wrong, (
            f"{name}: {len(wrong)} of {len(naming)} answers naming v1.3.0 not staged: {wrong[:5]}"
        )
        assert len({answer.pid for answer in naming}) == 2, f"both of {name}'s workers served it"

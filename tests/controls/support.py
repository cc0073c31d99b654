"""Helpers for the release controls' tests: the controls as the admin writes them (through the
ORM, so every write bumps the notices' version as the admin's does), what an answer serves of
photocraft, and two gunicorn workers sampled until both answer alike.

The gunicorn site is ``tests.content.test_workers``' (its ``Workers``, whose answers carry the
worker's pid in ``X-Worker-Pid``); only the reading of an answer is this directory's own."""

from __future__ import annotations

import json
import os
import re
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from django.contrib.auth import get_user_model
from django.test import Client

from craft_apps.content.models import ReleaseControl
from craft_apps.controls.rules import HOLD, ROLLOUT, YANK
from craft_apps.fleet.store import SharedStore
from craft_apps.github.client import GitHubClient
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.clock import Clock
from craft_apps.kernel.domain import AppSpec
from craft_apps.polling.poller import PollConfig, Poller
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.fake_github import FakeGitHub
from tests.content.workers_support import Workers
from tests.support import PHOTOCRAFT, RELEASE_INFO_URL, S, release

APP = "photocraft"
V110, V120, V130 = release("1.1.0"), release("1.2.0"), release("1.3.0")


def control(action: str, tag: str, **fields: object) -> ReleaseControl:
    """A control saved as the admin saves one (``full_clean`` first, so the test's controls are
    ones the admin accepts)."""
    row = ReleaseControl(app_key=APP, action=action, tag=tag, reason="bad build", **fields)
    row.full_clean()
    row.save()
    return row


def yank(tag: str) -> ReleaseControl:
    return control(YANK, tag)


def hold(tag: str, channel: str = "") -> ReleaseControl:
    return control(HOLD, tag, channel=channel)


def rollout(tag: str, percentage: int, **fields: object) -> ReleaseControl:
    return control(ROLLOUT, tag, percentage=percentage, **fields)


def require(condition: object, what: str) -> None:
    """A precondition: its failure fails the test as an error of its setup (``pytest.fail``), told
    apart from the ``AssertionError`` of the promise the test checks."""
    if not condition:
        pytest.fail(what)


@dataclass(frozen=True)
class Served:
    """What one answer serves of photocraft."""

    pid: str
    body: bytes
    fetched: bool
    latest: str | None
    rollout: tuple[str, int] | None

    def mentions(self, tag: str) -> bool:
        """Whether the answer names ``tag`` anywhere (a release, a rollout, an asset's URL)."""
        return tag.encode() in self.body


def served(body: bytes, pid: str = "") -> Served:
    app = json.loads(body)["release_info"]["apps"][APP]
    staged = app.get("rollout")
    return Served(
        pid=pid,
        body=body,
        fetched=app.get("app_last_fetched") is not None,
        latest=(app.get("latest_release") or {}).get("tag"),
        rollout=None if staged is None else (staged["release"]["tag"], staged["percentage"]),
    )


def get(site: Workers, query: str = "") -> Served:
    url = f"http://127.0.0.1:{site.port}{RELEASE_INFO_URL}{query}"
    # Only a hang guard: on a busy machine twelve requests queue on two sync workers.
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200
        return served(response.read(), response.headers["X-Worker-Pid"])


def burst(site: Workers, query: str = "") -> list[Served]:
    """Twelve concurrent requests: both sync workers answer some."""
    return list(site._pool.map(lambda _: get(site, query), range(12)))


def until_both(site: Workers, condition: Callable[[Served], bool], timeout: float, what: str) -> float:
    """Seconds until each of the two workers has served an answer meeting ``condition``."""
    started, met = time.monotonic(), set[str]()
    while len(met) < 2:
        met |= {answer.pid for answer in burst(site) if condition(answer)}
        if time.monotonic() - started > timeout:
            raise AssertionError(f"{what}: only {sorted(met)} after {timeout} s\n{site.output()}")
    return time.monotonic() - started


def site_env(
    state_dir: Path, database: dict[str, str], extra: dict[str, str] | None = None
) -> dict[str, str]:
    """The environment of the two-worker site (``tests.content.worker_site``) on ``database``,
    serving photocraft from ``state_dir``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="tests.content.worker_site",
        CRAFT_APPS_STATE_DIR=str(state_dir),
        CRAFT_APPS_RELEASE_APPS="photocraft=PhotoCraft=storytold/photocraft",
        **{f"DJANGO_DB_{key}": value for key, value in database.items()},
        **(extra or {}),
    )
    return env


def host_poller(
    state_dir: Path,
    github: FakeGitHub,
    clock: Clock,
    needs_history: Callable[[], frozenset[str]],
    shared: SharedStore | None = None,
    apps: tuple[AppSpec, ...] = (PHOTOCRAFT,),
    every_app: bool = False,
) -> Poller:
    """A host's poller in this process, holding its state directory's lease, asking the stand-in
    (with ``every_app``, keeping every app's history: ``PollConfig.history_for_every_app``)."""
    store = StateStore(state_dir)
    store.open_for_writing()
    lease = Lease(store, holder=state_dir.name, clock=clock)
    assert lease.try_acquire() and lease.fence is not None
    client = GitHubClient(api_url=github.url, web_url="https://github.com", token=None, clock=clock)
    poller = Poller(
        config=PollConfig(
            apps, interval_ms=1800 * S, max_backoff_ms=14_400 * S, history_for_every_app=every_app
        ),
        github=client,
        host=store,
        fence=lease.fence,
        clock=clock,
        shared=shared,
        needs_history=needs_history,
    )
    poller.load_host_state()
    return poller


def admin_session(site: Workers) -> requests.Session:
    get_user_model().objects.create_superuser("operator", "", "a long password")
    session = requests.Session()
    login = f"http://127.0.0.1:{site.port}/admin/login/"
    page = session.get(login, timeout=5)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    require(token, "the login form has its CSRF token")
    assert token is not None
    form = {"username": "operator", "password": "a long password", "csrfmiddlewaretoken": token[1]}
    done = session.post(login, data={**form, "next": "/admin/"}, timeout=5, allow_redirects=False)
    require(done.status_code == 302, f"logged in: {done.status_code}")
    return session


def answer(client: Client, query: str = "") -> Served:
    """What ``release_info`` (with ``query``) serves through Django's client."""
    response = client.get(RELEASE_INFO_URL + query)
    assert response.status_code == 200
    return served(response.content)


def yank_serves_the_one_before(client: Client, clock: FakeClock) -> None:
    """Yanks v1.3.0; stable and beta serve v1.2.0 and never name v1.3.0, over 90 s."""
    yank("v1.3.0")
    for _ in range(3):
        for query in ("", "?channel=beta"):
            yanked = answer(client, query)
            assert (yanked.fetched, yanked.latest) == (True, "v1.2.0"), query
            assert not yanked.mentions("v1.3.0"), query
        clock.advance(30)

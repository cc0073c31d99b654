"""Every app's release list as a poller keeping every app's history asks it, GitHub
faked with `responses`: once at start-up for a host that has none, once per new latest release,
never per interval, and after the round's latests; and what that costs in requests per app per day."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import responses
from requests import PreparedRequest

from craft_apps.github.client import GitHubClient
from craft_apps.polling.poller import PollConfig, Poller
from craft_apps.testing.clock import FakeClock
from tests.polling.hosts import API, PUBLISHED, Host, release_json
from tests.support import PHOTOCRAFT, TWO_APPS, S

INTERVAL_S = 1800
LATEST = f"{API}/repos/{PHOTOCRAFT.repo}/releases/latest"
LIST = f"{API}/repos/{PHOTOCRAFT.repo}/releases"


class GitHub:
    """photocraft's releases on a fake GitHub: the latest and the list, each with its ETag."""

    def __init__(self, versions: tuple[str, ...] = ("0.4.0", "0.5.0")) -> None:
        self.releases: list[dict[str, Any]] = []
        for version in versions:
            self.publish(version)
        responses.add_callback(responses.GET, LATEST, callback=self._latest)
        responses.add_callback(responses.GET, LIST, callback=self._list)

    def publish(self, version: str) -> None:
        release = release_json(PHOTOCRAFT, version)
        release["published_at"] = (PUBLISHED + timedelta(days=len(self.releases))).isoformat()
        self.releases.insert(0, release)

    def asked(self, url: str) -> int:
        return len([call for call in responses.calls if str(call.request.url).split("?")[0] == url])

    def _latest(self, request: PreparedRequest) -> tuple[int, dict[str, str], str]:
        return _answer(request, self.releases[0])

    def _list(self, request: PreparedRequest) -> tuple[int, dict[str, str], str]:
        return _answer(request, self.releases)


def _answer(request: PreparedRequest, body: object) -> tuple[int, dict[str, str], str]:
    text = json.dumps(body)
    etag = '"' + hashlib.sha256(text.encode()).hexdigest()[:16] + '"'
    if request.headers.get("If-None-Match") == etag:
        return 304, {"ETag": etag}, ""
    return 200, {"ETag": etag, "Content-Type": "application/json"}, text


class EveryAppHost(Host):
    """A host whose poller keeps every app's history (``history_for_every_app``);
    ``every_app=False`` makes a poller of before (only the apps that need history)."""

    every_app = True

    def new_poller(self) -> Poller:
        assert self.lease.fence is not None
        github = GitHubClient(api_url=API, web_url="https://github.com", token=None, clock=self.clock)
        config = PollConfig(self.apps, INTERVAL_S * S, 14_400 * S, history_for_every_app=self.every_app)
        poller = Poller(
            config=config, github=github, host=self.store, fence=self.lease.fence, clock=self.clock
        )
        poller.load_host_state()
        return poller


def tags(host: Host) -> list[str]:
    return [release.tag for release in host.store.read().history.get("photocraft", ())]


@responses.activate
def test_the_list_is_asked_once_per_new_latest_release_and_not_per_interval(
    state_dir: Path, fake_clock: FakeClock
):
    github = GitHub()
    host = EveryAppHost(state_dir, fake_clock, apps=(PHOTOCRAFT,))
    host.poller.tick()
    assert (github.asked(LATEST), github.asked(LIST)) == (1, 1), "a first fetch: the list too"
    assert tags(host) == ["v0.5.0", "v0.4.0"]
    for _ in range(10):  # ten intervals, nothing new: the latest revalidated, no list
        fake_clock.advance(INTERVAL_S)
        host.poller.tick()
    assert (github.asked(LATEST), github.asked(LIST)) == (11, 1)
    github.publish("0.6.0")
    fake_clock.advance(INTERVAL_S)
    host.poller.tick()
    assert (github.asked(LATEST), github.asked(LIST)) == (12, 2), "a new release: one list"
    assert tags(host) == ["v0.6.0", "v0.5.0", "v0.4.0"]
    for _ in range(5):
        fake_clock.advance(INTERVAL_S)
        host.poller.tick()
    assert (github.asked(LATEST), github.asked(LIST)) == (17, 2)


@responses.activate
def test_a_first_round_serves_every_latest_then_asks_the_lists(state_dir: Path, fake_clock: FakeClock):
    """A new host's first round asks each app's latest 1 s apart, as before lists, and only
    then each app's release list: every latest is served as soon as without them."""
    for app in TWO_APPS:
        path = f"{API}/repos/{app.repo}/releases"
        responses.add(responses.GET, f"{path}/latest", json=release_json(app))
        responses.add(responses.GET, path, json=[release_json(app), release_json(app, "0.4.0")])
    started_ms = fake_clock.now_ms()
    host = EveryAppHost(state_dir, fake_clock)
    host.poller.tick()
    asked = [str(call.request.url).removeprefix(API).split("?")[0] for call in responses.calls]
    repos = [app.repo for app in TWO_APPS]
    assert asked == [f"/repos/{repo}/releases/latest" for repo in repos] + [
        f"/repos/{repo}/releases" for repo in repos
    ]
    fetched = [host.saved(app.key).fetched_ms for app in TWO_APPS]
    assert fetched == [started_ms, started_ms + 1 * S], "the latests 1 s apart, no list between"
    for app in TWO_APPS:
        assert [r.tag for r in host.store.read().history[app.key]] == ["v0.5.0", "v0.4.0"]


@responses.activate
def test_a_poller_without_the_list_asks_it_once_at_start_up_though_its_apps_are_fresh(
    state_dir: Path, fake_clock: FakeClock
):
    """A state file written before (only the latest seen): the next poller asks the list at its
    first ticks, as a refresh (its latest revalidated, then the list), and not again after."""
    github = GitHub()
    host = EveryAppHost(state_dir, fake_clock, apps=(PHOTOCRAFT,))
    host.every_app = False
    host.restart()  # a poller of before: no list
    host.poller.tick()
    assert tags(host) == ["v0.5.0"] and github.asked(LIST) == 0
    fake_clock.advance(60)  # restarted a minute later: photocraft is fresh for 29 minutes
    host.every_app = True
    host.restart()
    for _ in range(58):  # its ticks until the interval ends
        host.poller.tick()
        fake_clock.advance(30)
    assert (github.asked(LATEST), github.asked(LIST)) == (2, 1)
    assert tags(host) == ["v0.5.0", "v0.4.0"]
    host.restart()  # a restart with the list kept asks nothing ahead
    host.poller.tick()
    assert (github.asked(LATEST), github.asked(LIST)) == (2, 1)


@pytest.mark.parametrize("new_releases", [0, 1, 4, 12])
@responses.activate
def test_what_a_day_costs_per_app_is_its_latests_one_list_at_start_and_one_per_release(
    state_dir: Path, fake_clock: FakeClock, new_releases: int
):
    """A day at the 1800 s interval (no token: 304s counted), releases published evenly: the
    requests per app per day, printed for docs/benchmarks.md."""
    github = GitHub()
    host = EveryAppHost(state_dir, fake_clock, apps=(PHOTOCRAFT,))
    rounds = 24 * 3600 // INTERVAL_S
    published_at = {round(rounds * (i + 0.5) / new_releases) for i in range(new_releases)}
    for n in range(rounds):
        if n in published_at:
            github.publish(f"1.{n}.0")
        host.poller.tick()
        fake_clock.advance(INTERVAL_S)
    latests, lists = github.asked(LATEST), github.asked(LIST)
    print(f"{new_releases} new releases: {latests} latest + {lists} lists = {latests + lists} a day")
    assert (latests, lists) == (rounds, 1 + len(published_at))

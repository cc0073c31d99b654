"""Silent drops made loud: a repository in another case, a renamed one, links on another host, a
404 after a release, assets past GitHub's limit. Each is one warning per app and release (not per
tick, not again after a restart), a row in the state file, and a line of ``craft_apps_status``.
GitHub faked with ``responses``, time with FakeClock, a real state file."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import responses

from craft_apps.github.client import GitHubClient
from craft_apps.host.drops import GONE, MOVED, read_drops
from craft_apps.host.health import HealthPolicy, health_problems
from craft_apps.host.lease import Lease
from craft_apps.host.observe import observe
from craft_apps.host.store import StateStore
from craft_apps.kernel.domain import AppSpec
from craft_apps.ops.status_document import status_document
from craft_apps.ops.status_read import FleetView
from craft_apps.ops.status_text import render_text
from craft_apps.polling.poller import PollConfig, Poller
from craft_apps.testing.clock import FakeClock
from tests.polling.hosts import API, release_json
from tests.support import PHOTOCRAFT, S

INTERVAL_S = 1800
PHOTO = PHOTOCRAFT


class Host:
    def __init__(self, state_dir: Path, clock: FakeClock, app: AppSpec, web_url: str = "https://github.com"):
        self.clock, self.app, self.web_url = clock, app, web_url
        self.store = StateStore(state_dir)
        self.store.open_for_writing()
        self.lease = Lease(self.store, holder="host-a", clock=clock)
        assert self.lease.try_acquire()
        self.poller = self.new_poller()

    def new_poller(self) -> Poller:
        assert self.lease.fence is not None
        github = GitHubClient(api_url=API, web_url=self.web_url, token=None, clock=self.clock)
        poller = Poller(
            config=PollConfig((self.app,), INTERVAL_S * S, 14_400 * S, web_url=self.web_url),
            github=github,
            host=self.store,
            fence=self.lease.fence,
            clock=self.clock,
        )
        poller.load_host_state()
        return poller

    def tick_later(self) -> None:
        self.clock.advance(INTERVAL_S)
        assert self.poller.tick().round.requests() == 1

    def status(self) -> dict[str, Any]:
        policy = HealthPolicy(
            apps=(self.app.key,), interval_ms=INTERVAL_S * S, takeover_ms=32 * S, polling_enabled=True
        )
        return status_document(
            observe(self.store), FleetView(configured=False), policy, [self.app], self.clock.now_ms()
        )


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("craft_apps")
    ]


def latest(app: AppSpec) -> str:
    return f"{API}/repos/{app.repo}/releases/latest"


@responses.activate
def test_a_repository_configured_in_another_case_keeps_every_asset(
    state_dir: Path, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    configured = AppSpec("photocraft", "PhotoCraft", "StoryTold/PhotoCraft")  # GitHub: storytold/photocraft
    responses.get(latest(configured), json=release_json(PHOTO), headers={"ETag": '"1"'})
    host = Host(state_dir, fake_clock, configured)
    host.poller.tick()
    release = host.store.read().apps["photocraft"].latest_release
    assert release is not None and len(release.assets) == 13
    host.poller = host.new_poller()  # a restart judges the stored release again: nothing lost
    assert host.poller.memory["photocraft"].latest_release == release
    assert warnings(caplog) == []
    assert read_drops(host.store) == ()


@responses.activate
def test_a_renamed_repository_is_followed_and_the_operator_told_once(
    state_dir: Path, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    old = AppSpec("photocraft", "PhotoCraft", "storytold/photocraft-classic")
    moved = f"{API}/repositories/42/releases/latest"
    responses.get(latest(old), status=301, headers={"Location": moved}, json={"message": "Moved Permanently"})
    responses.get(moved, json=release_json(PHOTO), headers={"ETag": '"1"'})
    host = Host(state_dir, fake_clock, old)
    host.poller.tick()
    release = host.store.read().apps["photocraft"].latest_release
    assert release is not None and len(release.assets) == 13
    [warning] = warnings(caplog)
    assert "GitHub redirects to storytold/photocraft" in warning
    assert "photocraft=PhotoCraft=storytold/photocraft" in warning and "APPS" in warning
    host.tick_later()  # 200 again (the ETag is new to responses): the same rename, not said again
    host.poller = host.new_poller()  # a restart remembers what was said, and keeps the assets
    assert host.poller.memory["photocraft"].latest_release == release
    host.tick_later()
    assert len(warnings(caplog)) == 1
    [row] = read_drops(host.store)
    assert (row.kind, row.detail) == (MOVED, "storytold/photocraft")
    doc = host.status()
    assert doc["apps"][0]["moved_to"] == "storytold/photocraft"
    assert "photocraft: GitHub moved storytold/photocraft-classic to storytold/photocraft" in render_text(
        doc, fake_clock.now_ms()
    )


@responses.activate
def test_links_on_another_host_are_one_warning_naming_github_web_url_per_release(
    state_dir: Path, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # GITHUB_API_URL changed to an Enterprise server, GITHUB_WEB_URL left at github.com: the
    # answer's links are on the Enterprise host.
    enterprise = release_json(PHOTO)
    for asset in enterprise["assets"]:
        asset["browser_download_url"] = asset["browser_download_url"].replace(
            "https://github.com", "https://ghe.example"
        )
    enterprise["html_url"] = enterprise["html_url"].replace("https://github.com", "https://ghe.example")
    responses.get(latest(PHOTO), json=enterprise)
    host = Host(state_dir, fake_clock, PHOTO)
    host.poller.tick()
    host.tick_later()
    host.poller = host.new_poller()
    host.tick_later()
    [warning] = warnings(caplog)
    assert "release v0.5.0: 13 assets not served" in warning
    assert "GITHUB_WEB_URL" in warning and "GITHUB_API_URL" in warning
    app = host.status()["apps"][0]
    assert [(d["reason"], d["count"], d["release"]) for d in app["dropped_assets"]] == [
        ("link_host", 13, "v0.5.0")
    ]
    assert "photocraft: 13 assets of v0.5.0 not served (link_host" in render_text(
        host.status(), fake_clock.now_ms()
    )
    # A new release with the same trouble is a new warning: one per app and release.
    newer = release_json(PHOTO, "0.6.0")
    for asset in newer["assets"]:
        asset["browser_download_url"] = asset["browser_download_url"].replace(
            "https://github.com", "https://ghe.example"
        )
    responses.replace(responses.GET, latest(PHOTO), json=newer)
    host.tick_later()
    assert len(warnings(caplog)) == 2 and "release v0.6.0: 13 assets" in warnings(caplog)[1]


@responses.activate
def test_a_404_after_a_release_keeps_serving_it_and_is_a_health_problem_of_its_own(
    state_dir: Path, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    responses.get(latest(PHOTO), json=release_json(PHOTO), headers={"ETag": '"1"'})
    host = Host(state_dir, fake_clock, PHOTO)
    host.poller.tick()
    served = host.store.read().apps["photocraft"].latest_release
    responses.replace(responses.GET, latest(PHOTO), status=404, json={"message": "Not Found"})
    host.tick_later()
    host.tick_later()
    state = host.store.read().apps["photocraft"]
    assert state.latest_release == served and state.etag == '"1"'
    [warning] = warnings(caplog)
    assert "GitHub answers 404" in warning and "still serving v0.5.0" in warning
    policy = HealthPolicy(
        apps=("photocraft",), interval_ms=INTERVAL_S * S, takeover_ms=32 * S, polling_enabled=True
    )
    rules = ("stale", "gone")  # the lease of this test's host isn't kept alive
    problems = health_problems(observe(host.store), policy, fake_clock.now_ms(), rules)
    assert [problem.rule for problem in problems] == ["gone"]
    assert host.status()["apps"][0]["gone_since"] is not None
    assert [row.kind for row in read_drops(host.store)] == [GONE]
    # GitHub answers a release again: the problem ends by itself.
    responses.replace(responses.GET, latest(PHOTO), json=release_json(PHOTO, "0.6.0"))
    with caplog.at_level(logging.INFO):
        host.tick_later()
    assert health_problems(observe(host.store), policy, fake_clock.now_ms(), rules) == []
    assert any("GitHub answers a release again" in r.getMessage() for r in caplog.records)


@responses.activate
def test_a_404_for_a_repository_that_never_had_a_release_is_no_problem(
    state_dir: Path, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    responses.get(latest(PHOTO), status=404, json={"message": "Not Found"})
    host = Host(state_dir, fake_clock, PHOTO)
    host.poller.tick()
    assert host.store.read().apps["photocraft"].latest_release is None
    assert warnings(caplog) == [] and read_drops(host.store) == ()


@responses.activate
def test_assets_past_githubs_limit_are_one_warning(
    state_dir: Path, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    body = release_json(PHOTO)
    template = body["assets"][0]
    body["assets"] = [
        {
            **template,
            "name": f"part-{i}.bin",
            "browser_download_url": f"https://github.com/{PHOTO.repo}/releases/download/v0.5.0/part-{i}.bin",
        }
        for i in range(1003)
    ]
    responses.get(latest(PHOTO), json=body)
    host = Host(state_dir, fake_clock, PHOTO)
    host.poller.tick()
    host.tick_later()
    release = host.store.read().apps["photocraft"].latest_release
    assert release is not None and len(release.assets) == 1000
    [warning] = warnings(caplog)
    assert "3 assets not served: the answer lists more than 1000 (GitHub's own limit)" in warning

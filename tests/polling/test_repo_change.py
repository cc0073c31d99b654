"""`poll_craft_releases --once` as real processes on one state directory when an app's repository
changes in `APPS`, and when the GitHub side answers 304 to a request that sent no ETag."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest

from craft_apps.api.answer import build_release_info
from craft_apps.host.store import StateStore
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub, RecordedRequest, StatusFault
from tests.polling.processes import Poller, poller_environment

ONE = AppSpec("one", "One", "acme/one")
UNO = AppSpec("one", "One", "acme/uno")
WEB = "https://github.com"

pytestmark = pytest.mark.slow


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        server.publish(ONE.repo, demo_release(ONE, "1.0.0", datetime(2026, 10, 1, tzinfo=UTC)))
        server.publish(UNO.repo, demo_release(UNO, "2.0.0", datetime(2026, 10, 8, tzinfo=UTC)))
        yield server


@pytest.fixture
def once(github: FakeGitHub, state_dir: Path, tmp_path: Path) -> Iterator[Callable[[AppSpec], Poller]]:
    """Runs `--once` with ``APPS`` holding the one app given, on the same state directory."""
    started: list[Poller] = []

    def run(app: AppSpec) -> Poller:
        env = poller_environment(github, state_dir)
        env["CRAFT_APPS_RELEASE_APPS"] = f"{app.key}={app.name}={app.repo}"
        poller = Poller(env, tmp_path / f"once-{len(started)}.log", "--once")
        started.append(poller)
        return poller

    yield run
    for poller in started:
        poller.kill()


def stored_row(state_dir: Path) -> tuple[object, ...]:
    db = sqlite3.connect(state_dir / "craft_apps_state.sqlite3")
    try:
        row = db.execute(
            "SELECT repo, fetched_ms, repo_fetched_ms, etag FROM app_state WHERE key = 'one'"
        ).fetchone()
    finally:
        db.close()
    assert row is not None
    return tuple(row)


def kind(request: RecordedRequest) -> str:
    """``latest`` for a repository's latest release, ``releases`` for its release list."""
    return request.path.split("?")[0].rsplit("/", 1)[-1]


def test_a_repository_changed_in_apps_is_asked_about_at_once_and_the_old_release_never_served(
    once: Callable[[AppSpec], Poller], github: FakeGitHub, state_dir: Path
) -> None:
    first = once(ONE)
    assert first.finish() == 0, first.output()
    assert stored_row(state_dir)[0] == ONE.repo
    github.reset_requests()

    second = once(UNO)
    assert second.finish() == 0, second.output()
    assert "2 fetched, 0 unchanged, 0 failed" in second.output()  # acme/uno's latest and list
    assert "the host's state file holds a release of acme/one for one, not of acme/uno" in second.output(), (
        second.output()
    )
    asked = github.requests
    assert [(request.repo, kind(request)) for request in asked] == [
        (UNO.repo, "latest"),
        (UNO.repo, "releases"),
    ]
    assert asked[0].header("If-None-Match") is None, "acme/one's ETag is never sent about acme/uno"
    repo, fetched_ms, repo_fetched_ms, etag = stored_row(state_dir)
    assert (repo, repo_fetched_ms) == (UNO.repo, fetched_ms)
    assert etag == github.etag_of(UNO.repo)

    served = build_release_info([UNO], StateStore(state_dir).read().apps, WEB).apps["one"]
    assert served.repo == UNO.repo
    assert served.latest_release is not None and served.latest_release.version == "2.0.0"
    assert served.latest_release.assets, "acme/uno's own files"
    assert all("/acme/uno/" in asset.download_url for asset in served.latest_release.assets)

    github.reset_requests()
    third = once(UNO)  # nothing due; a refresh would revalidate acme/uno's own ETag
    assert third.finish() == 0, third.output()
    assert "release of acme/one" not in third.output()
    assert github.requests == []


def test_going_back_to_the_first_repository_asks_again_too(
    once: Callable[[AppSpec], Poller], github: FakeGitHub, state_dir: Path
) -> None:
    for app in (ONE, UNO, ONE):
        poller = once(app)
        assert poller.finish() == 0, poller.output()
    asked = [(request.repo, kind(request)) for request in github.requests]
    assert asked == [(repo, k) for repo in (ONE.repo, UNO.repo, ONE.repo) for k in ("latest", "releases")]
    assert github.requests[-2].header("If-None-Match") is None, "acme/uno's ETag is not acme/one's"
    served = build_release_info([ONE], StateStore(state_dir).read().apps, WEB).apps["one"]
    assert served.latest_release is not None and served.latest_release.version == "1.0.0"


def test_a_304_to_a_request_without_an_etag_is_a_failed_request_not_a_fetch(
    once: Callable[[AppSpec], Poller], github: FakeGitHub, state_dir: Path
) -> None:
    """A proxy answering 304 to a first request (no ETag sent): before, the app read as fetched
    with no release, so the answer turned public and health ok."""
    github.set_fault(ONE.repo, StatusFault(304, body=b""))
    poller = once(ONE)
    assert poller.finish() == 3, poller.output()
    output = poller.output()
    assert "0 fetched, 0 unchanged, 1 failed" in output, output
    assert output.count("HTTP 304 Not Modified to a request that sent no ETag") == 1, output
    state = StateStore(state_dir).read().apps["one"]
    assert state.fetched_ms is None and state.failures == 1
    info = build_release_info([ONE], StateStore(state_dir).read().apps, WEB)
    assert info.last_fetched is None, "never public while nothing was fetched"

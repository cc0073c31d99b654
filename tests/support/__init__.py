"""Helpers shared by the whole suite: ``from tests.support import X`` for any of them.

This module holds the builders (releases, a published state file and history, webhook
deliveries) and the ``ONE_AT_A_TIME`` mark; its submodules hold the rest, re-exported here:

- ``apps``: the apps the tests configure (``PHOTOCRAFT``, ``TWO_APPS``), ``apps_setting`` and the
  endpoint's path (``RELEASE_INFO_URL``);
- ``ports``: ``free_port`` for a server a test starts;
- ``time``: ``S``, one second in milliseconds;
- ``source``: ``copy_of_the_source``, a clean tree to build the package from.

A helper only one directory's tests use lives beside them, in that directory's ``support.py``
(fixtures stay in its ``conftest.py``, which tests never import).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import (
    AppSpec,
    AppState,
    AssetPlatform,
    CraftAppArch,
    CraftAppOs,
    CraftAppPackageType,
    Release,
    ReleaseAsset,
)
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.support.apps import ARTCRAFT_LAUNCHER, PHOTOCRAFT, RELEASE_INFO_URL, TWO_APPS, apps_setting
from tests.support.ports import free_port
from tests.support.time import S

__all__ = [
    "ARTCRAFT_LAUNCHER",
    "ONE_AT_A_TIME",
    "PHOTOCRAFT",
    "RELEASE_INFO_URL",
    "SHA",
    "TWO_APPS",
    "S",
    "apps_setting",
    "free_port",
    "publish",
    "publish_history",
    "release",
    "release_event",
    "signed",
    "stand_in",
    "webhook_headers",
]

# Tests that load the machine hard (dozens of processes, a browser, a wheel build, a simulated
# fleet) or hold real processes to a deadline of seconds run one at a time, on one xdist worker
# (pytest runs with --dist loadgroup), beside the light tests: on two cores, a deadline test next
# to a crowd of processes measured the crowd, not the code.
ONE_AT_A_TIME = pytest.mark.xdist_group("one_at_a_time")

SHA = "8a5edab282632443219e051e4ade2d1d5bbc671c781051bf1437897cbdfea0f1"


def release(
    version: str = "0.5.0",
    *,
    notes: str = "Notes",
    app: str = "photocraft",
    repo: str = "storytold/photocraft",
) -> Release:
    """A small release with one Windows installer and a checksum file."""
    base = f"https://github.com/{repo}/releases/download/v{version}/"

    def asset(name: str, platform: AssetPlatform | None, sha: str | None = SHA) -> ReleaseAsset:
        return ReleaseAsset(
            name=name, size_bytes=1234, download_url=base + name, sha256=sha, platform=platform
        )

    return Release(
        tag=f"v{version}",
        version=version,
        name=f"PhotoCraft v{version}",
        published_at=datetime(2026, 10, 8, 14, 52, 50, tzinfo=UTC),
        html_url=f"https://github.com/{repo}/releases/tag/v{version}",
        prerelease=False,
        notes_markdown=notes,
        assets=(
            asset(
                f"{app}-{version}-windows-x64.msi",
                AssetPlatform(CraftAppOs.WINDOWS, CraftAppArch.X64, CraftAppPackageType.MSI),
            ),
            asset("SHA256SUMS.txt", None, sha=None),
        ),
    )


def publish(
    state_dir: Path,
    apps: dict[str, AppState],
    clock: FakeClock | None = None,
    repos: Mapping[str, str] | None = None,
) -> StateStore:
    """Writes ``apps`` to the host state file as a poller holding the lease would: a state that
    records no repository gets the one ``repos`` (by default the ``APPS`` setting) gives its key,
    as the poller records its app's."""
    if repos is None:
        from craft_apps.conf import app_settings

        repos = {app.key: app.repo for app in app_settings.APPS}
    store = StateStore(state_dir)
    store.open_for_writing()
    lease = Lease(store, holder="test-writer", clock=clock or FakeClock())
    assert lease.try_acquire()
    assert lease.fence is not None
    for key, state in apps.items():
        if state.repo is None and key in repos:
            state = replace(state, repo=repos[key])
        assert store.put_app(key, state, fence=lease.fence)
    lease.release()
    return store


def publish_history(
    state_dir: Path,
    key: str,
    releases: Sequence[Release],
    clock: FakeClock | None = None,
    *,
    etag: str | None = None,
    fetched_ms: int | None = None,
    repo: str | None = None,
) -> StateStore:
    """Makes ``releases`` the app's history in the host state file, as a poller holding the
    lease would (through ``StateStore.put_history``); ``repo`` defaults to the ``APPS``
    setting's repository of ``key``."""
    if repo is None:
        from craft_apps.conf import app_settings

        repo = next((app.repo for app in app_settings.APPS if app.key == key), None)
    store = StateStore(state_dir)
    store.open_for_writing()
    lease = Lease(store, holder="test-writer", clock=clock or FakeClock())
    assert lease.try_acquire()
    assert lease.fence is not None
    store.put_history(key, releases, fence=lease.fence, etag=etag, fetched_ms=fetched_ms, repo=repo)
    lease.release()
    return store


@contextmanager
def stand_in(apps: Iterable[AppSpec] = TWO_APPS, version: str = "0.5.0") -> Iterator[FakeGitHub]:
    """The local GitHub stand-in, running, with a demo release of each of ``apps``."""
    with FakeGitHub() as server:
        for app in apps:
            server.publish(app.repo, demo_release(app, version, datetime(2026, 10, 8, tzinfo=UTC)))
        yield server


def release_event(repo: str = "storytold/photocraft", action: str = "published") -> dict[str, object]:
    """The parts of GitHub's ``release`` event payload the webhook reads, and some it must not."""
    return {
        "action": action,
        "release": {"tag_name": "v9.9.9", "html_url": "https://evil.example/"},  # never trusted
        "repository": {"full_name": repo, "id": 1},
    }


def signed(body: bytes, secret: str) -> str:
    """``X-Hub-Signature-256`` as GitHub computes it."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def webhook_headers(
    body: bytes, secret: str, event: str = "release", delivery: str = "d-1"
) -> dict[str, str]:
    """Headers of a GitHub delivery of ``body``, for ``django.test.Client.post(..., headers=...)``."""
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": signed(body, secret),
    }

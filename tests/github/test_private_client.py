"""A private app's releases through ``GitHubClient`` (``responses``): each asset keeps GitHub's
id, and ``latest.json`` is read through the API with the token, the file host without it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import responses

from craft_apps.github.client import GitHubClient
from craft_apps.kernel.source import Failed, Fetched, UpdaterFailed, UpdaterFetched
from craft_apps.tauri.fake_release import UPDATER_KEYS
from craft_apps.testing.clock import FakeClock

FIXTURES = Path(__file__).parent / "fixtures"
REPO = "storytold/artcraft"
API = "https://api.github.com"
TOKEN = "ghp_S3cretT0kenValue0123456789abcdefXYZ"
MANIFEST_ID = 288072879
CDN = "https://release-assets.githubusercontent.com/github-production-release-asset/1?sig=x"


@pytest.fixture
def mocked() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield rsps


def client(private: bool = True, token: str | None = TOKEN) -> GitHubClient:
    return GitHubClient(
        api_url=API,
        web_url="https://github.com",
        token=token,
        clock=FakeClock(),
        private_repos=[REPO] if private else [],
    )


def fetched(mocked: responses.RequestsMock, github: GitHubClient) -> Fetched:
    body = (FIXTURES / "tauri_action_release.json").read_bytes()
    mocked.get(f"{API}/repos/{REPO}/releases/latest", body=body)
    outcome = github.fetch_latest_release(REPO, None)
    assert isinstance(outcome, Fetched) and outcome.release is not None
    return outcome


def test_a_private_apps_assets_keep_githubs_ids(mocked: responses.RequestsMock) -> None:
    with client() as github:
        release = fetched(mocked, github).release
    assert release is not None
    assert {asset.name: asset.asset_id for asset in release.assets}["latest.json"] == MANIFEST_ID


def test_a_public_apps_assets_keep_none(mocked: responses.RequestsMock) -> None:
    with client(private=False) as github:
        release = fetched(mocked, github).release
    assert release is not None and all(asset.asset_id is None for asset in release.assets)


def test_latest_json_is_read_through_the_api_with_the_token(mocked: responses.RequestsMock) -> None:
    asset_url = f"{API}/repos/{REPO}/releases/assets/{MANIFEST_ID}"
    mocked.get(asset_url, status=302, headers={"Location": CDN})
    mocked.get(CDN, body=(FIXTURES / "tauri_action_latest.json").read_bytes())
    with client() as github:
        release = fetched(mocked, github).release
        assert release is not None
        outcome = github.fetch_updater(release)
    assert isinstance(outcome, UpdaterFetched) and len(outcome.files) == len(UPDATER_KEYS)
    asked = next(call for call in mocked.calls if call.request.url == asset_url)
    assert asked.request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert asked.request.headers["Accept"] == "application/octet-stream"
    host = next(call for call in mocked.calls if call.request.url == CDN)
    assert "Authorization" not in host.request.headers  # requests drops it off the API's host


def test_without_a_token_a_private_app_is_not_asked_for(mocked: responses.RequestsMock) -> None:
    with client() as github:
        release = fetched(mocked, github).release
    assert release is not None
    mocked.calls.reset()
    with client(token=None) as github:
        latest = github.fetch_latest_release(REPO, None)
        updater = github.fetch_updater(release)
    assert isinstance(latest, Failed) and isinstance(updater, UpdaterFailed)
    for reason in (latest.reason, updater.reason):
        assert "a private app needs a GitHub token or a GitHub App" in reason
        assert "CRAFT_APPS_RELEASE_GITHUB_TOKEN" in reason
    assert len(mocked.calls) == 0  # GitHub would answer 404, which reads as "no release"

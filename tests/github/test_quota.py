"""The client keeps GitHub's rate-limit headers of the latest answer that carried them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import responses

from craft_apps.github.client import GitHubClient
from craft_apps.kernel.domain import GitHubQuota
from craft_apps.kernel.source import NotModified, RateLimited
from craft_apps.testing.clock import START_MS, FakeClock
from tests.github.support import API_URL, LATEST_URL, REPO, WEB_URL, github_release


def quota_headers(remaining: str, limit: str = "5000", reset: str = "1790003600") -> dict[str, str]:
    return {"x-ratelimit-remaining": remaining, "x-ratelimit-limit": limit, "x-ratelimit-reset": reset}


@pytest.fixture
def github() -> Iterator[GitHubClient]:
    with (
        responses.RequestsMock() as mocked,
        GitHubClient(api_url=API_URL, web_url=WEB_URL, token=None, clock=FakeClock()) as client,
    ):
        client.mocked = mocked  # type: ignore[attr-defined]
        yield client


def test_the_quota_of_every_kind_of_answer_is_kept(github: GitHubClient) -> None:
    mocked = github.mocked  # type: ignore[attr-defined]
    assert github.last_quota is None
    mocked.get(LATEST_URL, body=json.dumps(github_release()), headers=quota_headers("4999"))
    github.fetch_latest_release(REPO, None)
    assert github.last_quota == GitHubQuota(4999, 5000, 1_790_003_600_000, START_MS)
    mocked.replace(responses.GET, LATEST_URL, status=304, headers=quota_headers("4998"))
    assert isinstance(github.fetch_latest_release(REPO, '"e"'), NotModified)
    assert github.last_quota is not None and github.last_quota.remaining == 4998
    mocked.replace(responses.GET, LATEST_URL, status=403, headers=quota_headers("0"))
    assert isinstance(github.fetch_latest_release(REPO, None), RateLimited)
    assert github.last_quota is not None and github.last_quota.remaining == 0


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"x-ratelimit-remaining": "12"},
        quota_headers("lots"),
        quota_headers("61", limit="60"),
        quota_headers("-1"),
    ],
)
def test_an_answer_without_a_sane_quota_keeps_the_last_one(github: GitHubClient, headers) -> None:
    mocked = github.mocked  # type: ignore[attr-defined]
    mocked.get(LATEST_URL, status=304, headers=quota_headers("40", limit="60"))
    github.fetch_latest_release(REPO, '"e"')
    mocked.replace(responses.GET, LATEST_URL, status=304, headers=headers)
    github.fetch_latest_release(REPO, '"e"')
    assert github.last_quota is not None and (github.last_quota.remaining, github.last_quota.limit) == (
        40,
        60,
    )


def test_a_garbage_reset_is_left_out(github: GitHubClient) -> None:
    github.mocked.get(LATEST_URL, status=304, headers=quota_headers("1", reset="99999999999999"))  # type: ignore[attr-defined]
    github.fetch_latest_release(REPO, '"e"')
    assert github.last_quota == GitHubQuota(1, 5000, None, START_MS)

"""``GitHubClient.fetch_releases`` against ``responses``: the history's release list, its own
ETag and 304, drafts left out, prereleases kept, and every entry judged by the latest's rules."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import responses
from responses import matchers

from craft_apps.github.client import GitHubClient
from craft_apps.github.parsing import parse_release
from craft_apps.kernel.source import Failed, ListFetched, NotModified, RateLimited
from craft_apps.testing.clock import FakeClock

from .support import API_URL, REPO, WEB_URL, github_asset, github_release

LIST_URL = f"{API_URL}/repos/{REPO}/releases"


@pytest.fixture
def mocked() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as rsps:
        yield rsps


def client() -> GitHubClient:
    return GitHubClient(api_url=API_URL, web_url=WEB_URL, token=None, clock=FakeClock())


def entry(tag: str, **overrides: Any) -> dict[str, Any]:
    name = f"photocraft-{tag[1:]}-windows-x64.msi"
    asset = github_asset(name, browser_download_url=f"{WEB_URL}/{REPO}/releases/download/{tag}/{name}")
    fields: dict[str, Any] = {
        "tag_name": tag,
        "name": f"PhotoCraft {tag}",
        "html_url": f"{WEB_URL}/{REPO}/releases/tag/{tag}",
        "assets": [asset],
    }
    fields.update(overrides)
    return github_release(**fields)


def test_the_list_asks_for_per_page_and_reads_each_release_with_the_latest_s_parser(
    mocked: responses.RequestsMock,
) -> None:
    rc = entry("v0.6.0-rc.1", prerelease=True, published_at="2026-10-09T10:00:00Z")
    stable = entry("v0.5.0")
    mocked.get(
        LIST_URL,
        json=[rc, stable],
        headers={"ETag": '"list-1"'},
        match=[matchers.query_param_matcher({"per_page": "20"})],
    )
    with client() as github:
        outcome = github.fetch_releases(REPO, None, per_page=20)
    assert isinstance(outcome, ListFetched) and outcome.etag == '"list-1"' and outcome.refused == ()
    releases = [listed.release for listed in outcome.releases]
    assert releases == [
        parse_release(json.dumps(rc).encode(), REPO),
        parse_release(json.dumps(stable).encode(), REPO),
    ]
    assert [r.prerelease for r in releases] == [True, False]


def test_drafts_are_left_out_and_a_refused_entry_is_one_line_with_its_tag(
    mocked: responses.RequestsMock,
) -> None:
    draft = entry("v0.7.0", draft=True)
    bad = entry("v0.6.1", tag_name="bad tag")
    good = entry("v0.5.0", assets=[github_asset(browser_download_url="https://evil.example/x.msi")])
    mocked.get(LIST_URL, json=[draft, bad, good, "junk"])
    with client() as github:
        outcome = github.fetch_releases(REPO, None, per_page=20)
    assert isinstance(outcome, ListFetched)
    assert [listed.release.tag for listed in outcome.releases] == ["v0.5.0"]
    assert outcome.releases[0].dropped == (("link_host", 1),)  # the latest's drop rules
    assert len(outcome.refused) == 2
    assert outcome.refused[0].startswith("release 'bad tag': ")
    assert outcome.refused[1] == "entry 3 is JSON str, not an object"


def test_the_list_s_etag_is_revalidated_and_a_304_is_not_modified(mocked: responses.RequestsMock) -> None:
    mocked.get(LIST_URL, status=304, match=[matchers.header_matcher({"If-None-Match": '"list-1"'})])
    with client() as github:
        assert github.fetch_releases(REPO, '"list-1"', per_page=20) == NotModified()


def test_a_304_without_an_etag_sent_a_404_a_non_list_and_a_rate_limit(mocked: responses.RequestsMock) -> None:
    mocked.get(LIST_URL, status=304)
    mocked.get(LIST_URL, status=404, json={"message": "Not Found"})
    mocked.get(LIST_URL, json={"tag_name": "v1"})
    mocked.get(LIST_URL, status=429, headers={"Retry-After": "60"})
    with client() as github:
        assert isinstance(github.fetch_releases(REPO, None, per_page=20), Failed)
        assert github.fetch_releases(REPO, None, per_page=20) == ListFetched(releases=(), etag=None)
        outcome = github.fetch_releases(REPO, None, per_page=20)
        assert outcome == Failed("unusable release list: the answer is JSON dict, not a list")
        assert isinstance(github.fetch_releases(REPO, None, per_page=20), RateLimited)

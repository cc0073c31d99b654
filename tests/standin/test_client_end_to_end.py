"""The real GitHub client against the stand-in, over real sockets: every outcome it can give."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from craft_apps.github.client import GitHubClient
from craft_apps.kernel.source import Failed, Fetched, NotModified, RateLimited
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.fake_github import (
    DripFault,
    DropFault,
    FakeGitHub,
    ForeignAssetsFault,
    GarbageFault,
    HangFault,
    OversizedFault,
    RateLimited429Fault,
    StatusFault,
)
from tests.standin.support import START_EPOCH_S, ManualTime

PHOTOCRAFT = "storytold/photocraft"
WEB_URL = "https://github.com"
SHORT_TIMEOUT_S = 0.3


@pytest.fixture(autouse=True)
def no_proxy_for_loopback(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def stand_in(epoch: ManualTime) -> Iterator[FakeGitHub]:
    with FakeGitHub(now=epoch, web_url=WEB_URL).load_demo() as server:
        yield server


def make_client(server: FakeGitHub, clock: FakeClock, token: str | None = None, **kwargs) -> GitHubClient:
    options = {"connect_timeout": 2.0, "total_timeout": 10.0, **kwargs}
    return GitHubClient(api_url=server.url, web_url=WEB_URL, token=token, clock=clock, **options)


def fetched(outcome) -> Fetched:
    assert isinstance(outcome, Fetched), outcome
    return outcome


def failed(outcome) -> Failed:
    assert isinstance(outcome, Failed), outcome
    return outcome


def test_fetches_the_latest_release_and_its_etag(stand_in, fake_clock):
    with make_client(stand_in, fake_clock) as client:
        outcome = fetched(client.fetch_latest_release(PHOTOCRAFT, None))

    release = outcome.release
    assert release is not None
    assert (release.tag, release.version, release.name) == ("v0.5.0", "0.5.0", "PhotoCraft v0.5.0")
    assert release.html_url == "https://github.com/storytold/photocraft/releases/tag/v0.5.0"
    assert len(release.assets) == 13
    assert release.notes_markdown.startswith("# PhotoCraft 0.5.0")
    assert outcome.etag == stand_in.etag_of(PHOTOCRAFT)
    (request,) = stand_in.requests_for(PHOTOCRAFT)
    assert request.header("accept") == "application/vnd.github+json"
    assert request.header("if-none-match") is None


def test_revalidating_with_the_etag_gives_not_modified(stand_in, fake_clock):
    with make_client(stand_in, fake_clock) as client:
        etag = fetched(client.fetch_latest_release(PHOTOCRAFT, None)).etag
        outcome = client.fetch_latest_release(PHOTOCRAFT, etag)

    assert outcome == NotModified()
    _first, second = stand_in.requests_for(PHOTOCRAFT)
    assert second.header("if-none-match") == etag
    assert second.status == 304


def test_a_repository_without_a_release_is_fetched_as_none(stand_in, fake_clock):
    with make_client(stand_in, fake_clock) as client:
        assert client.fetch_latest_release("storytold/unreleased", None) == Fetched(release=None, etag=None)


def test_an_exhausted_quota_is_rate_limited_until_the_reset(epoch, fake_clock):
    with (
        FakeGitHub(now=epoch, unauthenticated_limit=2).load_demo() as server,
        make_client(server, fake_clock) as client,
    ):
        for _ in range(2):
            fetched(client.fetch_latest_release(PHOTOCRAFT, None))
        outcome = client.fetch_latest_release(PHOTOCRAFT, None)

    assert outcome == RateLimited(retry_at_ms=(int(START_EPOCH_S) + 3600) * 1000)
    assert server.requests[-1].status == 403


def test_a_429_is_rate_limited_for_retry_after(stand_in, fake_clock):
    stand_in.set_fault(PHOTOCRAFT, RateLimited429Fault(retry_after_s=90))

    with make_client(stand_in, fake_clock) as client:
        outcome = client.fetch_latest_release(PHOTOCRAFT, None)

    assert outcome == RateLimited(retry_at_ms=fake_clock.now_ms() + 90_000)


def test_a_hang_fails_within_the_total_timeout(stand_in, fake_clock):
    stand_in.set_fault(PHOTOCRAFT, HangFault())
    started = time.monotonic()

    with make_client(stand_in, fake_clock, total_timeout=SHORT_TIMEOUT_S) as client:
        failed(client.fetch_latest_release(PHOTOCRAFT, None))

    assert time.monotonic() - started < SHORT_TIMEOUT_S + 0.7


def test_a_drip_fails_within_the_total_timeout_although_every_read_is_quick(stand_in, fake_clock):
    stand_in.set_fault(PHOTOCRAFT, DripFault(interval_s=0.01))
    started = time.monotonic()

    with make_client(stand_in, fake_clock, total_timeout=SHORT_TIMEOUT_S) as client:
        failed(client.fetch_latest_release(PHOTOCRAFT, None))

    assert time.monotonic() - started < SHORT_TIMEOUT_S + 0.7


@pytest.mark.parametrize("content_length", [True, False])
def test_an_oversized_answer_fails(stand_in, fake_clock, content_length):
    stand_in.set_fault(PHOTOCRAFT, OversizedFault(content_length=content_length))

    with make_client(stand_in, fake_clock) as client:
        outcome = failed(client.fetch_latest_release(PHOTOCRAFT, None))

    assert "too large" in outcome.reason


def test_garbage_fails(stand_in, fake_clock):
    stand_in.set_fault(PHOTOCRAFT, GarbageFault())

    with make_client(stand_in, fake_clock) as client:
        failed(client.fetch_latest_release(PHOTOCRAFT, None))


@pytest.mark.parametrize("fault", [StatusFault(502, b'{"message": "Bad Gateway"}'), DropFault()])
def test_server_errors_and_dropped_connections_fail(stand_in, fake_clock, fault):
    stand_in.set_fault(PHOTOCRAFT, fault)

    with make_client(stand_in, fake_clock) as client:
        outcome = failed(client.fetch_latest_release(PHOTOCRAFT, None))

    assert "\n" not in outcome.reason


DOWNLOADS = f"{WEB_URL}/{PHOTOCRAFT}/releases/download/v0.5.0/"


@pytest.mark.parametrize(
    "prefix",
    [
        "https://evil.example/",
        f"{DOWNLOADS}../../../../evil/x/releases/download/v1/",
        f"{DOWNLOADS}%2e%2e/%2E%2E/.%2e/%2e./evil/x/releases/download/v1/",
        f"{DOWNLOADS}..\\..\\..\\..\\evil\\x\\releases\\download\\v1\\",
        f"{DOWNLOADS}..%2F..%2F..%2F..%2Fevil%2Fx%2Freleases%2Fdownload%2Fv1/",
    ],
    ids=["another host", "dot segments", "encoded dots", "backslashes", "encoded slashes"],
)
def test_assets_that_point_elsewhere_are_dropped(stand_in, fake_clock, prefix):
    stand_in.set_fault(PHOTOCRAFT, ForeignAssetsFault(prefix))

    with make_client(stand_in, fake_clock) as client:
        release = fetched(client.fetch_latest_release(PHOTOCRAFT, None)).release

    assert release is not None
    assert release.tag == "v0.5.0"
    assert release.assets == ()


def test_the_token_is_sent_as_bearer_and_its_304s_are_free(epoch, fake_clock):
    with (
        FakeGitHub(now=epoch, authenticated_limit=2).load_demo() as server,
        make_client(server, fake_clock, token=" ghp_end_to_end ") as client,
    ):
        etag = fetched(client.fetch_latest_release(PHOTOCRAFT, None)).etag
        # Were a conditional 304 counted, the second one would already be refused.
        revalidations = [client.fetch_latest_release(PHOTOCRAFT, etag) for _ in range(3)]
        last_allowed = client.fetch_latest_release(PHOTOCRAFT, None)
        refused = client.fetch_latest_release(PHOTOCRAFT, etag)

    assert revalidations == [NotModified()] * 3
    fetched(last_allowed)
    assert isinstance(refused, RateLimited)
    assert {r.header("authorization") for r in server.requests} == {"Bearer ghp_end_to_end"}
    assert [r.status for r in server.requests] == [200, 304, 304, 304, 200, 403]


@pytest.mark.parametrize("token", [None, "", "   "])
def test_no_authorization_header_without_a_token(stand_in, fake_clock, token):
    with make_client(stand_in, fake_clock, token=token) as client:
        fetched(client.fetch_latest_release(PHOTOCRAFT, None))

    (request,) = stand_in.requests
    assert request.header("authorization") is None
    assert "authorization" not in request.headers

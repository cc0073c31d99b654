"""``GitHubClient`` against ``responses``: every outcome, every header rule, the size cap,
malformed answers, and the token's secrecy."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import responses
from responses import matchers

from craft_apps.github.client import GitHubClient
from craft_apps.github.parsing import parse_release
from craft_apps.kernel.domain import Release
from craft_apps.kernel.source import Failed, Fetched, FetchOutcome, NotModified, RateLimited
from craft_apps.testing.clock import START_MS, FakeClock

from .support import API_URL, LATEST_URL, REPO, WEB_URL, github_asset, github_release

TOKEN = "ghp_S3cretT0kenValue0123456789abcdefXYZ"
DAY_MS = 86_400_000


@pytest.fixture
def mocked() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield rsps


def client(clock: FakeClock | None = None, **kwargs: Any) -> GitHubClient:
    kwargs.setdefault("token", None)
    return GitHubClient(api_url=API_URL, web_url=WEB_URL, clock=clock or FakeClock(), **kwargs)


def fetch(etag: str | None = None, **kwargs: Any) -> FetchOutcome:
    with client(**kwargs) as github:
        return github.fetch_latest_release(REPO, etag)


def release_body(**overrides: Any) -> bytes:
    return json.dumps(github_release(**overrides)).encode()


def expected_release() -> Release:
    return parse_release(release_body(), REPO)


def req_kwargs(mocked: responses.RequestsMock, index: int = 0) -> dict[str, Any]:
    """What the client passed to the adapter (``responses`` records it on the request)."""
    kwargs: dict[str, Any] = getattr(mocked.calls[index].request, "req_kwargs")  # noqa: B009
    return kwargs


def sent_headers(mocked: responses.RequestsMock, index: int = 0) -> Any:
    return mocked.calls[index].request.headers


# --- Outcomes -------------------------------------------------------------------------------------


def test_200_is_the_release_and_its_etag(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, body=release_body(), headers={"ETag": '"abc123"'})
    outcome = fetch()
    assert isinstance(outcome, Fetched)
    assert outcome.etag == '"abc123"'
    assert outcome.release is not None
    assert (outcome.release.tag, outcome.release.version) == ("v0.5.0", "0.5.0")
    assert len(outcome.release.assets) == 1


def test_a_weak_etag_is_kept_as_sent(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, body=release_body(), headers={"ETag": 'W/"abc123"'})
    assert fetch() == Fetched(release=expected_release(), etag='W/"abc123"')


@pytest.mark.parametrize("headers", [{}, {"ETag": ""}, {"ETag": '"' + "e" * 600 + '"'}])
def test_200_without_a_usable_etag_has_none(mocked: responses.RequestsMock, headers: dict[str, str]) -> None:
    mocked.get(LATEST_URL, body=release_body(), headers=headers)
    assert fetch() == Fetched(release=expected_release(), etag=None)


def test_304_is_not_modified(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, status=304, match=[matchers.header_matcher({"If-None-Match": '"abc123"'})])
    assert fetch(etag='"abc123"') == NotModified()


@pytest.mark.parametrize("etag", [None, "bad\netag"])
def test_a_304_to_a_request_without_an_etag_is_a_failure(
    mocked: responses.RequestsMock, etag: str | None
) -> None:
    """A proxy or cache answering 304 to a plain request says nothing about the release: only
    an ETag sent can be revalidated (an unusable stored one is not sent either)."""
    mocked.get(LATEST_URL, status=304)
    outcome = fetch(etag=etag)
    assert outcome == Failed("HTTP 304 Not Modified to a request that sent no ETag (If-None-Match)")
    assert "If-None-Match" not in sent_headers(mocked)


def test_404_is_a_repository_without_a_release(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, status=404, json={"message": "Not Found", "status": "404"})
    assert fetch() == Fetched(release=None, etag=None)


@pytest.mark.parametrize(
    ("headers", "retry_at_ms"),
    [
        ({}, None),
        ({"Retry-After": "60"}, START_MS + 60_000),
        ({"Retry-After": " 60 "}, START_MS + 60_000),
        ({"Retry-After": "0"}, START_MS),
        ({"Retry-After": "-5"}, START_MS),
        ({"Retry-After": "999999"}, START_MS + DAY_MS),
        ({"Retry-After": "99999999999999999999"}, START_MS + DAY_MS),
        ({"Retry-After": "60", "x-ratelimit-reset": str(START_MS // 1000 + 3600)}, START_MS + 60_000),
        ({"x-ratelimit-reset": str(START_MS // 1000 + 3600)}, START_MS + 3_600_000),
        ({"Retry-After": "soon", "x-ratelimit-reset": str(START_MS // 1000 + 10)}, START_MS + 10_000),
        ({"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),
        ({"x-ratelimit-reset": str(START_MS // 1000 - 3600)}, START_MS),  # already past: now
        ({"x-ratelimit-reset": str(START_MS // 1000 + 10 * 86_400)}, START_MS + DAY_MS),  # capped
        ({"x-ratelimit-reset": "tomorrow"}, None),
    ],
)
def test_429_is_rate_limited_until_the_headers_say(
    mocked: responses.RequestsMock, headers: dict[str, str], retry_at_ms: int | None
) -> None:
    mocked.get(LATEST_URL, status=429, headers=headers, json={"message": "slow down"})
    assert fetch() == RateLimited(retry_at_ms=retry_at_ms)


def test_403_with_no_quota_left_is_rate_limited_until_the_reset(mocked: responses.RequestsMock) -> None:
    reset = START_MS // 1000 + 1200
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}
    mocked.get(LATEST_URL, status=403, headers=headers, json={"message": "API rate limit exceeded"})
    assert fetch() == RateLimited(retry_at_ms=reset * 1000)


@pytest.mark.parametrize("retry_after", ["30", "later"])
def test_403_with_retry_after_is_rate_limited(mocked: responses.RequestsMock, retry_after: str) -> None:
    mocked.get(LATEST_URL, status=403, headers={"Retry-After": retry_after, "x-ratelimit-remaining": "12"})
    outcome = fetch()
    assert outcome == RateLimited(retry_at_ms=START_MS + 30_000 if retry_after == "30" else None)


def test_the_retry_time_follows_the_injected_clock(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, status=429, headers={"Retry-After": "5"})
    clock = FakeClock()
    clock.advance(100)
    assert fetch(clock=clock) == RateLimited(retry_at_ms=START_MS + 105_000)


@pytest.mark.parametrize("remaining", [None, "59", ""])
def test_403_without_rate_limit_signs_fails(mocked: responses.RequestsMock, remaining: str | None) -> None:
    headers = {} if remaining is None else {"x-ratelimit-remaining": remaining}
    mocked.get(
        LATEST_URL, status=403, headers=headers, json={"message": "Resource not accessible by integration"}
    )
    assert fetch() == Failed("HTTP 403 Forbidden: Resource not accessible by integration")


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (500, "HTTP 500 Internal Server Error"),
        (502, "HTTP 502 Bad Gateway"),
        (401, "HTTP 401 Unauthorized"),
        (451, "HTTP 451 Unavailable For Legal Reasons"),
        (201, "HTTP 201 Created"),
        (204, "HTTP 204 No Content"),
    ],
)
def test_any_other_status_fails_with_the_status(
    mocked: responses.RequestsMock, status: int, reason: str
) -> None:
    mocked.get(LATEST_URL, status=status, body=b"")
    assert fetch() == Failed(reason, setting="GITHUB_TOKEN" if status == 401 else None)  # a 401: the token


def test_an_error_message_is_echoed_on_one_capped_line(mocked: responses.RequestsMock) -> None:
    message = "Server\nError\r\n\tdetails " + "x" * 1000
    mocked.get(LATEST_URL, status=500, json={"message": message})
    outcome = fetch()
    assert isinstance(outcome, Failed)
    assert outcome.reason.startswith("HTTP 500 Internal Server Error: Server Error details xxx")
    assert "\n" not in outcome.reason and "\t" not in outcome.reason and len(outcome.reason) < 260


@pytest.mark.parametrize("body", [b"<html>oops</html>", b'{"message": 5}', b"[]", b"\xff\xfe", b"x" * 70_000])
def test_an_error_body_without_a_message_gives_just_the_status(
    mocked: responses.RequestsMock, body: bytes
) -> None:
    mocked.get(LATEST_URL, status=503, body=body)
    assert fetch() == Failed("HTTP 503 Service Unavailable")


# --- Malformed answers ----------------------------------------------------------------------------

MALFORMED: dict[str, bytes] = {
    "garbage": b"<!DOCTYPE html><h1>Unicorn!</h1>",
    "a JSON list": b"[1, 2]",
    "invalid UTF-8": b'{"tag_name": "\xc3\x28"}',
    "a null tag": release_body(tag_name=None),
    "a 256-byte tag": release_body(tag_name="v" + "1" * 255),
    "assets that are not a list": release_body(assets={"name": "x.msi"}),
    "a draft": release_body(draft=True),
    "an empty body": b"",
}


@pytest.mark.parametrize("body", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_release_fails_with_one_line(mocked: responses.RequestsMock, body: bytes) -> None:
    mocked.get(LATEST_URL, body=body, headers={"ETag": '"x"'})
    outcome = fetch()
    assert isinstance(outcome, Failed)
    assert outcome.reason.startswith("unusable release: ")
    assert "\n" not in outcome.reason


def test_a_malformed_asset_is_dropped_and_a_null_name_becomes_the_tag(mocked: responses.RequestsMock) -> None:
    body = json.loads(release_body(name=None))
    good = body["assets"][0]
    body["assets"] = [{**good, "size": "7"}, {**good, "name": None}, good]
    mocked.get(LATEST_URL, json=body)
    outcome = fetch()
    assert isinstance(outcome, Fetched) and outcome.release is not None
    assert outcome.release.name == "v0.5.0"
    assert [a.name for a in outcome.release.assets] == [good["name"]]


# --- The size cap ---------------------------------------------------------------------------------

LIMIT = 4096


def padded_release(size: int) -> bytes:
    body = release_body()
    return body + b" " * (size - len(body))


def test_an_answer_of_exactly_the_limit_is_read(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, body=padded_release(LIMIT), auto_calculate_content_length=True)
    assert isinstance(fetch(max_body_bytes=LIMIT), Fetched)


def test_a_declared_length_over_the_limit_is_refused_before_reading(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, body=padded_release(LIMIT + 1), auto_calculate_content_length=True)
    assert fetch(max_body_bytes=LIMIT) == Failed(
        f"answer too large: {LIMIT + 1} bytes declared, over {LIMIT}"
    )


def test_an_undeclared_answer_over_the_limit_is_refused_while_streaming(
    mocked: responses.RequestsMock,
) -> None:
    mocked.get(LATEST_URL, body=padded_release(LIMIT + 1))
    assert "Content-Length" not in requests.get(LATEST_URL).headers  # the case under test
    assert fetch(max_body_bytes=LIMIT) == Failed(f"answer too large: over {LIMIT} bytes")


def test_the_default_limit_is_4_mib(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, body=padded_release(4 * 1024 * 1024 + 1))
    assert fetch() == Failed(f"answer too large: over {4 * 1024 * 1024} bytes")


# --- Network errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (requests.ConnectTimeout("slow"), "could not connect within 10 s"),
        (requests.ReadTimeout("slow"), "the answer stalled for 30 s"),
        (
            requests.ConnectionError("Connection refused"),
            "request failed: ConnectionError: Connection refused",
        ),
        (requests.exceptions.SSLError("bad\ncertificate"), "request failed: SSLError: bad certificate"),
        (requests.TooManyRedirects("loop"), "more than 5 redirects"),
        (RuntimeError("a bug"), "unexpected error: RuntimeError"),
        (ValueError("a bug"), "unexpected error: ValueError"),
    ],
)
def test_a_request_error_fails_without_raising(
    mocked: responses.RequestsMock, error: Exception, reason: str
) -> None:
    mocked.get(LATEST_URL, body=error)
    assert fetch() == Failed(reason)


def test_redirects_are_followed_up_to_a_limit(mocked: responses.RequestsMock) -> None:
    moved = f"{API_URL}/repositories/42/releases/latest"
    mocked.get(LATEST_URL, status=301, headers={"Location": moved})
    mocked.get(moved, body=release_body())
    assert isinstance(fetch(), Fetched)
    mocked.replace(responses.GET, moved, status=301, headers={"Location": moved})
    assert fetch() == Failed("more than 5 redirects")


@pytest.mark.parametrize(
    "location",
    [
        "http://api.github.com/repositories/42/releases/latest",
        "HTTP://api.github.com/repositories/42/releases/latest",
        " http://api.github.com/repositories/42/releases/latest",
    ],
)
def test_a_redirect_from_https_to_http_fails_without_being_followed(
    mocked: responses.RequestsMock, location: str
) -> None:
    downgraded = "http://api.github.com/repositories/42/releases/latest"
    mocked.get(LATEST_URL, status=301, headers={"Location": location})
    mocked.get(downgraded, body=release_body())
    assert fetch(token=TOKEN) == Failed("refused a redirect from https to http")
    assert [call.request.url for call in mocked.calls] == [LATEST_URL]


def test_a_downgrade_further_down_a_chain_of_redirects_fails(mocked: responses.RequestsMock) -> None:
    moved = f"{API_URL}/repositories/42/releases/latest"
    mocked.get(LATEST_URL, status=302, headers={"Location": moved})
    mocked.get(moved, status=307, headers={"Location": "http://mirror.example/latest"})
    mocked.get("http://mirror.example/latest", body=release_body())
    assert fetch() == Failed("refused a redirect from https to http")
    assert len(mocked.calls) == 2


def test_a_redirect_to_another_scheme_fails(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, status=301, headers={"Location": "ftp://api.github.com/latest"})
    assert fetch() == Failed("refused a redirect from https to ftp")


def test_plain_http_may_redirect_to_plain_http_and_to_https(mocked: responses.RequestsMock) -> None:
    plain = "http://127.0.0.1:8765"
    upgraded = f"https://127.0.0.1:8766/repos/{REPO}/releases/latest"
    mocked.get(f"{plain}/repos/{REPO}/releases/latest", status=301, headers={"Location": f"{plain}/moved"})
    mocked.get(f"{plain}/moved", status=301, headers={"Location": upgraded})
    mocked.get(upgraded, body=release_body())
    with GitHubClient(api_url=plain, web_url=WEB_URL, token=None, clock=FakeClock()) as github:
        assert isinstance(github.fetch_latest_release(REPO, None), Fetched)


@pytest.mark.parametrize(
    "location",
    [
        "https://mirror.example/repos/storytold/photocraft/releases/latest",
        "https://api.github.com.evil.example/repositories/42/releases/latest",
        "//evil.example/repositories/42/releases/latest",
    ],
)
def test_a_redirect_off_the_api_host_fails_without_being_followed(
    mocked: responses.RequestsMock, location: str
) -> None:
    mocked.get(LATEST_URL, status=301, headers={"Location": location})
    outcome = fetch(token=TOKEN)
    assert isinstance(outcome, Failed)
    assert outcome.reason.startswith("refused a redirect off the API host to ")
    assert [call.request.url for call in mocked.calls] == [LATEST_URL]


# GitHub's answer for a renamed (or transferred) repository, as its REST docs describe it ("Follow
# redirects"): 301 to the repository's id, the same URL in the body.
def moved_permanently(location: str) -> dict[str, Any]:
    return {
        "status": 301,
        "headers": {"Location": location},
        "json": {
            "message": "Moved Permanently",
            "url": location,
            "documentation_url": "https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api#follow-redirects",
        },
    }


def test_a_renamed_repository_is_followed_and_its_assets_kept(mocked: responses.RequestsMock) -> None:
    old = "storytold/photocraft-classic"
    moved = f"{API_URL}/repositories/42/releases/latest"
    mocked.get(f"{API_URL}/repos/{old}/releases/latest", **moved_permanently(moved))
    mocked.get(moved, body=release_body(), headers={"ETag": '"new"'})
    with client() as github:
        outcome = github.fetch_latest_release(old, None)
    assert outcome == Fetched(release=expected_release(), etag='"new"', moved_to=REPO)
    assert outcome.release is not None and len(outcome.release.assets) == 1


def test_a_repository_configured_in_another_case_keeps_its_assets(mocked: responses.RequestsMock) -> None:
    mocked.get(f"{API_URL}/repos/StoryTold/PhotoCraft/releases/latest", body=release_body())
    with client() as github:
        outcome = github.fetch_latest_release("StoryTold/PhotoCraft", None)
    assert outcome == Fetched(release=expected_release(), etag=None)  # no rename to tell about


def test_dropped_assets_come_back_with_the_release(mocked: responses.RequestsMock) -> None:
    assets = [github_asset(), github_asset(name="x.msi", browser_download_url="https://evil.example/x.msi")]
    mocked.get(LATEST_URL, body=release_body(assets=assets))
    outcome = fetch()
    assert isinstance(outcome, Fetched)
    assert outcome.dropped == (("link_host", 1),)


# --- The request ----------------------------------------------------------------------------------

STANDARD_HEADERS = {
    "User-Agent": "django-craft-apps (craft apps release poller)",
    "Accept": "application/vnd.github+json",
    "X-GitHub-Api-Version": "2022-11-28",
}


def test_the_request_goes_to_the_exact_url_with_the_standard_headers(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, status=404, match=[matchers.header_matcher(STANDARD_HEADERS)])
    assert fetch() == Fetched(None, None)
    assert mocked.calls[0].request.url == "https://api.github.com/repos/storytold/photocraft/releases/latest"
    assert "If-None-Match" not in sent_headers(mocked)


def test_the_api_url_may_have_a_path_and_a_trailing_slash(mocked: responses.RequestsMock) -> None:
    url = "https://ghe.example/api/v3/repos/storytold/photocraft/releases/latest"
    mocked.get(url, status=304)
    with GitHubClient(
        api_url="https://ghe.example/api/v3/", web_url=WEB_URL, token=None, clock=FakeClock()
    ) as gh:
        assert gh.fetch_latest_release(REPO, '"e"') == NotModified()
    assert mocked.calls[0].request.url == url


def test_a_custom_user_agent_is_sent(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, status=404, match=[matchers.header_matcher({"User-Agent": "probe/1"})])
    assert fetch(user_agent="probe/1") == Fetched(None, None)


@pytest.mark.parametrize("token", [None, "", "   ", "\t\n"])
def test_without_a_token_there_is_no_authorization_header(
    mocked: responses.RequestsMock, token: str | None
) -> None:
    mocked.get(LATEST_URL, status=404)
    assert fetch(token=token) == Fetched(None, None)
    assert "Authorization" not in sent_headers(mocked)


def test_a_token_is_sent_trimmed_as_a_bearer_header(mocked: responses.RequestsMock) -> None:
    mocked.get(
        LATEST_URL,
        status=304,
        match=[
            matchers.header_matcher(
                {"Authorization": f"Bearer {TOKEN}", "If-None-Match": '"abc"', **STANDARD_HEADERS}
            )
        ],
    )
    assert fetch(token=f"  {TOKEN}\n", etag='"abc"') == NotModified()


def test_an_unusable_stored_etag_is_left_out(
    mocked: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    mocked.get(LATEST_URL, body=release_body(), headers={"ETag": '"new"'})
    outcome = fetch(etag='"old"\r\nX-Injected: 1')
    assert isinstance(outcome, Fetched) and outcome.etag == '"new"'
    assert "If-None-Match" not in sent_headers(mocked)
    assert "X-Injected" not in sent_headers(mocked)
    assert "Ignoring the stored ETag of storytold/photocraft" in caplog.text


@pytest.mark.parametrize(
    "repo", ["", "photocraft", "a/b/c", "../secrets", "a/..", "a/b?x=1", "a/b#x", "a /b", "a/b\n"]
)
def test_a_malformed_repository_name_is_not_requested(mocked: responses.RequestsMock, repo: str) -> None:
    with client() as github:
        outcome = github.fetch_latest_release(repo, None)
    assert isinstance(outcome, Failed) and outcome.reason.startswith("not a repository name: ")
    assert "\n" not in outcome.reason
    assert len(mocked.calls) == 0


def test_timeouts_and_streaming_are_requested(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, status=404)
    fetch()
    fetch(connect_timeout=2.5, total_timeout=7.0)
    assert req_kwargs(mocked, 0)["timeout"] == (10.0, 30.0)
    assert req_kwargs(mocked, 1)["timeout"] == (2.5, 7.0)
    assert req_kwargs(mocked, 0)["stream"] is True


@pytest.mark.parametrize("kwargs", [{"connect_timeout": 0}, {"total_timeout": -1}, {"max_body_bytes": 0}])
def test_nonsense_limits_are_refused_at_construction(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="positive"):
        client(**kwargs)


# --- netrc and the environment --------------------------------------------------------------------


@pytest.fixture
def netrc_with_github_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    secret = "netrc-password-for-github"
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine api.github.com login someone password {secret}\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    assert requests.utils.get_netrc_auth(LATEST_URL) == ("someone", secret)  # the trap is armed
    return secret


@pytest.mark.usefixtures("netrc_with_github_credentials")
def test_netrc_adds_no_authorization_not_even_after_a_redirect(mocked: responses.RequestsMock) -> None:
    moved = f"{API_URL}/repositories/42/releases/latest"
    mocked.get(LATEST_URL, status=301, headers={"Location": moved})
    mocked.get(moved, status=404)
    assert fetch() == Fetched(None, None)
    assert len(mocked.calls) == 2
    assert all("Authorization" not in call.request.headers for call in mocked.calls)


@pytest.mark.usefixtures("netrc_with_github_credentials")
def test_netrc_does_not_replace_the_token(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, status=404, match=[matchers.header_matcher({"Authorization": f"Bearer {TOKEN}"})])
    assert fetch(token=TOKEN) == Fetched(None, None)


@pytest.mark.usefixtures("netrc_with_github_credentials")
def test_netrc_is_ignored_even_on_a_session_passed_in(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, status=404)
    assert fetch(session=requests.Session()) == Fetched(None, None)
    assert "Authorization" not in sent_headers(mocked)


def test_the_token_is_not_carried_to_another_host(mocked: responses.RequestsMock) -> None:
    elsewhere = "https://mirror.example/releases/latest"
    mocked.get(LATEST_URL, status=302, headers={"Location": elsewhere})
    mocked.get(elsewhere, status=404)
    assert fetch(token=TOKEN) == Failed("refused a redirect off the API host to mirror.example")
    assert sent_headers(mocked, 0)["Authorization"] == f"Bearer {TOKEN}"
    assert len(mocked.calls) == 1


def test_proxies_from_the_environment_are_used(
    mocked: responses.RequestsMock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    mocked.get(LATEST_URL, status=404)
    fetch()
    assert req_kwargs(mocked, 0)["proxies"].get("https") == "http://proxy.example:3128"


def test_no_proxy_from_the_environment_is_honoured(
    mocked: responses.RequestsMock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "api.github.com")
    mocked.get(LATEST_URL, status=404)
    fetch()
    assert not req_kwargs(mocked, 0)["proxies"]


def test_a_ca_bundle_from_the_environment_is_used(
    mocked: responses.RequestsMock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/ssl/corporate.pem")
    mocked.get(LATEST_URL, status=404)
    fetch()
    assert req_kwargs(mocked, 0)["verify"] == "/etc/ssl/corporate.pem"


# --- The session ----------------------------------------------------------------------------------


class RecordingSession(requests.Session):
    closed = 0

    def close(self) -> None:
        RecordingSession.closed += 1
        super().close()


def test_one_session_serves_every_fetch_and_close_closes_it(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, status=304)
    session = RecordingSession()
    github = client(session=session)
    assert [github.fetch_latest_release(REPO, '"e"') for _ in range(3)] == [NotModified()] * 3
    assert len(mocked.calls) == 3
    before = RecordingSession.closed
    github.close()
    assert RecordingSession.closed == before + 1


# --- The token stays secret -----------------------------------------------------------------------


def test_the_token_is_not_in_the_repr() -> None:
    github = client(token=TOKEN)
    assert TOKEN not in repr(github)
    assert "token=set" in repr(github)
    assert "token=none" in repr(client(token="  "))


def test_a_token_that_cannot_be_a_header_fails_every_fetch_without_showing_it(
    mocked: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    bad = "ghp_first\nsecond"
    github = client(token=bad)
    outcome = github.fetch_latest_release(REPO, None)
    assert outcome == Failed("the GitHub token holds characters an HTTP header cannot carry")
    assert len(mocked.calls) == 0
    for text in (caplog.text, repr(github), repr(outcome)):
        assert "ghp_first" not in text and "second" not in text


@pytest.mark.parametrize(
    "answer",
    [
        {"body": requests.ConnectionError(f"proxy said: Authorization: Bearer {TOKEN}")},
        {"body": RuntimeError(TOKEN)},
        {"status": 500, "json": {"message": f"bad credentials {TOKEN}"}},
        {"status": 401, "json": {"message": "x" * 190 + TOKEN}},  # a cap must not cut it in half
        {"status": 200, "body": json.dumps({"tag_name": TOKEN * 7}).encode()},  # rejected: too long
    ],
)
def test_the_token_is_in_no_reason_and_no_log(
    mocked: responses.RequestsMock, caplog: pytest.LogCaptureFixture, answer: dict[str, Any]
) -> None:
    caplog.set_level(logging.DEBUG)
    mocked.get(LATEST_URL, **answer)
    github = client(token=TOKEN)
    outcome = github.fetch_latest_release(REPO, '"etag"')
    github.close()
    assert isinstance(outcome, Failed)
    for text in (outcome.reason, repr(outcome), caplog.text, repr(github)):
        assert TOKEN not in text
        assert TOKEN[:12] not in text
    assert len(mocked.calls) == 1
    assert sent_headers(mocked)["Authorization"] == f"Bearer {TOKEN}"  # it was really used


def test_outcomes_never_hold_the_token(mocked: responses.RequestsMock) -> None:
    mocked.get(LATEST_URL, body=release_body(), headers={"ETag": '"e"'})
    outcome = fetch(token=TOKEN)
    assert isinstance(outcome, Fetched)
    assert TOKEN not in repr(outcome)

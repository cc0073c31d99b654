"""GitHub App authentication against ``responses``: the JWT, the installation token's exchange
and renewal (before expiry, once after a 401), the installation found per repository, and the
key and tokens kept out of every log line, reason and repr."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import jwt
import pytest
import responses

from craft_apps.checks import configuration_problems
from craft_apps.conf import app_settings
from craft_apps.github.app_auth import RENEW_BEFORE_S, AppCredentials
from craft_apps.github.client import GitHubClient
from craft_apps.kernel.source import Failed, Fetched
from craft_apps.testing.clock import FakeClock
from tests.support.github_app import APP_KEY, APP_PEM

API = "https://api.github.com"
PRIVATE = "storytold/artcraft"
PUBLIC = "storytold/photocraft"
KEY, PEM = APP_KEY, APP_PEM
T0 = 1_800_000_000.0
RELEASE = (Path(__file__).parent / "fixtures" / "tauri_action_release.json").read_bytes()


class Now:
    def __init__(self) -> None:
        self.s = T0

    def __call__(self) -> float:
        return self.s


@pytest.fixture
def mocked() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield rsps


def expires(at_s: float) -> str:
    return datetime.fromtimestamp(at_s, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def exchanges(mocked: responses.RequestsMock, now: Now, installation: int = 77) -> responses.BaseResponse:
    mocked.get(f"{API}/repos/{PRIVATE}/installation", json={"id": installation})
    tokens = iter(f"ghs_installationtoken{n:04d}" for n in range(100))

    def answer(request: object) -> tuple[int, dict[str, str], str]:
        return 201, {}, json.dumps({"token": next(tokens), "expires_at": expires(now.s + 3600)})

    found: responses.BaseResponse = mocked.add_callback(
        responses.POST, f"{API}/app/installations/{installation}/access_tokens", callback=answer
    )
    return found


def credentials(now: Now, installation_id: int | None = None) -> AppCredentials:
    return AppCredentials(
        api_url=API,
        app_id="123456",
        private_key=KEY,
        installation_id=installation_id,
        private_repos=[PRIVATE],
        now=now,
    )


def app_client(app: AppCredentials) -> GitHubClient:
    """The poller's client of a private repository, authenticated as the App."""
    return GitHubClient(
        api_url=API,
        web_url="https://github.com",
        token=None,
        clock=FakeClock(),
        private_repos=[PRIVATE],
        credentials=app,
    )


def test_the_jwt_is_rs256_signed_by_the_apps_key_and_short_lived(mocked) -> None:
    now = Now()
    exchanges(mocked, now)
    assert credentials(now).authorization(PRIVATE) == "Bearer ghs_installationtoken0000"
    sent = mocked.calls[-1].request.headers["Authorization"].removeprefix("Bearer ")
    claims = jwt.decode(
        sent, KEY.public_key(), algorithms=["RS256"], options={"verify_exp": False, "verify_iat": False}
    )
    assert claims["iss"] == "123456"
    assert claims["iat"] == T0 - 60 and claims["exp"] - claims["iat"] <= 600


def test_the_token_is_kept_until_five_minutes_before_it_expires(mocked) -> None:
    now = Now()
    exchange = exchanges(mocked, now)
    app = credentials(now)
    first = app.authorization(PRIVATE)
    now.s = T0 + 3600 - RENEW_BEFORE_S - 1
    assert app.authorization(PRIVATE) == first and exchange.call_count == 1
    now.s = T0 + 3600 - RENEW_BEFORE_S
    assert app.authorization(PRIVATE) != first and exchange.call_count == 2
    assert app.exchanges == 2


def test_a_401_makes_a_new_token_once_and_asks_again(mocked) -> None:
    now = Now()
    exchange = exchanges(mocked, now)
    latest = f"{API}/repos/{PRIVATE}/releases/latest"
    mocked.get(latest, status=401, json={"message": "Bad credentials"})
    mocked.get(latest, body=RELEASE)
    client = app_client(credentials(now))
    outcome = client.fetch_latest_release(PRIVATE, None)
    assert isinstance(outcome, Fetched) and outcome.release is not None
    asked = [call.request.headers["Authorization"] for call in mocked.calls if call.request.url == latest]
    assert asked == ["Bearer ghs_installationtoken0000", "Bearer ghs_installationtoken0001"]
    assert exchange.call_count == 2
    assert "GitHub App" in repr(client) and "ghs_" not in repr(client)


def test_an_installation_that_cant_see_a_private_repo_is_one_line_naming_the_setting(mocked, caplog) -> None:
    now = Now()
    mocked.get(f"{API}/repos/{PRIVATE}/installation", json={"id": 99})
    client = app_client(credentials(now, installation_id=77))
    with caplog.at_level(logging.ERROR):
        outcomes = [client.fetch_latest_release(PRIVATE, None) for _ in range(3)]
    assert all(isinstance(outcome, Failed) for outcome in outcomes)
    reason = outcomes[0].reason if isinstance(outcomes[0], Failed) else ""
    assert "CRAFT_APPS_RELEASE_GITHUB_APP_INSTALLATION_ID" in reason
    assert "can't see the private repository storytold/artcraft" in reason
    assert len([r for r in caplog.records if r.name == "craft_apps.github.app_auth"]) == 1
    assert len(mocked.calls) == 1  # the installation is asked once, not at every tick


def test_a_public_repo_takes_the_configured_installation_without_asking(mocked) -> None:
    now = Now()
    exchanges(mocked, now, installation=77)
    assert credentials(now, installation_id=77).authorization(PUBLIC) is not None
    assert [call.request.url for call in mocked.calls] == [f"{API}/app/installations/77/access_tokens"]


def test_the_key_is_read_from_a_pem_or_a_file(settings, tmp_path) -> None:
    path = tmp_path / "app.pem"
    path.write_text(PEM)
    for value in (PEM, str(path)):
        settings.CRAFT_APPS = {"GITHUB_APP_ID": "123456", "GITHUB_APP_PRIVATE_KEY": value}
        app = app_settings.GITHUB_APP
        assert app is not None and app.private_key.key.private_numbers() == KEY.private_numbers()
        assert "PRIVATE KEY" not in repr(app) and str(path) not in repr(app)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n", "not an unencrypted PEM"),
        ("/nonexistent/app.pem", "the file it names can't be read"),
    ],
)
def test_a_key_that_does_not_parse_is_error_e162_without_its_value(settings, value, reason) -> None:
    settings.CRAFT_APPS = {"GITHUB_APP_ID": "1", "GITHUB_APP_PRIVATE_KEY": value}
    [found] = [f for f in configuration_problems() if f.id == "craft_apps.E162"]
    assert reason in found.msg and "CRAFT_APPS['GITHUB_APP_PRIVATE_KEY']" in found.msg
    assert "bm90IGEga2V5" not in found.msg
    assert app_settings.GITHUB_APP is None


def test_half_an_app_is_error_e163(settings) -> None:
    settings.CRAFT_APPS = {"GITHUB_APP_ID": "1"}
    [found] = [f for f in configuration_problems() if f.id == "craft_apps.E163"]
    assert "GITHUB_APP_PRIVATE_KEY" in found.msg


def test_a_private_app_without_credentials_is_error_e161(settings) -> None:
    settings.CRAFT_APPS = {"APPS": "a=A=o/a", "PRIVATE_APPS": "a"}
    [found] = [f for f in configuration_problems() if f.id == "craft_apps.E161"]
    assert "'a'" not in found.msg and "PRIVATE_APPS" in found.msg
    settings.CRAFT_APPS = {
        "APPS": "a=A=o/a",
        "PRIVATE_APPS": "a",
        "GITHUB_APP_ID": "1",
        "GITHUB_APP_PRIVATE_KEY": PEM,
    }
    assert not [f for f in configuration_problems() if f.id == "craft_apps.E161"]


def test_with_an_app_set_the_token_is_not_used(settings) -> None:
    from craft_apps.github.credentials import credentials_from_settings

    settings.CRAFT_APPS = {
        "GITHUB_TOKEN": "ghp_notused0123456789",
        "GITHUB_APP_ID": "1",
        "GITHUB_APP_PRIVATE_KEY": PEM,
    }
    assert isinstance(credentials_from_settings()[0], AppCredentials)
    client = GitHubClient.from_settings(FakeClock())
    assert "token=GitHub App" in repr(client) and "ghp_" not in repr(client)

"""A fetch that fails for want of credentials GitHub takes (none set, an installation that can't
see the private repository, a 401 after renewal) is a status line naming the setting, never its
value, in the text and in ``--json``, until a fetch succeeds or fails otherwise. GitHub faked
with ``responses``, time with FakeClock, a real state file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from io import StringIO
from pathlib import Path

import pytest
import responses
from django.core.management import call_command

from craft_apps.github.app_auth import AppCredentials
from craft_apps.github.client import GitHubClient
from craft_apps.host.drops import AUTH, read_drops
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec
from craft_apps.kernel.source import Failed
from craft_apps.polling.poller import PollConfig, Poller
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.demo_releases import demo_release
from tests.support import S, apps_setting
from tests.support.github_app import APP_KEY

API = "https://api.github.com"
ARTCRAFT = AppSpec("artcraft", "ArtCraft", "storytold/artcraft")
LATEST = f"{API}/repos/{ARTCRAFT.repo}/releases/latest"
TOKEN = "github_pat_11ABCDEF_authFailureTokenNeverShown"
INTERVAL_S = 1800
PUBLISHED = datetime(2026, 10, 8, 14, 52, 50, tzinfo=UTC)


@pytest.fixture
def mocked() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield rsps


def app_credentials(installation_id: int | None = None) -> AppCredentials:
    return AppCredentials(
        api_url=API,
        app_id="4242",
        private_key=APP_KEY,
        installation_id=installation_id,
        private_repos=[ARTCRAFT.repo],
        now=lambda: 1_800_000_000.0,
    )


def client(token: str | None = None, credentials: AppCredentials | None = None) -> GitHubClient:
    return GitHubClient(
        api_url=API,
        web_url="https://github.com",
        token=token,
        clock=FakeClock(),
        private_repos=[ARTCRAFT.repo],
        credentials=credentials,
    )


def setting_of(github: GitHubClient) -> str | None:
    outcome = github.fetch_latest_release(ARTCRAFT.repo, None)
    assert isinstance(outcome, Failed)
    return outcome.setting


def test_no_credentials_name_the_token(mocked) -> None:
    assert setting_of(client()) == "GITHUB_TOKEN"
    assert len(mocked.calls) == 0  # GitHub is not asked: it would answer 404


def test_a_refused_token_names_the_token_and_a_server_error_names_nothing(mocked) -> None:
    mocked.get(LATEST, status=401, json={"message": "Bad credentials"})
    assert setting_of(client(TOKEN)) == "GITHUB_TOKEN"
    mocked.replace(responses.GET, LATEST, status=500)
    assert setting_of(client(TOKEN)) is None


@pytest.mark.parametrize(
    ("configured", "setting"), [(77, "GITHUB_APP_INSTALLATION_ID"), (None, "GITHUB_APP_ID")]
)
def test_an_installation_that_cant_see_the_repository_names_its_setting(
    mocked, configured: int | None, setting: str
) -> None:
    mocked.get(f"{API}/repos/{ARTCRAFT.repo}/installation", status=404, json={"message": "Not Found"})
    assert setting_of(client(credentials=app_credentials(configured))) == setting


def test_a_401_after_renewal_names_the_app(mocked) -> None:
    mocked.get(f"{API}/repos/{ARTCRAFT.repo}/installation", json={"id": 77})
    body = json.dumps({"token": "ghs_authfailure", "expires_at": "2030-01-01T00:00:00Z"})
    exchange = mocked.post(f"{API}/app/installations/77/access_tokens", status=201, body=body)
    mocked.get(LATEST, status=401, json={"message": "Bad credentials"})
    assert setting_of(client(credentials=app_credentials())) == "GITHUB_APP_ID"
    assert exchange.call_count == 2  # renewed once, refused again


class Host:
    """A host's state file, lease and poller of the private app, with a GitHub client of its own."""

    def __init__(self, state_dir: Path, clock: FakeClock) -> None:
        self.clock = clock
        self.store = StateStore(state_dir)
        self.store.open_for_writing()
        self.lease = Lease(self.store, holder="host-a", clock=clock)
        assert self.lease.try_acquire() and self.lease.fence is not None

    def tick(self, github: GitHubClient) -> None:
        assert self.lease.fence is not None
        poller = Poller(
            config=PollConfig((ARTCRAFT,), INTERVAL_S * S, 14_400 * S),
            github=github,
            host=self.store,
            fence=self.lease.fence,
            clock=self.clock,
        )
        poller.load_host_state()
        assert poller.tick().round.requests() == 1
        self.clock.advance(INTERVAL_S)


def status(*args: str) -> str:
    out = StringIO()
    call_command("craft_apps_status", *args, stdout=out)
    return out.getvalue()


def test_the_status_names_the_setting_until_a_fetch_succeeds_or_fails_otherwise(
    mocked, settings, state_dir: Path, fake_clock: FakeClock
) -> None:
    settings.CRAFT_APPS = {
        "STATE_DIR": str(state_dir),
        "APPS": apps_setting((ARTCRAFT,)),
        "PRIVATE_APPS": "artcraft",
        "GITHUB_TOKEN": TOKEN,
        "COORDINATION_ENABLED": False,
    }
    host = Host(state_dir, fake_clock)
    host.tick(client())  # this poller has no credentials
    [row] = read_drops(host.store)
    assert (row.kind, row.detail) == (AUTH, "GITHUB_TOKEN")
    [app] = json.loads(status("--json"))["apps"]
    named = "CRAFT_APPS['GITHUB_TOKEN'] (environment variable CRAFT_APPS_RELEASE_GITHUB_TOKEN)"
    assert app["auth_failure"]["setting"] == named and app["auth_failure"]["since"] is not None
    assert app["dropped_assets"] == [] and app["failures"] == 1
    text = status()
    assert "artcraft: GitHub lacks or refuses the credentials for storytold/artcraft since" in text
    assert f"check {named}" in text and TOKEN not in text + status("--json")
    # A failure of another kind replaces it; a fetch that succeeds leaves nothing.
    mocked.get(LATEST, status=500)
    host.tick(client(TOKEN))
    assert json.loads(status("--json"))["apps"][0]["auth_failure"] is None
    assert "credentials" not in status()
    host.tick(client())
    assert json.loads(status("--json"))["apps"][0]["auth_failure"] is not None
    mocked.replace(responses.GET, LATEST, json=demo_release(ARTCRAFT, "0.5.0", PUBLISHED))
    host.tick(client(TOKEN))
    assert json.loads(status("--json"))["apps"][0]["auth_failure"] is None
    assert read_drops(host.store) == ()

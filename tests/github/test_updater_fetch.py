"""``GitHubClient.fetch_updater`` against ``responses``: the downloads a release costs, their
size caps, redirects, failures, and no token sent to the web side."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import responses

from craft_apps.github.client import GitHubClient
from craft_apps.github.parsing import parse_release
from craft_apps.kernel.domain import Release
from craft_apps.kernel.source import UpdaterFailed, UpdaterFetched, UpdaterSource
from craft_apps.tauri.fake_release import UPDATER_KEYS
from craft_apps.tauri.files import MAX_MANIFEST_BYTES, MAX_SIGNATURE_BYTES
from craft_apps.testing.clock import FakeClock

FIXTURES = Path(__file__).parent / "fixtures"
REPO = "storytold/artcraft"
WEB = "https://github.com"
DOWNLOADS = f"{WEB}/{REPO}/releases/download/artcraft-v0.37.0/"
TOKEN = "ghp_S3cretT0kenValue0123456789abcdefXYZ"
SIGNED = (
    "ArtCraft_0.37.0_x64_en-US.msi",
    "ArtCraft_0.37.0_x64-setup.exe",
    "ArtCraft_universal.app.tar.gz",
    "ArtCraft_0.37.0_amd64.AppImage",
)


@pytest.fixture
def mocked() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield rsps


def client() -> GitHubClient:
    return GitHubClient(api_url="https://api.github.com", web_url=WEB, token=TOKEN, clock=FakeClock())


def release(*, without: tuple[str, ...] = ()) -> Release:
    data = json.loads((FIXTURES / "tauri_action_release.json").read_bytes())
    data["assets"] = [asset for asset in data["assets"] if asset["name"] not in without]
    return parse_release(json.dumps(data).encode(), REPO, WEB)


def manifest_bytes() -> bytes:
    return (FIXTURES / "tauri_action_latest.json").read_bytes()


def test_the_client_is_an_updater_source() -> None:
    assert isinstance(client(), UpdaterSource)
    assert client().updater_downloads(release()) == 1
    assert client().updater_downloads(release(without=("latest.json",))) == 4


def test_latest_json_is_one_download_without_the_token(mocked: responses.RequestsMock) -> None:
    mocked.get(DOWNLOADS + "latest.json", body=manifest_bytes())
    with client() as github:
        outcome = github.fetch_updater(release())
    assert isinstance(outcome, UpdaterFetched)
    assert outcome.downloads == 1 and outcome.refused == ()
    assert sorted(f.platform for f in outcome.files) == sorted(key for key, _ in UPDATER_KEYS)
    [call] = mocked.calls
    assert "Authorization" not in call.request.headers


def test_without_latest_json_the_sig_files_are_read(mocked: responses.RequestsMock) -> None:
    platforms = json.loads(manifest_bytes())["platforms"]
    for name in SIGNED:
        key = next(k for k, v in platforms.items() if v["url"] == DOWNLOADS + name)
        mocked.get(DOWNLOADS + name + ".sig", body=platforms[key]["signature"])
    with client() as github:
        outcome = github.fetch_updater(release(without=("latest.json",)))
    assert isinstance(outcome, UpdaterFetched) and outcome.downloads == 4
    assert len(outcome.files) == len(UPDATER_KEYS)


def test_a_redirect_to_githubs_file_host_is_followed(mocked: responses.RequestsMock) -> None:
    cdn = "https://release-assets.githubusercontent.com/github-production-release-asset/1?sig=x"
    mocked.get(DOWNLOADS + "latest.json", status=302, headers={"Location": cdn})
    mocked.get(cdn, body=manifest_bytes())
    with client() as github:
        outcome = github.fetch_updater(release())
    assert isinstance(outcome, UpdaterFetched) and len(outcome.files) == len(UPDATER_KEYS)
    assert all("Authorization" not in call.request.headers for call in mocked.calls)


def test_a_redirect_off_https_is_refused(mocked: responses.RequestsMock) -> None:
    mocked.get(
        DOWNLOADS + "latest.json", status=302, headers={"Location": "http://files.example/latest.json"}
    )
    with client() as github:
        outcome = github.fetch_updater(release())
    assert isinstance(outcome, UpdaterFailed)
    assert outcome.reason == "latest.json: refused a redirect from https to http" and outcome.downloads == 1


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ({"status": 404}, "latest.json: HTTP 404 Not Found"),
        ({"status": 503}, "latest.json: HTTP 503 Service Unavailable"),
        (
            {"body": b"{}", "headers": {"Content-Length": str(MAX_MANIFEST_BYTES + 1)}},
            f"latest.json: too large: {MAX_MANIFEST_BYTES + 1} bytes declared, over {MAX_MANIFEST_BYTES}",
        ),
        ({"body": b" " * (MAX_MANIFEST_BYTES + 1)}, f"over {MAX_MANIFEST_BYTES} bytes"),
    ],
)
def test_a_failed_download_is_a_failure_with_a_reason(
    mocked: responses.RequestsMock, answer: dict[str, object], reason: str
) -> None:
    mocked.add(responses.GET, DOWNLOADS + "latest.json", **answer)  # type: ignore[arg-type]
    with client() as github:
        outcome = github.fetch_updater(release())
    assert isinstance(outcome, UpdaterFailed) and reason in outcome.reason


def test_the_first_failed_sig_ends_the_read(mocked: responses.RequestsMock) -> None:
    plan = sorted(f"{n}.sig" for n in SIGNED)
    mocked.get(DOWNLOADS + SIGNED[0] + ".sig", body=b"A" * (MAX_SIGNATURE_BYTES + 1))
    for name in SIGNED[1:]:
        mocked.get(DOWNLOADS + name + ".sig", body=b"c2ln")
    with client() as github:
        outcome = github.fetch_updater(release(without=("latest.json",)))
    assert isinstance(outcome, UpdaterFailed) and "too large" in outcome.reason
    assert len(mocked.calls) == outcome.downloads < len(plan)


def test_a_latest_json_that_is_not_json_is_read_once_with_nothing_kept(
    mocked: responses.RequestsMock,
) -> None:
    mocked.get(DOWNLOADS + "latest.json", body=b"<html>")
    with client() as github:
        outcome = github.fetch_updater(release())
    assert outcome == UpdaterFetched((), 1, ("latest.json is not JSON",))


def test_a_release_without_updater_files_asks_nothing(mocked: responses.RequestsMock) -> None:
    bare = release(without=("latest.json", *(f"{n}.sig" for n in SIGNED)))
    with client() as github:
        assert github.fetch_updater(bare) == UpdaterFetched((), 0)
    assert len(mocked.calls) == 0

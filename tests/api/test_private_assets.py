"""A private app's links point at the asset view, which redirects to GitHub's short-lived URL
(GitHub faked with ``responses``); public apps are served as before."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import responses
from django.test import Client

from craft_apps.api import private_assets
from craft_apps.api.answer import AnswerCache
from craft_apps.api.private_assets import REDIRECT_CACHE
from craft_apps.api.runtime import runtime
from craft_apps.controls.rules import YANK, Control
from craft_apps.github.asset_links import KEEP_S, AssetLinks, LinkFailed, StaticToken
from craft_apps.github.parsing import read_release
from craft_apps.kernel.domain import AppSpec, AppState, UpdaterFile
from tests.support import ARTCRAFT_LAUNCHER, RELEASE_INFO_URL, apps_setting, publish

ARTCRAFT = AppSpec("artcraft", "ArtCraft", "storytold/artcraft")
FIXTURE = Path(__file__).parents[1] / "github" / "fixtures" / "tauri_action_release.json"
FETCHED_MS = 1_791_000_000_000
TOKEN = "ghp_private0123456789abcdefghijklmnopqrst"
API = "https://api.github.com"
MSI = "ArtCraft_0.37.0_x64_en-US.msi"
MSI_ID = 294391297
ASSET_PATH = f"/v1/craft_apps/assets/artcraft/{MSI_ID}/{MSI}"
SIGNED = "https://objects.githubusercontent.com/github-production-release-asset/1?X-Amz-Expires=300&sig=abc"


@pytest.fixture
def private_site(state_dir: Path, settings, install_runtime) -> Iterator[Path]:
    """ArtCraft private, with the fixture's release (its ids kept) and a Windows updater file."""
    settings.CRAFT_APPS = {
        "APPS": apps_setting((ARTCRAFT, ARTCRAFT_LAUNCHER)),
        "PRIVATE_APPS": "artcraft",
        "STATE_DIR": str(state_dir),
        "GITHUB_TOKEN": TOKEN,
    }
    install_runtime(recheck_s=0.0)
    private_assets.LINKS.clear()
    release = read_release(FIXTURE.read_bytes(), ARTCRAFT.repo, keep_ids=True).release
    msi = next(asset for asset in release.assets if asset.name == MSI)
    release = replace(release, updater=(UpdaterFile("windows-x86_64", msi.download_url, "c2ln"),))
    publish(state_dir, {"artcraft": AppState(latest_release=release, fetched_ms=FETCHED_MS)})
    yield state_dir
    private_assets.LINKS.clear()


def github_redirects(
    status: int = 302, location: str = SIGNED, mock: responses.RequestsMock | None = None
) -> responses.BaseResponse:
    url = f"{API}/repos/storytold/artcraft/releases/assets/{MSI_ID}"
    headers = {"Location": location} if status == 302 else {}
    found: responses.BaseResponse = (mock or responses.mock).get(url, status=status, headers=headers)
    return found


def test_private_apps_are_marked_by_their_own_setting(private_site):
    from craft_apps.conf import app_settings

    assert [(app.key, app.private) for app in app_settings.APPS] == [
        ("artcraft", True),
        ("artcraft-launcher", False),
    ]


def test_every_link_of_a_private_app_points_at_the_asset_view(private_site, client: Client):
    apps = json.loads(client.get(RELEASE_INFO_URL).content)["release_info"]["apps"]
    urls = [asset["download_url"] for asset in apps["artcraft"]["latest_release"]["assets"]]
    assert ASSET_PATH in urls
    assert all(url.startswith("/v1/craft_apps/assets/artcraft/") for url in urls)
    assert "asset_id" not in apps["artcraft"]["latest_release"]["assets"][0]  # the contract is as before
    link = client.get("/v1/craft_apps/download/artcraft/windows/x64")
    assert link.status_code == 302 and link["Location"] == ASSET_PATH
    page = client.get("/craft_apps/downloads/artcraft/").content.decode()
    assert "/v1/craft_apps/assets/artcraft/" in page and "releases/download" not in page


def test_the_tauri_updater_gets_an_absolute_url_of_the_asset_view(private_site, client: Client):
    answer = client.get("/v1/craft_apps/updates/tauri/artcraft/windows/x86_64/0.36.0")
    assert answer.status_code == 200
    assert json.loads(answer.content)["url"] == "http://testserver" + ASSET_PATH


PUBLIC_URL = "https://updates.example.com"


def test_with_cdn_public_url_every_link_of_a_private_app_is_absolute_on_it(
    private_site, client: Client, settings, install_runtime
):
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "CDN_PUBLIC_URL": PUBLIC_URL + "/"}
    install_runtime(recheck_s=0.0)
    apps = json.loads(client.get(RELEASE_INFO_URL).content)["release_info"]["apps"]
    urls = [asset["download_url"] for asset in apps["artcraft"]["latest_release"]["assets"]]
    assert PUBLIC_URL + ASSET_PATH in urls
    assert all(url.startswith(PUBLIC_URL + "/v1/craft_apps/assets/artcraft/") for url in urls)
    link = client.get("/v1/craft_apps/download/artcraft/windows/x64")
    assert link.status_code == 302 and link["Location"] == PUBLIC_URL + ASSET_PATH
    page = client.get("/craft_apps/downloads/artcraft/").content.decode()
    assert f'href="{PUBLIC_URL}/v1/craft_apps/assets/artcraft/' in page
    tauri = client.get("/v1/craft_apps/updates/tauri/artcraft/windows/x86_64/0.36.0")
    assert json.loads(tauri.content)["url"] == PUBLIC_URL + ASSET_PATH


def test_cdn_public_url_leaves_a_public_apps_answer_byte_for_byte(
    state_dir: Path, client: Client, settings, install_runtime
):
    settings.CRAFT_APPS = {"APPS": apps_setting((ARTCRAFT,)), "STATE_DIR": str(state_dir)}
    release = read_release(FIXTURE.read_bytes(), ARTCRAFT.repo).release
    publish(state_dir, {"artcraft": AppState(latest_release=release, fetched_ms=FETCHED_MS)})
    install_runtime(recheck_s=0.0)
    before = client.get(RELEASE_INFO_URL).content
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "CDN_PUBLIC_URL": PUBLIC_URL}
    install_runtime(recheck_s=0.0)
    assert client.get(RELEASE_INFO_URL).content == before
    assert b"releases/download" in before and PUBLIC_URL.encode() not in before


def test_a_private_app_without_cdn_public_url_is_warning_w162(private_site, settings):
    from craft_apps.checks import configuration_problems

    [found] = [f for f in configuration_problems() if f.id == "craft_apps.W162"]
    assert "CDN_PUBLIC_URL" in found.msg and "artcraft" in found.msg and "relative" in found.msg
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "CDN_PUBLIC_URL": PUBLIC_URL}
    assert not [f for f in configuration_problems() if f.id == "craft_apps.W162"]
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "PRIVATE_APPS": "", "CDN_PUBLIC_URL": ""}
    assert not [f for f in configuration_problems() if f.id == "craft_apps.W162"]


@responses.activate
def test_the_asset_view_redirects_to_githubs_url_asked_once_a_minute(private_site, client: Client):
    asked = github_redirects()
    first, second = client.get(ASSET_PATH), client.get(ASSET_PATH)
    assert first.status_code == second.status_code == 302
    assert first["Location"] == second["Location"] == SIGNED
    assert first["Cache-Control"] == REDIRECT_CACHE == "public, max-age=30, must-revalidate"
    assert first.content == b""  # never the file's bytes
    assert asked.call_count == 1
    sent = asked.calls[0].request.headers
    assert sent["Authorization"] == f"Bearer {TOKEN}" and sent["Accept"] == "application/octet-stream"
    assert TOKEN not in str(dict(first.items()))


def test_a_kept_link_is_asked_again_after_a_minute() -> None:
    now = [0.0]
    links = AssetLinks(api_url=API, credentials=StaticToken(TOKEN), monotonic=lambda: now[0])
    with responses.RequestsMock() as mocked:
        asked = github_redirects(mock=mocked)
        assert links.link(ARTCRAFT.repo, MSI_ID) == SIGNED
        now[0] = KEEP_S - 0.001
        assert links.link(ARTCRAFT.repo, MSI_ID) == SIGNED
        assert asked.call_count == 1
        now[0] = KEEP_S
        assert links.link(ARTCRAFT.repo, MSI_ID) == SIGNED
        assert asked.call_count == 2


@pytest.mark.parametrize(
    "path",
    [
        f"/v1/craft_apps/assets/artcraft/{MSI_ID}/other-name.msi",
        f"/v1/craft_apps/assets/artcraft/{MSI_ID + 1}/{MSI}",
        f"/v1/craft_apps/assets/artcraft-launcher/{MSI_ID}/{MSI}",  # a public app
        f"/v1/craft_apps/assets/nope/{MSI_ID}/{MSI}",
    ],
)
def test_an_asset_no_served_release_holds_is_a_json_404(private_site, client: Client, path: str):
    answer = client.get(path)
    assert answer.status_code == 404
    assert json.loads(answer.content)["success"] is False


def test_an_asset_of_a_yanked_release_is_a_json_404(private_site, client: Client):
    rt = runtime()
    yanked = (Control("artcraft", YANK, "artcraft-v0.37.0"),)
    rt.answers = AnswerCache(rt.store, rt.notices, recheck_s=0.0, controls=lambda: yanked)
    answer = client.get(ASSET_PATH)
    assert answer.status_code == 404
    assert "no release of ArtCraft served here" in json.loads(answer.content)["error"]


@responses.activate
def test_a_github_failure_is_a_502_one_log_line_and_a_count(private_site, client: Client, caplog):
    github_redirects(status=500)
    before = private_assets.FAILURES.labels("http_500")._value.get()
    with caplog.at_level(logging.WARNING, logger="craft_apps.api.private_assets"):
        answer = client.get(ASSET_PATH)
    assert answer.status_code == 502 and answer["Cache-Control"] == "no-store"
    assert json.loads(answer.content) == {
        "success": False,
        "error": "GitHub gave no download URL for this file: GitHub answered HTTP 500",
    }
    ours = [r for r in caplog.records if r.name == "craft_apps.api.private_assets"]
    assert len(ours) == 1 and TOKEN not in caplog.text
    assert private_assets.FAILURES.labels("http_500")._value.get() == before + 1


def test_without_a_token_the_view_says_so(private_site, client: Client, settings):
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "GITHUB_TOKEN": ""}
    answer = client.get(ASSET_PATH)
    assert answer.status_code == 502
    assert "no GitHub token or GitHub App" in json.loads(answer.content)["error"]


def test_a_redirect_to_a_plain_http_url_is_refused() -> None:
    links = AssetLinks(api_url=API, credentials=StaticToken(TOKEN))
    with responses.RequestsMock() as mocked:
        github_redirects(location="http://objects.example/file", mock=mocked)
        found = links.link(ARTCRAFT.repo, MSI_ID)
    assert isinstance(found, LinkFailed) and found.kind == "bad_location"

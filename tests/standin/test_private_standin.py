"""The fake GitHub's private repositories and GitHub Apps (``craft_apps.testing.private``): 404
without a token, files through signed URLs refused once expired, and the App's token exchange
verified with its public key; and the server's own GitHub code against it."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

import requests
from cryptography.hazmat.primitives.asymmetric import rsa

from craft_apps.github.app_auth import AppCredentials
from craft_apps.github.asset_links import AssetLinks, StaticToken
from craft_apps.tauri.fake_release import tauri_action_release
from craft_apps.testing.fake_github import FakeGitHub
from craft_apps.testing.private import INSTALLATION_TOKEN_S, SIGNED_URL_VALIDITY_S
from tests.standin.support import ManualTime, latest_url

REPO = "storytold/artcraft"
TOKEN = "github_pat_fine_grained_0123456789abcdef"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PUBLISHED = datetime(2026, 11, 20, 17, 4, 12, tzinfo=timezone.utc)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def private_release(github: FakeGitHub) -> dict[str, Any]:
    built = tauri_action_release(
        REPO, "ArtCraft", "0.37.0", PUBLISHED, web_url=github.web_url, api_url=github.url
    )
    github.publish(REPO, built.release, {"latest.json": b'{"platforms": {}}'})
    github.private.make_private(REPO)
    return built.release


def asset_id(release: dict[str, Any], name: str) -> int:
    return int(next(asset["id"] for asset in release["assets"] if asset["name"] == name))


def test_a_private_repo_is_a_404_without_a_token(github: FakeGitHub, http: requests.Session):
    release = private_release(github)
    github.private.allow_token(TOKEN)
    assert http.get(latest_url(github, REPO)).status_code == 404
    download = github.url + urlsplit(release["assets"][0]["browser_download_url"]).path
    assert http.get(download).status_code == 404  # the web side too
    allowed = http.get(latest_url(github, REPO), headers={"Authorization": f"Bearer {TOKEN}"})
    assert allowed.status_code == 200


def test_a_file_comes_through_a_signed_url_refused_after_it_expires(
    github: FakeGitHub, http: requests.Session, epoch: ManualTime
):
    release = private_release(github)
    github.private.allow_token(TOKEN)
    url = f"{github.url}/repos/{REPO}/releases/assets/{asset_id(release, 'latest.json')}"
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/octet-stream"}
    assert http.get(url, headers={"Accept": "application/octet-stream"}).status_code == 404
    redirect = http.get(url, headers=headers, allow_redirects=False)
    assert redirect.status_code == 302
    signed = redirect.headers["Location"]
    assert http.get(signed).content == b'{"platforms": {}}'  # no token needed
    epoch.advance(SIGNED_URL_VALIDITY_S - 1)
    assert http.get(signed).status_code == 200
    epoch.advance(1)
    expired = http.get(signed)
    assert expired.status_code == 403 and b"Request has expired" in expired.content
    assert http.get(signed.replace("signature=", "signature=0")).status_code == 403


def test_asset_links_ask_once_and_hand_out_a_url_that_works(github: FakeGitHub, http: requests.Session):
    release = private_release(github)
    github.private.allow_token(TOKEN)
    links = AssetLinks(api_url=github.url, credentials=StaticToken(TOKEN))
    found = [links.link(REPO, asset_id(release, "latest.json")) for _ in range(3)]
    assert len(set(found)) == 1 and links.requests == 1
    assert isinstance(found[0], str) and http.get(found[0]).status_code == 200


def test_an_apps_jwt_is_verified_and_its_token_reads_the_repo(github: FakeGitHub, epoch: ManualTime):
    private_release(github)
    github.private.add_app("4242", KEY.public_key(), {77: [REPO]})
    app = AppCredentials(api_url=github.url, app_id="4242", private_key=KEY, private_repos=[REPO], now=epoch)
    authorization = app.authorization(REPO)
    assert authorization is not None and authorization.startswith("Bearer ghs_")
    answer = requests.get(latest_url(github, REPO), headers={"Authorization": authorization})
    assert answer.status_code == 200
    epoch.advance(INSTALLATION_TOKEN_S)
    expired = requests.get(latest_url(github, REPO), headers={"Authorization": authorization})
    assert expired.status_code == 401  # GitHub's answer to an expired token
    assert app.authorization(REPO) != authorization and github.private.exchanges == 2


def test_a_jwt_signed_by_another_key_is_refused(github: FakeGitHub, epoch: ManualTime):
    private_release(github)
    github.private.add_app("4242", KEY.public_key(), {77: [REPO]})
    impostor = AppCredentials(
        api_url=github.url, app_id="4242", private_key=OTHER_KEY, private_repos=[REPO], now=epoch
    )
    assert impostor.authorization(REPO) is None
    assert "can't see the private repository" in (impostor.problem(REPO) or "")
    assert github.private.exchanges == 0

"""A private app end to end with real processes: the fake GitHub serving a private repository
(its files through expiring signed URLs), ``poll_craft_releases --once`` and gunicorn (two
workers), authenticated by a token or by a GitHub App. A launcher's download and a Tauri
updater's (check, download through our 302, minisign verification) succeed with no credentials
of their own; every URL handed out is well inside its validity; and the token, the App's key
and its installation tokens appear in no answer, header, log line, status line or metric."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from bench.endpoint import ROOT, gunicorn_command, running, site_env
from craft_apps.api.private_assets import REDIRECT_MAX_AGE_S
from craft_apps.github.asset_links import KEEP_S
from craft_apps.kernel.compat import UTC
from craft_apps.tauri.fake_release import tauri_action_release
from craft_apps.testing.fake_github import FakeGitHub
from craft_apps.testing.private import SIGNED_URL_VALIDITY_S
from tests.api.minisign_support import MinisignKey
from tests.polling.processes import Poller
from tests.support import free_port
from tests.support.github_app import APP_KEY, APP_PEM

pytestmark = pytest.mark.slow

REPO = "storytold/artcraft"
TOKEN = "github_pat_11ABCDEFG0123456789_privateTokenValueNeverShown"
METRICS_TOKEN = "metrics-token-0123456789abcdef"
MSI = "ArtCraft_0.37.0_x64_en-US.msi"
KEY, PEM = APP_KEY, APP_PEM
SIGNED_AT = 1_795_280_000


def bundle_bytes(name: str) -> bytes:
    return f"the bytes of {name}\n".encode() * 100


@pytest.fixture
def key(tmp_path: Path) -> MinisignKey:
    return MinisignKey.generate(tmp_path / "minisign")


@pytest.fixture
def github(key: MinisignKey) -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        names = [
            MSI,
            "ArtCraft_0.37.0_x64-setup.exe",
            "ArtCraft_universal.app.tar.gz",
            "ArtCraft_0.37.0_amd64.AppImage",
        ]
        built = tauri_action_release(
            REPO,
            "ArtCraft",
            "0.37.0",
            datetime(2026, 11, 20, 17, 4, 12, tzinfo=UTC),
            signatures={name: key.tauri_signature(bundle_bytes(name), name, SIGNED_AT) for name in names},
            contents={name: bundle_bytes(name) for name in names},
            web_url=server.url,
            api_url=server.url,
        )
        server.publish(REPO, built.release, files={**built.files, **{n: bundle_bytes(n) for n in names}})
        server.private.make_private(REPO)
        yield server


def settings_env(github: FakeGitHub, auth: str) -> dict[str, str]:
    env = {
        "CRAFT_APPS_RELEASE_GITHUB_API_URL": github.url,
        "CRAFT_APPS_RELEASE_GITHUB_WEB_URL": github.url,
        "CRAFT_APPS_RELEASE_APPS": f"artcraft=ArtCraft={REPO}",
        "CRAFT_APPS_RELEASE_PRIVATE_APPS": "artcraft",
        "CRAFT_APPS_METRICS_TOKEN": METRICS_TOKEN,
        "CRAFT_APPS_RELEASE_COORDINATION_ENABLED": "false",
    }
    if auth == "token":
        github.private.allow_token(TOKEN)
        env["CRAFT_APPS_RELEASE_GITHUB_TOKEN"] = TOKEN
    else:
        github.private.add_app("4242", KEY.public_key(), {77: [REPO]})
        env.update(CRAFT_APPS_RELEASE_GITHUB_APP_ID="4242", CRAFT_APPS_RELEASE_GITHUB_APP_PRIVATE_KEY=PEM)
    return env


def fresh(location: str, github: FakeGitHub) -> None:
    """A GitHub URL handed out has most of its validity left: never one near or past expiry."""
    expires = int(parse_qs(urlsplit(location).query)["expires"][0])
    assert expires - github.private.now() >= SIGNED_URL_VALIDITY_S - KEEP_S - REDIRECT_MAX_AGE_S


def follow(session: requests.Session, url: str, github: FakeGitHub, seen: list[requests.Response]) -> bytes:
    """Follows our 302s to GitHub's signed URL by hand, as a launcher would, with no token."""
    for _ in range(4):
        answer = session.get(url, allow_redirects=False)
        seen.append(answer)
        assert "Authorization" not in answer.request.headers
        if answer.status_code != 302:
            assert answer.status_code == 200, (url, answer.status_code, answer.content[:200])
            return answer.content
        url = requests.compat.urljoin(url, answer.headers["Location"])
        if url.startswith(github.url):
            fresh(url, github)
    raise AssertionError("too many redirects")


def status_text(env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", "craft_apps_status"], cwd=ROOT, env=env, capture_output=True, timeout=60
    )
    return (done.stdout + done.stderr).decode(errors="replace")


@pytest.mark.parametrize("auth", ["token", "app"])
def test_a_private_app_downloads_and_updates_with_the_secret_only_on_the_server(
    auth: str, github: FakeGitHub, key: MinisignKey, tmp_path: Path
):
    state_dir = tmp_path / "state"
    extra = settings_env(github, auth)
    env = {**site_env(state_dir, tmp_path / "unused.json", tmp_path), **extra, "DJANGO_LOG_LEVEL": "DEBUG"}
    poller = Poller({**env, "DJANGO_SETTINGS_MODULE": "config.settings"}, tmp_path / "poller.log", "--once")
    assert poller.finish(60) == 0, poller.output()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = gunicorn_command(port, workers=2)
    command[command.index("--log-level") + 1] = "debug"
    seen: list[requests.Response] = []
    with (
        running(
            command, env=env, log=tmp_path / "gunicorn.log", ready_url=f"{base}/v1/craft_apps/release_info"
        ),
        requests.Session() as launcher,
    ):
        info = launcher.get(f"{base}/v1/craft_apps/release_info")
        seen.append(info)
        assets = info.json()["release_info"]["apps"]["artcraft"]["latest_release"]["assets"]
        assert all(a["download_url"].startswith("/v1/craft_apps/assets/artcraft/") for a in assets)
        # The launcher: the stable link, through our 302, to GitHub's signed URL.
        assert follow(
            launcher, f"{base}/v1/craft_apps/download/artcraft/windows/x64", github, seen
        ) == bundle_bytes(MSI)
        # The Tauri updater: check, download through our 302, verify the signature.
        check = launcher.get(f"{base}/v1/craft_apps/updates/tauri/artcraft/windows/x86_64/0.36.2")
        seen.append(check)
        update = check.json()
        assert update["url"].startswith(f"{base}/v1/craft_apps/assets/artcraft/")
        bundle = follow(launcher, update["url"], github, seen)
        assert key.verify(bundle, update["signature"]).returncode == 0
        assert key.verify(bundle + b"!", update["signature"]).returncode != 0
        again = [launcher.get(update["url"], allow_redirects=False) for _ in range(6)]
        seen.extend(again)
        metrics = launcher.get(
            f"{base}/v1/craft_apps/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
        )
        assert metrics.status_code == 200
        seen.append(metrics)
    asked = [r for r in github.requests if "/releases/assets/" in r.path and r.method == "GET"]
    # latest.json by the poller; each file once per web worker at most, whatever the downloads.
    assert 2 <= len(asked) <= 1 + 2 * 2, [r.path for r in asked]
    secrets = [TOKEN, PEM.splitlines()[1], *github.private.issued_tokens()]
    texts = [poller.output(), (tmp_path / "gunicorn.log").read_text(errors="replace"), status_text(env)]
    for answer in seen:
        texts.append(answer.text if "octet-stream" not in answer.headers.get("content-type", "") else "")
        texts.append(json.dumps(dict(answer.headers)))
    for path in state_dir.iterdir():
        if path.is_file():
            texts.append(path.read_bytes().decode(errors="replace"))
    assert auth == "token" or github.private.exchanges >= 2  # the poller's and a worker's
    for secret in secrets:
        assert all(secret not in text for text in texts), "a secret left the server"

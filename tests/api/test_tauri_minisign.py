"""Real signatures end to end: a tauri-action release whose updater bundles are signed with a
real minisign key as Tauri signs them, published through the GitHub stand-in, polled by a real
poller, and served by the Tauri updater endpoint; the ``signature`` served verifies against the
public key with ``minisign``, and fails for a changed file or another key."""

from __future__ import annotations

import base64
import json
from datetime import datetime
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.content.feed import NoticesFeed
from craft_apps.content.models import ReleaseControl
from craft_apps.github.client import GitHubClient
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec
from craft_apps.polling.poller import PollConfig, Poller
from craft_apps.tauri.fake_release import TauriRelease, tauri_action_release
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.fake_github import FakeGitHub
from tests.api.minisign_support import UNTRUSTED_COMMENT, MinisignKey
from tests.support import S, apps_setting

ARTCRAFT = AppSpec("artcraft", "ArtCraft", "storytold/artcraft")
PUBLISHED = datetime(2026, 11, 20, 17, 4, 12, tzinfo=UTC)
SIGNED_AT = 1_795_280_000  # the trusted comment's timestamp
URL = "/v1/craft_apps/updates/tauri/artcraft"
# What each platform's updater file is, as tauri-action names it.
BUNDLES = {
    "windows/x86_64": "ArtCraft_0.37.0_x64_en-US.msi",
    "windows/x86_64?bundle_type=nsis": "ArtCraft_0.37.0_x64-setup.exe",
    "darwin/aarch64": "ArtCraft_universal.app.tar.gz",
    "darwin/x86_64?bundle_type=app": "ArtCraft_universal.app.tar.gz",
    "linux/x86_64?bundle_type=appimage": "ArtCraft_0.37.0_amd64.AppImage",
}
# A .sig from a real Tauri release (Tchap 4.19.5's NSIS setup), as quoted in the comment of
# tchapgouv/tchap-desktop's scripts/update-latest-file-per-env_CI.sh: the shape ours must have.
REAL_SIG = (
    "dW50cnVzdGVkIGNvbW1lbnQ6IHNpZ25hdHVyZSBmcm9tIHRhdXJpIHNlY3JldCBrZXkKUlVUUyt0VEJNWWVnUnVvOEor"
    "Y3ZmRlpMVnhSN0dNT0tTM3RMamZ3N0FuZWpNa2QwS2JFWjI2SG9pTVM4aEl4ZlVVMEorWXN6V3Fpcnd4YjJaZHdKbVV0"
    "WlBodjd2Vyt2dlFBPQp0cnVzdGVkIGNvbW1lbnQ6IHRpbWVzdGFtcDoxNzc2MjYzMzY0CWZpbGU6VGNoYXBfNC4xOS41"
    "X3g2NC1zZXR1cC5leGUKTTVlb2lJa2pReXpOM3lVVVVmQTh4WFBKMEZtY1ZLTVlNY1hlZk5FYWY4TTJzSzF4SHc5aitR"
    "UmlOM3pZLzJIbTBNbEZBSmJVSFlJeTRTUTA1Y1U5Q2c9PQo="
)

# A real updater pubkey, from tauri-action's own test app
# (.github/fixtures/example-with-tauri-v2/src-tauri/tauri.conf.json in tauri-apps/tauri-action).
REAL_PUBKEY = (
    "dW50cnVzdGVkIGNvbW1lbnQ6IG1pbmlzaWduIHB1YmxpYyBrZXk6IDE5QzMxNjYwNTM5OEUwNTgKUldSWTRKaFRZ"
    "QmJER1h4d1ZMYVA3dnluSjdpN2RmMldJR09hUFFlZDY0SlFqckkvRUJhZDJVZXAK"
)


def bundle_bytes(name: str) -> bytes:
    return f"the bytes of {name}\n".encode() * 100


def lines_of(tauri_signature: str) -> list[str]:
    return base64.b64decode(tauri_signature).decode().split("\n")


def poller_of(
    state_dir: Path, github: FakeGitHub, clock: FakeClock, history: frozenset[str] = frozenset()
) -> Poller:
    store = StateStore(state_dir)
    store.open_for_writing()
    lease = Lease(store, holder="test", clock=clock)
    assert lease.try_acquire() and lease.fence is not None
    client = GitHubClient(api_url=github.url, web_url=github.url, token=None, clock=clock)
    poller = Poller(
        config=PollConfig((ARTCRAFT,), interval_ms=1800 * S, max_backoff_ms=14_400 * S, web_url=github.url),
        github=client,
        host=store,
        fence=lease.fence,
        clock=clock,
        needs_history=lambda: history,
    )
    poller.load_host_state()
    return poller


@pytest.fixture
def key(tmp_path: Path) -> MinisignKey:
    return MinisignKey.generate(tmp_path / "key")


@pytest.mark.slow
@pytest.mark.django_db
def test_the_signature_served_verifies_with_minisign(
    key: MinisignKey, tmp_path: Path, state_dir: Path, settings, install_runtime, fake_clock: FakeClock
):
    signatures = {
        name: key.tauri_signature(bundle_bytes(name), name, SIGNED_AT) for name in set(BUNDLES.values())
    }
    with FakeGitHub() as github:
        built = tauri_action_release(
            ARTCRAFT.repo,
            "ArtCraft",
            "0.37.0",
            PUBLISHED,
            signatures=signatures,
            web_url=github.url,
            api_url=github.url,
        )
        github.publish(ARTCRAFT.repo, built.release, files=built.files)
        settings.CRAFT_APPS = {
            "APPS": apps_setting((ARTCRAFT,)),
            "STATE_DIR": str(state_dir),
            "GITHUB_API_URL": github.url,
            "GITHUB_WEB_URL": github.url,
        }
        install_runtime(recheck_s=0.0)
        assert poller_of(state_dir, github, fake_clock).tick().round.fetched == 1
        web = github.url
    client = Client()
    other = MinisignKey.generate(tmp_path / "other")
    for platform, name in BUNDLES.items():
        path, _, query = platform.partition("?")
        response = client.get(f"{URL}/{path}/0.36.2" + (f"?{query}" if query else ""))
        assert response.status_code == 200, (platform, response.content)
        body = json.loads(response.content)
        assert body["version"] == "0.37.0"
        assert body["url"] == f"{web}/{ARTCRAFT.repo}/releases/download/artcraft-v0.37.0/{name}"
        # The .sig file byte for byte, and a real minisign signature of the bundle.
        assert body["signature"].encode() == built.files[f"{name}.sig"]
        checked = key.verify(bundle_bytes(name), body["signature"])
        assert checked.returncode == 0, (platform, checked.stdout, checked.stderr)
        assert f"file:{name}" in checked.stdout
        assert key.verify(bundle_bytes(name) + b"!", body["signature"]).returncode != 0
        assert other.verify(bundle_bytes(name), body["signature"]).returncode != 0
    assert client.get(f"{URL}/windows/x86_64/0.37.0").status_code == 204


@pytest.mark.slow
def test_our_signatures_have_the_shape_of_a_real_tauri_release(key: MinisignKey):
    ours = lines_of(key.tauri_signature(b"setup bytes", "ArtCraft_0.37.0_x64-setup.exe", SIGNED_AT))
    real = lines_of(REAL_SIG)
    for lines in (ours, real):
        assert len(lines) == 5 and lines[4] == ""  # four lines, each ending in a newline
        assert lines[0] == f"untrusted comment: {UNTRUSTED_COMMENT}"
        signature = base64.b64decode(lines[1])
        assert len(signature) == 2 + 8 + 64 and signature[:2] == b"ED"  # prehashed Ed25519, key id
        assert lines[2].startswith("trusted comment: timestamp:") and "\tfile:" in lines[2]
        assert len(base64.b64decode(lines[3])) == 64  # the signature of the trusted comment
    assert ours[2] == f"trusted comment: timestamp:{SIGNED_AT}\tfile:ArtCraft_0.37.0_x64-setup.exe"
    # The pubkey Tauri's config holds: the public key file's text in base64.
    for pubkey in (key.tauri_pubkey(), REAL_PUBKEY):
        public = base64.b64decode(pubkey).decode().split("\n")
        assert public[0].startswith("untrusted comment: minisign public key") and public[2] == ""
        assert len(base64.b64decode(public[1])) == 2 + 8 + 32 and public[1].startswith("RW")  # "Ed"


def signed_release(key: MinisignKey, github: FakeGitHub, version: str, day: int) -> TauriRelease:
    """ArtCraft ``version`` with its Windows MSI and macOS bundle signed by ``key``, published."""
    names = (f"ArtCraft_{version}_x64_en-US.msi", "ArtCraft_universal.app.tar.gz")
    signatures = {
        name: key.tauri_signature(bundle_bytes(f"{version}/{name}"), name, SIGNED_AT) for name in names
    }
    published = datetime(2026, 11, day, tzinfo=UTC)
    built = tauri_action_release(
        ARTCRAFT.repo,
        "ArtCraft",
        version,
        published,
        signatures=signatures,
        web_url=github.url,
        api_url=github.url,
    )
    github.publish(ARTCRAFT.repo, built.release, files=built.files)
    return built


@pytest.mark.slow
@pytest.mark.django_db
def test_the_controls_choose_among_real_releases_and_each_verifies(
    key: MinisignKey, state_dir: Path, settings, install_runtime, fake_clock: FakeClock
):
    with FakeGitHub() as github:
        settings.CRAFT_APPS = {
            "APPS": apps_setting((ARTCRAFT,)),
            "STATE_DIR": str(state_dir),
            "GITHUB_API_URL": github.url,
            "GITHUB_WEB_URL": github.url,
        }
        feed = NoticesFeed(recheck_s=0.0, runner=lambda look: look())
        install_runtime(recheck_s=0.0, feed=feed)
        poller = poller_of(state_dir, github, fake_clock, frozenset({"artcraft"}))
        signed_release(key, github, "0.36.0", 10)
        poller.tick()
        signed_release(key, github, "0.37.0", 20)
        fake_clock.advance(3600)
        poller.tick()
    client = Client()

    def offered(query: str = "", platform: str = "windows/x86_64") -> str | None:
        response = client.get(f"{URL}/{platform}/0.35.0{query}")
        if response.status_code == 204:
            return None
        body = json.loads(response.content)
        name = body["url"].rsplit("/", 1)[1]
        checked = key.verify(bundle_bytes(f"{body['version']}/{name}"), body["signature"])
        assert checked.returncode == 0, (query, body, checked.stderr)
        return str(body["version"])

    assert offered() == "0.37.0"
    ReleaseControl.objects.create(
        app_key="artcraft", action="rollout", tag="artcraft-v0.37.0", percentage=50, reason="slowly"
    )
    assert [offered(f"?bucket={n}") for n in (0, 49, 50, 99)] == ["0.37.0", "0.37.0", "0.36.0", "0.36.0"]
    assert offered() == "0.36.0"
    assert offered("?bucket=10", "darwin/aarch64") == "0.37.0"
    ReleaseControl.objects.create(app_key="artcraft", action="yank", tag="artcraft-v0.37.0", reason="bad")
    assert [offered(f"?bucket={n}") for n in (0, 99)] == ["0.36.0", "0.36.0"]
    ReleaseControl.objects.create(app_key="artcraft", action="yank", tag="artcraft-v0.36.0", reason="bad")
    assert offered() is None

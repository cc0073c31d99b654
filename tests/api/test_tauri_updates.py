"""The Tauri updater endpoint through Django's client, on a state file: 200 with Tauri's dynamic
format, 204 when nothing is newer or the platform has no file, every control and the beta
channel, the client's bucket, its bundle type, the errors, caching, 304 and the signature."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.api.caching import CACHEABLE, NOT_CACHEABLE
from craft_apps.api.representation import Refiner
from craft_apps.content.feed import NoticesFeed
from craft_apps.content.models import AppChannel, ReleaseControl
from craft_apps.kernel import signing
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppState, Release, UpdaterFile
from tests.api.support import TOKEN, scrape
from tests.signing.vectors import KEY_A
from tests.support import apps_setting, publish, publish_history, release

pytestmark = pytest.mark.django_db

T0 = 1_790_000_000_000
URL = "/v1/craft_apps/updates/tauri/photocraft"


def updater_files(version: str) -> tuple[UpdaterFile, ...]:
    base = f"https://github.com/storytold/photocraft/releases/download/v{version}/"
    files = {
        "windows-x86_64": "PhotoCraft_{v}_x64_en-US.msi",
        "windows-x86_64-msi": "PhotoCraft_{v}_x64_en-US.msi",
        "windows-x86_64-nsis": "PhotoCraft_{v}_x64-setup.exe",
        "darwin-universal": "PhotoCraft_universal.app.tar.gz",
        "linux-x86_64": "PhotoCraft_{v}_amd64.AppImage",
    }
    return tuple(
        UpdaterFile(key, base + name.format(v=version), f"sig-of-{key}-{version}")
        for key, name in files.items()
    )


@pytest.fixture
def tauri_site(state_dir: Path, settings, install_runtime) -> Path:
    """Two apps on a state file looked at on every request; the controls and beta looked at in
    the test's thread on every request."""
    settings.CRAFT_APPS = {"APPS": apps_setting(), "STATE_DIR": str(state_dir)}
    feed = NoticesFeed(recheck_s=0.0, runner=lambda look: look())
    install_runtime(recheck_s=0.0, refiner=Refiner(start=lambda job: job(), after_s=0.0), feed=feed)
    return state_dir


def at(version: str, day: int, *, prerelease: bool = False) -> Release:
    """A release with updater files (0.2.0: without)."""
    made = replace(release(version), published_at=datetime(2026, 10, day, tzinfo=UTC), prerelease=prerelease)
    return made if version == "0.2.0" else replace(made, updater=updater_files(version))


def warm(state_dir: Path, history: tuple[Release, ...] = ()) -> None:
    publish(
        state_dir,
        {
            "photocraft": AppState(latest_release=at("0.5.0", 10), fetched_ms=T0),
            "artcraft-launcher": AppState(latest_release=None, fetched_ms=T0 + 7),
        },
    )
    publish_history(state_dir, "photocraft", (at("0.5.0", 10), at("0.4.0", 5), *history))


def offered(response) -> str | None:
    """The version offered, None for a 204."""
    if response.status_code == 204:
        assert response.content == b""
        return None
    assert response.status_code == 200, response.content
    return str(json.loads(response.content)["version"])


def test_an_update_in_tauris_dynamic_format(tauri_site: Path):
    warm(tauri_site)
    response = Client().get(f"{URL}/windows/x86_64/0.4.0")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content) == {
        "version": "0.5.0",
        "pub_date": "2026-10-10T00:00:00Z",
        "url": "https://github.com/storytold/photocraft/releases/download/v0.5.0/PhotoCraft_0.5.0_x64_en-US.msi",
        "signature": "sig-of-windows-x86_64-0.5.0",
        "notes": "Notes",
    }
    assert response["Cache-Control"] == CACHEABLE
    assert response["ETag"].startswith('W/"')


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("windows/x86_64/0.5.0", "the same version"),
        ("windows/x86_64/0.6.0-rc.1", "a newer prerelease"),
        ("windows/x86_64/1.0.0", "a newer version"),
        ("linux/aarch64/0.4.0", "no file for the platform"),
        ("windows/i686/0.4.0", "no file for the platform"),
    ],
)
def test_no_update_is_a_204(tauri_site: Path, path: str, why: str):
    warm(tauri_site)
    response = Client().get(f"{URL}/{path}")
    assert response.status_code == 204, why
    assert response.content == b""
    assert "Content-Type" not in response
    assert response["Cache-Control"] == CACHEABLE


def test_semver_precedence_and_build_metadata(tauri_site: Path):
    warm(tauri_site)
    client = Client()
    assert offered(client.get(f"{URL}/windows/x86_64/0.5.0-rc.3")) == "0.5.0"
    # The plugin sends a "+" as %2B; build metadata doesn't count.
    assert offered(client.get(f"{URL}/windows/x86_64/0.4.0%2Bbuild.7")) == "0.5.0"
    assert offered(client.get(f"{URL}/windows/x86_64/0.5.0%2Bbuild.7")) is None
    assert offered(client.get(f"{URL}/windows/x86_64/v0.4.0")) == "0.5.0"


def test_a_release_differing_only_in_build_metadata_is_not_offered(tauri_site: Path):
    # docs/tauri.md: SemVer precedence, not the plugin's order, where 0.5.0+2 > 0.5.0.
    rebuilt = replace(at("0.5.0", 11), tag="v0.5.0+2", version="0.5.0+2")
    publish(tauri_site, {"photocraft": AppState(latest_release=rebuilt, fetched_ms=T0)})
    client = Client()
    assert offered(client.get(f"{URL}/windows/x86_64/0.5.0")) is None
    assert offered(client.get(f"{URL}/windows/x86_64/0.4.0")) == "0.5.0+2"


def test_the_bundle_type_chooses_the_file(tauri_site: Path):
    warm(tauri_site)
    client = Client()

    def url(query: str) -> str:
        return str(json.loads(client.get(f"{URL}/windows/x86_64/0.4.0{query}").content)["url"])

    assert url("?bundle_type=nsis").endswith("/PhotoCraft_0.5.0_x64-setup.exe")
    assert url("?bundle_type=msi").endswith("/PhotoCraft_0.5.0_x64_en-US.msi")
    assert url("?bundle_type=unknown").endswith("/PhotoCraft_0.5.0_x64_en-US.msi")
    # An older plugin leaves the placeholder as it is.
    assert url("?bundle_type=%7B%7Bbundle_type%7D%7D").endswith("/PhotoCraft_0.5.0_x64_en-US.msi")
    assert url("").endswith("/PhotoCraft_0.5.0_x64_en-US.msi")
    # A universal macOS bundle fits both CPUs.
    for arch in ("aarch64", "x86_64"):
        body = json.loads(client.get(f"{URL}/darwin/{arch}/0.4.0?bundle_type=app").content)
        assert body["url"].endswith("/PhotoCraft_universal.app.tar.gz")
        assert body["signature"] == "sig-of-darwin-universal-0.5.0"


def test_a_release_without_updater_files_is_no_update(tauri_site: Path):
    publish(tauri_site, {"photocraft": AppState(latest_release=at("0.2.0", 1), fetched_ms=T0)})
    assert Client().get(f"{URL}/windows/x86_64/0.1.0").status_code == 204


def test_an_app_not_fetched_yet_is_a_204_no_cache_keeps(tauri_site: Path):
    response = Client().get(f"{URL}/windows/x86_64/0.4.0")
    assert response.status_code == 204
    assert response["Cache-Control"] == NOT_CACHEABLE


@pytest.mark.parametrize(
    ("path", "status", "error"),
    [
        ("/v1/craft_apps/updates/tauri/nope/windows/x86_64/1.0.0", 404, "no app 'nope' is configured"),
        (f"{URL}/macos/x86_64/1.0.0", 404, "target 'macos' is unknown; one of: windows, darwin, linux"),
        (f"{URL}/windows/x64/1.0.0", 404, "arch 'x64' is unknown; one of: x86_64, aarch64, i686, armv7"),
        (f"{URL}/windows/x86_64/1.0", 400, "current version '1.0' is not a SemVer version"),
        (f"{URL}/windows/x86_64/1.0.%EF%BC%93", 400, "current version '1.0.\uff13' is not a SemVer version"),
        (f"{URL}/windows/x86_64/1.0.0?bucket=100", 400, "bucket '100' is not a whole number from 0 to 99"),
        (f"{URL}/windows/x86_64/1.0.0?bucket=-1", 400, "bucket '-1' is not a whole number from 0 to 99"),
        (f"{URL}/windows/x86_64/1.0.0?bucket=007", 400, "bucket '007' is not a whole number from 0 to 99"),
        (f"{URL}/windows/x86_64/1.0.0?bucket=1&bucket=2", 400, "give bucket once, not 2 times"),
        (
            f"{URL}/windows/x86_64/1.0.0?channel=alpha",
            400,
            "no channel 'alpha'; the channels are stable or beta",
        ),
    ],
)
def test_a_bad_request_is_a_clear_json_error(tauri_site: Path, path: str, status: int, error: str):
    warm(tauri_site)
    response = Client().get(path)
    assert response.status_code == status
    assert json.loads(response.content) == {"success": False, "error": error}


def test_a_long_version_is_refused(tauri_site: Path):
    long = "1.0.0-" + "a" * 251
    assert Client().get(f"{URL}/windows/x86_64/{long[:-1]}").status_code == 204
    response = Client().get(f"{URL}/windows/x86_64/{long}")
    assert response.status_code == 400
    assert "is not a SemVer version" in json.loads(response.content)["error"]


def test_the_answers_are_counted_by_status(tauri_site: Path, settings):
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "METRICS_TOKEN": TOKEN}
    warm(tauri_site)
    client = Client()

    def counted() -> dict[str, float]:
        samples = scrape(client).get("craft_apps_tauri_answers_total", {})
        return {dict(labels)["status"]: value for labels, value in samples.items()}

    before = counted()
    client.get(f"{URL}/windows/x86_64/0.4.0")
    client.get(f"{URL}/windows/x86_64/0.5.0")
    client.get(f"{URL}/windows/x86_64/0.5.0")
    client.get(f"{URL}/windows/x64/0.5.0")
    after = counted()
    grown = {status: after[status] - before.get(status, 0) for status in after}
    assert {status: n for status, n in grown.items() if n} == {"200": 1, "204": 2, "404": 1}


def test_post_is_refused(tauri_site: Path):
    response = Client().post(f"{URL}/windows/x86_64/0.4.0")
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"


def test_a_yank_offers_the_release_before_and_never_a_downgrade(tauri_site: Path):
    warm(tauri_site)
    client = Client()
    ReleaseControl.objects.create(app_key="photocraft", action="yank", tag="v0.5.0", reason="crashes")
    assert offered(client.get(f"{URL}/windows/x86_64/0.3.0")) == "0.4.0"
    assert offered(client.get(f"{URL}/windows/x86_64/0.4.0")) is None
    assert offered(client.get(f"{URL}/windows/x86_64/0.5.0")) is None  # who has it keeps it


def test_a_hold_caps_the_update(tauri_site: Path):
    warm(tauri_site)
    ReleaseControl.objects.create(app_key="photocraft", action="hold", tag="v0.4.0", reason="wait")
    assert offered(Client().get(f"{URL}/windows/x86_64/0.3.0")) == "0.4.0"


def test_a_staged_rollout_is_sampled_by_the_clients_bucket(tauri_site: Path):
    warm(tauri_site)
    publish(tauri_site, {"photocraft": AppState(latest_release=at("0.6.0", 20), fetched_ms=T0 + 9)})
    publish_history(tauri_site, "photocraft", (at("0.6.0", 20), at("0.5.0", 10), at("0.4.0", 5)))
    ReleaseControl.objects.create(
        app_key="photocraft", action="rollout", tag="v0.6.0", percentage=25, reason="slowly"
    )
    client = Client()
    path = f"{URL}/windows/x86_64/0.4.0"
    assert offered(client.get(f"{path}?bucket=0")) == "0.6.0"
    assert offered(client.get(f"{path}?bucket=24")) == "0.6.0"
    assert offered(client.get(f"{path}?bucket=25")) == "0.5.0"
    assert offered(client.get(f"{path}?bucket=99")) == "0.5.0"
    assert offered(client.get(path)) == "0.5.0"
    # From JavaScript, whose check() can only add headers; the query wins.
    assert offered(client.get(path, HTTP_CRAFT_APPS_BUCKET="3")) == "0.6.0"
    assert offered(client.get(path, HTTP_CRAFT_APPS_BUCKET="60")) == "0.5.0"
    assert offered(client.get(f"{path}?bucket=60", HTTP_CRAFT_APPS_BUCKET="3")) == "0.5.0"
    refused = client.get(path, HTTP_CRAFT_APPS_BUCKET="3,4")
    assert refused.status_code == 400
    assert refused["Vary"] == "Craft-Apps-Bucket"
    assert client.get(path)["Vary"] == "Craft-Apps-Bucket"
    # One answer per URL: each bucket's has its own bytes and ETag.
    assert client.get(f"{path}?bucket=0")["ETag"] != client.get(f"{path}?bucket=99")["ETag"]


def test_the_beta_channel(tauri_site: Path):
    warm(tauri_site, history=(at("0.6.0-rc.1", 15, prerelease=True),))
    client = Client()
    beta = f"{URL}/windows/x86_64/0.5.0?channel=beta"
    assert offered(client.get(beta)) is None  # beta is off for the app: as stable
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    assert offered(client.get(beta)) == "0.6.0-rc.1"
    assert offered(client.get(f"{URL}/windows/x86_64/0.5.0")) is None


def test_etag_304_and_head(tauri_site: Path):
    warm(tauri_site)
    client = Client()
    path = f"{URL}/windows/x86_64/0.4.0"
    first = client.get(path)
    again = client.get(path, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304
    assert again["ETag"] == first["ETag"]
    assert again["Cache-Control"] == CACHEABLE
    head = client.head(path)
    assert head.status_code == 200
    assert head.content == b""
    assert head["Content-Length"] == str(len(first.content))
    # A new release: a new ETag, and the old one no longer matches.
    publish(tauri_site, {"photocraft": AppState(latest_release=at("0.6.0", 20), fetched_ms=T0 + 9)})
    after = client.get(path, HTTP_IF_NONE_MATCH=first["ETag"])
    assert offered(after) == "0.6.0"
    assert after["ETag"] != first["ETag"]


def test_the_204_has_an_etag_too(tauri_site: Path):
    warm(tauri_site)
    client = Client()
    path = f"{URL}/windows/x86_64/0.5.0"
    first = client.get(path)
    assert first.status_code == 204
    assert client.get(path, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304


def _signed(settings, tauri_site: Path) -> None:
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "SIGNING_KEY": signing.private_key_text(KEY_A)}
    warm(tauri_site)


def test_signed_with_its_own_variant(tauri_site: Path, settings):
    _signed(settings, tauri_site)
    client = Client()
    now = int(time.time())
    response = client.get(f"{URL}/windows/x86_64/0.4.0?bucket=7&bundle_type=nsis")
    variant = "tauri/photocraft/windows/x86_64/0.4.0;channel=stable;bucket=7;bundle_type=nsis"
    verdict = signing.verify(response.content, response.headers, [KEY_A.public], now, variant=variant)
    assert verdict.accepted, verdict
    # The signature binds the URL: another URL's variant, or release_info's, fails.
    for other in ("", "tauri/photocraft/windows/x86_64/0.4.0;channel=stable;bucket=;bundle_type=nsis"):
        wrong = signing.verify(response.content, response.headers, [KEY_A.public], now, variant=other)
        assert wrong.reason == "bad signature"
    # The 204 is signed too, over its empty body.
    empty = client.get(f"{URL}/windows/x86_64/0.5.0")
    variant = "tauri/photocraft/windows/x86_64/0.5.0;channel=stable;bucket=;bundle_type="
    assert signing.verify(b"", empty.headers, [KEY_A.public], now, variant=variant).accepted


def test_the_signature_is_made_once_per_answer(tauri_site: Path, settings):
    _signed(settings, tauri_site)
    client = Client()
    path = f"{URL}/windows/x86_64/0.4.0"
    first, second = client.get(path), client.get(path)
    assert first[signing.HEADER] == second[signing.HEADER]
    assert first["ETag"] == second["ETag"]
    assert client.get(path, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304

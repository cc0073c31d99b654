"""``?channel=beta`` through Django's client: the beta answer for apps with beta on, the stable
answer byte for byte without the parameter, a 400 for any other channel, an ETag per channel,
every coding, no-store while cold, the signature's variant, the downloads and the page."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest
from django.db.models import CharField
from django.test import Client, RequestFactory

from craft_apps.api.channels import requested_channel, schema_parameter
from craft_apps.api.runtime import runtime
from craft_apps.content.feed import NoticesFeed
from craft_apps.content.models import AppChannel, ReleaseControl
from craft_apps.kernel import signing
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppState, Channel, Release
from tests.api.support import decoded
from tests.signing.vectors import KEY_A
from tests.support import RELEASE_INFO_URL as URL
from tests.support import publish, publish_history, release

pytestmark = pytest.mark.django_db

T0 = 1_790_000_000_000
BETA = URL + "?channel=beta"
DOWNLOAD = "/v1/craft_apps/download/photocraft/windows/x64"
PAGE = "/craft_apps/downloads/"


def prerelease(version: str, day: int = 20) -> Release:
    return replace(release(version), prerelease=True, published_at=datetime(2026, 10, day, tzinfo=UTC))


@pytest.fixture
def channels(site: Path, install_runtime) -> Path:
    """``site`` with a feed that looks at the database on every request, in the test's thread."""
    from craft_apps.api.representation import Refiner

    feed = NoticesFeed(recheck_s=0.0, runner=lambda look: look())
    install_runtime(recheck_s=0.0, refiner=Refiner(start=lambda job: job(), after_s=0.0), feed=feed)
    return site


def warm(state_dir: Path, history: tuple[Release, ...] = (prerelease("0.6.0-rc.1"),)) -> None:
    publish(
        state_dir,
        {
            "photocraft": AppState(latest_release=release("0.5.0"), fetched_ms=T0),
            "artcraft-launcher": AppState(latest_release=release("1.0.0"), fetched_ms=T0 + 7),
        },
    )
    publish_history(state_dir, "photocraft", history)
    publish_history(state_dir, "artcraft-launcher", (prerelease("2.0.0-rc.1"),))


def latest(response) -> dict[str, str | None]:
    apps = json.loads(decoded(response))["release_info"]["apps"]
    return {key: (app.get("latest_release") or {}).get("tag") for key, app in apps.items()}


def test_beta_serves_the_newest_prerelease_of_apps_with_beta_on(channels: Path):
    warm(channels)
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    client = Client()
    assert latest(client.get(BETA)) == {"artcraft-launcher": "v1.0.0", "photocraft": "v0.6.0-rc.1"}
    assert latest(client.get(URL)) == {"artcraft-launcher": "v1.0.0", "photocraft": "v0.5.0"}


def test_a_stable_release_overtaking_the_rc_and_a_deleted_prerelease(channels: Path):
    warm(channels)
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    client = Client()
    publish(channels, {"photocraft": AppState(latest_release=release("0.6.0"), fetched_ms=T0 + 9)})
    assert latest(client.get(BETA))["photocraft"] == "v0.6.0", "a stable 0.6.0 beats 0.6.0-rc.1"
    publish(channels, {"photocraft": AppState(latest_release=release("0.5.0"), fetched_ms=T0 + 10)})
    publish_history(channels, "photocraft", (prerelease("0.7.0-rc.10"), prerelease("0.7.0-rc.9", 21)))
    assert latest(client.get(BETA))["photocraft"] == "v0.7.0-rc.10"
    publish_history(channels, "photocraft", (prerelease("0.7.0-rc.9", 21),))  # rc.10 deleted
    assert latest(client.get(BETA))["photocraft"] == "v0.7.0-rc.9"
    publish_history(channels, "photocraft", ())
    assert latest(client.get(BETA))["photocraft"] == "v0.5.0", "back to the stable release"


def test_a_tag_that_is_not_a_version_never_beats_a_versioned_stable(channels: Path):
    warm(channels, history=(replace(prerelease("0.9.9"), tag="nightly"),))
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    assert latest(Client().get(BETA))["photocraft"] == "v0.5.0"


def test_without_the_parameter_or_with_stable_the_answer_is_todays_byte_for_byte(channels: Path):
    warm(channels)
    client = Client()
    before = {coding: client.get(URL, HTTP_ACCEPT_ENCODING=coding) for coding in ("", "br", "gzip")}
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    for coding, today in before.items():
        for url in (URL, URL + "?channel=stable"):
            response = client.get(url, HTTP_ACCEPT_ENCODING=coding)
            assert response.content == today.content
            assert dict(response.headers) == dict(today.headers)


def test_an_app_without_beta_answers_what_stable_answers(channels: Path):
    warm(channels)
    client = Client()
    stable, beta = client.get(URL), client.get(BETA)
    assert beta.content == stable.content and beta["ETag"] == stable["ETag"], "no app on beta: same bytes"
    AppChannel.objects.create(app_key="photocraft", channels=[])
    assert client.get(BETA).content == stable.content


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("?channel=nightly", "no channel 'nightly'; the channels are stable or beta"),
        ("?channel=", "channel is empty; leave it out, or give stable or beta"),
        ("?channel=beta&channel=beta", "give channel once, not 2 times: stable or beta"),
        ("?channel=BETA", "no channel 'BETA'; the channels are stable or beta"),
        ("?channel=%00%0a" + "x" * 100, "no channel '??" + "x" * 38 + "…'; the channels are stable or beta"),
    ],
)
def test_an_unknown_channel_is_a_400_with_one_line(channels: Path, query: str, reason: str):
    warm(channels)
    for path in (URL, DOWNLOAD, PAGE):
        response = Client().get(path + query)
        assert response.status_code == 400, path
        assert response["Content-Type"] == "application/json"
        assert json.loads(response.content) == {"success": False, "error": reason}


def test_each_channel_has_its_etag_its_codings_and_its_304(channels: Path):
    warm(channels)
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    client = Client()
    stable, beta = client.get(URL), client.get(BETA)
    assert stable["ETag"] != beta["ETag"]
    for coding in ("br", "gzip"):
        coded = client.get(BETA, HTTP_ACCEPT_ENCODING=coding)
        assert coded["Content-Encoding"] == coding and coded["ETag"] == beta["ETag"]
        assert decoded(coded) == beta.content
    assert client.get(BETA, HTTP_IF_NONE_MATCH=beta["ETag"]).status_code == 304
    assert client.get(BETA, HTTP_IF_NONE_MATCH=stable["ETag"]).status_code == 200
    assert client.get(URL, HTTP_IF_NONE_MATCH=beta["ETag"]).status_code == 200


def test_every_form_is_encoded_once_per_state_version_and_channel(channels: Path):
    warm(channels)
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    client = Client()
    answers = runtime().answers
    before = answers.encoded
    for _ in range(3):
        for url in (URL, BETA):
            for coding in ("", "br", "gzip"):
                assert client.get(url, HTTP_ACCEPT_ENCODING=coding).status_code == 200
    assert answers.encoded - before == 2, "one stable answer, one beta answer"
    AppChannel.objects.filter(app_key="photocraft").update(channels=[])
    client.get(BETA)
    assert answers.encoded - before == 2, "the beta answer now is the stable one's bytes"


def test_no_store_until_every_app_was_fetched(channels: Path):
    publish(channels, {"photocraft": AppState(latest_release=release("0.5.0"), fetched_ms=T0)})
    publish_history(channels, "photocraft", (prerelease("0.6.0-rc.1"),))
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    client = Client()
    cold = client.get(BETA)
    assert cold["Cache-Control"] == "no-store"
    assert latest(cold) == {"artcraft-launcher": None, "photocraft": "v0.6.0-rc.1"}
    warm(channels)
    assert client.get(BETA)["Cache-Control"] != "no-store"


def test_the_beta_answer_is_signed_with_its_channel_as_the_variant(channels: Path, settings):
    warm(channels)
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "SIGNING_KEY": signing.private_key_text(KEY_A)}
    client = Client()
    now = int(time.time())
    for url, variant in ((URL, ""), (BETA, "beta")):
        response = client.get(url)
        verdict = signing.verify(response.content, response.headers, [KEY_A.public], now, variant=variant)
        assert verdict.accepted, (url, verdict)
        other = "beta" if variant == "" else ""
        assert not signing.verify(
            response.content, response.headers, [KEY_A.public], now, variant=other
        ).accepted


def test_the_download_link_and_the_page_take_the_channel(channels: Path):
    warm(channels)
    AppChannel.objects.create(app_key="photocraft", channels=["beta"])
    client = Client()
    assert "/v0.5.0/" in client.get(DOWNLOAD)["Location"]
    assert "/v0.6.0-rc.1/" in client.get(DOWNLOAD + "?channel=beta")["Location"]
    stable_page = client.get(PAGE).content.decode()
    beta_page = client.get(PAGE + "?channel=beta").content.decode()
    assert "0.6.0-rc.1" in beta_page and "0.6.0-rc.1" not in stable_page
    assert "(pre-release)" in beta_page
    assert 'href="/v1/craft_apps/download/photocraft/windows/x64?channel=beta"' in beta_page
    assert 'href="/craft_apps/downloads/photocraft/?channel=beta"' in beta_page
    assert "?channel=beta" not in stable_page
    assert client.get(PAGE).content.decode() == stable_page, "each channel's page kept apart"


def test_the_parameter_the_schema_and_a_controls_scope_all_list_the_channel_type():
    """One type lists the channels: what a request may name, the OpenAPI enum and the
    admin's choices of a control's scope."""
    factory = RequestFactory()
    for channel in Channel:
        assert requested_channel(factory.get(URL, {"channel": channel.value})) is channel
    assert schema_parameter("").enum == [channel.value for channel in Channel]
    field = ReleaseControl._meta.get_field("channel")
    assert isinstance(field, CharField)
    scopes = [value for value, _label in field.choices or ()]
    assert scopes == ["", *(channel.value for channel in Channel)]

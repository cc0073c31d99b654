"""The Tauri updater endpoint behind Varnish with ``examples/cdn/varnish.vcl`` as shipped, in
front of real gunicorn workers: an update is kept once per URL and its signature verifies
through the cache, ``Vary: Craft-Apps-Bucket`` keeps one entry per bucket header, and a ``204``
(no update) is kept too, signed."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from craft_apps.kernel.domain import AppState, UpdaterFile
from tests.cdn.support import FETCHED_MS, Answer, Origin, Varnish, ask
from tests.support import ONE_AT_A_TIME, publish, release

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]

TAURI = "/v1/craft_apps/updates/tauri/photocraft/windows/x86_64"
BUNDLE = "https://github.com/storytold/photocraft/releases/download/v0.5.0/PhotoCraft_0.5.0_x64_en-US.msi"


def get(port: int, path: str, headers: dict[str, str] | None = None) -> Answer:
    """One GET as Tauri's updater sends it: no Accept-Encoding."""
    return ask(port, path, coding="", headers=headers)


def with_updater(origin: Origin) -> None:
    """photocraft 0.5.0 with a Windows updater file, served by every worker."""
    files = (UpdaterFile("windows-x86_64", BUNDLE, "c2lnbmF0dXJl"),)
    latest = replace(release(), updater=files)
    publish(origin.state_dir, {"photocraft": AppState(latest_release=latest, fetched_ms=FETCHED_MS)})
    deadline = time.monotonic() + 60  # a hang guard: the loop waits for its signal
    while not all(get(origin.port, f"{TAURI}/0.4.0").status == 200 for _ in range(4)):
        assert time.monotonic() < deadline, origin.output()


def test_an_update_is_kept_per_url_and_verifies(origin: Origin, varnish: Varnish):
    with_updater(origin)
    first, again = get(varnish.port, f"{TAURI}/0.4.0"), get(varnish.port, f"{TAURI}/0.4.0")
    assert (first.cache, again.cache) == ("MISS", "HIT")
    assert again.raw == first.raw and b'"version":"0.5.0"' in again.raw
    variant = "tauri/photocraft/windows/x86_64/0.4.0;channel=stable;bucket=;bundle_type="
    assert again.verdict(int(time.time()), variant=variant).accepted
    other = get(varnish.port, f"{TAURI}/0.3.0")
    assert other.cache == "MISS", "another version is another URL"


def test_each_bucket_header_is_its_own_entry(origin: Origin, varnish: Varnish):
    with_updater(origin)
    path = f"{TAURI}/0.4.0"
    seen = [get(varnish.port, path, {"Craft-Apps-Bucket": bucket}).cache for bucket in ("3", "3", "60", "60")]
    assert seen == ["MISS", "HIT", "MISS", "HIT"]
    assert get(varnish.port, path).cache == "MISS", "no header is an entry of its own too"


def test_no_update_through_the_cache(origin: Origin, varnish: Varnish):
    with_updater(origin)
    answers = [get(varnish.port, f"{TAURI}/0.5.0") for _ in range(2)]
    assert [a.status for a in answers] == [204, 204]
    assert [a.cache for a in answers] == ["MISS", "HIT"], "Varnish keeps a 204 as any answer"
    assert all(a.raw == b"" and a.headers["vary"] == "Craft-Apps-Bucket" for a in answers)
    variant = "tauri/photocraft/windows/x86_64/0.5.0;channel=stable;bucket=;bundle_type="
    assert answers[1].verdict(int(time.time()), variant=variant).accepted

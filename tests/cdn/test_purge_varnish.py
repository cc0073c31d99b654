"""Purge on change through a real Varnish (``examples/cdn/varnish.vcl`` as shipped) in front of
real gunicorn workers: a yank saved at the origin is served by the edge until its copy is due;
once the purge thread (made from the settings as ``poll_craft_releases`` makes it) has dropped
the changed URLs, the next launcher behind the edge gets the yank, in every coding and channel.
PURGE and BAN are taken only from the addresses of the VCL's ACL."""

from __future__ import annotations

import http.client
import time
from collections.abc import Iterator

import pytest

from craft_apps.cdn.plan import RELEASE_INFO, UPDATER_PREFIX
from craft_apps.cdn.purger import Purger
from craft_apps.cdn.wiring import purger_from_settings
from tests.cdn.support import BETA_PATH, URL_PATH, Answer, Origin, Varnish, ask
from tests.controls.support import served, yank
from tests.support import ONE_AT_A_TIME, release

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]

TAG = release().tag
VARIANTS = [(path, coding) for path in (URL_PATH, BETA_PATH) for coding in ("br", "gzip", "")]


@pytest.fixture
def purge_settings(origin: Origin, varnish: Varnish, settings) -> Iterator[None]:
    edge = f"http://127.0.0.1:{varnish.port}"
    settings.CRAFT_APPS = {
        "STATE_DIR": str(origin.state_dir),
        "APPS": "photocraft=PhotoCraft=storytold/photocraft",
        "COORDINATION_ENABLED": False,
        "CDN_PURGE_KIND": "http",
        "CDN_PURGE_URL": edge + "{path}",
        "CDN_PUBLIC_URL": edge,
    }
    yield


def running_purger() -> Purger:
    purger = purger_from_settings(is_leader=lambda: True)
    assert purger is not None
    return purger


def latest(answer: Answer) -> str | None:
    return served(answer.body).latest


def cached_everywhere(varnish: Varnish) -> None:
    """Every channel in every coding kept by the edge, naming the release."""
    for path, coding in VARIANTS:
        ask(varnish.port, path, coding)
        again = ask(varnish.port, path, coding)
        assert (again.cache, latest(again)) == ("HIT", TAG), (path, coding)


def until_the_origin_serves_the_yank(origin: Origin) -> None:
    """Both workers answer without the release (each applies an edit within 2 s)."""
    deadline, pids = time.monotonic() + 60, set[str]()  # a hang guard
    while len(pids) < 2:
        answer = ask(origin.port)
        if latest(answer) != TAG:
            pids.add(answer.headers["x-worker-pid"])
        assert time.monotonic() < deadline, origin.output()


def until_purged(purger: Purger) -> tuple[str, ...]:
    """Looks as the purge thread does, until a look purged something (its signal), and waits
    for its requests to be taken."""
    deadline = time.monotonic() + 60  # a hang guard: the loop waits for its signal
    while not (purged := purger.look()):
        assert time.monotonic() < deadline, "the purge thread never saw the yank"
        time.sleep(0.2)
    assert purger.finish(10), "the purge requests never ended"
    return purged


def test_a_yank_reaches_a_launcher_behind_varnish_as_soon_as_it_is_purged(
    origin: Origin, varnish: Varnish, purge_settings: None
):
    origin.warm()
    cached_everywhere(varnish)
    purger = running_purger()
    try:
        assert purger.look() == ()  # the first look learns what is served
        yank(TAG)
        until_the_origin_serves_the_yank(origin)
        kept = ask(varnish.port)
        assert (kept.cache, latest(kept)) == ("HIT", TAG), "without a purge the edge serves its copy"
        assert until_purged(purger) == (URL_PATH, BETA_PATH)
    finally:
        purger.stop()
    for path, coding in VARIANTS:
        now = ask(varnish.port, path, coding)
        assert (now.cache, latest(now)) == ("MISS", None), (path, coding)
        assert now.headers.get("content-encoding") == (coding or None)
        assert now.verdict(int(time.time()), variant="beta" if path == BETA_PATH else "").accepted


def test_a_ban_drops_every_url_under_the_path(
    origin: Origin, varnish: Varnish, purge_settings: None, settings
):
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "CDN_PURGE_METHOD": "BAN"}
    origin.warm()
    cached_everywhere(varnish)
    purger = running_purger()
    try:
        assert purger.look() == ()
        yank(TAG)
        until_the_origin_serves_the_yank(origin)
        until_purged(purger)
    finally:
        purger.stop()
    assert all(ask(varnish.port, path, coding).cache == "MISS" for path, coding in VARIANTS)
    assert all(latest(ask(varnish.port, path, coding)) is None for path, coding in VARIANTS)


def from_address(port: int, method: str, path: str, source: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        connection.request(method, path)
        return connection.getresponse().status
    finally:
        connection.close()


def test_purge_and_ban_only_from_the_acl(origin: Origin, varnish: Varnish):
    origin.warm()
    cached_everywhere(varnish)
    # 127.0.0.2 is this machine too, but not in the ACL (127.0.0.1 and ::1).
    assert from_address(varnish.port, "PURGE", URL_PATH, "127.0.0.2") == 403
    assert from_address(varnish.port, "BAN", RELEASE_INFO, "127.0.0.2") == 403
    assert ask(varnish.port).cache == "HIT"
    assert from_address(varnish.port, "BAN", UPDATER_PREFIX, "127.0.0.1") == 200
    assert ask(varnish.port).cache == "HIT", "a ban of the updater paths leaves the release info"
    assert from_address(varnish.port, "PURGE", URL_PATH, "127.0.0.1") == 200
    assert ask(varnish.port).cache == "MISS"

"""Each changed URL purged on its own, against a real local HTTP server as the CDN: while the
purge of one URL hangs (no answer at all), the other URL's purge is sent, taken, logged and
counted; the hanging one then fails, is retried and given up with a line and counts of its own.
The waits are for the server's own signals (an event set when it got a request), never sleeps.
And the ``Host`` of a purge keeps the port of ``CDN_PUBLIC_URL``."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from craft_apps.cdn.backends import requests_for
from craft_apps.cdn.plan import RELEASE_INFO, PurgeRequest
from craft_apps.cdn.purger import Purger
from craft_apps.cdn.sender import Sender
from craft_apps.conf import PurgeTarget, app_settings
from craft_apps.host.counters import CountersUpdate, read_counters, record
from craft_apps.host.store import StateStore
from craft_apps.testing.clock import FakeClock
from tests.cdn.edge import HANG_AT_MOST_S, PurgeEdge

BETA = RELEASE_INFO + "?channel=beta"
WAIT_S = 10  # how long a signal may take before the test fails; never waited out when it works
assert HANG_AT_MOST_S > WAIT_S


@pytest.fixture
def edge() -> Iterator[PurgeEdge]:
    running = PurgeEdge(hang=frozenset({RELEASE_INFO}))
    yield running
    running.close()


def test_a_url_that_hangs_holds_none_of_the_others(
    edge: PurgeEdge, state_dir: Path, fake_clock: FakeClock, caplog
):
    # A timeout far past the test's waits: only concurrency lets the beta purge through.
    target = PurgeTarget("http", edge.url + "{path}", "PURGE", "https://updates.example.com", HANG_AT_MOST_S)
    store = StateStore(state_dir)
    store.open_for_writing()
    taken = threading.Event()

    def note(update: CountersUpdate) -> None:
        record(store, update)
        if update.purges.get("purged"):
            taken.set()

    answers = {RELEASE_INFO: 'W/"1"', BETA: 'W/"b1"'}
    purger = Purger(
        target,
        answers=lambda: dict(answers),
        is_leader=lambda: True,
        send=Sender(target),
        record=note,
        clock=fake_clock,  # the settle and the backoff pass at once; the requests are real
    )
    try:
        purger.look()
        answers.update({RELEASE_INFO: 'W/"2"', BETA: 'W/"b2"'})
        with caplog.at_level(logging.INFO, logger="craft_apps.cdn"):
            assert purger.look() == (RELEASE_INFO, BETA)  # the hanging URL's job comes first
            assert edge.got(RELEASE_INFO).wait(WAIT_S) and edge.got(BETA).wait(WAIT_S)
            assert not edge.release.is_set()  # the stable purge still has no answer
            assert taken.wait(WAIT_S)  # counted in the state file
            assert dropped(caplog) == [f"Craft apps CDN purge: dropped {BETA}."]
            assert dict(read_counters(store).purges) == {
                "purged": 1,
                "retried": 0,
                "failed": 0,
                "unconfirmed": 0,
            }

            edge.release.set()  # the stable purge gets its 500, and every retry too
            assert purger.finish(WAIT_S)
        gave_up = [r.getMessage() for r in caplog.records if "gave up" in r.getMessage()]
        assert gave_up == [
            f"Craft apps CDN purge: gave up on PURGE {edge.url}{RELEASE_INFO}: HTTP 500, 4 tries; "
            "the CDN serves its copy until it is due (max-age)."
        ]
        assert dropped(caplog) == [f"Craft apps CDN purge: dropped {BETA}."]
        counters = read_counters(store)
        assert dict(counters.purges) == {"purged": 1, "retried": 3, "failed": 1, "unconfirmed": 0}
        assert counters.purge_failure == f"PURGE {edge.url}{RELEASE_INFO}: HTTP 500, 4 tries"
    finally:
        purger.stop()
        store.close()


def dropped(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]


def test_the_purge_host_keeps_the_port_of_the_public_url(edge: PurgeEdge, settings):
    settings.CRAFT_APPS = {
        "CDN_PURGE_KIND": "http",
        "CDN_PURGE_URL": edge.url + "{path}",
        "CDN_PUBLIC_URL": "https://updates.example.com:8443",
    }
    target = app_settings.CDN_PURGE
    assert target is not None
    (request,) = requests_for(target, [BETA])
    assert Sender(target)(request) is None
    assert edge.requests == [("PURGE", BETA, "updates.example.com:8443")]


def test_cloudflare_purges_the_public_url_with_its_port():
    target = PurgeTarget(
        "cloudflare", "https://cf.test/client/v4", "POST", "https://updates.example.com:8443", 5.0, zone="z"
    )
    (request,) = requests_for(target, [RELEASE_INFO])
    assert isinstance(request, PurgeRequest) and request.body is not None
    assert b'"https://updates.example.com:8443/v1/craft_apps/release_info"' in request.body

"""A purge waits for the web processes, not for a fixed time: two gunicorn workers (real
processes) each report the version they serve; a yank saved in the database is purged by the
purge thread (made from the settings, as ``poll_craft_releases`` makes it) only once both
workers serve it, and without the 2 s fallback: when the purge request reaches the local purge
server, every answer both workers give already leaves the yanked release out, and the purge
thread neither logged nor counted a change purged unconfirmed. Signals only: the server's
event, the workers' report files."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from craft_apps.cdn.plan import RELEASE_INFO
from craft_apps.cdn.purger import Purger
from craft_apps.cdn.wiring import purger_from_settings
from craft_apps.content.served_versions import read_reports
from craft_apps.host.counters import read_counters
from craft_apps.host.store import StateStore
from craft_apps.kernel.domain import AppState
from tests.cdn.edge import PurgeEdge
from tests.content.workers_support import FETCHED_MS, Workers, database_for_the_workers, workers
from tests.controls.support import V110, V120, V130, Served, burst, until_both, yank
from tests.support import ONE_AT_A_TIME, publish_history

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]

WAIT_S = 15  # how long a signal may take before the test fails; never waited out when it works


def is_yanked(answer: Served) -> bool:
    return answer.fetched and answer.latest == "v1.2.0" and not answer.mentions("v1.3.0")


def until_both_report(state_dir: Path, site: Workers) -> None:
    """Waits for both workers' report files (each worker's beat writes one after its look)."""
    deadline = time.monotonic() + WAIT_S
    while len({r.pid for r in read_reports(state_dir, int(time.time() * 1000))}) < 2:
        assert time.monotonic() < deadline, site.output()
        time.sleep(0.05)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Workers]:
    state = AppState(latest_release=V130, fetched_ms=FETCHED_MS)
    with database_for_the_workers() as (database, _), workers(tmp_path, database, state=state) as running:
        publish_history(tmp_path / "state", "photocraft", (V130, V120, V110), repo="storytold/photocraft")
        until_both(running, lambda s: s.latest == "v1.3.0", WAIT_S, "both workers serve v1.3.0")
        yield running


def test_the_purge_comes_once_both_workers_serve_the_yank_and_before_the_fallback(
    site: Workers, tmp_path: Path, settings, caplog
):
    state_dir = tmp_path / "state"
    until_both_report(state_dir, site)
    at_purge: list[Served] = []
    purged = threading.Event()

    def what_the_workers_serve(path: str) -> None:
        if path == RELEASE_INFO and not purged.is_set():
            at_purge.extend(burst(site))  # before the purge is answered
            purged.set()

    edge = PurgeEdge(on_purge=what_the_workers_serve)
    settings.CRAFT_APPS = {
        "STATE_DIR": str(state_dir),
        "APPS": "photocraft=PhotoCraft=storytold/photocraft",
        "COORDINATION_ENABLED": False,
        "CDN_PURGE_KIND": "http",
        "CDN_PURGE_URL": edge.url + "{path}",
        "CDN_PUBLIC_URL": "https://updates.example.com",
    }
    purger: Purger | None = purger_from_settings(is_leader=lambda: True)
    assert purger is not None
    try:
        with caplog.at_level(logging.INFO, logger="craft_apps.cdn"):
            purger.start()
            assert "watching /v1/craft_apps/release_info" in until_logged(caplog, "watching")
            yank("v1.3.0")
            assert purged.wait(WAIT_S), f"no purge came\n{site.output()}"
            assert purger.finish(WAIT_S)
    finally:
        purger.stop()
        edge.close()
    assert len({a.pid for a in at_purge}) == 2, "both workers answered when the purge came"
    stale = [(a.pid, a.latest) for a in at_purge if not is_yanked(a)]
    assert not stale, f"{len(stale)} of {len(at_purge)} answers still had the yanked release at the purge"
    assert "purging all the same" not in caplog.text, (
        "purged at the 2 s fallback, not when the workers served it"
    )
    store = StateStore(state_dir)
    try:
        assert read_counters(store).purges["unconfirmed"] == 0
    finally:
        store.close()


def until_logged(caplog: pytest.LogCaptureFixture, text: str) -> str:
    deadline = time.monotonic() + WAIT_S
    while text not in caplog.text:
        assert time.monotonic() < deadline, caplog.text
        time.sleep(0.05)
    return caplog.text

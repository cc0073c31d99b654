"""The poller reads each release's Tauri updater files once (craft_apps.tauri.file_reads): GitHub
faked with ``responses``, time with FakeClock; a failure's log line, counters, metric and
``craft_apps_status`` line."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from datetime import datetime
from io import StringIO
from pathlib import Path

import pytest
import requests
import responses
from django.core.management import call_command
from django.test import Client

from craft_apps.github.client import GitHubClient
from craft_apps.host.counters import read_counters
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec, AppState
from craft_apps.polling.poller import PollConfig, Poller
from craft_apps.polling.tally import Tally
from craft_apps.tauri.fake_release import UPDATER_KEYS, TauriRelease, tauri_action_release
from craft_apps.testing.clock import FakeClock
from tests.api.support import TOKEN, scrape
from tests.polling.hosts import API, APPS, Host, release_json, url
from tests.support import PHOTOCRAFT, S

ARTCRAFT = AppSpec("artcraft", "ArtCraft", "storytold/artcraft")
LATEST = f"{API}/repos/{ARTCRAFT.repo}/releases/latest"
PUBLISHED = datetime(2026, 11, 20, 17, 4, 12, tzinfo=UTC)
INTERVAL_S = 1800


def published(version: str = "0.37.0") -> TauriRelease:
    return tauri_action_release(ARTCRAFT.repo, "ArtCraft", version, PUBLISHED)


def manifest_url(built: TauriRelease) -> str:
    return str(next(a for a in built.release["assets"] if a["name"] == "latest.json")["browser_download_url"])


def serve(built: TauriRelease, *, manifest_status: int = 200) -> None:
    responses.get(LATEST, json=built.release, headers={"ETag": '"e1"'})
    responses.get(manifest_url(built), body=built.files["latest.json"], status=manifest_status)


def downloads() -> list[str]:
    urls = [str(call.request.url) for call in responses.calls]
    return [u for u in urls if not u.startswith(API)]


@pytest.fixture
def host(state_dir: Path, fake_clock: FakeClock) -> Host:
    return Host(state_dir, fake_clock, apps=(ARTCRAFT,))


@responses.activate
def test_a_new_release_is_saved_with_its_updater_files(host: Host):
    built = published()
    serve(built)
    report = host.poller.tick()
    assert report.round.fetched == 1
    saved = host.saved("artcraft").latest_release
    assert saved is not None and saved.tag == "artcraft-v0.37.0"
    assert sorted(f.platform for f in saved.updater) == sorted(key for key, _ in UPDATER_KEYS)
    assert downloads() == [manifest_url(built)]
    history = host.store.read().history["artcraft"]
    assert history[0].updater == saved.updater, "the history holds the release as served"


@responses.activate
def test_a_release_costs_its_downloads_once_over_rounds_and_restarts(host: Host):
    built = published()
    serve(built)
    host.poller.tick()
    responses.get(LATEST, status=304)  # later rounds: not modified
    host.clock.advance(INTERVAL_S)
    assert host.poller.tick().round.unchanged == 1
    host.restart()
    host.clock.advance(INTERVAL_S)
    assert host.poller.tick().round.unchanged == 1
    assert len(downloads()) == 1
    saved = host.saved("artcraft").latest_release
    assert saved is not None and len(saved.updater) == len(UPDATER_KEYS)


@responses.activate
def test_a_new_answer_for_the_same_release_keeps_its_updater_files(host: Host):
    built = published()
    serve(built)
    host.poller.tick()
    responses.replace(responses.GET, LATEST, json=built.release, headers={"ETag": '"e2"'})
    host.clock.advance(INTERVAL_S)
    assert host.poller.tick().round.fetched == 1
    assert len(downloads()) == 1
    saved = host.saved("artcraft").latest_release
    assert saved is not None and len(saved.updater) == len(UPDATER_KEYS)


@responses.activate
def test_a_failed_read_serves_the_release_and_is_tried_again_after_a_backoff(
    host: Host, caplog: pytest.LogCaptureFixture
):
    built = published()
    serve(built, manifest_status=503)
    with caplog.at_level(logging.WARNING, logger="craft_apps.polling.updater"):
        host.poller.tick()
    saved = host.saved("artcraft").latest_release
    assert saved is not None and saved.tag == "artcraft-v0.37.0" and saved.updater == ()
    [line] = [r.getMessage() for r in caplog.records if r.name == "craft_apps.polling.updater"]
    assert "couldn't read the updater files of artcraft artcraft-v0.37.0" in line
    assert "latest.json: HTTP 503" in line
    responses.get(LATEST, status=304)
    host.clock.advance(INTERVAL_S - 30)  # due again, but the backoff (one interval) is not over
    assert host.poller.tick().round.unchanged == 1
    assert len(downloads()) == 1
    responses.replace(responses.GET, manifest_url(built), body=built.files["latest.json"])
    host.clock.advance(INTERVAL_S)
    assert host.poller.tick().round.unchanged == 1
    assert len(downloads()) == 2
    saved = host.saved("artcraft").latest_release
    assert saved is not None and len(saved.updater) == len(UPDATER_KEYS)


@responses.activate
def test_a_failure_is_counted_in_the_metrics_and_craft_apps_status(
    host: Host, settings, state_dir: Path, client: Client, install_runtime, monkeypatch
):
    serve(published(), manifest_status=404)
    tally = Tally(host.store, host.clock)
    tally.after_tick(host.poller.tick(), host.poller, host.poller.github)
    counters = read_counters(host.store)
    assert counters.updater == {"fetched": 0, "refused": 0, "failed": 1} and counters.updater_downloads == 1
    assert counters.updater_failure == "artcraft artcraft-v0.37.0: latest.json: HTTP 404 Not Found"
    settings.CRAFT_APPS = {
        "STATE_DIR": str(state_dir),
        "APPS": "artcraft=ArtCraft=storytold/artcraft",
        "METRICS_TOKEN": TOKEN,
    }
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    install_runtime(clock=host.clock, recheck_s=0.0)
    samples = scrape(client)
    assert samples["craft_apps_updater_reads_total"][(("outcome", "failed"),)] == 1
    assert samples["craft_apps_updater_downloads_total"][()] == 1
    out = StringIO()
    call_command("craft_apps_status", stdout=out)
    [line] = [line for line in out.getvalue().splitlines() if "updater files" in line]
    assert "0 read, 0 with a file refused, 1 failed, 1 downloads; last failure" in line
    assert line.endswith("artcraft artcraft-v0.37.0: latest.json: HTTP 404 Not Found")


@responses.activate
def test_a_craft_app_release_costs_no_download(state_dir: Path, fake_clock: FakeClock):
    plain = Host(state_dir, fake_clock)
    for app in APPS:
        responses.get(url(app), json=release_json(app))
    plain.poller.tick()
    assert downloads() == []
    assert all(str(call.request.url).startswith(API) for call in responses.calls)
    assert plain.saved("photocraft").latest_release is not None


@responses.activate
def test_what_a_read_refuses_is_one_line_for_the_release(host: Host, caplog: pytest.LogCaptureFixture):
    built = published()
    manifest = json.loads(built.files["latest.json"])
    manifest["platforms"]["windows-x86_64"]["url"] = "https://evil.example/ArtCraft.msi"
    manifest["platforms"]["linux-x86_64"]["signature"] = "not base64!"
    responses.get(LATEST, json=built.release, headers={"ETag": '"e1"'})
    responses.get(manifest_url(built), json=manifest)
    with caplog.at_level(logging.WARNING, logger="craft_apps.polling.updater"):
        host.poller.tick()
        responses.get(LATEST, status=304)
        host.clock.advance(INTERVAL_S)
        host.poller.tick()
    [line] = [r.getMessage() for r in caplog.records]
    assert line.startswith(
        "Craft app releases: artcraft artcraft-v0.37.0: 2 of its updater files or platforms refused: "
    )
    assert "'windows-x86_64': its url is not a file of this release" in line and "'linux-x86_64'" in line
    saved = host.saved("artcraft").latest_release
    assert saved is not None and len(saved.updater) == len(UPDATER_KEYS) - 2
    assert len(downloads()) == 1, "refused is not retried"
    assert host.poller.updater_files.take_tally().refused == 1


@responses.activate
def test_the_history_of_an_app_that_needs_it_gets_updater_files_too(host: Host, state_dir: Path):
    older, newer = published("0.36.0"), published("0.37.0")
    older.release["published_at"] = "2026-11-01T10:00:00Z"
    store = StateStore(state_dir / "history-host")
    store.open_for_writing()
    lease = Lease(store, holder="history-host", clock=host.clock)
    assert lease.try_acquire() and lease.fence is not None
    poller = Poller(
        config=PollConfig((ARTCRAFT,), interval_ms=INTERVAL_S * S, max_backoff_ms=14_400 * S),
        github=GitHubClient(api_url=API, web_url="https://github.com", token=None, clock=host.clock),
        host=store,
        fence=lease.fence,
        clock=host.clock,
        needs_history=lambda: frozenset({"artcraft"}),
    )
    responses.get(LATEST, json=newer.release)
    responses.get(f"{API}/repos/{ARTCRAFT.repo}/releases", json=[newer.release, older.release])
    for built in (older, newer):
        responses.get(manifest_url(built), body=built.files["latest.json"])
    poller.tick()
    history = store.read().history["artcraft"]
    assert [r.tag for r in history] == ["artcraft-v0.37.0", "artcraft-v0.36.0"]
    assert all(len(r.updater) == len(UPDATER_KEYS) for r in history)
    assert sorted(downloads()) == sorted(manifest_url(b) for b in (older, newer)), "each release once"


@responses.activate
def test_a_hanging_latest_json_holds_back_no_other_apps_release(state_dir: Path, fake_clock: FakeClock):
    """ArtCraft is asked first and its latest.json hangs; PhotoCraft's new release is in the
    state file before that download starts, so whatever the download does it waits for nothing."""
    host = Host(state_dir, fake_clock, apps=(ARTCRAFT, PHOTOCRAFT))
    built = published()
    responses.get(LATEST, json=built.release, headers={"ETag": '"e1"'})
    responses.get(url(PHOTOCRAFT), json=release_json(PHOTOCRAFT, "0.6.0"))
    seen_while_hanging: list[dict[str, str | None]] = []

    def hang(request: object) -> tuple[int, dict[str, str], bytes]:
        saved = host.store.read().apps
        seen_while_hanging.append({key: _tag(state) for key, state in saved.items()})
        raise requests.ReadTimeout("the download stalled")  # as the deadline ends it

    responses.add_callback(responses.GET, manifest_url(built), callback=hang)
    report = host.poller.tick()
    assert seen_while_hanging == [{"artcraft": "artcraft-v0.37.0", "photocraft": "v0.6.0"}]
    assert report.round.fetched == 2 and report.saved.fetched == 2
    assert host.saved("artcraft").latest_release is not None
    assert host.poller.updater_files.take_tally().failed == 1


def _tag(state: AppState) -> str | None:
    return None if state.latest_release is None else state.latest_release.tag


@responses.activate
def test_an_apps_first_failed_read_ends_its_reads_for_the_round(host: Host, state_dir: Path):
    older, newer = published("0.36.0"), published("0.37.0")
    older.release["published_at"] = "2026-11-01T10:00:00Z"
    poller = host.poller
    poller.needs_history = lambda: frozenset({"artcraft"})
    responses.get(LATEST, json=newer.release)
    responses.get(f"{API}/repos/{ARTCRAFT.repo}/releases", json=[newer.release, older.release])
    responses.get(manifest_url(newer), status=503)
    responses.get(manifest_url(older), body=older.files["latest.json"])
    poller.tick()
    assert downloads() == [manifest_url(newer)], "the history's release waits for the next round"


@responses.activate
def test_the_apps_updater_files_are_read_at_once(state_dir: Path, fake_clock: FakeClock):
    """Each app's latest.json answers only once the other app's is asked too: read one after
    the other, the first would never get its answer."""
    soundcraft = AppSpec("soundcraft", "SoundCraft", "storytold/soundcraft")
    host = Host(state_dir, fake_clock, apps=(ARTCRAFT, soundcraft))
    both_asked = threading.Barrier(2, timeout=10)  # bounds a failure only
    other = tauri_action_release(soundcraft.repo, "SoundCraft", "1.2.0", PUBLISHED)
    for built, latest in ((published(), LATEST), (other, url(soundcraft))):
        responses.get(latest, json=built.release)
        responses.add_callback(
            responses.GET,
            manifest_url(built),
            callback=_once_both_asked(both_asked, built.files["latest.json"]),
        )
    host.poller.tick()
    for key in ("artcraft", "soundcraft"):
        saved = host.saved(key).latest_release
        assert saved is not None and len(saved.updater) == len(UPDATER_KEYS), key


def _once_both_asked(
    barrier: threading.Barrier, body: bytes
) -> Callable[[object], tuple[int, dict[str, str], bytes]]:
    def answer(request: object) -> tuple[int, dict[str, str], bytes]:
        barrier.wait()
        return 200, {}, body

    return answer

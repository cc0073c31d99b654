"""The polling loop alone on one host: GitHub faked with `responses`, time with FakeClock."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest
import responses
from responses import matchers

from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.domain import Backoff, PollMode
from craft_apps.testing.clock import FakeClock
from tests.polling.hosts import APPS, Host, release_json, url
from tests.support import S


@pytest.fixture
def host(state_dir: Path, fake_clock: FakeClock) -> Host:
    return Host(state_dir, fake_clock)


@responses.activate
def test_a_first_round_fetches_every_app_and_publishes_it(host: Host):
    for app in APPS:
        responses.get(url(app), json=release_json(app), headers={"ETag": f'"{app.key}-1"'})
    started_ms = host.clock.now_ms()
    report = host.poller.tick()
    assert report.mode is PollMode.STANDALONE
    assert (report.round.fetched, report.round.unchanged, report.round.failed) == (2, 0, 0)
    saved = host.saved("photocraft")
    assert saved.latest_release is not None and saved.latest_release.tag == "v0.5.0"
    assert saved.etag == '"photocraft-1"'
    assert saved.fetched_ms == started_ms
    assert host.saved("artcraft-launcher").fetched_ms == started_ms + 1000
    assert len(saved.latest_release.assets) == 13


@responses.activate
def test_requests_go_one_at_a_time_with_a_second_between_them(host: Host):
    for app in APPS:
        responses.get(url(app), json=release_json(app))
    host.poller.tick()
    assert host.clock.sleeps == [1.0]


@responses.activate
def test_fresh_apps_are_not_asked_about_again_until_the_interval_minus_the_margin(host: Host):
    for app in APPS:
        responses.get(url(app), json=release_json(app), headers={"ETag": '"e"'})
    host.poller.tick()  # photocraft at T, the launcher at T + 1 s
    host.clock.advance(1768)  # T + 1769 s: 1770 s is the interval less the margin
    assert host.poller.tick().round.requests() == 0
    host.clock.advance(1)
    assert host.poller.tick().round.fetched == 1
    host.clock.advance(1)
    assert host.poller.tick().round.fetched == 1


@responses.activate
def test_a_304_keeps_the_release_and_moves_only_the_fetch_time(host: Host):
    app = APPS[0]
    responses.get(url(app), json=release_json(app), headers={"ETag": '"v1"'})
    responses.get(url(APPS[1]), status=404)
    host.poller.tick()
    before = host.saved("photocraft")
    responses.replace(
        responses.GET, url(app), status=304, match=[matchers.header_matcher({"If-None-Match": '"v1"'})]
    )
    host.clock.advance(1800)
    asked_ms = host.clock.now_ms()
    report = host.poller.tick()
    assert report.round.unchanged == 1
    after = host.saved("photocraft")
    assert after.latest_release == before.latest_release
    assert after.etag == '"v1"'
    assert after.fetched_ms == asked_ms


@responses.activate
def test_a_repository_without_a_release_counts_as_fetched(host: Host):
    for app in APPS:
        responses.get(url(app), status=404, json={"message": "Not Found"})
    host.poller.tick()
    saved = host.saved("artcraft-launcher")
    assert saved.latest_release is None
    assert saved.fetched_ms == host.clock.now_ms()  # the second request, after the 1 s pause


@responses.activate
def test_an_answer_that_fails_to_parse_keeps_the_previous_release_untouched(host: Host):
    for app in APPS:
        responses.get(url(app), json=release_json(app), headers={"ETag": '"v1"'})
    host.poller.tick()
    before = host.saved("photocraft")
    host.clock.advance(1800)
    responses.replace(responses.GET, url(APPS[0]), body=b"<html>oops</html>", status=200)
    responses.replace(responses.GET, url(APPS[1]), status=304)
    asked_ms = host.clock.now_ms()
    report = host.poller.tick()
    assert report.round.failed == 1
    after = host.saved("photocraft")
    assert (after.latest_release, after.etag, after.fetched_ms) == (
        before.latest_release,
        before.etag,
        before.fetched_ms,
    )
    assert after.failed_ms == asked_ms
    assert after.failures == 1


def seconds_until_next_request(host: Host) -> int:
    waited = 0
    while host.poller.tick().round.requests() == 0:
        host.clock.advance(1)
        waited += 1
        assert waited < 3600
    return waited


@responses.activate
def test_a_failing_repository_is_retried_after_1_2_and_4_minutes(state_dir: Path, fake_clock: FakeClock):
    single = Host(state_dir, fake_clock, apps=APPS[:1])
    responses.get(url(APPS[0]), status=502)
    assert single.poller.tick().round.failed == 1
    # Alone, each round fails entirely: the host backs off 1, 2, 4 minutes.
    assert [seconds_until_next_request(single) for _ in range(3)] == [60, 120, 240]
    assert single.saved("photocraft").failures == 4


@responses.activate
def test_beside_healthy_apps_a_failing_one_waits_1_2_4_minutes_less_the_margin(host: Host):
    responses.get(url(APPS[0]), status=502)
    responses.get(url(APPS[1]), json=release_json(APPS[1]))
    host.poller.tick()
    assert host.poller.backoff == Backoff(), "the round wasn't a total failure"
    # 30, 90, 210 s after each failure; the first is counted from the round's end, 1 s later.
    assert [seconds_until_next_request(host) for _ in range(3)] == [29, 90, 210]
    assert host.saved("photocraft").failures == 4


@responses.activate
def test_a_round_stops_at_a_403_rate_limit_and_backs_off_past_the_reset(host: Host):
    reset_s = host.clock.now_ms() // 1000 + 50 * 60
    responses.get(
        url(APPS[0]),
        status=403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset_s)},
        json={"message": "API rate limit exceeded"},
    )
    later_app = responses.get(url(APPS[1]), json=release_json(APPS[1]))
    report = host.poller.tick()
    assert report.round.rate_limited
    assert later_app.call_count == 0, "the rest of the round would be refused too"
    backoff = host.poller.backoff
    assert backoff.trouble == 1
    assert backoff.until_ms == reset_s * 1000 + 60 * S  # no jitter with random 0.5
    assert host.store.read().backoff == backoff
    host.clock.set_ms(reset_s * 1000 + 59 * S)
    assert host.poller.tick().backing_off
    host.clock.set_ms(reset_s * 1000 + 61 * S)
    responses.replace(responses.GET, url(APPS[0]), json=release_json(APPS[0]))
    report = host.poller.tick()
    assert report.round.fetched == 2
    assert host.poller.backoff == Backoff()


@responses.activate
def test_a_429_with_retry_after_backs_off(host: Host):
    responses.get(url(APPS[0]), status=429, headers={"Retry-After": "3600"})
    report = host.poller.tick()
    assert report.round.rate_limited and report.round.requests() == 1
    assert host.poller.backoff.until_ms == host.clock.now_ms() + 3660 * S


@responses.activate
def test_a_round_where_everything_failed_backs_off_a_minute_then_two(host: Host):
    for app in APPS:
        responses.get(url(app), status=500)
    start = host.clock.now_ms()
    host.poller.tick()
    assert host.poller.backoff == Backoff(until_ms=host.clock.now_ms() + 60 * S, trouble=1)
    assert host.clock.now_ms() == start + 1 * S  # one second between the two requests


@responses.activate
def test_a_restart_revalidates_every_app_and_skips_fresh_ones(host: Host):
    for app in APPS:
        responses.get(url(app), json=release_json(app), headers={"ETag": f'"{app.key}"'})
    host.poller.tick()
    host.restart()
    assert host.poller.tick().round.requests() == 0, "still fresh after a restart"
    host.clock.advance(1800)
    for app in APPS:
        responses.replace(
            responses.GET,
            url(app),
            status=304,
            match=[matchers.header_matcher({"If-None-Match": f'"{app.key}"'})],
        )
    assert host.poller.tick().round.unchanged == 2


@responses.activate
def test_a_restart_keeps_the_backoff(host: Host):
    responses.get(url(APPS[0]), status=429, headers={"Retry-After": "600"})
    host.poller.tick()
    host.restart()
    assert host.poller.tick().backing_off


@responses.activate
def test_the_token_goes_to_github_and_never_into_the_state_file(state_dir: Path, fake_clock: FakeClock):
    token = "ghp_secretsecretsecret"
    host = Host(state_dir, fake_clock, token=token)
    for app in APPS:
        responses.get(
            url(app),
            json=release_json(app),
            match=[matchers.header_matcher({"Authorization": f"Bearer {token}"})],
        )
    assert host.poller.tick().round.fetched == 2
    host.store.close()
    for path in state_dir.iterdir():
        assert token.encode() not in path.read_bytes(), path
        assert path.stat().st_mode & 0o777 == 0o600, path


@responses.activate
def test_nothing_raises_out_of_a_tick_when_the_state_file_cannot_be_written(host: Host, caplog):
    for app in APPS:
        responses.get(url(app), json=release_json(app))
    host.store.close()
    host.store.path.chmod(0o400)
    try:
        with caplog.at_level(logging.WARNING):
            report = host.poller.tick()
    finally:
        host.store.path.chmod(0o600)
    assert report.round.fetched == 2
    assert host.poller.memory["photocraft"].latest_release is not None


@responses.activate
def test_a_stale_holder_stops_writing_once_another_poller_took_over(host: Host):
    for app in APPS:
        responses.get(url(app), json=release_json(app))
    host.clock.advance(31)  # past the lease's TTL without renewing: a standby takes over
    other = Lease(StateStore(host.store.path.parent), holder="host-b", clock=host.clock)
    assert other.try_acquire()
    report = host.poller.tick()
    assert host.poller.fence_lost
    assert report.round.requests() <= 1
    assert host.store.read().apps == {}


def test_the_summary_line_says_what_happened(host: Host, caplog):
    with responses.RequestsMock() as mocked:
        mocked.get(url(APPS[0]), json=release_json(APPS[0]))
        mocked.get(url(APPS[1]), status=500)
        with caplog.at_level(logging.INFO, logger="craft_apps.polling.poller"):
            host.poller.tick()
    summaries = [r.getMessage() for r in caplog.records if "fetched" in r.getMessage()]
    assert summaries == ["Craft app releases (standalone): 1 fetched, 0 unchanged, 1 failed."]


def test_release_json_fixture_is_realistic():
    data = release_json(APPS[0])
    assert json.loads(json.dumps(data))["tag_name"] == "v0.5.0"


@responses.activate
def test_the_summary_counts_only_what_the_state_file_took_and_the_trouble_is_logged_once(host: Host, caplog):
    for app in APPS:
        responses.get(url(app), json=release_json(app))
    blocker = sqlite3.connect(host.store.path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the file: every write fails
    try:
        with caplog.at_level(logging.INFO, logger="craft_apps.polling.poller"):
            report = host.poller.tick()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert (report.round.fetched, report.saved.fetched, report.unsaved()) == (2, 0, 2)
    messages = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert (
        logging.WARNING,
        "Craft app releases (standalone): 0 fetched, 0 unchanged, 0 failed, 2 not saved "
        "(the host's state file can't be written; kept in memory).",
    ) in messages
    assert sum("couldn't write the host's state file" in m for _, m in messages) == 1
    assert host.store.read().apps == {}

    host.clock.advance(1)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="craft_apps.polling.poller"):
        host.poller.tick()  # nothing due: what was kept is written now
    assert sorted(host.store.read().apps) == sorted(app.key for app in APPS)
    assert "the host's state file is written again" in caplog.text


@responses.activate
def test_held_state_is_everything_memory_knows(host: Host):
    responses.get(url(APPS[0]), json=release_json(APPS[0]), headers={"ETag": '"a"'})
    responses.get(url(APPS[1]), status=500)
    host.poller.tick()
    held = host.poller.held_state()
    assert held.apps == {key: state for key, state in host.poller.memory.items()}
    assert held.apps["photocraft"].etag == '"a"' and held.apps["artcraft-launcher"].failures == 1
    assert held.backoff == host.poller.backoff

"""GET /v1/craft_apps/metrics in process: the token's rules, and the numbers parsed back."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest
from django.test import Client

from craft_apps.checks import configuration_problems
from craft_apps.host.counters import CountersUpdate, record
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.domain import AppState, Backoff, GitHubQuota
from craft_apps.kernel.instants import datetime_to_ms
from craft_apps.testing.clock import FakeClock
from tests.api.support import METRICS_URL as URL
from tests.api.support import TOKEN, scrape
from tests.fleet.helpers import BASE_MS as START_MS  # after the test release's publication
from tests.support import S, release


@pytest.fixture
def site(settings, state_dir: Path, monkeypatch, install_runtime) -> Path:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    install_runtime(clock=FakeClock(START_MS + 60 * S), recheck_s=0.0)
    settings.CRAFT_APPS = {
        "STATE_DIR": str(state_dir),
        "APPS": "photocraft=PhotoCraft=storytold/photocraft,vectorcraft=VectorCraft=storytold/vectorcraft",
        "METRICS_TOKEN": TOKEN,
    }
    return state_dir


def test_unset_token_is_404_and_a_wrong_or_missing_one_401(site: Path, client: Client, settings):
    for header in ({}, {"Authorization": "Bearer nope"}, {"Authorization": f"Basic {TOKEN}"}):
        response = client.get(URL, headers=header)
        assert response.status_code == 401, header
        assert response["WWW-Authenticate"].startswith("Bearer")
    assert client.get(URL, HTTP_AUTHORIZATION=f"bearer  {TOKEN} ").status_code == 200
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "METRICS_TOKEN": "  "}
    assert client.get(URL, HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 404


def test_the_poller_numbers_come_from_the_state_file(site: Path, client: Client):
    store = StateStore(site)
    store.open_for_writing()
    lease = Lease(store, holder="h:1:a", clock=FakeClock(START_MS + 50 * S))  # expires after the scrape
    assert lease.try_acquire() and lease.fence is not None
    store.put_app(
        "photocraft", AppState(latest_release=release(), fetched_ms=START_MS, etag='"e"'), fence=lease.fence
    )
    store.put_app("vectorcraft", AppState(failed_ms=START_MS, failures=3), fence=lease.fence)
    store.put_history("photocraft", [release("0.5.0"), release("0.4.0")], fence=lease.fence)
    store.put_backoff(Backoff(until_ms=START_MS + 600 * S, trouble=2), fence=lease.fence)
    quota = GitHubQuota(remaining=41, limit=60, reset_ms=START_MS + 3600 * S, seen_ms=START_MS)
    record(
        store,
        CountersUpdate(
            requests={"fetched": 5, "failed": 3},
            redis_errors=2,
            redis_unreadable=4,
            mode="coordinated",
            quota=quota,
        ),
    )
    samples = scrape(client)
    requests = samples["craft_apps_github_requests_total"]
    assert requests == {
        (("outcome", "fetched"),): 5,
        (("outcome", "not_modified"),): 0,
        (("outcome", "failed"),): 3,
        (("outcome", "rate_limited"),): 0,
    }
    assert samples["craft_apps_github_quota_remaining"][()] == 41
    assert samples["craft_apps_github_quota_limit"][()] == 60
    assert samples["craft_apps_github_quota_reset_timestamp_seconds"][()] == (START_MS + 3600 * S) / 1000
    assert samples["craft_apps_redis_errors_total"][()] == 2
    assert samples["craft_apps_redis_unreadable_keys_total"][()] == 4
    assert samples["craft_apps_poller_mode"][(("mode", "coordinated"),)] == 1
    assert samples["craft_apps_poller_mode"][(("mode", "standalone"),)] == 0
    assert samples["craft_apps_poller_lease_held"][()] == 1
    assert samples["craft_apps_backoff_until_timestamp_seconds"][()] == (START_MS + 600 * S) / 1000
    assert samples["craft_apps_app_fetch_age_seconds"][(("app", "photocraft"),)] == 60
    assert math.isinf(samples["craft_apps_app_fetch_age_seconds"][(("app", "vectorcraft"),)])
    published_ms = datetime_to_ms(release().published_at)  # type: ignore[arg-type]
    assert samples["craft_apps_app_release_age_seconds"] == {
        (("app", "photocraft"),): (START_MS + 60 * S - published_ms) / 1000
    }
    assert samples["craft_apps_app_failures_in_a_row"][(("app", "vectorcraft"),)] == 3
    assert samples["craft_apps_app_history_depth"][(("app", "photocraft"),)] == 2
    assert samples["craft_apps_app_history_depth"][(("app", "vectorcraft"),)] == 0
    assert samples["craft_apps_health_problems"][(("rule", "stale"),)] == 1
    assert samples["craft_apps_state_file_readable"][()] == 1


def test_an_unreadable_state_file_is_a_metric_not_an_error(site: Path, client: Client):
    site.mkdir()
    (site / "craft_apps_state.sqlite3").write_bytes(b"not SQLite at all" * 300)
    samples = scrape(client)
    assert samples["craft_apps_state_file_readable"][()] == 0
    assert samples["craft_apps_health_problems"][(("rule", "state_file"),)] == 1


def test_the_endpoints_answers_are_counted_by_status_and_encoding(site: Path, client: Client):
    def answers() -> dict[tuple[tuple[str, str], ...], float]:
        return scrape(client).get("craft_apps_endpoint_answers_total", {})

    before = answers()
    ok, not_allowed = (
        (("encoding", "identity"), ("status", "200")),
        (("encoding", "identity"), ("status", "405")),
    )
    for _ in range(3):
        assert client.get("/v1/craft_apps/release_info").status_code == 200
    assert client.post("/v1/craft_apps/release_info").status_code == 405
    after = answers()
    assert after[ok] - before.get(ok, 0) == 3
    assert after[not_allowed] - before.get(not_allowed, 0) == 1


def test_the_token_is_never_logged(site: Path, client: Client, caplog):
    with caplog.at_level(logging.DEBUG):
        scrape(client)
        client.get(URL, HTTP_AUTHORIZATION="Bearer wrong")
        configuration_problems()
    assert TOKEN not in caplog.text


def test_checks_warn_about_a_short_token_and_an_unusable_directory(
    site: Path, settings, monkeypatch, tmp_path
):
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "METRICS_TOKEN": "short"}
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "missing"))
    found = {problem.id: problem.msg for problem in configuration_problems()}
    assert "is only 5 characters long" in found["craft_apps.W131"]
    assert "short" not in found["craft_apps.W131"].replace("is only", "")
    assert "is not a directory" in found["craft_apps.W132"]


def test_dropped_assets_a_rename_and_a_404_are_shown_per_app(site: Path, client: Client):
    from craft_apps.host.drops import GONE, MOVED, Drop, replace_app

    store = StateStore(site)
    store.open_for_writing()
    replace_app(
        store,
        "photocraft",
        [
            Drop("photocraft", "link_host", "v0.5.0", 13, "", START_MS),
            Drop("photocraft", MOVED, "v0.5.0", 1, "storytold/photo", START_MS),
        ],
    )
    replace_app(store, "vectorcraft", [Drop("vectorcraft", GONE, "v1.0.0", 1, "", START_MS)])
    samples = scrape(client)
    dropped = samples["craft_apps_app_dropped_assets"]
    assert dropped[(("app", "photocraft"), ("reason", "link_host"))] == 13
    assert dropped[(("app", "photocraft"), ("reason", "over_limit"))] == 0
    assert dropped[(("app", "vectorcraft"), ("reason", "link_host"))] == 0
    assert samples["craft_apps_app_repository_moved"] == {
        (("app", "photocraft"),): 1,
        (("app", "vectorcraft"),): 0,
    }
    assert samples["craft_apps_app_repository_gone"] == {
        (("app", "photocraft"),): 0,
        (("app", "vectorcraft"),): 1,
    }
    assert samples["craft_apps_health_problems"][(("rule", "gone"),)] == 1


@pytest.mark.django_db(transaction=True)
def test_each_apps_beta_channel_is_a_gauge(site: Path, client: Client, install_runtime):
    from craft_apps.content.feed import NoticesFeed
    from craft_apps.content.models import AppChannel

    install_runtime(
        clock=FakeClock(START_MS + 60 * S),
        recheck_s=0.0,
        feed=NoticesFeed(recheck_s=0.0, runner=lambda look: look()),
    )
    AppChannel.objects.create(app_key="vectorcraft", channels=["beta"])
    beta = scrape(client)["craft_apps_app_beta"]
    assert beta == {(("app", "photocraft"),): 0.0, (("app", "vectorcraft"),): 1.0}

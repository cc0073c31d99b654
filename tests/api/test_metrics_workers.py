"""One correct set of numbers per host: gunicorn with two workers and the poller as real
processes; whichever worker answers a scrape shows every worker's answers and the poller's
requests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from tests.support import apps_setting, free_port, stand_in

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "a-long-random-scrape-token-for-tests"
BATCH = 40

pytestmark = pytest.mark.slow


def fetch(url: str, token: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The poller's round done, then gunicorn with 2 workers; yields (base URL, metrics dir)."""
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_", "PROMETHEUS_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DJANGO_DB_NAME=str(tmp_path / "site.sqlite3"),
        CRAFT_APPS_STATE_DIR=str(tmp_path / "state"),
        CRAFT_APPS_RELEASE_APPS=apps_setting(),
        CRAFT_APPS_METRICS_TOKEN=TOKEN,
    )
    with stand_in() as github:
        poller = subprocess.run(
            [sys.executable, "manage.py", "poll_craft_releases", "--once"],
            cwd=ROOT,
            env={**env, "CRAFT_APPS_RELEASE_GITHUB_API_URL": github.url},
            capture_output=True,
            timeout=60,
        )
        assert poller.returncode == 0, poller.stderr.decode()
    port = free_port()
    log = (tmp_path / "gunicorn.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--workers", "2", "--bind", f"127.0.0.1:{port}", "config.wsgi"],
        cwd=ROOT,
        env={**env, "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:  # the health endpoint is not counted, so waiting on it leaves the counts alone
            try:
                if fetch(base + "/v1/craft_apps/health?rules=stale")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, (tmp_path / "gunicorn.log").read_text()
            time.sleep(0.05)
        yield base, metrics_dir
    finally:
        server.terminate()
        server.wait(20)
        log.close()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def answering_workers(metrics_dir: Path) -> int:
    """How many workers' counter files count an endpoint answer (each writes its file at start)."""
    answered = 0
    for path in metrics_dir.glob("counter_*.db"):
        families = MultiProcessCollector.merge([str(path)], accumulate=False)
        answered += any(
            sample.name == "craft_apps_endpoint_answers_total" and sample.value > 0
            for family in families
            for sample in family.samples
        )
    return answered


def test_every_scrape_shows_the_whole_hosts_numbers(host: tuple[str, Path]):
    base, metrics_dir = host
    sent = 0
    with ThreadPoolExecutor(8) as pool:  # concurrent, until both sync workers have answered some
        while answering_workers(metrics_dir) < 2:
            assert sent < 40 * BATCH, "one worker answered everything"
            statuses = list(pool.map(lambda _: fetch(base + "/v1/craft_apps/release_info")[0], range(BATCH)))
            assert statuses == [200] * BATCH
            sent += BATCH
    for _ in range(6):  # several scrapes, whichever worker takes each
        status, body = fetch(base + "/v1/craft_apps/metrics", TOKEN)
        assert status == 200
        found = samples(body.decode())
        assert (
            found[("craft_apps_endpoint_answers_total", (("encoding", "identity"), ("status", "200")))]
            == sent
        )
        # Two apps: each one's latest, and its release list with its first latest.
        assert found[("craft_apps_github_requests_total", (("outcome", "fetched"),))] == 4
        assert found[("craft_apps_github_quota_limit", ())] == 60
    assert fetch(base + "/v1/craft_apps/metrics", "wrong")[0] == 401
    status, body = fetch(base + "/v1/craft_apps/health?rules=stale")
    assert status == 200 and json.loads(body)["status"] == "ok"

"""Two hosts on one real Redis for the guarded rollouts' process tests: each its own gunicorn with
two workers and its own state directory (its poller, in this process, polls the GitHub stand-in
once at start), both on the test's database; launchers that report over HTTP, each from its own
loopback address (the per-address rate limit is per client, as behind no NAT)."""

from __future__ import annotations

import http.client
import json
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from craft_apps.content.channels import HistoryApps
from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.controls.guard import Mark
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.fake_github import FakeGitHub
from tests.content.workers_support import Workers
from tests.controls.support import Served, burst, host_poller, require, site_env

TOKEN = "guarded-metrics-token"
TAG = "v1.3.0"


def guarded(schedule: str, min_installs: int, since: datetime) -> ReleasePolicy:
    """photocraft's stable channel guarded (at most 2 % failing), in effect from ``since``."""
    row = ReleasePolicy(app_key="photocraft", channel="stable", policy="guarded", schedule=schedule)
    row.reason, row.min_installs = "guard it", min_installs
    row.full_clean()
    row.save()
    ReleasePolicy.objects.filter(pk=row.pk).update(effective_from=since)  # a write bumps the marker
    return row


def mark() -> Mark | None:
    """What the guard decided for v1.3.0, as the policy's row holds it now."""
    marks: dict[str, Mark] = ReleasePolicy.objects.get().marks()
    return marks.get(TAG)


def until_mark(condition: Callable[[Mark], bool], what: str, timeout: float = 30) -> Mark:
    """Waits for the row to hold a mark meeting ``condition`` (the signal of the guard's write)."""
    deadline = time.monotonic() + timeout
    while True:
        found = mark()
        if found is not None and condition(found):
            return found
        require(time.monotonic() < deadline, f"{what}: the row holds {found}")
        time.sleep(0.05)


@contextmanager
def fleet(
    tmp_path: Path,
    github: FakeGitHub,
    database: dict[str, str],
    redis_url: str,
    names: tuple[str, ...] = ("host-a", "host-b"),
) -> Iterator[list[Workers]]:
    """Start the hosts ``names`` (A and B), photocraft fetched; yield them once they listen."""
    extra = {"CRAFT_APPS_REDIS_URL": redis_url, "CRAFT_APPS_METRICS_TOKEN": TOKEN}
    with ExitStack() as stack:
        sites = []
        for name in names:
            state_dir = tmp_path / name
            host_poller(state_dir, github, FakeClock(time.time_ns() // 1_000_000), HistoryApps()).tick()
            site = Workers(site_env(state_dir, database, extra), tmp_path / f"{name}.log")
            stack.callback(site.stop)
            sites.append(site)
        for site in sites:
            listening(site)
        yield sites


def listening(site: Workers) -> None:
    """Waits for gunicorn's line saying it listens (a request then waits for a worker)."""
    deadline = time.monotonic() + 30
    while "Listening at: " not in site.output():
        require(site.process.poll() is None and time.monotonic() < deadline, site.output())
        time.sleep(0.02)


def address(n: int) -> str:
    """Launcher ``n``'s own loopback address."""
    return f"127.0.{1 + n // 250}.{1 + n % 250}"


def report(site: Workers, n: int, outcome: str) -> float:
    """Launcher ``n`` reports its update to v1.3.0 from its own address; when the 202 came."""
    body = {
        "app_key": "photocraft",
        "install_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"launcher-{n}")),
        "version": "1.3.0",
        "previous_version": "1.2.0",
        "outcome": outcome,
        "channel": "stable",
        "os": "windows",
        "arch": "x64",
    }
    source = (address(n), 0)
    connection = http.client.HTTPConnection("127.0.0.1", site.port, timeout=30, source_address=source)
    try:
        connection.request(
            "POST", "/v1/craft_apps/reports", json.dumps(body), {"Content-Type": "application/json"}
        )
        answer = connection.getresponse()
        require(answer.status == 202, f"report {n}: {answer.status} {answer.read()!r}")
        return time.time()
    finally:
        connection.close()


@dataclass(frozen=True)
class Posted:
    """One report: when it was answered and whether it failed."""

    at: float
    failed: bool


def crossing(posted: list[Posted], min_installs: int, max_percent: float) -> float | None:
    """When the reports, in the order they were answered, first had the minimum of installs with
    a failing share over ``max_percent`` (None: never)."""
    installs = failing = 0
    for item in sorted(posted, key=lambda p: p.at):
        installs, failing = installs + 1, failing + item.failed
        if installs >= min_installs and 100.0 * failing / installs > max_percent:
            return item.at
    return None


def minimum_reached(posted: list[Posted], min_installs: int) -> float:
    return sorted(p.at for p in posted)[min_installs - 1]


def paused_on(site: Workers) -> dict[str, float]:
    """Each worker's ``craft_apps_release_guard_paused`` for v1.3.0 (0 when absent), from
    concurrent scrapes of the metrics until both workers answered."""
    found: dict[str, float] = {}
    deadline = time.monotonic() + 60  # a hang guard: the loop waits for both workers' answers
    while len(found) < 2:
        require(time.monotonic() < deadline, f"both workers' metrics: {found}")
        for pid, value in site._pool.map(lambda _: scrape_paused(site), range(8)):
            found[pid] = value
    return found


def scrape_paused(site: Workers) -> tuple[str, float]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{site.port}/v1/craft_apps/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        text, pid = response.read().decode(), response.headers["X-Worker-Pid"]
    value = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "craft_apps_release_guard_paused" and sample.labels.get("tag") == TAG:
                value = sample.value
    return pid, value


def served_by_both(site: Workers) -> dict[str, set[tuple[str | None, tuple[str, int] | None]]]:
    """What each of the two workers served of photocraft in bursts until both answered."""
    found: dict[str, set[tuple[str | None, tuple[str, int] | None]]] = {}
    deadline = time.monotonic() + 60  # a hang guard: the loop waits for both workers' answers
    while len(found) < 2:
        require(time.monotonic() < deadline, f"both workers answered: {sorted(found)}")
        answers: list[Served] = burst(site)
        for answer in answers:
            found.setdefault(answer.pid, set()).add((answer.latest, answer.rollout))
    return found


def pause_lines(sites: list[Workers]) -> list[str]:
    said = "Craft app releases: the guarded rollout of photocraft v1.3.0 on stable paused itself"
    return [line for site in sites for line in site.output().splitlines() if said in line]

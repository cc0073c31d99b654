"""A fleet of real pollers on one virtual clock: what GitHub, Redis and the launchers see.

Each simulated host is the real ``Poller`` with its own state directory (its lease acquired on
the virtual clock), its own ``GitHubClient`` whose connections leave from an address of its own
(127.0.0.x, so the GitHub stand-in gives every host its own unauthenticated quota), and, with
coordination, its own ``SharedStore`` client on one real redis-server, counting its round trips.
Hosts tick as the poller's runner does (a random 0-30 s first delay, then every 30 s +/- 10%,
looking every second in between whether a refresh was asked for: ``polling.wakeup``) and the
stand-in's rate-limit windows follow the same virtual time. New releases are published at
seeded random times, each followed by a webhook delivery to a random host (what the webhook
view does: ``api.refresh``); every write to a host's state file is logged, so the figures are
what each host's endpoint served. One run reports coordination on and off side by side; short
extra runs kill a host right after it claimed an app and asked GitHub about it, flood the fleet
with webhooks for one app, and run a large fleet.

Run ``python -m bench.fleet --help``. The same seed gives the same figures (wall time aside).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import logging
import multiprocessing
import random
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import redis
import requests

from bench.fleet_metrics import Propagation, RecordingStateStore, ServedLog
from bench.redis_counting import RedisCounter, command_stats, counted_client
from bench.report import WarningCounter, finish, markdown_table, start_redis
from bench.stats import max_in_window
from bench.virtual_time import VIRTUAL_CLOCK_LEASE, HostClock, HostKilled, Simulation
from craft_apps.api.refresh import request_refresh
from craft_apps.conf import (
    DEFAULT_APPS,
    DEFAULT_GITHUB_WEB_URL,
    DEFAULT_INTERVAL_SECS_WITHOUT_TOKEN,
    DEFAULT_REDIS_KEY_PREFIX,
)
from craft_apps.fleet.due import SharedDueMarks
from craft_apps.fleet.entry import FIELD_CLAIMED_MS, app_key
from craft_apps.fleet.store import SharedStore
from craft_apps.github.client import GitHubClient
from craft_apps.host.due import HostDueMarks
from craft_apps.host.lease import Lease
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec, Release
from craft_apps.kernel.source import FetchOutcome, ListOutcome
from craft_apps.polling.loop import PollingLoop
from craft_apps.polling.poller import PollConfig, Poller, TickReport
from craft_apps.polling.schedule import (
    CLOCK_SKEW_MARGIN_MS,
    MIN_REQUEST_GAP_MS,
    TICK_MS,
)
from craft_apps.polling.tally import Tally
from craft_apps.polling.wakeup import WakeUps
from craft_apps.testing.clock import START_MS
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub, RecordedRequest
from tests.support import S

logger = logging.getLogger(__name__)

MAX_BACKOFF_MS = 14_400 * S
RATE_LIMIT_STATUSES = (403, 429)
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class FleetOptions:
    hosts: int = 50
    hours: float = 24.0
    releases: int = 40  # new releases published during the run, at seeded random times
    seed: int = 1
    interval_s: int = DEFAULT_INTERVAL_SECS_WITHOUT_TOKEN  # the default without a token
    kill_hours: float = 1.5  # the run in which a host dies mid-claim; 0 skips it
    webhooks: bool = True  # a webhook delivery follows each release
    webhook_delay_s: float = 1.0  # from publishing to the delivery reaching a host
    flood: int = 1000  # webhooks for one app within a minute, in a run of their own; 0 skips it
    flood_minutes: float = 10.0  # that run's simulated length
    big_hosts: int = 500  # a run with this many hosts, coordination on; 0 skips it
    big_hours: float = 2.0  # that run's simulated length
    # "all": also a coordinated run in which every app needs history (GitHub's release list
    # beside each latest); "none" (the default) skips it. The on/off runs always use none.
    history_apps: str = "none"


@dataclass
class FleetRun:
    coordinated: bool
    hosts: int
    apps: int
    hours: float
    interval_s: int
    wall_s: float
    cpu_s: float  # this process (the hosts and the stand-in), not redis-server
    ticks: int
    github_requests: int
    requests_per_app_per_interval: float
    webhooks: int  # deliveries made (one per release)
    requests_per_app_per_interval_besides_webhooks: float  # one request per webhook taken off
    duplicate_requests: int  # asked while the app was still fresh for the fleet
    rate_limited: int
    statuses: dict[str, int]
    busiest_host_requests_per_hour: int  # against GitHub's 60 an hour per unauthenticated client
    propagation: Propagation
    propagation_target_s: float
    redis_round_trips_per_tick: float
    redis_round_trips_per_idle_tick: float
    redis_max_round_trips_in_a_tick: int
    redis_bytes_per_idle_tick: float  # sent + received, from each host's client
    redis_bytes_per_quiet_tick: float  # ... in the idle ticks in which nothing had changed
    looks: int  # one-second looks between ticks, every host
    redis_round_trips_per_look: float
    redis_bytes_per_look: float
    wake_ticks: int  # ticks a look ran at once (a refresh asked for, or awaiting its answer)
    redis_commands_per_host_hour: float  # as Redis counted them (INFO commandstats): ticks, looks, writes
    redis_commands_per_tick_client: float  # as the hosts' clients sent them in their ticks
    redis_command_mix: dict[str, int]
    state_files_agree: bool  # every live host's state file, read back, serves what the log says
    warnings: dict[str, int]


@dataclass
class KillRun:
    hosts: int
    hours: float
    killed_host: str | None
    app: str | None
    claimed_at_s: float | None  # since the start of the run
    dead_request_at_s: float | None  # the dead host's request, answered but never shared
    next_request_at_s: float | None  # the next request for the app, by a live host
    next_request_by: str | None
    lapse_s: float | None  # from the claim to that next request
    requests_while_fresh: int  # for the app, from the claim until it was due again
    extra_requests: int


@dataclass
class FloodRun:
    hosts: int
    deliveries: int
    over_s: float
    requests: int  # for the flooded app, from the first delivery until a gap after the last
    min_gap_s: float | None  # between two of those requests
    other_requests: int  # for the other apps in the same span
    wall_s: float


@dataclass
class FleetReport:
    options: FleetOptions
    on: FleetRun
    off: FleetRun
    kill: KillRun | None
    flood: FloodRun | None = None
    big: FleetRun | None = None
    history: FleetRun | None = None  # every app needing history (``--history-apps all``)


# --- One simulated host ----------------------------------------------------------------------


def host_address(index: int) -> str:
    """127.0.0.2, 127.0.0.3, ...: a loopback address per host (all of 127/8 is local)."""
    number = index + 2
    return f"127.{(number >> 16) & 0xFF}.{(number >> 8) & 0xFF}.{number & 0xFF}"


def bind_source_address(session: requests.Session, address: str) -> None:
    """Makes every new connection of ``session`` leave from ``address`` (after GitHubClient
    mounted its adapters, which it does on every session it is given)."""
    for prefix in ("http://", "https://"):
        adapter = session.get_adapter(prefix)
        adapter.poolmanager.connection_pool_kw["source_address"] = (address, 0)  # type: ignore[attr-defined]


@dataclass
class HostStats:
    ticks: int = 0
    idle_ticks: int = 0
    idle_round_trips: int = 0
    idle_bytes: int = 0
    quiet_ticks: int = 0  # idle ticks in which nothing had changed: one round trip
    quiet_bytes: int = 0
    tick_round_trips: int = 0
    tick_commands: int = 0
    max_round_trips: int = 0
    looks: int = 0
    look_round_trips: int = 0
    look_bytes: int = 0
    wake_ticks: int = 0
    request_times_ms: list[int] = field(default_factory=list)


class CountingWakeUps(WakeUps):
    """The poller's wait between ticks, counting its one-second looks and what they cost."""

    def __init__(self, *args: Any, stats: HostStats, counter: RedisCounter, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stats = stats
        self.counter = counter
        self._tick_start = (0, 0, 0)

    def since_tick_start(self) -> tuple[int, int, int]:
        """Round trips, bytes sent and commands since the look before the current tick."""
        trips, sent, commands = self._tick_start
        counter = self.counter
        return counter.round_trips - trips, counter.bytes - sent, counter.commands - commands

    def look(self, *, at_tick: bool = False) -> bool:
        if at_tick:  # the loop's look just before its tick: what follows is the tick's cost
            news = super().look(at_tick=True)
            self._tick_start = (self.counter.round_trips, self.counter.bytes, self.counter.commands)
            return news
        trips, sent = self.counter.round_trips, self.counter.bytes
        news = super().look()
        self.stats.looks += 1
        self.stats.look_round_trips += self.counter.round_trips - trips
        self.stats.look_bytes += self.counter.bytes - sent
        self.stats.wake_ticks += int(news)
        return news


class CountingSource:
    """The host's GitHub client (a ``craft_apps.kernel.source.Source``), noting when it asked;
    ``after_request`` may kill the host."""

    def __init__(self, client: GitHubClient, clock: HostClock, stats: HostStats) -> None:
        self.client = client
        self.clock = clock
        self.stats = stats
        self.after_request: Callable[[str], None] | None = None

    def fetch_latest_release(self, repo: str, etag: str | None) -> FetchOutcome:
        self.stats.request_times_ms.append(self.clock.now_ms())
        outcome = self.client.fetch_latest_release(repo, etag)
        if self.after_request is not None:
            self.after_request(repo)
        return outcome

    def fetch_releases(self, repo: str, etag: str | None, *, per_page: int) -> ListOutcome:
        self.stats.request_times_ms.append(self.clock.now_ms())
        return self.client.fetch_releases(repo, etag, per_page=per_page)

    def rejudge(self, release: Release, repo: str, web_url: str) -> Release | None:
        return self.client.rejudge(release, repo, web_url)


@dataclass
class _Host:
    name: str
    stats: HostStats
    counter: RedisCounter
    store: RecordingStateStore | None = None
    source: CountingSource | None = None
    redis_client: redis.Redis | None = None


class KillSwitch:
    """Kills the first host that asks GitHub at or after ``at_ms``, right after the answer came
    back and before anything was shared: its claim stands in Redis, its request was counted."""

    def __init__(self, at_ms: int, admin: redis.Redis, apps: tuple[AppSpec, ...]) -> None:
        self.at_ms = at_ms
        self.admin = admin
        self.apps_by_repo = {app.repo: app for app in apps}
        self.fired: tuple[str, str, int, int | None] | None = None  # host, app, request, claim

    def arm(self, host: str, source: CountingSource) -> None:
        def after_request(repo: str) -> None:
            now_ms = source.clock.now_ms()
            if self.fired is not None or now_ms < self.at_ms:
                return
            app = self.apps_by_repo[repo]
            claimed = self.admin.hget(app_key(DEFAULT_REDIS_KEY_PREFIX, app.key), FIELD_CLAIMED_MS)
            claimed_ms = int(claimed) if isinstance(claimed, bytes) else None
            self.fired = (host, app.key, source.stats.request_times_ms[-1], claimed_ms)
            raise HostKilled(host)

        source.after_request = after_request


# --- A run -----------------------------------------------------------------------------------


def publish_schedule(
    options: FleetOptions, apps: tuple[AppSpec, ...], duration_ms: int
) -> list[tuple[int, AppSpec]]:
    """Seeded (time since start, app) pairs, early enough to reach every host before the end."""
    rng = random.Random(options.seed)
    low = min(600 * S, duration_ms // 6)
    high = max(low, duration_ms - options.interval_s * S - 600 * S)
    return sorted(
        ((rng.randint(low, high), rng.choice(apps)) for _ in range(options.releases)), key=lambda p: p[0]
    )


def next_version(version: str) -> str:
    match = _VERSION.fullmatch(version)
    if match is None:
        return version + ".1"
    major, minor, patch = (int(part) for part in match.groups())
    return f"{major}.{minor}.{patch + 1}"


@dataclass
class _Fleet:
    """What one run is made of: the virtual time, the GitHub stand-in, Redis, the hosts and the
    log of what they served. ``close`` lets go of every server and connection the run opened."""

    options: FleetOptions
    coordinated: bool
    hours: float
    hosts_count: int
    simulation: Simulation
    admin: redis.Redis
    log: ServedLog
    stand_in: FakeGitHub
    deliveries: _Deliveries
    web: redis.Redis | None
    hosts: list[_Host] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    kill_switch: KillSwitch | None = None

    apps = DEFAULT_APPS

    @property
    def duration_ms(self) -> int:
        return round(self.hours * 3600 * S)

    @property
    def interval_ms(self) -> int:
        return self.options.interval_s * S

    def publish(self, app: AppSpec) -> None:
        """A new release of ``app`` on the stand-in, and its webhook delivery a little later."""
        simulation = self.simulation
        self.versions[app.key] = next_version(self.versions[app.key])
        at = datetime.fromtimestamp(simulation.now_ms / 1000, UTC)
        release = demo_release(app, self.versions[app.key], at)
        self.stand_in.publish(app.repo, release)
        self.log.published(app.key, release["tag_name"], simulation.now_ms)
        if self.options.webhooks:
            delay_ms = round(self.options.webhook_delay_s * S)
            simulation.call_at(simulation.now_ms + delay_ms, lambda: self.deliver(app))

    def deliver(self, app: AppSpec) -> None:
        self.deliveries.deliver(app, self.hosts, self.simulation.now_ms)

    def close(self) -> None:
        self.stand_in.stop()
        for host in self.hosts:
            if host.source is not None:
                host.source.client.close()
            if host.redis_client is not None:
                host.redis_client.close()
            if host.store is not None:
                host.store.close()
        self.admin.close()
        if self.web is not None:
            self.web.close()


@dataclass
class _Measured:
    """What a run left to report, read before anything was closed."""

    wall_s: float
    cpu_s: float
    records: list[RecordedRequest]
    server_commands: Counter[str]
    warnings: dict[str, int]
    live: list[_Host]
    state_files_agree: bool


def simulate(
    options: FleetOptions,
    *,
    coordinated: bool,
    redis_port: int,
    workdir: Path,
    hours: float | None = None,
    kill_after_ms: int | None = None,
    hosts_count: int | None = None,
    flood: tuple[int, int] | None = None,
) -> tuple[FleetRun, KillSwitch | None, list[RecordedRequest], dict[str, HostStats]]:
    """One run; ``flood``: (when, as ms since the start; how many) webhooks for the first app,
    spread over a minute, to random hosts."""
    fleet = _open_fleet(
        options,
        coordinated=coordinated,
        redis_port=redis_port,
        workdir=workdir,
        hours=options.hours if hours is None else hours,
        hosts_count=options.hosts if hosts_count is None else hosts_count,
    )
    try:
        _schedule_releases(fleet, flood)
        _spawn_hosts(fleet, redis_port, workdir, kill_after_ms)
        measured = _run(fleet)
    finally:
        fleet.close()
    run = _report(fleet, measured)
    return run, fleet.kill_switch, measured.records, {h.name: h.stats for h in fleet.hosts}


def _open_fleet(
    options: FleetOptions,
    *,
    coordinated: bool,
    redis_port: int,
    workdir: Path,
    hours: float,
    hosts_count: int,
) -> _Fleet:
    """An emptied Redis, the stand-in serving every app's first release, no host yet."""
    simulation = Simulation(START_MS)
    admin = redis.Redis(host="127.0.0.1", port=redis_port, socket_timeout=10)
    admin.flushall()
    admin.config_resetstat()
    log = ServedLog([app.key for app in _Fleet.apps], START_MS)
    stand_in = FakeGitHub(now=simulation.now_s, web_url=DEFAULT_GITHUB_WEB_URL).start()
    fleet = _Fleet(
        options=options,
        coordinated=coordinated,
        hours=hours,
        hosts_count=hosts_count,
        simulation=simulation,
        admin=admin,
        log=log,
        stand_in=stand_in,
        deliveries=_Deliveries(workdir, None, random.Random(f"{options.seed}:webhooks")),
        web=None,
    )
    published_at = datetime.fromtimestamp(START_MS / 1000, UTC)
    for app in fleet.apps:
        release = demo_release(app, "1.0.0", published_at)
        stand_in.publish(app.repo, release)
        fleet.versions[app.key] = "1.0.0"
        log.published(app.key, release["tag_name"], START_MS)
    if coordinated:
        fleet.web = redis.Redis(host="127.0.0.1", port=redis_port, socket_timeout=10)
        fleet.deliveries.fleet = SharedDueMarks(fleet.web)
    return fleet


def _schedule_releases(fleet: _Fleet, flood: tuple[int, int] | None) -> None:
    """The seeded releases and, with ``flood``, the webhooks for the first app."""
    simulation = fleet.simulation
    for offset_ms, app in publish_schedule(fleet.options, fleet.apps, fleet.duration_ms):
        simulation.call_at(START_MS + offset_ms, functools.partial(fleet.publish, app))
    if flood is not None:
        flood_at_ms, count = flood
        for n in range(count):
            at_ms = START_MS + flood_at_ms + n * 60 * S // max(1, count)
            simulation.call_at(at_ms, functools.partial(fleet.deliver, fleet.apps[0]))


def _spawn_hosts(fleet: _Fleet, redis_port: int, workdir: Path, kill_after_ms: int | None) -> None:
    if kill_after_ms is not None:
        fleet.kill_switch = KillSwitch(START_MS + kill_after_ms, fleet.admin, fleet.apps)
    config = PollConfig(apps=fleet.apps, interval_ms=fleet.interval_ms, max_backoff_ms=MAX_BACKOFF_MS)
    needs = frozenset(app.key for app in fleet.apps) if fleet.options.history_apps == "all" else frozenset()
    simulation = fleet.simulation
    for index in range(fleet.hosts_count):
        host = _Host(name=f"host-{index:02d}", stats=HostStats(), counter=RedisCounter())
        fleet.hosts.append(host)
        body = _host_body(
            host,
            index,
            config=config,
            state_dir=workdir / host.name,
            stand_in_url=fleet.stand_in.url,
            redis_port=redis_port if fleet.coordinated else None,
            log=fleet.log,
            now_ms=lambda: simulation.now_ms,
            kill_switch=fleet.kill_switch,
            needs_history=needs,
        )
        simulation.spawn(host.name, body, random.Random(f"{fleet.options.seed}:{index}"))


def _run(fleet: _Fleet) -> _Measured:
    """Runs the simulation to its end, then reads what is to be reported while all is open."""
    with WarningCounter() as warnings:
        before_stats = command_stats(fleet.admin)
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            fleet.simulation.run(START_MS + fleet.duration_ms)
        finally:
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            records = fleet.stand_in.requests
            fleet.stand_in.stop()
        server_commands = command_stats(fleet.admin) - before_stats
    dead = set(fleet.simulation.killed())
    live = [h for h in fleet.hosts if h.name not in dead]
    return _Measured(
        wall_s=wall,
        cpu_s=cpu,
        records=records,
        server_commands=server_commands,
        warnings=dict(warnings.counts),
        live=live,
        state_files_agree=_state_files_agree(live, fleet.log, fleet.apps),
    )


def _report(fleet: _Fleet, measured: _Measured) -> FleetRun:
    hosts, duration_ms, interval_ms = fleet.hosts, fleet.duration_ms, fleet.interval_ms
    deliveries = fleet.deliveries
    ticks = sum(h.stats.ticks for h in hosts)
    intervals = len(fleet.apps) * (duration_ms / interval_ms)
    asked = [r for r in measured.records if r.repo is not None]
    statuses = Counter(str(r.status) for r in asked)
    return FleetRun(
        coordinated=fleet.coordinated,
        hosts=fleet.hosts_count,
        apps=len(fleet.apps),
        hours=fleet.hours,
        interval_s=fleet.options.interval_s,
        wall_s=round(measured.wall_s, 1),
        cpu_s=round(measured.cpu_s, 1),
        ticks=ticks,
        github_requests=len(asked),
        requests_per_app_per_interval=round(len(asked) / intervals, 3),
        webhooks=deliveries.count,
        requests_per_app_per_interval_besides_webhooks=round((len(asked) - deliveries.count) / intervals, 3),
        duplicate_requests=_duplicates(asked, interval_ms - CLOCK_SKEW_MARGIN_MS, deliveries.made),
        rate_limited=sum(1 for r in asked if r.status in RATE_LIMIT_STATUSES),
        statuses=dict(sorted(statuses.items())),
        busiest_host_requests_per_hour=max(
            (max_in_window(h.stats.request_times_ms, 3600 * S) for h in hosts), default=0
        ),
        propagation=fleet.log.figures([h.name for h in measured.live], START_MS + duration_ms),
        propagation_target_s=(interval_ms + TICK_MS) / S,
        **_redis_figures(hosts, ticks, measured.server_commands, fleet.hosts_count, fleet.hours),
        state_files_agree=measured.state_files_agree,
        warnings=measured.warnings,
    )


def _redis_figures(
    hosts: list[_Host], ticks: int, server_commands: Counter[str], hosts_count: int, hours: float
) -> dict[str, Any]:
    """The run's Redis and one-second-look figures (``FleetRun``'s fields of those names)."""

    def per(total: int, count: int, digits: int) -> float:
        return round(total / count, digits) if count else 0.0

    idle_ticks = sum(h.stats.idle_ticks for h in hosts)
    looks = sum(h.stats.looks for h in hosts)
    quiet_ticks = sum(h.stats.quiet_ticks for h in hosts)
    return {
        "redis_round_trips_per_tick": per(sum(h.stats.tick_round_trips for h in hosts), ticks, 3),
        "redis_round_trips_per_idle_tick": per(sum(h.stats.idle_round_trips for h in hosts), idle_ticks, 3),
        "redis_max_round_trips_in_a_tick": max((h.stats.max_round_trips for h in hosts), default=0),
        "redis_bytes_per_idle_tick": per(sum(h.stats.idle_bytes for h in hosts), idle_ticks, 1),
        "redis_bytes_per_quiet_tick": per(sum(h.stats.quiet_bytes for h in hosts), quiet_ticks, 1),
        "looks": looks,
        "redis_round_trips_per_look": per(sum(h.stats.look_round_trips for h in hosts), looks, 3),
        "redis_bytes_per_look": per(sum(h.stats.look_bytes for h in hosts), looks, 1),
        "wake_ticks": sum(h.stats.wake_ticks for h in hosts),
        "redis_commands_per_host_hour": round(sum(server_commands.values()) / hosts_count / hours, 1),
        "redis_commands_per_tick_client": per(sum(h.stats.tick_commands for h in hosts), ticks, 3),
        "redis_command_mix": dict(server_commands.most_common()),
    }


def _host_body(
    host: _Host,
    index: int,
    *,
    config: PollConfig,
    state_dir: Path,
    stand_in_url: str,
    redis_port: int | None,
    log: ServedLog,
    now_ms: Callable[[], int],
    kill_switch: KillSwitch | None,
    needs_history: frozenset[str] = frozenset(),
) -> Callable[[HostClock], None]:
    """What the runner does on a host, on the host's virtual clock."""

    def body(clock: HostClock) -> None:
        store = RecordingStateStore(state_dir, host=host.name, log=log, now_ms=now_ms)
        host.store = store
        store.open_for_writing()
        lease = Lease(store, holder=host.name, clock=clock, timing=VIRTUAL_CLOCK_LEASE)
        if not lease.try_acquire() or lease.fence is None:
            raise RuntimeError(f"{host.name} could not take its own lease")
        source = _host_source(host, index, stand_in_url, clock)
        if kill_switch is not None:
            kill_switch.arm(host.name, source)
        shared, shared_marks = _host_redis(host, redis_port)
        poller = Poller(
            config=config,
            github=source,
            host=store,
            fence=lease.fence,
            clock=clock,
            shared=shared,
            needs_history=lambda: needs_history,
        )
        wakeups = CountingWakeUps(
            poller,
            clock,
            host_marks=HostDueMarks(state_dir),
            shared_marks=shared_marks,
            stats=host.stats,
            counter=host.counter,
        )
        # The production loop (lease renewal, wake-ups, tally, step-down rules) on this host's clock.
        PollingLoop(
            poller,
            wakeups,
            lease=lease,
            tally=Tally(store, clock),
            clock=clock,
            on_tick=_tick_counter(host.stats, wakeups),
        ).run()

    return body


def _host_redis(host: _Host, redis_port: int | None) -> tuple[SharedStore | None, SharedDueMarks | None]:
    """The host's shared store and due marks on a counted client of its own; none alone."""
    if redis_port is None:
        return None, None
    host.redis_client = counted_client(redis_port, host.counter)
    return SharedStore(host.redis_client, hostname=host.name), SharedDueMarks(host.redis_client)


def _host_source(host: _Host, index: int, stand_in_url: str, clock: HostClock) -> CountingSource:
    """The host's GitHub client, its connections leaving from the host's own address."""
    session = requests.Session()
    client = GitHubClient(
        api_url=stand_in_url, web_url=DEFAULT_GITHUB_WEB_URL, token=None, clock=clock, session=session
    )
    bind_source_address(session, host_address(index))
    host.source = CountingSource(client, clock, host.stats)
    return host.source


def _tick_counter(stats: HostStats, wakeups: CountingWakeUps) -> Callable[[TickReport], None]:
    """Counts each tick and what Redis it cost into ``stats``."""

    def count_tick(report: TickReport) -> None:
        used, used_bytes, commands = wakeups.since_tick_start()
        stats.ticks += 1
        stats.tick_round_trips += used
        stats.tick_commands += commands
        stats.max_round_trips = max(stats.max_round_trips, used)
        if report.round.requests() == 0:
            stats.idle_ticks += 1
            stats.idle_round_trips += used
            stats.idle_bytes += used_bytes
            if used == 1:
                stats.quiet_ticks += 1
                stats.quiet_bytes += used_bytes

    return count_tick


class _Deliveries:
    """Webhook deliveries, each to a random host, as its web worker takes them (``api.refresh``)."""

    def __init__(self, workdir: Path, fleet: SharedDueMarks | None, rng: random.Random) -> None:
        self.workdir = workdir
        self.fleet = fleet
        self.rng = rng
        self.count = 0
        self.made: list[tuple[str, float]] = []  # (repository, when in s)

    def deliver(self, app: AppSpec, hosts: list[_Host], now_ms: int) -> None:
        self.count += 1
        self.made.append((app.repo, now_ms / S))
        receiver = hosts[self.rng.randrange(len(hosts))]
        marks = HostDueMarks(self.workdir / receiver.name)
        request_refresh([app.key], now_ms=now_ms, host=marks, fleet=self.fleet, delivery=f"d-{self.count}")
        marks.close()


WEBHOOK_ANSWER_S = 15.0  # a webhook's request follows its delivery within a look, a gap and a round


def _duplicates(
    asked: list[RecordedRequest], fresh_ms: int, deliveries: Sequence[tuple[str, float]] = ()
) -> int:
    """Requests for an app made while the previous request's answer was still fresh, but for
    the first request for the app within ``WEBHOOK_ANSWER_S`` after each of its deliveries."""
    ordered = sorted(asked, key=lambda r: r.time)
    excused: set[int] = set()
    for repo, at_s in deliveries:
        for n, request in enumerate(ordered):
            if n not in excused and request.repo == repo and at_s <= request.time <= at_s + WEBHOOK_ANSWER_S:
                excused.add(n)
                break
    last: dict[str, float] = {}
    duplicates = 0
    for n, request in enumerate(ordered):
        assert request.repo is not None
        previous = last.get(request.repo)
        if previous is not None and (request.time - previous) * S < fresh_ms and n not in excused:
            duplicates += 1
        last[request.repo] = request.time
    return duplicates


def _state_files_agree(live: list[_Host], log: ServedLog, apps: tuple[AppSpec, ...]) -> bool:
    """Reads every live host's state file back through the endpoint's own read path."""
    for host in live:
        if host.store is None:
            return False
        served = host.store.read().apps
        for app in apps:
            state = served.get(app.key)
            tag = state.latest_release.tag if state and state.latest_release else None
            if tag != log.shown_tag(host.name, app.key):
                return False
    return True


# --- The kill scenario -----------------------------------------------------------------------


def kill_scenario(options: FleetOptions, redis_port: int, workdir: Path) -> KillRun:
    """A coordinated run in which the first host to ask GitHub after half an interval dies right
    after its request was answered, before it shared anything."""
    interval_ms = options.interval_s * S
    _, switch, records, stats = simulate(
        FleetOptions(**{**asdict(options), "webhooks": False}),  # only the schedule asks
        coordinated=True,
        redis_port=redis_port,
        workdir=workdir,
        hours=options.kill_hours,
        kill_after_ms=interval_ms // 2,
    )
    assert switch is not None
    run = KillRun(
        hosts=options.hosts,
        hours=options.kill_hours,
        killed_host=None,
        app=None,
        claimed_at_s=None,
        dead_request_at_s=None,
        next_request_at_s=None,
        next_request_by=None,
        lapse_s=None,
        requests_while_fresh=0,
        extra_requests=0,
    )
    if switch.fired is None:
        return run
    host, key, request_ms, claimed_ms = switch.fired
    repo = next(app.repo for app in DEFAULT_APPS if app.key == key)
    claim_ms = claimed_ms if claimed_ms is not None else request_ms
    times = sorted(round(r.time * S) for r in records if r.repo == repo)
    fresh_until = claim_ms + interval_ms - CLOCK_SKEW_MARGIN_MS
    while_fresh = [t for t in times if claim_ms <= t < fresh_until]
    later = [t for t in times if t > request_ms]
    next_ms = later[0] if later else None
    by = None
    if next_ms is not None:
        by = next((name for name, s in stats.items() if next_ms in s.request_times_ms and name != host), None)
    run.killed_host = host
    run.app = key
    run.claimed_at_s = (claim_ms - START_MS) / S
    run.dead_request_at_s = (request_ms - START_MS) / S
    run.next_request_at_s = None if next_ms is None else (next_ms - START_MS) / S
    run.next_request_by = by
    run.lapse_s = None if next_ms is None else (next_ms - claim_ms) / S
    run.requests_while_fresh = len(while_fresh)
    run.extra_requests = max(0, len(while_fresh) - 1)
    return run


# --- The flood -------------------------------------------------------------------------------


def flood_scenario(options: FleetOptions, redis_port: int, workdir: Path) -> FloodRun:
    """A coordinated run without releases in which ``options.flood`` webhooks for one app reach
    random hosts within a minute, halfway through."""
    app = DEFAULT_APPS[0]
    duration_ms = round(options.flood_minutes * 60 * S)
    flood_at_ms = duration_ms // 2
    quiet = FleetOptions(**{**asdict(options), "releases": 0})
    wall = time.perf_counter()
    _, _, records, _ = simulate(
        quiet,
        coordinated=True,
        redis_port=redis_port,
        workdir=workdir,
        hours=options.flood_minutes / 60,
        flood=(flood_at_ms, options.flood),
    )
    wall = time.perf_counter() - wall
    start_s = (START_MS + flood_at_ms) / S
    end_s = start_s + 60 + MIN_REQUEST_GAP_MS / S  # the minute, and the gap after its last delivery
    during = [r for r in records if r.repo is not None and start_s <= r.time <= end_s]
    times = sorted(r.time for r in during if r.repo == app.repo)
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    return FloodRun(
        hosts=options.hosts,
        deliveries=options.flood,
        over_s=60.0,
        requests=len(times),
        min_gap_s=round(min(gaps), 2) if gaps else None,
        other_requests=len(during) - len(times),
        wall_s=round(wall, 1),
    )


# --- The benchmark ---------------------------------------------------------------------------


def _simulate_mode(options: FleetOptions, coordinated: bool, redis_port: int, workdir: Path) -> FleetRun:
    return simulate(options, coordinated=coordinated, redis_port=redis_port, workdir=workdir)[0]


def _simulate_big(options: FleetOptions, redis_port: int, workdir: Path) -> FleetRun:
    return simulate(
        options,
        coordinated=True,
        redis_port=redis_port,
        workdir=workdir,
        hours=options.big_hours,
        hosts_count=options.big_hosts,
    )[0]


def run_fleet_benchmark(options: FleetOptions, redis_port: int | None = None) -> FleetReport:
    """Coordination on and off side by side: the two simulations run at once, each in a process
    of its own with a redis-server of its own (one core each on a two-core machine)."""
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-fleet-")))
        if redis_port is None:
            redis_port = stack.enter_context(start_redis(workdir / "redis")).port
        off_redis_port = stack.enter_context(start_redis(workdir / "redis-off")).port
        pool = stack.enter_context(
            ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn"))
        )
        history_run = options.history_apps == "all"
        options = replace(options, history_apps="none")  # the default configuration's figures
        running_on = pool.submit(_simulate_mode, options, True, redis_port, workdir / "on")
        running_off = pool.submit(_simulate_mode, options, False, off_redis_port, workdir / "off")
        on, off = running_on.result(), running_off.result()
        history = None
        if history_run:  # after the two: its own Redis, so their figures stay apart
            every = replace(options, history_apps="all")
            history = _simulate_mode(every, True, off_redis_port, workdir / "history")
        kill = flood = big = None
        if options.big_hosts > 0:  # in a process of its own, beside the two short runs
            running_big = pool.submit(_simulate_big, options, off_redis_port, workdir / "big")
        if options.kill_hours > 0:
            kill = kill_scenario(options, redis_port, workdir / "kill")
        if options.flood > 0:
            flood = flood_scenario(options, redis_port, workdir / "flood")
        if options.big_hosts > 0:
            big = running_big.result()
        if history_run:
            options = replace(options, history_apps="all")
        return FleetReport(options=options, on=on, off=off, kill=kill, flood=flood, big=big, history=history)


def _fmt(value: float | None, digits: int = 1, unit: str = "") -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}{unit}"


def markdown(report: FleetReport) -> str:
    o, on, off = report.options, report.on, report.off
    lines = [
        f"{o.hosts} hosts, {on.apps} apps, {o.hours:g} simulated hours, interval {o.interval_s} s "
        f"(the default without a token), {o.releases} releases published at random times, "
        + (
            f"each followed {o.webhook_delay_s:g} s later by a webhook delivery to a random host, "
            if o.webhooks
            else ""
        )
        + f"seed {o.seed}.",
        "",
        markdown_table(["", "coordination on", "coordination off", "target"], run_rows(o, on, off)),
        "",
        f"Redis commands with coordination on, as Redis counted them: {_counts(on.redis_command_mix)}.",
    ]
    lines += ["", history_markdown(report)]
    if report.kill is not None:
        lines += ["", *kill_markdown(report.kill)]
    if report.flood is not None:
        lines += ["", *flood_markdown(report.flood)]
    if report.big is not None:
        lines += ["", *big_markdown(report.big)]
    return "\n".join(lines)


def history_markdown(report: FleetReport) -> str:
    """What release history costs: requests per app per interval, default and every app opted in."""
    default = f"{report.on.requests_per_app_per_interval:.3f}"
    if report.history is None:
        return (
            f"GitHub requests per app per interval in the default configuration (no app needs "
            f"history): {default}; `--history-apps all` adds a run with every app needing it."
        )
    every = report.history.requests_per_app_per_interval
    return (
        f"GitHub requests per app per interval: {default} in the default configuration (no app "
        f"needs history), {every:.3f} with every app needing history (coordination on: the list "
        f"beside each latest), so {every - report.on.requests_per_app_per_interval:+.3f} per "
        "opted-in app."
    )


def run_rows(o: FleetOptions, on: FleetRun, off: FleetRun | None) -> list[tuple[str, ...]]:
    """The figures of a run (and, beside it, of the run without coordination)."""
    runs = [on] if off is None else [on, off]

    def each(cell: Callable[[FleetRun], str]) -> tuple[str, ...]:
        return tuple(cell(run) for run in runs)

    def spread(run: FleetRun) -> str:
        p = run.propagation
        return f"{_fmt(p.p50_s, 1)} / {_fmt(p.p95_s, 1)} / {_fmt(p.max_s, 1)} s"

    rows = [
        ("wall time (CPU of this process)", *each(lambda r: f"{r.wall_s:,} s ({r.cpu_s:,} s)"), ""),
        ("host ticks / one-second looks between them", *each(lambda r: f"{r.ticks:,} / {r.looks:,}"), ""),
        ("webhook deliveries", *each(lambda r: f"{r.webhooks:,}"), ""),
        ("GitHub requests", *each(lambda r: f"{r.github_requests:,}"), ""),
        ("GitHub requests per app per interval",
         *each(lambda r: f"{r.requests_per_app_per_interval:.3f}"), ""),
        ("... less one per webhook",
         *each(lambda r: f"{r.requests_per_app_per_interval_besides_webhooks:.3f}"),
         "<= 1.05" if off is None else f"<= 1.05 on; about {o.hosts} off"),
        ("requests while the app was fresh, but for one per webhook (duplicates)",
         *each(lambda r: f"{r.duplicate_requests:,}"), "0 on"),
        ("rate-limited requests (403/429)", *each(lambda r: str(r.rate_limited)), "0"),
        ("busiest host: requests in one hour (quota 60)",
         *each(lambda r: str(r.busiest_host_requests_per_hour)), "< 60"),
        ("releases published / shown by every host",
         *each(lambda r: f"{r.propagation.published} / {r.propagation.everywhere}"), "all"),
        ("publish -> every host's state file: p50 / p95 / max", *each(spread),
         "p95 <= 5 s on" if o.webhooks else f"<= {on.propagation_target_s:,.0f} s"),
        ("cold start: every host serving every app",
         *each(lambda r: _fmt(r.propagation.cold_start_s, 0, " s")), ""),
        ("largest staleness served (now - app_last_fetched)",
         *each(lambda r: _fmt(r.propagation.max_staleness_s, 0, " s")), ""),
        ("Redis round trips per host per tick (all / idle / max)",
         *each(lambda r: f"{r.redis_round_trips_per_tick:.3f} / {r.redis_round_trips_per_idle_tick:.3f} / "
               f"{r.redis_max_round_trips_in_a_tick}"), "idle: 1"),
        ("Redis bytes per host per idle tick, sent + received: nothing changed / all",
         *each(lambda r: f"{r.redis_bytes_per_quiet_tick:,.0f} / {r.redis_bytes_per_idle_tick:,.0f} B"),
         "<= 2 KB"),
        ("Redis per one-second look: round trips / bytes",
         *each(lambda r: f"{r.redis_round_trips_per_look:.3f} / {r.redis_bytes_per_look:,.0f} B"), ""),
        ("ticks run by a look (a refresh asked for, or awaiting its answer)",
         *each(lambda r: f"{r.wake_ticks:,}"), ""),
        ("Redis commands per host per tick (the clients' count)",
         *each(lambda r: f"{r.redis_commands_per_tick_client:.3f}"), ""),
        ("Redis commands per host per hour, ticks, looks and writes (Redis's count)",
         *each(lambda r: f"{r.redis_commands_per_host_hour:,.0f}"), ""),
        ("state files read back agree with the log", *each(lambda r: _yes(r.state_files_agree)), "yes"),
        ("warnings logged", *each(lambda r: _counts(r.warnings)), ""),
    ]  # fmt: skip
    return rows


def flood_markdown(flood: FloodRun) -> list[str]:
    title = (
        f"A flood of webhooks ({flood.hosts} hosts, coordination on, no releases): {flood.deliveries:,} "
        f"deliveries for one app (photocraft) within {flood.over_s:g} s, each to a random host "
        f"({flood.wall_s:,} s wall time):"
    )
    rows = [
        ("GitHub requests for the app, from the first delivery to 10 s after the last", str(flood.requests),
         "<= 7"),
        ("shortest time between two of them", _fmt(flood.min_gap_s, 1, " s"), ">= 10 s"),
        ("requests for the other apps meanwhile", str(flood.other_requests), ""),
    ]  # fmt: skip
    return [title, "", markdown_table(["", "", "target"], rows)]


def big_markdown(big: FleetRun) -> list[str]:
    title = (
        f"A large fleet: {big.hosts} hosts, {big.hours:g} simulated hours, coordination on, "
        f"releases and webhooks as above (a shorter span than the 50-host runs, for its wall time):"
    )
    return [
        title,
        "",
        markdown_table(["", "coordination on", "target"], run_rows(FleetOptions(hosts=big.hosts), big, None)),
    ]


def kill_markdown(kill: KillRun) -> list[str]:
    title = f"A host killed mid-claim ({kill.hosts} hosts, {kill.hours:g} simulated hours, coordination on):"
    if kill.killed_host is None:
        return [title, "", "no host asked GitHub after the kill time: nothing to show."]
    rows = [
        ("killed host, app", f"{kill.killed_host}, {kill.app}"),
        ("its claim, its request (answered, never shared)",
         f"{_fmt(kill.claimed_at_s, 0, ' s')}, {_fmt(kill.dead_request_at_s, 0, ' s')}"),
        ("next request for the app", f"{_fmt(kill.next_request_at_s, 0, ' s')} by {kill.next_request_by}"),
        ("from the claim to that request (claim window 60 s)", _fmt(kill.lapse_s, 0, " s")),
        ("requests for the app until it was due again", str(kill.requests_while_fresh)),
        ("extra requests", f"{kill.extra_requests} (target: at most 1)"),
    ]  # fmt: skip
    return [title, "", markdown_table(["", ""], rows)]


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count:,}" for name, count in counts.items()) or "none"


def main(argv: list[str] | None = None) -> int:
    defaults = FleetOptions()
    parser = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=defaults.hosts)
    parser.add_argument("--hours", type=float, default=defaults.hours)
    parser.add_argument("--releases", type=int, default=defaults.releases)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--interval", type=int, default=defaults.interval_s, help="poll interval, seconds")
    parser.add_argument("--kill-hours", type=float, default=defaults.kill_hours, help="0 skips the kill run")
    parser.add_argument("--no-webhooks", action="store_true", help="no webhook delivery after the releases")
    parser.add_argument(
        "--flood", type=int, default=defaults.flood, help="webhooks in the flood run; 0 skips it"
    )
    parser.add_argument("--flood-minutes", type=float, default=defaults.flood_minutes)
    parser.add_argument("--big-hosts", type=int, default=defaults.big_hosts, help="0 skips the large run")
    parser.add_argument("--big-hours", type=float, default=defaults.big_hours)
    parser.add_argument(
        "--history-apps",
        choices=("none", "all"),
        default=defaults.history_apps,
        help="all: also a run with every app needing history (the release list beside each latest)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures and their Markdown here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if not 1 <= args.hosts <= 60_000 or not 0 <= args.big_hosts <= 60_000:
        parser.error("--hosts and --big-hosts must be between 1 (0 for --big-hosts) and 60000")
    options = FleetOptions(
        hosts=args.hosts,
        hours=args.hours,
        releases=args.releases,
        seed=args.seed,
        interval_s=args.interval,
        kill_hours=args.kill_hours,
        webhooks=not args.no_webhooks,
        flood=args.flood,
        flood_minutes=args.flood_minutes,
        big_hosts=args.big_hosts,
        big_hours=args.big_hours,
        history_apps=args.history_apps,
    )
    report = run_fleet_benchmark(options)
    return finish(report, markdown(report), args.json)


if __name__ == "__main__":
    raise SystemExit(main())

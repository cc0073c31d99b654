"""One poller's footprint: memory over many rounds, and the cost of an idle tick.

A real ``Poller`` with coordination (its own state file, a counting client on a real
redis-server, the GitHub stand-in on the same virtual clock) runs in the production loop
(``polling.loop``: lease renewal, one-second looks, tally) for ``rounds`` ticks 30 s apart;
over that span every app is revalidated each interval, so the rounds include real requests,
304s and shared writes. Resident memory (VmRSS, after a garbage collection) is read after 10%
of the rounds and at the end: no growth is the target. Then, with
everything fresh, ``idle_ticks`` ticks that have nothing to do measure the CPU time of an idle
tick, its Redis round trips (target: one) and bytes (target: 2 KB) from the client, and its
commands as Redis counted them; beside them, the bytes of the whole-hash read idle ticks made
before (``HGETALL`` of every app and the backoff). Last, as many one-second looks of the wait
between ticks (``polling.wakeup``): with the fleet (one ``GET``) and alone (the state file).

Run ``python -m bench.footprint --help``. Run it in a process of its own: resident memory is
the whole process's.
"""

from __future__ import annotations

import argparse
import gc
import logging
import random
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import redis

from bench.redis_counting import RedisCounter, command_stats, counted_client
from bench.report import WarningCounter, finish, markdown_table, start_redis
from bench.stats import percentile
from bench.virtual_time import VIRTUAL_CLOCK_LEASE
from craft_apps.conf import DEFAULT_APPS, DEFAULT_GITHUB_WEB_URL, DEFAULT_INTERVAL_SECS_WITHOUT_TOKEN
from craft_apps.fleet.due import SharedDueMarks
from craft_apps.fleet.options import HEALTH_CHECK_INTERVAL_SECS
from craft_apps.fleet.store import SharedStore
from craft_apps.github.client import GitHubClient
from craft_apps.host.due import HostDueMarks
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.polling.loop import PollingLoop
from craft_apps.polling.poller import PollConfig, Poller, TickReport
from craft_apps.polling.schedule import tick_delay_ms
from craft_apps.polling.tally import Tally
from craft_apps.polling.wakeup import WakeUps
from craft_apps.testing.clock import FakeClock
from craft_apps.testing.fake_github import FakeGitHub
from tests.support import S


@dataclass(frozen=True)
class FootprintOptions:
    rounds: int = 1000
    idle_ticks: int = 200
    interval_s: int = DEFAULT_INTERVAL_SECS_WITHOUT_TOKEN
    health_check_ticks: int = 40  # idle ticks with the fleet page's pool options, in real time
    health_check_scale: float = 0.01  # ... sped up this much: 30 s becomes 0.3 s


@dataclass
class FootprintReport:
    options: FootprintOptions
    rss_early_kib: int  # after 10% of the rounds
    rss_end_kib: int
    rss_growth_kib: int
    python_heap_growth_kib: float  # Python memory held, outside the stand-in (tracemalloc)
    early_round: int
    github_requests: int
    idle_tick_cpu_ms_median: float
    idle_tick_cpu_ms_p95: float
    idle_tick_round_trips: float  # per idle tick, from the client
    idle_tick_round_trips_max: int
    idle_tick_commands: float  # per idle tick, as Redis counted them
    idle_tick_command_mix: dict[str, int]
    idle_tick_bytes: float  # sent + received per idle tick, from the client
    idle_tick_bytes_received: float
    whole_hash_read_bytes: int  # the read idle ticks made before: HGETALL of every app and the backoff
    look_bytes: float  # per one-second look of the wait between ticks, with the fleet
    look_round_trips: float
    look_cpu_ms_median: float  # with the fleet: one GET
    look_alone_cpu_ms_median: float  # alone: the state file's due marks
    health_check_round_trips: float  # per idle tick, with the recommended health_check_interval
    warnings: dict[str, int]


class QuietClock(FakeClock):
    """The test clock without its record of every sleep, which would grow with the rounds."""

    def sleep(self, seconds: float) -> bool:
        self.advance(max(0.0, seconds))
        return True


# Where the stand-in's server threads allocate: their memory is not the poller's.
_NOT_THE_POLLER = [
    tracemalloc.Filter(False, "*/socketserver.py"),
    tracemalloc.Filter(False, "*/http/server.py"),
    tracemalloc.Filter(False, "*/craft_apps/testing/fake_github.py"),
]


def python_heap_bytes() -> int:
    """Python memory still held, less what the GitHub stand-in's server code allocated."""
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces(_NOT_THE_POLLER)
    return sum(stat.size for stat in snapshot.statistics("filename"))


def resident_kib() -> int:
    """This process's resident memory, after a full collection."""
    gc.collect()
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def run_footprint(options: FootprintOptions) -> FootprintReport:
    with tempfile.TemporaryDirectory(prefix="bench-footprint-") as tmp:
        workdir = Path(tmp)
        with start_redis(workdir / "redis") as server:
            report = _measure(options, workdir, server.port)
            report.health_check_round_trips = health_check_effect(options, workdir, server.port)
            return report


def leased_poller(
    name: str,
    state_dir: Path,
    options: FootprintOptions,
    clock: QuietClock,
    stand_in: FakeGitHub,
    client: redis.Redis,
) -> tuple[Poller, GitHubClient, StateStore, Lease]:
    """A coordinated poller holding the lease of its own state file, asking the stand-in; with
    its GitHub client and state store, to close, and its lease."""
    store = StateStore(state_dir)
    store.open_for_writing()
    lease = Lease(store, holder=name, clock=clock, timing=VIRTUAL_CLOCK_LEASE)
    if not lease.try_acquire() or lease.fence is None:
        raise RuntimeError("could not take the lease")
    github = GitHubClient(api_url=stand_in.url, web_url=DEFAULT_GITHUB_WEB_URL, token=None, clock=clock)
    poller = Poller(
        config=PollConfig(DEFAULT_APPS, options.interval_s * S, 14_400 * S),
        github=github,
        host=store,
        fence=lease.fence,
        clock=clock,
        shared=SharedStore(client, hostname=name),
    )
    return poller, github, store, lease


def _measure(options: FootprintOptions, workdir: Path, redis_port: int) -> FootprintReport:
    clock = QuietClock()
    counter = RedisCounter()
    client = counted_client(redis_port, counter)
    admin = redis.Redis(host="127.0.0.1", port=redis_port, socket_timeout=10)
    with FakeGitHub(now=lambda: clock.now_ms() / 1000).load_demo() as stand_in, WarningCounter() as warnings:
        poller, github, store, lease = leased_poller(
            "footprint", workdir / "state", options, clock, stand_in, client
        )
        marks = HostDueMarks(workdir / "state")
        early_round = max(1, options.rounds // 10)
        span: list[int] = []  # what measure() read in the current span
        asked = round_number = 0
        measure: Callable[[], int] = resident_kib

        def after_tick(report: TickReport) -> None:
            """Counts the span's rounds; ``measure()`` after the early round and at the end."""
            nonlocal asked, round_number
            round_number += 1
            asked += len(stand_in.requests)
            stand_in.reset_requests()  # the stand-in's record is not the poller's memory
            if round_number in (early_round, options.rounds):
                span.append(measure())
            if round_number == options.rounds:
                loop.stop.set()  # after this round's tally and wait, as in production

        # The production loop (wake-up looks, lease renewal, tally) on the virtual clock.
        loop = PollingLoop(
            poller,
            WakeUps(poller, clock, host_marks=marks, shared_marks=SharedDueMarks(client)),
            lease=lease,
            tally=Tally(store, clock),
            clock=clock,
            startup_delay=False,
            on_tick=after_tick,
        )

        def rounds(measuring: Callable[[], int]) -> tuple[int, int, int]:
            """``options.rounds`` turns of the loop; ``measuring()`` after the early round and at the end."""
            nonlocal asked, round_number, measure
            span.clear()
            asked = round_number = 0
            measure = measuring
            loop.stop.clear()
            loop.run()
            return span[0], span[-1], asked

        rss_early, rss_end, requests = rounds(resident_kib)
        # A second span of rounds for the Python heap: tracing would inflate resident memory.
        tracemalloc.start()
        heap_early, heap_end, _ = rounds(python_heap_bytes)
        tracemalloc.stop()

        # Everything fresh: a round made now leaves nothing due for the next interval. The tick
        # after it reads back the small fields of the entries the round wrote; then all is idle.
        clock.advance(options.interval_s)
        poller.tick()
        clock.advance(1)
        poller.tick()
        cpu_ms: list[float] = []
        round_trips: list[int] = []
        before = command_stats(admin)
        bytes_before, received_before = counter.bytes, counter.bytes_received
        for _ in range(options.idle_ticks):
            clock.advance(1)  # idle ticks stay well inside the interval
            sent = counter.round_trips
            started = time.process_time()
            report = poller.tick()
            cpu_ms.append((time.process_time() - started) * 1000)
            round_trips.append(counter.round_trips - sent)
            if report.round.requests():
                raise RuntimeError("an idle tick asked GitHub")
        commands = command_stats(admin) - before
        tick_bytes = counter.bytes - bytes_before
        tick_received = counter.bytes_received - received_before
        whole_hashes = whole_hash_read_bytes(client, counter, poller)
        looks = measure_looks(options, poller, clock, client, counter, workdir / "state")
        marks.close()
        github.close()
        store.close()
    client.close()
    admin.close()
    idle = max(1, options.idle_ticks)
    return FootprintReport(
        options=options,
        rss_early_kib=rss_early,
        rss_end_kib=rss_end,
        rss_growth_kib=rss_end - rss_early,
        python_heap_growth_kib=round((heap_end - heap_early) / 1024, 1),
        early_round=early_round,
        github_requests=requests,
        idle_tick_cpu_ms_median=round(statistics.median(cpu_ms), 3) if cpu_ms else 0.0,
        idle_tick_cpu_ms_p95=round(percentile(cpu_ms, 0.95) or 0.0, 3),
        idle_tick_round_trips=round(sum(round_trips) / idle, 3),
        idle_tick_round_trips_max=max(round_trips, default=0),
        idle_tick_commands=round(sum(commands.values()) / idle, 3),
        idle_tick_command_mix=dict(commands.most_common()),
        idle_tick_bytes=round(tick_bytes / idle, 1),
        idle_tick_bytes_received=round(tick_received / idle, 1),
        whole_hash_read_bytes=whole_hashes,
        look_bytes=looks[0],
        look_round_trips=looks[1],
        look_cpu_ms_median=looks[2],
        look_alone_cpu_ms_median=looks[3],
        health_check_round_trips=0.0,
        warnings=dict(warnings.counts),
    )


def whole_hash_read_bytes(client: redis.Redis, counter: RedisCounter, poller: Poller) -> int:
    """The bytes of the read every idle tick made before: every app's whole hash (release JSON
    included) and the backoff, in one pipeline."""
    assert poller.shared is not None
    before = counter.bytes
    pipe = client.pipeline(transaction=False)
    for app in poller.config.apps:
        pipe.hgetall(poller.shared.entries.app_key(app.key))
    pipe.hgetall(poller.shared.entries.backoff_key)
    pipe.execute()
    return counter.bytes - before


def measure_looks(
    options: FootprintOptions,
    poller: Poller,
    clock: QuietClock,
    client: redis.Redis,
    counter: RedisCounter,
    state_dir: Path,
) -> tuple[float, float, float, float]:
    """The one-second looks of the wait between ticks when nothing was asked for: bytes, round
    trips and CPU per look with the fleet, and CPU per look alone (the state file's marks)."""
    marks = HostDueMarks(state_dir)
    marks.mark([], clock.now_ms(), shared=True)  # the tables exist, as after a first webhook
    with_fleet = WakeUps(poller, clock, host_marks=marks, shared_marks=SharedDueMarks(client))
    alone = WakeUps(poller, clock, host_marks=marks)
    with_fleet.look()  # the first look reads the (empty) marks once
    samples: dict[str, list[float]] = {"fleet": [], "alone": []}
    bytes_before, trips_before = counter.bytes, counter.round_trips
    for _ in range(options.idle_ticks):
        for name, wakeups in (("fleet", with_fleet), ("alone", alone)):
            started = time.process_time()
            if wakeups.look():
                raise RuntimeError("an idle look found something to do")
            samples[name].append((time.process_time() - started) * 1000)
    marks.close()
    n = max(1, options.idle_ticks)
    return (
        round((counter.bytes - bytes_before) / n, 1),
        round((counter.round_trips - trips_before) / n, 3),
        round(statistics.median(samples["fleet"]), 3) if samples["fleet"] else 0.0,
        round(statistics.median(samples["alone"]), 3) if samples["alone"] else 0.0,
    )


def health_check_effect(options: FootprintOptions, workdir: Path, redis_port: int) -> float:
    """Round trips per idle tick with the pool options the fleet page recommends (the
    ``health_check_interval`` of ``craft_apps.fleet.options``), ticking 30 s +/- 10% apart in
    real time, sped up by
    ``health_check_scale``: redis-py sends a PING first whenever the connection sat unused
    longer than the interval."""
    if options.health_check_ticks <= 0:
        return 0.0
    clock = QuietClock()
    counter = RedisCounter()
    client = counted_client(
        redis_port, counter, health_check_interval=HEALTH_CHECK_INTERVAL_SECS * options.health_check_scale
    )
    rng = random.Random(1)
    with FakeGitHub(now=lambda: clock.now_ms() / 1000).load_demo() as stand_in:
        state_dir = workdir / "health-check-state"
        poller, github, store, _ = leased_poller("health-check", state_dir, options, clock, stand_in, client)
        poller.tick()  # everything fetched: the ticks below are idle
        sent = counter.round_trips
        for _ in range(options.health_check_ticks):
            delay_s = tick_delay_ms(rng.random()) / 1000
            time.sleep(delay_s * options.health_check_scale)  # the effect is in real time
            clock.advance(delay_s)
            if poller.tick().round.requests():
                raise RuntimeError("an idle tick asked GitHub")
        github.close()
        store.close()
    client.close()
    return round((counter.round_trips - sent) / options.health_check_ticks, 3)


def markdown(report: FootprintReport) -> str:
    o = report.options
    per_tick = {name: count / max(1, o.idle_ticks) for name, count in report.idle_tick_command_mix.items()}
    mix = ", ".join(f"{name} {count:g}" for name, count in per_tick.items())
    rows = [
        (f"resident memory after round {report.early_round:,}", f"{report.rss_early_kib / 1024:.1f} MiB", ""),
        (f"resident memory after round {o.rounds:,}", f"{report.rss_end_kib / 1024:.1f} MiB", ""),
        ("growth: resident / Python heap (tracemalloc)",
         f"{report.rss_growth_kib:+,} KiB / {report.python_heap_growth_kib:+,.1f} KiB", "none"),
        ("GitHub requests in those rounds", f"{report.github_requests:,}", ""),
        ("CPU time of an idle tick (median / p95)",
         f"{report.idle_tick_cpu_ms_median:.2f} / {report.idle_tick_cpu_ms_p95:.2f} ms", ""),
        ("Redis round trips per idle tick (mean / max)",
         f"{report.idle_tick_round_trips:g} / {report.idle_tick_round_trips_max}", "1"),
        ("Redis commands per idle tick, as Redis counted them", f"{report.idle_tick_commands:g} ({mix})", ""),
        ("Redis bytes per idle tick, sent + received (of which received)",
         f"{report.idle_tick_bytes:,.0f} B ({report.idle_tick_bytes_received:,.0f} B)", "<= 2 KB"),
        ("... the whole-hash read (`HGETALL` of every app and the backoff) idle ticks made before",
         f"{report.whole_hash_read_bytes:,} B", ""),
        ("a one-second look between ticks, with the fleet: Redis bytes / round trips / CPU (median)",
         f"{report.look_bytes:,.0f} B / {report.look_round_trips:g} / {report.look_cpu_ms_median:.3f} ms",
         ""),
        ("a one-second look between ticks, alone (the state file's due marks): CPU (median)",
         f"{report.look_alone_cpu_ms_median:.3f} ms", ""),
        (f"Redis round trips per idle tick with `health_check_interval: {HEALTH_CHECK_INTERVAL_SECS}` "
         f"(the fleet page), ticks in real time x{o.health_check_scale:g}",
         f"{report.health_check_round_trips:g}" if o.health_check_ticks else "not measured", "1"),
        ("warnings logged", ", ".join(f"{k} {v}" for k, v in report.warnings.items()) or "none", ""),
    ]  # fmt: skip
    return "\n".join(
        [
            f"One poller with coordination, {o.rounds:,} ticks 30 s apart (virtual time, interval "
            f"{o.interval_s} s), then {o.idle_ticks} idle ticks.",
            "",
            markdown_table(["", "measured", "target"], rows),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    defaults = FootprintOptions()
    parser = argparse.ArgumentParser(prog="python -m bench.footprint", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=defaults.rounds)
    parser.add_argument("--idle-ticks", type=int, default=defaults.idle_ticks)
    parser.add_argument("--health-check-ticks", type=int, default=defaults.health_check_ticks)
    parser.add_argument("--health-check-scale", type=float, default=defaults.health_check_scale)
    parser.add_argument("--json", type=Path, help="also write the figures and their Markdown here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.rounds < 1 or args.idle_ticks < 1:
        parser.error("--rounds and --idle-ticks must be at least 1")
    options = FootprintOptions(
        rounds=args.rounds,
        idle_ticks=args.idle_ticks,
        health_check_ticks=args.health_check_ticks,
        health_check_scale=args.health_check_scale,
    )
    report = run_footprint(options)
    return finish(report, markdown(report), args.json)


if __name__ == "__main__":
    raise SystemExit(main())

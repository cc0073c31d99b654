"""``python -m bench.reports``: install reports (``POST /v1/craft_apps/reports``) on gunicorn over
real HTTP, with the fleet's Redis, the same site as ``bench.endpoint``.

Four figures:

- **rate**: reports accepted per second per web worker (202s), distinct installs from many
  client addresses (loopback addresses ``127.0.x.y``, so the per-address limit doesn't bound
  them), and how soon the writers counted them all in Redis;
- **endpoint**: ``release_info``'s requests per second while reports arrive at a steady rate,
  against the bare Django view sending the same bytes and headers at the same moments (the
  rounds take turns, as in ``bench.endpoint``), target at least ``RATIO_TARGET``; and against
  ``release_info`` with no report arriving;
- **memory**: Redis's ``MEMORY USAGE`` of one release's keys (counters, HyperLogLogs, the day's
  counter) and of the first-outcome marks per install, after the rate run;
- **abuse**: ``--flood`` forged ``failed`` reports from ``--flood-installs`` install ids, from
  ``--flood-addresses`` client addresses, at one host: ``release_info`` against the bare view
  while the flood runs (taking turns, as in the endpoint part; the pairs that ended before the
  flood did), ``release_info``'s latency during the flood against before it, the web processes'
  resident memory before and after, and the reports left out by reason as the metrics count
  them;
- **refusal**: the web processes' CPU time per report refused by the per-address limit (one
  address, new installs) and by the per-install limit (one install, many addresses), against
  per answer of the bare view.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import itertools
import json
import logging
import multiprocessing
import tempfile
import threading
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from bench.endpoint import (
    ENDPOINT_PATH,
    ROUNDS,
    STATIC_NAME,
    _get,
    _headers,
    cpu_seconds,
    fill_state,
    gunicorn_command,
    prepare_site_database,
    running,
    site_env,
)
from bench.loadgen import LoadResult, merge_results, run_load, wrk_available
from bench.report import finish, markdown_table, start_redis
from bench.site_paths import BARE_HEADERS_ENV, bare_path
from bench.stats import percentile
from tests.support import free_port

REPORTS_PATH = "v1/craft_apps/reports"
METRICS_PATH = "v1/craft_apps/metrics"
TOKEN = "bench-reports-token"
PREFIX = "craftApps:releases:reports:"
APP, VERSION = "photocraft", "0.6.0"
RATIO_TARGET = 0.95
DRAIN_TIMEOUT_S = 60.0
FLOOD_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class ReportsOptions:
    seconds: float = 10.0  # each load, in ``interleaved`` rounds
    connections: int = 16
    workers: int = 2
    senders: int = 8  # threads posting reports in the rate run
    reports: int = 20_000  # posted in the rate run (each a new install)
    steady_rate: float = 200.0  # reports per second while the endpoint is measured
    flood: int = 100_000
    flood_installs: int = 10_000
    flood_addresses: int = 1
    loadgen: str = "auto"


@dataclass
class Sent:
    """What a run of posts got: answers by status, their latencies, and how long it took."""

    statuses: Counter[int] = field(default_factory=Counter)
    latencies_ms: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def per_second(self, status: int = 202) -> float:
        return round(self.statuses[status] / self.seconds, 1) if self.seconds else 0.0


@dataclass
class ReportsReport:
    options: ReportsOptions
    loadgen: str
    accepted_per_s: float
    accepted_per_s_per_worker: float
    post_p50_ms: float | None
    post_p99_ms: float | None
    counted: int
    cpu_ms_per_report: float  # the web processes' CPU time per report, writing included
    counted_within_s: float | None
    release_bytes: int  # one release's keys, whatever its installs
    release_keys: int
    mark_bytes_per_install: float
    used_memory_delta_per_install: float
    ours: LoadResult
    bare: LoadResult
    quiet: LoadResult  # release_info with no report arriving
    ratio_to_bare: float
    ratio_to_quiet: float
    steady_sent: int
    flood_sent: dict[str, int]
    flood_seconds: float
    before_flood: LoadResult
    during_flood: LoadResult
    bare_during_flood: LoadResult
    flood_ratio_to_bare: float
    flood_pairs: int  # release_info and bare view turns that ended while the flood ran
    rss_kib_before: int
    rss_kib_after: int
    not_counted: dict[str, float]
    answers: dict[str, float]
    refused_cpu_us: dict[str, float]  # per refused report, by limit; "bare": per bare answer
    refused_share: dict[str, float]  # the share of each phase's reports its limit left out


def report_body(install_id: str, outcome: str = "installed", version: str = VERSION) -> bytes:
    return json.dumps(
        {
            "app_key": APP,
            "install_id": install_id,
            "version": version,
            "outcome": outcome,
            "channel": "stable",
        }
    ).encode()


def address(index: int) -> str:
    """The ``index``-th loopback address past 127.0.0.1 (Linux answers on all of 127/8)."""
    index = index % 65_000
    return f"127.0.{2 + index // 250}.{1 + index % 250}"


def post_all(
    url: str, bodies: Iterator[tuple[bytes, str]], senders: int, limit_s: float | None = None
) -> Sent:
    """Posts every body from its source address, ``senders`` keep-alive connections at once."""
    parts = url.split("/", 3)
    host, port = parts[2].split(":")
    path = "/" + parts[3]
    sent, lock, feed = Sent(), threading.Lock(), threading.Lock()
    start = time.perf_counter()
    deadline = None if limit_s is None else start + limit_s

    def worker() -> None:
        connections: dict[str, http.client.HTTPConnection] = {}
        while deadline is None or time.perf_counter() < deadline:
            with feed:
                item = next(bodies, None)
            if item is None:
                break
            body, source = item
            status, took = _post(connections, host, int(port), path, body, source)
            with lock:
                sent.statuses[status] += 1
                sent.latencies_ms.append(took)
        for connection in connections.values():
            connection.close()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sent.seconds = time.perf_counter() - start
    return sent


def _post(
    connections: dict[str, http.client.HTTPConnection],
    host: str,
    port: int,
    path: str,
    body: bytes,
    source: str,
) -> tuple[int, float]:
    """One POST on the keep-alive connection from ``source``: its status (0: failed) and ms."""
    connection = connections.get(source)
    if connection is None:
        connection = connections[source] = http.client.HTTPConnection(
            host, port, timeout=10, source_address=(source, 0)
        )
    began = time.perf_counter()
    try:
        connection.request("POST", path, body, {"Content-Type": "application/json"})
        answer = connection.getresponse()
        answer.read()
        status = answer.status
    except (OSError, http.client.HTTPException):
        connection.close()
        del connections[source]
        status = 0
    if len(connections) > 64:  # a sender keeps a few addresses' connections open, not all
        connections.pop(next(iter(connections))).close()
    return status, (time.perf_counter() - began) * 1000


def new_installs(count: int, addresses: int = 5_000) -> Iterator[tuple[bytes, str]]:
    """``count`` reports, each of a new install, spread over ``addresses`` client addresses."""
    return ((report_body(str(uuid.uuid4())), address(i % addresses)) for i in range(count))


def counted_installs(client: redis.Redis) -> int:
    """Distinct installs counted in Redis for the benchmark's release (all outcomes)."""
    keys = client.keys(f"{PREFIX}{APP}:{VERSION}:*:installs")
    return sum(int(client.pfcount(k)) for k in keys)


def wait_counted(client: redis.Redis, expected: int) -> float | None:
    """Seconds until the writers counted ``expected`` installs (HyperLogLog: within 2 %)."""
    began = time.monotonic()
    while time.monotonic() - began < DRAIN_TIMEOUT_S:
        if counted_installs(client) >= expected * 0.98:
            return round(time.monotonic() - began, 2)
        time.sleep(0.05)  # a background writer, not a timer under test
    return None


def release_memory(client: redis.Redis) -> tuple[int, int, float]:
    """One release's keys' bytes and number, and the first-outcome marks' bytes per install."""
    keys = [k for k in client.scan_iter(f"{PREFIX}{APP}:{VERSION}:*", count=1000)]
    total = sum(int(client.memory_usage(k) or 0) for k in keys)
    marks = list(itertools.islice(client.scan_iter(f"{PREFIX}seen:*", count=1000), 1000))
    per_mark = sum(int(client.memory_usage(k) or 0) for k in marks) / len(marks) if marks else 0.0
    return total, len(keys), round(per_mark, 1)


def rss_kib(root_pid: int) -> int:
    """Resident memory of a server's master and workers, in KiB."""
    total = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
            stat = (status.parent / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(status.parent.name) == root_pid or int(stat[1]) == root_pid:
            total += next(
                (int(line.split()[1]) for line in text.splitlines() if line.startswith("VmRSS:")), 0
            )
    return total


def scrape(site: str) -> dict[str, dict[str, float]]:
    """The reports' counters from the metrics, by name and label value."""
    request = urllib_request(f"{site}/{METRICS_PATH}")
    found: dict[str, dict[str, float]] = {}
    for line in request.splitlines():
        for name in ("craft_apps_reports_not_counted_total", "craft_apps_report_answers_total"):
            if line.startswith(name + "{"):
                label = line.split('"')[1]
                found.setdefault(name, {})[label] = found.get(name, {}).get(label, 0.0) + float(
                    line.split()[-1]
                )
        if line.startswith("craft_apps_reports_counted_total "):
            found["counted"] = {"": float(line.split()[-1])}
    return found


def accounted(url: str, accepted: int) -> dict[str, dict[str, float]]:
    """The metrics once every accepted report is counted or left out (the writers are done)."""
    began = time.monotonic()
    while True:
        metrics = scrape(url)
        done = sum(metrics.get("counted", {}).values()) + sum(
            metrics.get("craft_apps_reports_not_counted_total", {}).values()
        )
        if done >= accepted or time.monotonic() - began > DRAIN_TIMEOUT_S:
            return metrics
        time.sleep(0.1)  # background writers, not a timer under test


def urllib_request(url: str) -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return str(answer.read().decode())


class Steady:
    """Posts new installs' reports at ``rate`` per second while ``flowing`` is set, from a process
    of its own (its senders don't share the load generator's GIL), until ``end``."""

    def __init__(self, url: str, rate: float) -> None:
        context = multiprocessing.get_context("spawn")
        self.stop, self.flowing, self.ready = context.Event(), context.Event(), context.Event()
        self.answers: Any = context.Queue()
        self.process = context.Process(
            target=steady_process, args=(url, rate, self.flowing, self.stop, self.answers, self.ready)
        )
        self.sent: dict[int, int] = {}

    def start(self) -> None:
        """Starts the process and returns once it is ready to send (its start-up is no part of
        the measured rounds, however slow on a loaded machine)."""
        self.process.start()
        if not self.ready.wait(FLOOD_TIMEOUT_S):
            raise RuntimeError(f"the steady reports' process didn't start within {FLOOD_TIMEOUT_S} s")

    def end(self) -> None:
        self.stop.set()
        self.flowing.set()
        self.sent = self.answers.get(timeout=FLOOD_TIMEOUT_S)
        self.process.join()


def steady_process(url: str, rate: float, flowing: Any, stop: Any, answers: Any, ready: Any) -> None:
    """``Steady``'s process: puts its answers by status on ``answers`` when stopped."""
    every = 1.0 / rate
    ready.set()

    def paced() -> Iterator[tuple[bytes, str]]:
        next_at = time.perf_counter()
        for i in itertools.count():
            flowing.wait()
            now = time.perf_counter()
            next_at = max(next_at + every, now - every)  # no burst after a pause
            if next_at > now:
                stop.wait(next_at - now)  # the pace of the reports, not a timer under test
            if stop.is_set():
                return
            yield report_body(str(uuid.uuid4())), address(i)

    answers.put(dict(post_all(url, paced(), senders=2).statuses))


@contextlib.contextmanager
def site(options: ReportsOptions, workdir: Path) -> Iterator[tuple[str, int, redis.Redis]]:
    """The benchmark's site on gunicorn with a private Redis: its URL, master pid and a client."""
    state_dir, www = workdir / "state", workdir / "www"
    www.mkdir()
    fill_state(state_dir)
    body_file = www / STATIC_NAME
    env = site_env(state_dir, body_file, workdir)
    env[BARE_HEADERS_ENV] = str(www / "headers.json")
    metrics_dir = workdir / "metrics"
    metrics_dir.mkdir()
    with start_redis(workdir / "redis") as server:
        env.update(
            CRAFT_APPS_REDIS_URL=server.url,
            CRAFT_APPS_METRICS_TOKEN=TOKEN,
            PROMETHEUS_MULTIPROC_DIR=str(metrics_dir),
        )
        prepare_site_database(env, workdir)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        command = gunicorn_command(port, options.workers)
        with running(
            command, env=env, log=workdir / "gunicorn.log", ready_url=f"{url}/{ENDPOINT_PATH}"
        ) as web:
            body_file.write_bytes(_get(f"{url}/{ENDPOINT_PATH}"))
            (www / "headers.json").write_text(
                json.dumps({"": sorted(_headers(f"{url}/{ENDPOINT_PATH}", {}).items())})
            )
            yield url, web.pid, server.client()


def rate_run(options: ReportsOptions, url: str, pid: int, client: redis.Redis) -> dict[str, Any]:
    cpu_before = cpu_seconds(pid)
    sent = post_all(f"{url}/{REPORTS_PATH}", new_installs(options.reports), options.senders)
    accepted = sent.statuses[202]
    within = wait_counted(client, accepted)
    cpu_s = cpu_seconds(pid) - cpu_before
    release_bytes, release_keys, per_mark = release_memory(client)
    used = int(client.info("memory")["used_memory"])
    return {
        "accepted_per_s": sent.per_second(),
        "accepted_per_s_per_worker": round(sent.per_second() / options.workers, 1),
        "post_p50_ms": percentile(sent.latencies_ms, 0.5),
        "post_p99_ms": percentile(sent.latencies_ms, 0.99),
        "counted": counted_installs(client),
        "cpu_ms_per_report": round(cpu_s * 1000 / accepted, 3) if accepted else 0.0,
        "counted_within_s": within,
        "release_bytes": release_bytes,
        "release_keys": release_keys,
        "mark_bytes_per_install": per_mark,
        "used_memory_delta_per_install": round(used / accepted, 1) if accepted else 0.0,
    }


def endpoint_run(options: ReportsOptions, url: str, pid: int, tool: str) -> dict[str, Any]:
    """In turns: release_info with no report arriving, then it and the bare view while they do."""
    ours_url, bare_url = f"{url}/{ENDPOINT_PATH}", f"{url}/{bare_path()}"
    rounds = ROUNDS if options.seconds >= ROUNDS else 1
    each = options.seconds / rounds
    parts: dict[str, list[LoadResult]] = {"quiet": [], "ours": [], "bare": []}
    for target in (ours_url, bare_url):
        run_load(target, connections=options.connections, seconds=min(1.0, each), tool=tool)  # warm up
    steady = Steady(f"{url}/{REPORTS_PATH}", options.steady_rate)
    steady.start()
    try:
        for _ in range(rounds):
            steady.flowing.clear()
            parts["quiet"].append(
                run_load(ours_url, connections=options.connections, seconds=each, tool=tool)
            )
            steady.flowing.set()
            for name, target in (("ours", ours_url), ("bare", bare_url)):
                parts[name].append(run_load(target, connections=options.connections, seconds=each, tool=tool))
    finally:
        steady.end()
    ours, bare, quiet = (merge_results(parts[name]) for name in ("ours", "bare", "quiet"))
    return {
        "ours": ours,
        "bare": bare,
        "quiet": quiet,
        "ratio_to_bare": round(ours.rps / bare.rps, 3) if bare.rps else 0.0,
        "ratio_to_quiet": round(ours.rps / quiet.rps, 3) if quiet.rps else 0.0,
        "steady_sent": steady.sent.get(202, 0),
    }


def flood_bodies(options: ReportsOptions) -> Iterator[tuple[bytes, str]]:
    installs = [str(uuid.uuid4()) for _ in range(options.flood_installs)]
    for i in range(options.flood):
        source = "127.0.0.1" if options.flood_addresses <= 1 else address(i % options.flood_addresses)
        yield report_body(installs[i % len(installs)], "failed"), source


def flood_process(url: str, options: ReportsOptions, done: Any, answers: Any) -> None:
    """Post the flood to ``url``; set ``done``, then put its statuses and seconds on ``answers``."""
    sent = post_all(url, flood_bodies(options), options.senders)
    done.set()
    answers.put((dict(sent.statuses), sent.seconds))


def turns_during(flooding: Any, ours_url: str, bare_url: str, each: float, tool: str) -> list[LoadResult]:
    """Load both URLs in turns while ``flooding()``; return the pairs done meanwhile (one at least)."""
    found: list[LoadResult] = []
    while not found or flooding():
        pair = [run_load(url, connections=4, seconds=each, tool=tool) for url in (ours_url, bare_url)]
        if flooding() or not found:
            found.extend(pair)
    return found


def abuse_run(options: ReportsOptions, url: str, pid: int, tool: str) -> dict[str, Any]:
    ours_url, bare_url = f"{url}/{ENDPOINT_PATH}", f"{url}/{bare_path()}"
    seconds = max(1.0, options.seconds / 2)
    before = run_load(ours_url, connections=4, seconds=seconds, tool=tool)
    rss_before = rss_kib(pid)
    # The flood from a process of its own: its senders and the load's don't share one GIL.
    context = multiprocessing.get_context("spawn")
    answers: multiprocessing.Queue[tuple[dict[int, int], float]] = context.Queue()
    done = context.Event()
    sender = context.Process(target=flood_process, args=(f"{url}/{REPORTS_PATH}", options, done, answers))
    sender.start()
    turns = turns_during(lambda: not done.is_set(), ours_url, bare_url, max(1.0, seconds / ROUNDS), tool)
    statuses, flood_s = answers.get(timeout=FLOOD_TIMEOUT_S)
    sender.join()
    during, bare = merge_results(turns[::2]), merge_results(turns[1::2])
    accepted = scrape(url).get("craft_apps_report_answers_total", {}).get("202", 0.0)
    metrics = accounted(url, int(accepted))
    return {
        "flood_sent": {str(k): v for k, v in sorted(statuses.items())},
        "flood_seconds": round(flood_s, 2),
        "before_flood": before,
        "during_flood": during,
        "bare_during_flood": bare,
        "flood_ratio_to_bare": round(during.rps / bare.rps, 3) if bare.rps else 0.0,
        "flood_pairs": len(turns) // 2,
        "rss_kib_before": rss_before,
        "rss_kib_after": rss_kib(pid),
        "not_counted": metrics.get("craft_apps_reports_not_counted_total", {}),
        "answers": metrics.get("craft_apps_report_answers_total", {}),
    }


def over_address_limit() -> Iterator[tuple[bytes, str]]:
    """Yield new installs' reports from one address (past its burst, the address limit refuses them)."""
    return ((report_body(str(uuid.uuid4()), "failed"), "127.0.0.1") for _ in itertools.count())


def over_install_limit() -> Iterator[tuple[bytes, str]]:
    """Yield one install's reports from many addresses (past its burst, the install limit refuses them)."""
    install = str(uuid.uuid4())
    return ((report_body(install, "failed"), address(i % 5_000)) for i in itertools.count())


def cpu_per_refusal(
    options: ReportsOptions, url: str, pid: int, bodies: Iterator[tuple[bytes, str]], reason: str
) -> tuple[float, float]:
    """Post ``bodies`` for a while; return the web CPU µs per report and the share ``reason`` left out."""
    left_out = scrape(url).get("craft_apps_reports_not_counted_total", {}).get(reason, 0.0)
    cpu = cpu_seconds(pid)
    sent = post_all(f"{url}/{REPORTS_PATH}", bodies, options.senders, max(1.0, options.seconds / 2))
    cpu = cpu_seconds(pid) - cpu
    posted = sum(sent.statuses.values())
    metrics = scrape(url)  # a refusal is counted before its answer
    refused = metrics.get("craft_apps_reports_not_counted_total", {}).get(reason, 0.0) - left_out
    return round(cpu * 1e6 / posted, 1) if posted else 0.0, round(refused / posted, 3) if posted else 0.0


def refusal_run(options: ReportsOptions, url: str, pid: int, tool: str) -> dict[str, Any]:
    """Measure the web processes' CPU per refused report, by limit, and per bare view answer."""
    cpu_us, share = {}, {}
    for reason, bodies in (("address_rate", over_address_limit()), ("install_rate", over_install_limit())):
        cpu_us[reason], share[reason] = cpu_per_refusal(options, url, pid, bodies, reason)
    cpu = cpu_seconds(pid)
    bare = run_load(
        f"{url}/{bare_path()}", connections=options.senders, seconds=max(1.0, options.seconds / 2), tool=tool
    )
    cpu = cpu_seconds(pid) - cpu
    cpu_us["bare"] = round(cpu * 1e6 / bare.requests, 1) if bare.requests else 0.0
    return {"refused_cpu_us": cpu_us, "refused_share": share}


def run_reports_benchmark(options: ReportsOptions) -> ReportsReport:
    tool = "wrk" if options.loadgen == "wrk" or (options.loadgen == "auto" and wrk_available()) else "python"
    with (
        tempfile.TemporaryDirectory(prefix="bench-reports-") as tmp,
        site(options, Path(tmp)) as (url, pid, client),
    ):
        rate = rate_run(options, url, pid, client)
        endpoint = endpoint_run(options, url, pid, tool)
        abuse = abuse_run(options, url, pid, tool)
        refusal = refusal_run(options, url, pid, tool)
    return ReportsReport(options=options, loadgen=tool, **rate, **endpoint, **abuse, **refusal)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _pair(first: float | None, second: float | None, unit: str = "") -> str:
    return f"{_ms(first)} / {_ms(second)}{unit}"


def markdown(report: ReportsReport) -> str:
    o, r = report.options, report
    left_out = ", ".join(f"{k}: {v:g}" for k, v in sorted(r.not_counted.items())) or "none"
    cpu, share = r.refused_cpu_us, r.refused_share
    refused = " / ".join(
        f"{cpu.get(k, 0):g} µs ({share.get(k, 0):.0%} refused)" for k in ("address_rate", "install_rate")
    )
    rows = [
        [
            "reports accepted (202) per second",
            f"{r.accepted_per_s:g} ({r.accepted_per_s_per_worker:g} a worker)",
        ],
        ["a report's answer, p50 / p99 ms", _pair(r.post_p50_ms, r.post_p99_ms)],
        ["web processes' CPU per report (writing included)", f"{r.cpu_ms_per_report:g} ms"],
        ["counted in Redis after the last answer", f"{r.counted} installs within {r.counted_within_s} s"],
        ["Redis: one release's keys", f"{r.release_bytes} bytes in {r.release_keys} keys"],
        ["Redis: a first-outcome mark per install", f"{r.mark_bytes_per_install:g} bytes"],
        ["release_info req/s while reports arrive", f"{r.ours.rps:.0f} ({r.steady_sent} reports meanwhile)"],
        ["bare Django view req/s, same moments", f"{r.bare.rps:.0f}"],
        ["ratio to the bare view (target >= 0.95)", f"{r.ratio_to_bare:.3f}"],
        ["ratio to release_info with no report", f"{r.ratio_to_quiet:.3f}"],
        ["flood answers by status", ", ".join(f"{k}: {v}" for k, v in r.flood_sent.items())],
        ["release_info p50 / p99 ms before the flood", _pair(r.before_flood.p50_ms, r.before_flood.p99_ms)],
        ["release_info p50 / p99 ms during the flood", _pair(r.during_flood.p50_ms, r.during_flood.p99_ms)],
        [
            "release_info / bare view req/s during the flood",
            f"{r.during_flood.rps:.0f} / {r.bare_during_flood.rps:.0f} ({r.flood_pairs} turns each)",
        ],
        ["ratio to the bare view during the flood (target >= 0.95)", f"{r.flood_ratio_to_bare:.3f}"],
        ["web processes' RSS before / after, MiB", _pair(r.rss_kib_before / 1024, r.rss_kib_after / 1024)],
        ["left out, by reason (metrics)", left_out],
        ["web CPU per report refused by the address / install limit", refused],
        ["web CPU per bare view answer", f"{r.refused_cpu_us.get('bare', 0):g} µs"],
    ]
    head = (
        f"gunicorn, {o.workers} workers, {report.loadgen} load with {o.connections} connections; "
        f"{o.reports} reports in the rate run from {o.senders} senders; a flood of {o.flood} from "
        f"{o.flood_installs} installs and {o.flood_addresses} address(es)."
    )
    return head + "\n\n" + markdown_table(["figure", "value"], rows)


def main(argv: list[str] | None = None) -> int:
    defaults = ReportsOptions()
    parser = argparse.ArgumentParser(prog="python -m bench.reports", description=__doc__.split("\n")[0])
    for name in ("seconds", "steady_rate"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=float, default=getattr(defaults, name))
    for name in (
        "connections",
        "workers",
        "senders",
        "reports",
        "flood",
        "flood_installs",
        "flood_addresses",
    ):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(defaults, name))
    parser.add_argument("--loadgen", choices=["auto", "wrk", "python"], default=defaults.loadgen)
    parser.add_argument("--json", type=Path, help="also write the figures and their Markdown here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    fields = {k: v for k, v in vars(args).items() if k != "json"}
    report = run_reports_benchmark(ReportsOptions(**fields))
    return finish(report, markdown(report), args.json)


if __name__ == "__main__":
    raise SystemExit(main())

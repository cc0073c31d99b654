"""The benchmarks at a tiny size, so they never rot; the real figures come from `bash .ci/bench`.

CI installs neither wrk nor nginx: there the endpoint benchmark runs with its built-in Python
load generator and Python's http.server, which is the same code path apart from those two.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from bench.endpoint import fill_state
from bench.fleet import FleetOptions, host_address, markdown, next_version, run_fleet_benchmark
from bench.fleet_metrics import ServedLog
from bench.loadgen import parse_wrk
from bench.release_controls import (
    OLDER_APPS,
    ROLLOUT_APP,
    YANK_APP,
    latest_tags,
    previous_release,
    problem,
    write_controls,
)
from bench.report import FIGURES_END, FIGURES_START, machine_line, rewrite_figures
from bench.stats import max_in_window, percentile
from bench.virtual_time import HostClock, HostKilled, Simulation
from craft_apps.api.answer import build_release_info
from craft_apps.api.representation import encode_answer
from craft_apps.conf import DEFAULT_APPS, DEFAULT_GITHUB_WEB_URL
from craft_apps.content.channels import read_controls
from craft_apps.host.store import StateStore
from craft_apps.kernel.domain import AppState, Release
from craft_apps.kernel.serving import controlled_release_info
from tests.support import ONE_AT_A_TIME

ROOT = Path(__file__).resolve().parent.parent

TINY = [
    "--hosts", "3", "--hours", "2", "--releases", "4", "--kill-hours", "1.2",
    "--flood", "100", "--flood-minutes", "3", "--big-hosts", "6", "--big-hours", "0.5",
    "--seconds", "1", "--connections", "4", "--signing", "--controls",
    "--launcher-hours", "1", "--launcher-releases", "2",
    "--rounds", "20", "--idle-ticks", "10", "--health-check-ticks", "3", "--health-check-scale", "0.001",
    "--reports", "200", "--reports-steady-rate", "20",
    "--reports-flood", "600", "--reports-flood-installs", "60",
]  # fmt: skip


@pytest.mark.slow
@ONE_AT_A_TIME
def test_every_benchmark_runs_at_a_tiny_size_with_sane_figures(tmp_path: Path):
    docs = tmp_path / "benchmarks.md"
    shutil.copy(ROOT / "docs" / "benchmarks.md", docs)
    figures_file = tmp_path / "figures.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    done = subprocess.run(
        [sys.executable, "-m", "bench", *TINY, "--docs", str(docs), "--json", str(figures_file)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(figures_file.read_text())

    on, off, kill = figures["fleet"]["on"], figures["fleet"]["off"], figures["fleet"]["kill"]
    assert on["duplicate_requests"] == 0, "coordinated hosts never ask about a fresh app but for a webhook"
    assert off["github_requests"] >= 2.5 * on["github_requests"], "alone, each of 3 hosts asks"
    assert on["rate_limited"] == off["rate_limited"] == 0
    for run in (on, off):
        assert run["propagation"]["published"] == run["propagation"]["everywhere"] == 4
        assert run["propagation"]["max_s"] <= run["propagation_target_s"]
        assert run["state_files_agree"]
        assert run["warnings"] == {}
        assert run["webhooks"] == 4 and run["looks"] > 25 * run["ticks"], "a look every second between ticks"
    assert on["propagation"]["max_s"] <= 5, "a webhook brings every release to every host in seconds"
    assert off["propagation"]["max_s"] > 60, "alone, the other hosts wait for their schedule"
    assert 1.0 <= on["redis_round_trips_per_idle_tick"] < 1.2, "one, and one more after another host's write"
    assert on["redis_bytes_per_quiet_tick"] <= 2048 and on["redis_round_trips_per_look"] < 1.01
    assert on["redis_commands_per_host_hour"] > 0 and off["redis_commands_per_host_hour"] == 0
    flood, big = figures["fleet"]["flood"], figures["fleet"]["big"]
    assert 3 <= flood["requests"] <= 7 and flood["min_gap_s"] >= 10
    assert big["hosts"] == 6 and big["duplicate_requests"] == 0 and big["state_files_agree"]
    assert kill["killed_host"] is not None
    assert kill["extra_requests"] == 1 and kill["requests_while_fresh"] == 2
    assert 60 <= kill["lapse_s"] <= 60 + 35, "asked again at the first tick after the claim lapsed"

    endpoint = figures["endpoint"]
    assert endpoint["body_bytes"] > 50_000, "13 realistic releases"
    assert endpoint["page_bytes"] > 50_000, "the downloads page lists them all"
    for name in ("ours", "bare", "beta", "bare_beta", "page", "redirect", "static", "under_change"):
        assert endpoint[name]["requests"] > 0 and endpoint[name]["errors"] == 0, name
        assert endpoint[name]["p99_ms"] >= endpoint[name]["p50_ms"] > 0, name
    assert endpoint["changes_published"] >= 1 and endpoint["last_change_served"]
    for result in (
        *endpoint["ours_coded"].values(),
        *endpoint["bare_coded"].values(),
        endpoint["not_modified"],
        endpoint["bare_not_modified"],
    ):
        assert result["requests"] > 0 and result["errors"] == 0
    assert endpoint["coded_bytes"]["br"] < endpoint["coded_bytes"]["gzip"] < endpoint["body_bytes"] / 5
    assert endpoint["not_modified_ratio"] > 0 and set(endpoint["coded_ratio_to_bare"]) == {"br", "gzip"}
    signed_paths = {"signed", "signed_br", "signed_gzip", "signed_not_modified"}
    assert set(endpoint["signed"]) == set(endpoint["bare_signed"]) == set(endpoint["signed_ratio_to_bare"])
    assert set(endpoint["signed"]) == signed_paths, "--signing: each path signed beside its bare view"
    for result in (*endpoint["signed"].values(), *endpoint["bare_signed"].values()):
        assert result["requests"] > 0 and result["errors"] == 0
    assert all(ratio > 0 for ratio in endpoint["signed_ratio_to_bare"].values())
    cpu = endpoint["cpu_ms_per_request"]
    assert set(cpu) == {
        "ours", "bare", "ours_br", "ours_gzip", "bare_br", "bare_gzip", "not_modified", "bare_not_modified",
        "beta", "bare_beta", "page", "redirect", "static", "under_change",
        *signed_paths, *(f"bare_{key}" for key in signed_paths),
    }  # fmt: skip
    assert endpoint["beta_bytes"] > endpoint["body_bytes"] > 50_000, "the beta answer lists rcs as well"
    assert endpoint["beta_ratio_to_bare"] > 0
    assert cpu["ours"] > 0 and cpu["page"] > 0 and cpu["redirect"] > 0
    # --controls: every row ran with a rollout and a yank in force (checked in every answer
    # before timing), and a runtime encoded one answer per state version and channel.
    assert [c.split(":")[0] for c in endpoint["controls"]] == [ROLLOUT_APP, YANK_APP]
    assert endpoint["encoded_per_version"] == {"stable": 1.0, "beta": 1.0}

    launcher = figures["launcher"]
    plain = launcher["plain_json_bytes"]
    assert launcher["first"]["polls"] == 1 and launcher["unchanged"]["polls"] >= 5
    assert launcher["statuses"]["304"] == launcher["unchanged"]["polls"], "nothing changed: a 304"
    assert max(launcher["unchanged"]["bytes_now"]) < 1000 < plain < min(launcher["unchanged"]["bytes_today"])
    assert launcher["releases_published"] == 2 and launcher["releases_seen"] == 2
    assert launcher["release"]["polls"] >= 1 and max(launcher["release"]["share_of_json"]) <= 0.15
    assert sum(launcher["not_modified_breakdown"].values()) == launcher["unchanged"]["bytes_now"][0]

    footprint = figures["footprint"]
    assert footprint["github_requests"] == 13, "20 ticks are within one interval: one round"
    assert footprint["idle_tick_round_trips"] == 1.0 and footprint["idle_tick_round_trips_max"] == 1
    assert footprint["idle_tick_command_mix"] == {"hmget": 13 * 10, "hgetall": 10}
    assert footprint["idle_tick_bytes"] <= 2048 < 50_000 < footprint["whole_hash_read_bytes"]
    assert footprint["look_round_trips"] == 1 and footprint["look_bytes"] < 100
    assert footprint["rss_end_kib"] > 10_000

    reports = figures["reports"]
    assert reports["flood_sent"] == {"202": 600} and reports["flood_ratio_to_bare"] > 0
    assert reports["ratio_to_bare"] > 0 and reports["refused_cpu_us"]["address_rate"] > 0

    text = docs.read_text()
    figures_part = text[text.index(FIGURES_START) : text.index(FIGURES_END)]
    assert "Made by `bash .ci/bench` on " in figures_part and " cores (" in figures_part, "the machine"
    titles = (
        "Fleet simulation",
        "Endpoint under load",
        "What a launcher pays per poll",
        "Poller footprint",
        "Install reports",
    )
    sections = figures_part.split("\n### ")[1:]
    assert [section.split("\n")[0] for section in sections] == list(titles)
    for section in sections:  # one table each, under the command that made it and its date
        assert (
            section.count("\n|---") == 1
            and "\n`python -m bench." in section
            and " UTC, the machine" in section
        )
    ratios = endpoint_ratios(sections[1])
    assert "| server CPU / request |" in sections[1]
    for path in ("plain", "?channel=beta", "signed, brotli", "signed, If-None-Match: 304"):
        assert ratios[path] > 0, f"{path}: its ratio to the bare view"
    prefixes = ("brotli (", "gzip (", "If-None-Match: 304 (", "downloads page (")
    assert all(any(path.startswith(prefix) for path in ratios) for prefix in prefixes)
    assert "a download redirect (302), to plain" in ratios
    assert f"Release controls in force on every row: {ROLLOUT_APP}" in figures_part
    assert "Answers encoded per state version: stable 1.00, beta 1.00." in figures_part
    assert text.startswith("# Benchmarks") and "## What is measured, and how" in text, "the rest is kept"
    assert "## Latest fixes (issue 38)" in text
    assert sections[4].count("\n| ") == 2, "the install reports: a header and one row"
    assert len(text.split()) <= 2600, "the page stays short: one table per benchmark"


def endpoint_ratios(section: str) -> dict[str, float]:
    """Each endpoint row's ratio to its baseline by requests/s, by its path's name."""
    table = section[section.index("|---") :].splitlines()[1:]
    ratios = {}
    for line in (line for line in table if line.startswith("| ")):
        cells = [cell.strip() for cell in line.strip()[1:-1].split("|")]
        ratios[cells[0]] = float(cells[-1].split(" (")[0]) if cells[-1] else 0.0
    return ratios


@ONE_AT_A_TIME
@pytest.mark.slow
def test_the_fleet_simulation_is_a_function_of_its_seed():
    options = FleetOptions(hosts=2, hours=1, releases=2, kill_hours=0, flood=0, big_hosts=0)
    first, second = (asdict(run_fleet_benchmark(options)) for _ in range(2))
    for report in (first, second):
        for mode in ("on", "off"):
            report[mode].pop("wall_s")
            report[mode].pop("cpu_s")
    assert first == second
    assert first["on"]["github_requests"] > 0


@ONE_AT_A_TIME
@pytest.mark.slow
def test_the_fleet_bench_shows_what_history_costs_and_that_the_default_costs_what_it_did():
    options = FleetOptions(
        hosts=2, hours=2, releases=0, kill_hours=0, flood=0, big_hosts=0, history_apps="all"
    )
    report = run_fleet_benchmark(options)
    assert report.history is not None
    default, every = report.on.requests_per_app_per_interval, report.history.requests_per_app_per_interval
    # A 2-hour run of 2 hosts counts the first round on top of the schedule, hence above 1.
    assert 1.0 <= default <= 1.3, "no app needs history: what the latest alone costs, as before"
    assert report.history.github_requests == 2 * report.on.github_requests, "one list beside each latest"
    text = markdown(report)
    assert f"{default:.3f} in the default configuration" in text and f"{every:.3f} with every app" in text


def test_hosts_take_turns_in_virtual_time_and_a_killed_host_just_stops():
    simulation = Simulation(start_ms=0)
    seen: list[tuple[int, str]] = []

    def host(name: str, step_s: float, die_at_ms: int | None = None):
        def body(clock: HostClock) -> None:
            while True:
                seen.append((clock.now_ms(), name))
                if die_at_ms is not None and clock.now_ms() >= die_at_ms:
                    raise HostKilled(name)
                if not clock.sleep(step_s):
                    seen.append((clock.now_ms(), f"{name} stopped"))
                    return

        return body

    simulation.spawn("a", host("a", 1.0), random.Random(1))
    simulation.spawn("b", host("b", 0.7, die_at_ms=1400), random.Random(2))
    simulation.call_at(1500, lambda: seen.append((simulation.now_ms, "event")))
    simulation.run(until_ms=3000)
    assert seen == [
        (0, "a"), (0, "b"), (700, "b"), (1000, "a"), (1400, "b"), (1500, "event"),
        (2000, "a"), (3000, "a"), (3000, "a stopped"),
    ]  # fmt: skip
    assert simulation.killed() == ["b"]


def test_a_hosts_error_stops_the_simulation_with_it():
    simulation = Simulation(start_ms=0)

    def broken(clock: HostClock) -> None:
        clock.sleep(1)
        raise ValueError("boom")

    simulation.spawn("x", broken, random.Random(1))
    with pytest.raises(RuntimeError, match="host x failed: ValueError"):
        simulation.run(until_ms=10_000)


def release(tag: str) -> Release:
    return Release(
        tag=tag, version=tag, name=tag, published_at=None, html_url="", prerelease=False, notes_markdown=""
    )


def test_a_release_counts_as_everywhere_when_the_last_host_shows_it_or_a_later_one():
    log = ServedLog(["app"], start_ms=0)
    log.published("app", "v1", 0)
    log.written("h1", "app", AppState(latest_release=release("v1"), fetched_ms=10), 10)
    log.written("h2", "app", AppState(latest_release=release("v1"), fetched_ms=10), 20)
    log.published("app", "v2", 1_000)
    log.published("app", "v3", 2_000)
    log.written("h1", "app", AppState(latest_release=release("v2"), fetched_ms=1_500), 1_500)
    log.written("h2", "app", AppState(latest_release=release("v3"), fetched_ms=2_500), 2_600)
    log.written("h1", "app", AppState(latest_release=release("v3"), fetched_ms=2_500), 3_000)
    figures = log.figures(["h1", "h2"], end_ms=4_000)
    assert (figures.published, figures.everywhere) == (2, 2)
    assert figures.max_s == 1.6  # v2, published at 1 s, reached h2 (as v3) at 2.6 s
    assert figures.cold_start_s == 0.02
    assert figures.max_staleness_s == 2.59  # h2 served the fetch of 10 ms until 2.6 s


def test_wrk_output_is_read_in_every_unit():
    output = """Running 10s test @ http://127.0.0.1:8000/v1/craft_apps/release_info
  2 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     9.08ms    2.61ms   1.02s    86.12%
    Req/Sec     1.76k   120.33     2.01k    70.50%
  Latency Distribution
     50%  850.00us
     75%    9.70ms
     90%   11.53ms
     99%   18.21ms
  35129 requests in 10.01s, 3.01GB read
  Socket errors: connect 0, read 3, write 0, timeout 2
  Non-2xx or 3xx responses: 4
Requests/sec:   3509.47
Transfer/sec:    307.73MB
"""
    result = parse_wrk(output, connections=32, seconds=10)
    assert (result.requests, result.rps, result.errors) == (35129, 3509.47, 9)
    assert (result.p50_ms, result.p99_ms, result.max_ms) == (0.85, 18.21, 1020.0)
    with pytest.raises(ValueError, match="Requests/sec"):
        parse_wrk(output.replace("Requests/sec", "Reqs"), connections=32, seconds=10)


def test_the_figures_go_between_the_markers_and_nowhere_else(tmp_path: Path):
    doc = tmp_path / "doc.md"
    doc.write_text(f"intro\n{FIGURES_START}\nold\n{FIGURES_END}\noutro\n")
    rewrite_figures(doc, "new figures")
    assert doc.read_text() == f"intro\n{FIGURES_START}\n\nnew figures\n\n{FIGURES_END}\noutro\n"
    doc.write_text("no markers")
    with pytest.raises(ValueError, match="markers"):
        rewrite_figures(doc, "x")
    assert doc.read_text() == "no markers"


def test_the_machine_is_one_line_with_each_tools_version():
    rows = [
        ("cores (nproc)", "2"),
        ("load average before the run (1, 5, 15 min)", "0.4, 0.5, 0.6"),
        ("CPU", "Xeon"),
        ("memory", "23.5 GiB"),
        ("OS", "Debian 12"),
        ("Python", "3.11.7"),
        ("Django, gunicorn", "5.2.19, 27.0.1"),
        ("Redis", "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0"),
        ("wrk", "not installed"),
        ("nginx", "nginx version: nginx/1.22.1"),
    ]
    assert machine_line(rows) == (
        "2 cores (Xeon), 23.5 GiB, Debian 12, Python 3.11.7, Redis 7.0.15, wrk not installed, "
        "nginx 1.22.1, Django 5.2.19, gunicorn 27.0.1; load average 0.4, 0.5, 0.6 before the run"
    )


def test_small_helpers():
    assert percentile([5, 1, 3, 2, 4], 0.5) == 3 and percentile([], 0.5) is None
    assert percentile(list(range(1, 101)), 0.99) == 99
    assert max_in_window([0, 10, 59, 60, 61, 200], 60) == 4  # [10, 70)
    assert max_in_window([0, 60, 120], 60) == 1
    assert [host_address(i) for i in (0, 253, 254)] == ["127.0.0.2", "127.0.0.255", "127.0.1.0"]
    assert next_version("1.0.9") == "1.0.10"


@pytest.mark.django_db
def test_the_controls_bench_checks_what_the_answer_serves_and_fails_without_the_controls(tmp_path: Path):
    """``bench.endpoint --controls``' check passes on the answer its rows make and fails on
    the answer without them: a bench of a broken feature fails before timing."""
    fill_state(tmp_path, OLDER_APPS)
    store = StateStore(tmp_path)
    snapshot = store.read()
    store.close()
    tags = latest_tags()
    write_controls(tags)
    controls = read_controls()
    assert [(c.app_key, c.action) for c in controls] == [(ROLLOUT_APP, "rollout"), (YANK_APP, "yank")]
    assert controls[0].next_change_ms(0) is not None, "a schedule step ahead"
    plain = build_release_info(DEFAULT_APPS, snapshot.apps, DEFAULT_GITHUB_WEB_URL)
    controlled = controlled_release_info(
        plain,
        "stable",
        DEFAULT_APPS,
        controls,
        snapshot.history,
        snapshot.history_fetches,
        DEFAULT_GITHUB_WEB_URL,
        controls[0].steps[0].at_ms - 1,
    )
    assert problem(json.loads(encode_answer(controlled).body), tags, "stable") is None
    found = problem(json.loads(encode_answer(plain).body), tags, "stable")
    assert found is not None and f"{ROLLOUT_APP} has no rollout" in found
    only_rollout = controlled_release_info(
        plain,
        "stable",
        DEFAULT_APPS,
        controls[:1],
        snapshot.history,
        snapshot.history_fetches,
        DEFAULT_GITHUB_WEB_URL,
        0,
    )
    found = problem(json.loads(encode_answer(only_rollout).body), tags, "stable")
    assert found is not None and f"{YANK_APP} still names its yanked tag" in found
    older = previous_release(snapshot.apps[YANK_APP].latest_release or release("v0.0.0"))
    assert tags[YANK_APP] not in repr(older) and older.assets, "the older release names its own tag"


def test_the_tauri_benchmark_measures_each_path(capsys):
    from bench import tauri

    try:
        assert tauri.main(["--requests", "3", "--rounds", "1"]) == 0
    finally:
        logging.disable(logging.NOTSET)  # the benchmark quiets the demo database's warnings
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0] for row in rows[1:]] == [
        "| release_info",
        "| tauri, an update (200)",
        "| tauri, no update (204)",
    ]
    assert all(float(row.split(" | ")[1]) > 0 for row in rows[1:])

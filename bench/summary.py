"""The figures docs/benchmarks.md shows: one short table per benchmark, made from its JSON.

``figures_markdown`` takes each benchmark's figures (the dicts its ``--json`` writes), the
command that ran it and the machine's rows, and returns the Markdown that ``rewrite_figures``
puts between the markers. The full tables stay in each benchmark's own output.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.endpoint import CONTROLS_TARGET, RATIO_TARGET, SIGNED_PATHS
from bench.launcher import RELEASE_TARGET_SHARE, UNCHANGED_TARGET_BYTES
from bench.report import machine_line, markdown_table
from bench.reports import RATIO_TARGET as REPORTS_RATIO_TARGET
from craft_apps.fleet.options import HEALTH_CHECK_INTERVAL_SECS

Figures = dict[str, Any]
Row = tuple[str, ...]
Table = tuple[list[str], list[Row], str]

TITLES = {
    "fleet": "Fleet simulation",
    "endpoint": "Endpoint under load",
    "launcher": "What a launcher pays per poll",
    "footprint": "Poller footprint",
    "reports": "Install reports",
}


def figures_markdown(
    results: dict[str, Figures],
    runs: dict[str, tuple[str, float]],
    stamp: str,
    machine: list[tuple[str, str]],
) -> str:
    """Return the machine line, then per benchmark its title, command, date and table."""
    tables: dict[str, Callable[[Figures], Table]] = {
        "fleet": fleet_table,
        "endpoint": endpoint_table,
        "launcher": launcher_table,
        "footprint": footprint_table,
        "reports": reports_table,
    }
    parts = [f"Made by `bash .ci/bench` on {stamp}, on {machine_line(machine)}."]
    for name, (command, elapsed) in runs.items():
        header, rows, note = tables[name](results[name])
        parts += [
            f"### {TITLES[name]}",
            f"`{command}`: {elapsed:.0f} s on {stamp}, the machine above.",
            markdown_table(header, rows),
        ]
        if note:
            parts.append(note)
    return "\n\n".join(parts)


def _propagation(run: Figures) -> str:
    return f"{run['propagation']['p50_s']:,.1f} / {run['propagation']['p95_s']:,.1f} s"


def _freshness(run: Figures) -> str:
    return f"{run['propagation']['cold_start_s']:,.0f} s; {run['propagation']['max_staleness_s']:,.0f} s"


def _health(run: Figures) -> str:
    return f"{'yes' if run['state_files_agree'] else 'NO'}; {_warnings(run)}"


# The fleet table's rows: what, how one run shows it, the target.
FLEET_ROWS: list[tuple[str, Callable[[Figures], str], str]] = [
    (
        "GitHub requests per app per interval, less one per webhook",
        lambda r: f"{r['requests_per_app_per_interval_besides_webhooks']:.3f}",
        "<= 1.05 on",
    ),
    ("requests while the app was fresh (duplicates)", lambda r: f"{r['duplicate_requests']:,}", "0 on"),
    (
        "rate-limited requests; busiest host's requests in an hour (quota 60)",
        lambda r: f"{r['rate_limited']}; {r['busiest_host_requests_per_hour']}",
        "0; < 60",
    ),
    ("publish -> every host's state file: p50 / p95", _propagation, "p95 <= 5 s on"),
    ("cold start; largest staleness served", _freshness, ""),
    (
        "Redis per idle tick: round trips; bytes when nothing changed",
        lambda r: f"{r['redis_round_trips_per_idle_tick']:.3f}; {r['redis_bytes_per_quiet_tick']:,.0f} B",
        "1; <= 2 KB",
    ),
    (
        "Redis per one-second look: round trips; bytes",
        lambda r: f"{r['redis_round_trips_per_look']:.3f}; {r['redis_bytes_per_look']:,.0f} B",
        "",
    ),
    ("Redis commands per host per hour", lambda r: f"{r['redis_commands_per_host_hour']:,.0f}", ""),
    ("state files agree; warnings", _health, "yes; none"),
]


def fleet_table(figures: Figures) -> Table:
    """Return coordination on and off side by side, then one row per extra run."""
    on, off = figures["on"], figures["off"]
    rows: list[Row] = [(what, show(on), show(off), target) for what, show, target in FLEET_ROWS]
    rows += _fleet_extra_rows(figures)
    return ["figure", "coordination on", "off", "target"], rows, ""


def _fleet_extra_rows(figures: Figures) -> list[Row]:
    """The kill, flood, large-fleet and history runs, coordination on, one row each."""
    rows: list[Row] = []
    kill, flood, big, history = (figures.get(key) for key in ("kill", "flood", "big", "history"))
    if kill and kill["killed_host"]:
        lapse = f"{kill['lapse_s']:,.0f} s" if kill["lapse_s"] is not None else "never"
        rows.append(("a host killed mid-claim: extra requests (next one after)",
                     f"{kill['extra_requests']} ({lapse})", "", "<= 1"))  # fmt: skip
    if flood:
        gap = f"{flood['min_gap_s']:.1f} s" if flood["min_gap_s"] is not None else "n/a"
        what = (
            f"{flood['deliveries']:,} webhooks for one app in {flood['over_s']:g} s: requests; shortest gap"
        )
        rows.append((what, f"{flood['requests']}; {gap}", "", "<= 7; >= 10 s"))
    if big:
        rows.append((f"{big['hosts']:,} hosts, {big['hours']:g} h: requests per app per interval less "
                     "webhooks; duplicates; p95 publish",
                     f"{big['requests_per_app_per_interval_besides_webhooks']:.3f}; "
                     f"{big['duplicate_requests']}; {big['propagation']['p95_s']:.1f} s",
                     "", "<= 1.05; 0; <= 5 s"))  # fmt: skip
    if history:
        rows.append(("every app needing history: requests per app per interval",
                     f"{history['requests_per_app_per_interval']:.3f} "
                     f"(none: {figures['on']['requests_per_app_per_interval']:.3f})", "", ""))  # fmt: skip
    return rows


def _warnings(figures: Figures) -> str:
    return ", ".join(f"{name} {count}" for name, count in figures["warnings"].items()) or "none"


def endpoint_table(figures: Figures) -> Table:
    """Return each path's requests/s, p99, server CPU and ratio; the note has targets and errors."""
    cpu, plain_rps = figures["cpu_ms_per_request"], figures["ours"]["rps"]

    def row(name: str, key: str, ratio: float | None = None, baseline: str = "") -> Row:
        load = _load(figures, key)
        by_cpu = cpu.get(baseline, 0.0) / cpu[key] if cpu.get(key) else 0.0
        shown = f"{ratio:.2f} ({by_cpu:.2f})" if ratio is not None else ""
        return (name, f"{load['rps']:,.0f}", f"{load['p99_ms']:.2f} ms", f"{cpu.get(key, 0.0):.2f} ms", shown)

    coded = figures["coded_ratio_to_bare"]
    served = "the last served" if figures["last_change_served"] else "NOT served"
    rows = [
        row("plain", "ours", figures["ratio_to_bare"], "bare"),
        row(f"brotli ({figures['coded_bytes']['br']:,} B)", "ours_br", coded["br"], "bare_br"),
        row(f"gzip ({figures['coded_bytes']['gzip']:,} B)", "ours_gzip", coded["gzip"], "bare_gzip"),
        row(f"If-None-Match: 304 ({figures['not_modified_ratio']:.2f} x plain)", "not_modified",
            figures["not_modified_ratio_to_bare"], "bare_not_modified"),
        row("?channel=beta", "beta", figures["beta_ratio_to_bare"], "bare_beta"),
        *(row(f"signed, {SIGNED_PATHS[key.removeprefix('signed')]}", key, ratio, f"bare_{key}")
          for key, ratio in figures["signed_ratio_to_bare"].items()),
        row(f"downloads page ({figures['page_bytes']:,} B), to plain", "page",
            figures["page"]["rps"] / plain_rps, "ours"),
        row("a download redirect (302), to plain", "redirect",
            figures["redirect"]["rps"] / plain_rps, "ours"),
        row("nginx, static file" if figures["static_server"] == "nginx" else "Python http.server", "static"),
        row(f"plain, a change every second ({figures['changes_published']}, {served})", "under_change"),
    ]  # fmt: skip
    return (
        ["path", "requests/s", "p99", "server CPU / request", "ratio (by CPU)"],
        rows,
        _endpoint_note(figures),
    )


def _load(figures: Figures, key: str) -> Figures:
    """Return one path's load figures, wherever the report keeps them."""
    if key.startswith("signed"):
        return dict(figures["signed"][key])
    if key in ("ours_br", "ours_gzip"):
        return dict(figures["ours_coded"][key.removeprefix("ours_")])
    return dict(figures[key])


def _loads(figures: Figures) -> list[Figures]:
    """Return the load figures of every row the endpoint benchmark ran, bare views included."""
    keys = ("ours", "bare", "not_modified", "bare_not_modified", "beta", "bare_beta", "page", "redirect")
    return [
        *(figures[key] for key in (*keys, "static", "under_change")),
        *figures["ours_coded"].values(),
        *figures["bare_coded"].values(),
        *figures["signed"].values(),
        *figures["bare_signed"].values(),
    ]


def _endpoint_note(figures: Figures) -> str:
    loads = _loads(figures)
    errors, requests = sum(load["errors"] for load in loads), sum(load["requests"] for load in loads)
    tool = "wrk" if figures["loadgen"] == "wrk" else "the built-in Python generator (no wrk)"
    target = CONTROLS_TARGET if figures["controls"] else RATIO_TARGET
    note = (
        "Ratio: requests/s over the bare Django view sending the same bytes and headers (by server CPU "
        f"per request in brackets), target {target}; the page and the redirect over plain, target about 1. "
        f"A {figures['body_bytes']:,}-byte answer; load by {tool}; "
        f"{errors:,} errors in {requests:,} requests."
    )
    if figures["controls"]:
        note += f" Release controls in force on every row: {'; '.join(figures['controls'])}."
    encoded = ", ".join(f"{channel} {count:.2f}" for channel, count in figures["encoded_per_version"].items())
    return note + (f" Answers encoded per state version: {encoded}." if encoded else "")


def launcher_table(figures: Figures) -> Table:
    """Return the bytes of each kind of poll against its target, and the day's total."""
    plain = figures["plain_json_bytes"]
    first, unchanged, release = figures["first"], figures["unchanged"], figures["release"]
    gzip_only = figures["gzip_only_release_bytes"]
    now = sum(sum(kind["bytes_now"]) for kind in (first, unchanged, release))
    today = sum(sum(kind["bytes_today"]) for kind in (first, unchanged, release))
    breakdown = " / ".join(f"{n:,}" for n in figures["not_modified_breakdown"].values())
    rows: list[Row] = [
        (f"first poll (no ETag yet), of a {plain:,} B JSON", _bytes_and_share(first["bytes_now"], plain), ""),
        ("a poll where nothing it sees changed (304)", f"{_max(unchanged['bytes_now']):,} B",
         f"<= {UNCHANGED_TARGET_BYTES} B"),
        ("a poll after a release", _bytes_and_share(release["bytes_now"], plain),
         f"<= {RELEASE_TARGET_SHARE:.0%}"),
        ("the same, accepting only gzip (mean)", _mean_and_share(gzip_only, plain), ""),
        ("the day, now / with the old strong ETag",
         f"{now / 1024:,.1f} / {today / 1024:,.1f} KiB ({today / max(now, 1):,.0f} x)", ""),
        ("a 304: request / status line and gunicorn / ours / the site's", f"{breakdown} B", ""),
    ]  # fmt: skip
    return ["figure", "measured", "target"], rows, ""


def _max(values: list[int]) -> int:
    return max(values) if values else 0


def _mean_and_share(values: list[int], plain: int) -> str:
    mean = sum(values) / len(values) if values else 0.0
    return f"{mean:,.0f} B ({mean / max(plain, 1):.1%})" if values else "n/a"


def _bytes_and_share(values: list[int], plain: int) -> str:
    return f"{_max(values):,} B ({_max(values) / max(plain, 1):.1%})" if values else "n/a"


def footprint_table(figures: Figures) -> Table:
    """Return memory over the rounds, then what an idle tick and a one-second look cost."""
    o = figures["options"]
    per_tick = {
        name: count / max(1, o["idle_ticks"]) for name, count in figures["idle_tick_command_mix"].items()
    }
    mix = ", ".join(f"{name} {count:g}" for name, count in per_tick.items())
    rows: list[Row] = [
        (f"resident memory after round {figures['early_round']:,} / {o['rounds']:,}",
         f"{figures['rss_early_kib'] / 1024:.1f} / {figures['rss_end_kib'] / 1024:.1f} MiB", ""),
        ("growth: resident / Python heap",
         f"{figures['rss_growth_kib']:+,} / {figures['python_heap_growth_kib']:+,.1f} KiB", "none"),
        ("an idle tick: CPU (median / p95)",
         f"{figures['idle_tick_cpu_ms_median']:.2f} / {figures['idle_tick_cpu_ms_p95']:.2f} ms", ""),
        ("an idle tick: Redis round trips (max); bytes",
         f"{figures['idle_tick_round_trips_max']}; {figures['idle_tick_bytes']:,.0f} B", "1; <= 2 KB"),
        ("an idle tick: Redis commands", f"{figures['idle_tick_commands']:g} ({mix})", ""),
        ("a one-second look, fleet: bytes; CPU (alone: CPU)",
         f"{figures['look_bytes']:,.0f} B; {figures['look_cpu_ms_median']:.3f} ms "
         f"({figures['look_alone_cpu_ms_median']:.3f} ms)", ""),
        (f"round trips per idle tick with `health_check_interval: {HEALTH_CHECK_INTERVAL_SECS}`",
         f"{figures['health_check_round_trips']:g}" if o["health_check_ticks"] else "not measured", "1"),
        ("warnings logged", _warnings(figures), "none"),
    ]  # fmt: skip
    return ["figure", "measured", "target"], rows, ""


def reports_table(figures: Figures) -> Table:
    """Return the install reports' figures in one row: rate, ratios to the bare view, cost, Redis."""
    cpu, options = figures["refused_cpu_us"], figures["options"]
    row: Row = (
        f"{figures['accepted_per_s_per_worker']:,.0f} (p50 {figures['post_p50_ms']:.1f} ms)",
        f"{figures['ratio_to_bare']:.3f}",
        f"{figures['flood_ratio_to_bare']:.3f} ({options['flood']:,} from {options['flood_installs']:,} ids)",
        f"{cpu['address_rate']:,.0f} / {cpu['bare']:,.0f} µs",
        f"{figures['release_bytes'] / 1000:,.1f} KB; {figures['mark_bytes_per_install']:,.0f} B",
    )
    header = [
        "reports/s a worker",
        "release_info / bare view, reports arriving",
        "the same, during a flood",
        "web CPU: a refused report / a bare answer",
        "Redis: a release; an install",
    ]
    return header, [row], f"Target: both ratios at least {REPORTS_RATIO_TARGET}."

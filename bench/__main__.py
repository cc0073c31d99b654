"""``python -m bench``: every benchmark, each in a process of its own, then all the figures.

Each benchmark runs as ``python -m bench.<name> ... --json FILE`` (so resident memory and CPU
time are its own); ``bench.summary`` makes one table per benchmark from those figures, under
the machine's description and with the command that made it, printed, and with ``--docs``
written between the figure markers of docs/benchmarks.md. Sizes default to the full
benchmark; the smoke test passes tiny ones.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.endpoint import EndpointOptions
from bench.fleet import FleetOptions
from bench.footprint import FootprintOptions
from bench.launcher import LauncherOptions
from bench.report import machine, read_json_output, rewrite_figures
from bench.reports import ReportsOptions
from bench.summary import figures_markdown
from craft_apps.kernel.compat import UTC

ROOT = Path(__file__).resolve().parent.parent


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    fleet, endpoint, footprint = FleetOptions(), EndpointOptions(), FootprintOptions()
    launcher, reports = LauncherOptions(), ReportsOptions()
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    group = parser.add_argument_group("fleet")
    group.add_argument("--hosts", type=int, default=fleet.hosts)
    group.add_argument("--hours", type=float, default=fleet.hours)
    group.add_argument("--releases", type=int, default=fleet.releases)
    group.add_argument("--seed", type=int, default=fleet.seed)
    group.add_argument("--kill-hours", type=float, default=fleet.kill_hours)
    group.add_argument("--flood", type=int, default=fleet.flood)
    group.add_argument("--flood-minutes", type=float, default=fleet.flood_minutes)
    group.add_argument("--big-hosts", type=int, default=fleet.big_hosts)
    group.add_argument("--big-hours", type=float, default=fleet.big_hours)
    group = parser.add_argument_group("endpoint")
    group.add_argument("--seconds", type=float, default=endpoint.seconds)
    group.add_argument("--connections", type=int, default=endpoint.connections)
    group.add_argument("--loadgen", choices=["auto", "wrk", "python"], default=endpoint.loadgen)
    group.add_argument("--static", choices=["auto", "nginx", "python"], default=endpoint.static)
    group.add_argument(
        "--signing", action="store_true", help="also the signed endpoint beside bare views with its headers"
    )
    group.add_argument(
        "--controls", action="store_true", help="every endpoint row with a staged rollout and a yank in force"
    )
    group = parser.add_argument_group("launcher")
    group.add_argument("--launcher-hours", type=float, default=launcher.hours)
    group.add_argument("--launcher-releases", type=int, default=launcher.releases)
    group = parser.add_argument_group("footprint")
    group.add_argument("--rounds", type=int, default=footprint.rounds)
    group.add_argument("--idle-ticks", type=int, default=footprint.idle_ticks)
    group.add_argument("--health-check-ticks", type=int, default=footprint.health_check_ticks)
    group.add_argument("--health-check-scale", type=float, default=footprint.health_check_scale)
    group = parser.add_argument_group("reports (--seconds and --loadgen as the endpoint's)")
    group.add_argument("--reports", type=int, default=reports.reports)
    group.add_argument("--reports-steady-rate", type=float, default=reports.steady_rate)
    group.add_argument("--reports-flood", type=int, default=reports.flood)
    group.add_argument("--reports-flood-installs", type=int, default=reports.flood_installs)
    group = parser.add_argument_group("output")
    group.add_argument("--docs", type=Path, help="rewrite the figures in this file (docs/benchmarks.md)")
    group.add_argument("--json", type=Path, help="write every figure here")
    return parser.parse_args(argv)


def _commands(args: argparse.Namespace) -> dict[str, list[str]]:
    return {
        "fleet": [
            "--hosts", str(args.hosts), "--hours", f"{args.hours:g}", "--releases", str(args.releases),
            "--seed", str(args.seed), "--kill-hours", f"{args.kill_hours:g}",
            "--flood", str(args.flood), "--flood-minutes", f"{args.flood_minutes:g}",
            "--big-hosts", str(args.big_hosts), "--big-hours", f"{args.big_hours:g}",
        ],
        "endpoint": [
            "--seconds", f"{args.seconds:g}", "--connections", str(args.connections),
            "--loadgen", args.loadgen, "--static", args.static, *(["--signing"] if args.signing else []),
            *(["--controls"] if args.controls else []),
        ],
        "launcher": [
            "--launcher-hours", f"{args.launcher_hours:g}",
            "--launcher-releases", str(args.launcher_releases), "--seed", str(args.seed),
        ],
        "footprint": [
            "--rounds", str(args.rounds), "--idle-ticks", str(args.idle_ticks),
            "--health-check-ticks", str(args.health_check_ticks),
            "--health-check-scale", f"{args.health_check_scale:g}",
        ],
        "reports": [
            "--seconds", f"{args.seconds:g}", "--loadgen", args.loadgen, "--reports", str(args.reports),
            "--steady-rate", f"{args.reports_steady_rate:g}", "--flood", str(args.reports_flood),
            "--flood-installs", str(args.reports_flood_installs),
        ],
    }  # fmt: skip


def _run(name: str, flags: list[str], output: Path) -> tuple[dict[str, Any], str, float]:
    command = [sys.executable, "-m", f"bench.{name}", *flags, "--json", str(output)]
    print(f"== bench.{name} {shlex.join(flags)}", file=sys.stderr, flush=True)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"bench.{name} failed with status {done.returncode}")
    figures, text = read_json_output(output)
    print(f"   done in {elapsed:.0f} s", file=sys.stderr, flush=True)
    return figures, text, elapsed


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    commands = _commands(args)
    # Other work on the machine lowers every requests/s figure (compare the side-by-side ratios).
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    results: dict[str, Any] = {}
    runs: dict[str, tuple[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        for name, flags in commands.items():
            figures, _, elapsed = _run(name, flags, Path(tmp) / f"{name}.json")
            results[name] = figures
            runs[name] = (shlex.join(["python", "-m", f"bench.{name}", *flags]), elapsed)
    rows = machine()
    rows.insert(1, ("load average before the run (1, 5, 15 min)", load))
    results["machine"] = dict(rows)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    markdown = figures_markdown(results, runs, stamp, rows)
    print(markdown)
    if args.docs:
        rewrite_figures(args.docs, markdown)
        print(f"\nFigures written to {args.docs}.", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

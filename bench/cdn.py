"""Launchers behind a real caching proxy: origin load, bytes per poll, how fast a release and a
yank reach every launcher, and an origin outage, with Varnish or nginx in front, or none.

``--launchers`` simulated launchers (``bench.cdn_fleet``, one asyncio process, loopback only)
poll ``release_info`` through the proxy chosen by ``--proxy`` (``varnish``, ``nginx``, or
``none``: straight at gunicorn), each every ``--poll-every`` seconds with its own jitter and
the ETag it holds. The origin is the real stack (``bench.cdn_site``): the GitHub stand-in,
``poll_craft_releases``, gunicorn with two workers and a signing key. ``--purge`` hands the
origin the CDN purge settings (``CRAFT_APPS_CDN_PURGE_*``, Varnish only: nginx's open-source
build has no purge).

Time is not compressed: the proxy keeps an answer for the origin's real ``max-age`` (60 s), so
the launchers poll on the real clock too. A launcher in the field polls every few minutes; here
it polls every ``--poll-every`` (30 s by default) so that a run takes minutes; the proxy's load
per launcher is larger for it, the origin's is not. The phases, one after the other:

1. ``warm-up``: one poll period, every launcher's first poll (a 200);
2. ``steady``: ``--steady`` seconds of polling with nothing changing: origin requests per
   minute, bytes per poll, and how late this process started its polls against the schedule;
3. ``release``: a new release of one app on the stand-in, with GitHub's webhook; until every
   launcher holds it (bounded: max-age, plus two poll periods, plus 10 s);
4. ``yank``: that release yanked, as the admin does; until no launcher holds it (same bound);
5. ``outage``: gunicorn stopped for ``--outage`` seconds (longer than max-age, so only
   ``stale-if-error`` answers): every poll's answer and signature, then gunicorn again.

For a change: from the change to each launcher's first poll that shows it (p50, p99, max: the
poll period is most of it), and the stale window, from the change to the last poll sent after
it that still got the old answer (the targets: 5 s with purge, max-age plus 2 s without).

Run ``python -m bench.cdn --help``; ``--launchers`` and ``--proxy`` take lists (every
combination is a run of its own). Results go to stdout as Markdown (``--json`` too).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.cdn_fleet import Event, Fleet, Totals
from bench.cdn_site import APP, PATH, Origin, start_proxy
from bench.report import json_output, markdown_table
from bench.stats import percentile
from craft_apps.kernel.versions import tag_version
from tests.cdn.support import Server

logger = logging.getLogger("bench.cdn")

YANK_TARGET_WITH_PURGE_S = 5.0
PHASES = ("release", "yank", "outage")


@dataclass(frozen=True)
class CdnOptions:
    proxy: str = "varnish"  # varnish, nginx, none
    launchers: int = 10_000
    purge: bool = False
    poll_every_s: float = 30.0
    jitter: float = 0.1  # each poll period within +/- this share
    steady_s: float = 60.0
    outage_s: float = 75.0
    connections: int = 64
    seed: int = 1
    phases: tuple[str, ...] = PHASES
    max_run_s: float = 900.0  # the whole run is bounded


@dataclass
class PhaseFigures:
    name: str
    seconds: float
    polls: int
    ok: int
    not_modified: int
    failed: int
    bytes_per_poll: float
    origin_requests: int
    origin_requests_per_min: float
    bad_signatures: dict[str, int]
    late_p99_s: float | None
    latency_p99_ms: float | None


@dataclass
class ChangeFigures:
    name: str
    seen: int  # launchers that saw it
    launchers: int
    seen_p50_s: float | None
    seen_p99_s: float | None
    seen_max_s: float | None
    stale_polls: int
    stale_window_s: float


@dataclass
class CdnReport:
    options: CdnOptions
    max_age_s: int
    phases: list[PhaseFigures] = field(default_factory=list)
    changes: list[ChangeFigures] = field(default_factory=list)
    duration_s: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)  # unexpected errors in polls, by type


def phase_figures(name: str, seconds: float, totals: Totals, origin_requests: int) -> PhaseFigures:
    return PhaseFigures(
        name=name,
        seconds=seconds,
        polls=totals.polls,
        ok=totals.ok,
        not_modified=totals.not_modified,
        failed=totals.failed,
        bytes_per_poll=totals.bytes / max(1, totals.ok + totals.not_modified),
        origin_requests=origin_requests,
        origin_requests_per_min=origin_requests / seconds * 60 if seconds else 0.0,
        bad_signatures=dict(totals.bad_signatures),
        late_p99_s=percentile(totals.late_s, 0.99),
        latency_p99_ms=None if not totals.latency_s else (percentile(totals.latency_s, 0.99) or 0) * 1000,
    )


def change_figures(event: Event, launchers: int) -> ChangeFigures:
    seen = list(event.first_seen.values())
    return ChangeFigures(
        name=event.name,
        seen=len(seen),
        launchers=launchers,
        seen_p50_s=percentile(seen, 0.5),
        seen_p99_s=percentile(seen, 0.99),
        seen_max_s=max(seen) if seen else None,
        stale_polls=event.stale_polls,
        stale_window_s=event.last_stale_s,
    )


class Run:
    """One run: an origin, a proxy (or none), a fleet, and the phases in order."""

    def __init__(self, options: CdnOptions, origin: Origin, port: int, max_age_s: int) -> None:
        self.options = options
        self.origin = origin
        self.report = CdnReport(options, max_age_s)
        self.fleet = Fleet(
            "127.0.0.1",
            port,
            PATH,
            options.launchers,
            poll_every_s=options.poll_every_s,
            jitter=options.jitter,
            connections=options.connections,
            public_keys=[origin.key.public],
            seed=options.seed,
        )
        self.deadline = time.monotonic() + options.max_run_s
        self._mark = time.monotonic()  # when the phase being counted began

    async def phase(self, name: str, seconds: float) -> None:
        """Polls for ``seconds`` (at most until the run's deadline), then records the phase."""
        started = time.monotonic()
        await asyncio.sleep(max(0.0, min(seconds, self.deadline - started)))
        self.record(name, started)

    def record(self, name: str, started: float) -> None:
        elapsed = time.monotonic() - started
        requests = self.origin.launcher_requests()
        if name.startswith("before") and self.fleet.totals.polls == 0 and not requests:
            return  # nothing between the last phase and this change
        self.report.phases.append(phase_figures(name, elapsed, self.fleet.take_totals(), requests))
        logger.info("%s: %.0f s, %d origin requests", name, elapsed, requests)

    async def change(self, name: str, make: Callable[[], object], shows: Callable[[bytes], bool]) -> None:
        """Makes a change, then polls until every launcher holds it (bounded)."""
        self.record(f"before the {name}", self._mark)
        await asyncio.to_thread(make)
        event = Event(name, time.monotonic(), shows)
        self.fleet.add_event(event)
        self._mark = event.at
        bound = self.report.max_age_s + 2 * self.options.poll_every_s * (1 + self.options.jitter) + 10
        until = min(event.at + bound, self.deadline)
        while self.fleet.holding(event) < self.options.launchers and time.monotonic() < until:
            await asyncio.sleep(0.5)
        self.record(name, event.at)
        self._mark = time.monotonic()
        self.report.changes.append(change_figures(event, self.options.launchers))

    async def outage(self) -> None:
        self._mark = time.monotonic()
        await asyncio.to_thread(self.origin.stop_gunicorn)
        await self.phase("outage", self.options.outage_s)
        await asyncio.to_thread(self.origin.start_gunicorn)
        self.origin.launcher_requests()  # the outage's own are counted; what follows isn't

    async def run(self) -> CdnReport:
        started = time.monotonic()
        task = asyncio.create_task(self.fleet.run())
        try:
            await self.phase("warm-up", self.options.poll_every_s * (1 + self.options.jitter))
            await self.phase("steady", self.options.steady_s)
            self._mark = time.monotonic()
            await self._changes()
        finally:
            self.fleet.stop()
            await task
        self.report.duration_s = time.monotonic() - started
        self.report.errors = dict(self.fleet.errors)
        return self.report

    async def _changes(self) -> None:
        tag = ""
        if "release" in self.options.phases:
            version = _next_version(self.origin)
            tag = f"v{version}"
            await self.change(
                "release", lambda: self.origin.release(version), lambda body: _latest_tag(body) == tag
            )
        if "yank" in self.options.phases and tag:
            await self.change("yank", lambda: self.origin.yank(tag), lambda body: tag.encode() not in body)
        if "outage" in self.options.phases and self.options.proxy != "none":
            await self.outage()


def _latest_tag(body: bytes) -> str | None:
    app = json.loads(body)["release_info"]["apps"].get(APP.key) or {}
    return (app.get("latest_release") or {}).get("tag")


def _next_version(origin: Origin) -> str:
    with_tag = origin.github.published()[APP.repo]["tag_name"]
    version = tag_version(with_tag)
    if version is None:
        raise RuntimeError(f"the demo tag {with_tag} is not a version")
    return str(version.bump_minor())


def purge_env(options: CdnOptions, proxy_port: int) -> dict[str, str]:
    """The purge settings, pointed at the proxy (Varnish answers PURGE from the loopback)."""
    if not options.purge:
        return {}
    return {
        "CRAFT_APPS_CDN_PURGE_KIND": "http",
        "CRAFT_APPS_CDN_PURGE_URL": f"http://127.0.0.1:{proxy_port}{{path}}",
        "CRAFT_APPS_CDN_PURGE_METHOD": "PURGE",
        "CRAFT_APPS_CDN_PUBLIC_URL": f"http://127.0.0.1:{proxy_port}",
    }


def run_cdn_benchmark(options: CdnOptions) -> CdnReport:
    if options.purge and options.proxy != "varnish":
        raise SystemExit("--purge needs --proxy varnish (nginx's open-source build has no purge)")
    with tempfile.TemporaryDirectory(prefix="bench-cdn-") as tmp:
        workdir = Path(tmp)
        workdir.chmod(0o755)
        origin = Origin(workdir)
        proxy: Server | None = None
        try:
            # The proxy first: the purge settings name its port (it waits for the origin).
            if options.proxy != "none":
                proxy = start_proxy(options.proxy, workdir, origin.port)
                origin.env.update(purge_env(options, proxy.port))  # type: ignore[attr-defined]
            origin.start()
            port: int = getattr(proxy, "port", origin.port)
            return asyncio.run(Run(options, origin, port, origin.max_age_s()).run())
        finally:
            if proxy is not None:
                proxy.stop()
            origin.stop()


# --- The report ------------------------------------------------------------------------------


def _s(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} s"


def _where(options: CdnOptions) -> str:
    if options.proxy == "none":
        return "straight at the origin"
    return f"through {options.proxy}" + (", purge on" if options.purge else ", no purge")


def markdown(report: CdnReport) -> str:
    o = report.options
    head = (
        f"{o.launchers:,} launchers {_where(o)}, each polling every {o.poll_every_s:g} s "
        f"(+/- {o.jitter:.0%}); the origin's max-age {report.max_age_s} s; {report.duration_s:.0f} s in all."
    )
    phases = [
        (
            p.name,
            f"{p.seconds:.0f} s",
            f"{p.polls:,}",
            f"{p.ok:,} / {p.not_modified:,} / {p.failed:,}",
            f"{p.bytes_per_poll:,.0f} B",
            f"{p.origin_requests:,} ({p.origin_requests_per_min:,.1f}/min)",
            ", ".join(f"{n} {why}" for why, n in p.bad_signatures.items()) or "none",
            _s(p.late_p99_s),
        )
        for p in report.phases
    ]
    header = ["phase", "time", "polls", "200 / 304 / failed", "bytes per poll", "origin requests",
              "refused signatures", "poll start late (p99)"]  # fmt: skip
    if report.errors:
        head += (
            " Unexpected errors in polls: " + ", ".join(f"{n} {e}" for e, n in report.errors.items()) + "."
        )
    parts = [head, "", markdown_table(header, phases)]
    if report.changes:
        rows = [
            (
                c.name,
                f"{c.seen:,} of {c.launchers:,}",
                f"{_s(c.seen_p50_s)} / {_s(c.seen_p99_s)} / {_s(c.seen_max_s)}",
                f"{c.stale_window_s:.1f} s ({c.stale_polls:,} polls)",
            )
            for c in report.changes
        ]
        header = [
            "change",
            "launchers that saw it",
            "to each launcher: p50 / p99 / max",
            "stale window (old answer served)",
        ]
        parts += ["", markdown_table(header, rows)]
    return "\n".join(parts)


def _options(args: argparse.Namespace, proxy: str, launchers: int) -> CdnOptions:
    return CdnOptions(
        proxy=proxy,
        launchers=launchers,
        purge=args.purge,
        poll_every_s=args.poll_every,
        jitter=args.jitter,
        steady_s=args.steady,
        outage_s=args.outage,
        connections=args.connections,
        seed=args.seed,
        phases=tuple(p for p in args.phases.split(",") if p),
        max_run_s=args.max_run,
    )


MAX_LAUNCHERS = 200_000


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    d = CdnOptions()
    parser = argparse.ArgumentParser(prog="python -m bench.cdn", description=__doc__.split("\n")[0])
    parser.add_argument("--proxy", default=d.proxy, help="varnish, nginx or none; a comma-separated list")
    parser.add_argument("--launchers", default=str(d.launchers), help="a number; a comma-separated list")
    parser.add_argument("--purge", action="store_true", help="the origin purges Varnish on a change")
    parser.add_argument("--poll-every", type=float, default=d.poll_every_s, help="seconds")
    parser.add_argument("--jitter", type=float, default=d.jitter, help="share of the poll period")
    parser.add_argument("--steady", type=float, default=d.steady_s, help="seconds")
    parser.add_argument("--outage", type=float, default=d.outage_s, help="seconds")
    parser.add_argument("--connections", type=int, default=d.connections)
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--phases", default=",".join(d.phases), help="of release,yank,outage")
    parser.add_argument("--max-run", type=float, default=d.max_run_s, help="seconds, per run")
    parser.add_argument("--json", type=Path, help="also write the figures and their Markdown here")
    args = parser.parse_args(argv)
    for count in args.launchers.split(","):
        if not 1 <= int(count) <= MAX_LAUNCHERS:
            parser.error(f"--launchers: {count} is not within 1..{MAX_LAUNCHERS:,}")
    if not 0 <= args.jitter < 1 or args.poll_every <= 0 or args.max_run <= 0:
        parser.error("--jitter within [0, 1), --poll-every and --max-run above 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    reports: list[CdnReport] = []
    for launchers in (int(n) for n in args.launchers.split(",")):
        for proxy in args.proxy.split(","):
            reports.append(run_cdn_benchmark(_options(args, proxy, launchers)))
            print(markdown(reports[-1]), end="\n\n", file=sys.stderr, flush=True)  # each as it ends
    text = "\n\n".join(markdown(report) for report in reports)
    print(text)
    if args.json:
        figures: dict[str, Any] = {"runs": [asdict(report) for report in reports]}
        json_output(args.json, figures, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

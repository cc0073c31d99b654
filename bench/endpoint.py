"""The endpoint under load, beside a bare Django view and nginx serving the same bytes.

The demo site runs under gunicorn (one sync worker per core, no debug) on a state file filled
with the 13 demo releases (a dozen assets each, a few KiB of notes). One load generator (wrk, or
the built-in Python one where wrk is missing) hits, taking turns in a few rounds: our endpoint
in each coding (plain, brotli, gzip), each beside a bare Django view on the same server returning
the same bytes (``bench.site_urls``), and our endpoint revalidated (``If-None-Match``: every
answer a 304) beside a bare view's empty 304. Then the same JSON as a static file under nginx
(the practical ceiling; Python's http.server stands in where nginx is missing, and is labelled
so), and our endpoint again while a writer holding the poller's lease publishes a change to the
state file every second. Every server is started here on a free port and stopped before
returning.

Run ``python -m bench.endpoint --help``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import cycle
from pathlib import Path

from bench.loadgen import LoadResult, merge_results, run_load, wrk_available
from bench.report import finish, markdown_table
from bench.site_paths import BARE_BODY_ENV, BARE_CODINGS, BARE_NOT_MODIFIED, bare_path
from craft_apps.api.answer import RECHECK_S
from craft_apps.api.representation import best_brotli
from craft_apps.clock import SystemClock
from craft_apps.conf import DEFAULT_APPS
from craft_apps.domain import AppState
from craft_apps.github.parsing import parse_release
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.instants import format_ms
from craft_apps.testing.demo_releases import demo_releases
from tests.fleet.server import free_port

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
ENDPOINT_PATH = "v1/craft_apps/release_info"
STATIC_NAME = "release_info.json"
READY_TIMEOUT_S = 30.0
P99_TARGET_MS = 10.0
RATIO_TARGET = 0.9
NOT_MODIFIED_TARGET = 2.0  # the 304 path against the plain 200 path
SETTLE_S = 10.0  # how long the workers may take to refine their brotli form
ROUNDS = 5  # the side-by-side paths take turns this many times


@dataclass(frozen=True)
class EndpointOptions:
    seconds: float = 10.0
    connections: int = 32
    workers: int = os.cpu_count() or 1
    loadgen: str = "auto"  # wrk, python, or auto: wrk when installed
    static: str = "auto"  # nginx, python, or auto: nginx when installed
    change_every_s: float = 1.0


@dataclass
class EndpointReport:
    options: EndpointOptions
    loadgen: str
    static_server: str
    body_bytes: int
    ours: LoadResult
    bare: LoadResult
    static: LoadResult
    under_change: LoadResult
    changes_published: int
    last_change_served: bool
    ratio_to_bare: float
    coded_bytes: dict[str, int]  # the answer's size in each coding
    ours_coded: dict[str, LoadResult]  # by coding: br, gzip
    bare_coded: dict[str, LoadResult]
    coded_ratio_to_bare: dict[str, float]
    not_modified: LoadResult
    not_modified_ratio: float  # the 304 path's requests/s over the plain 200 path's
    bare_not_modified: LoadResult  # a bare view's empty 304: the floor of any revalidation
    not_modified_ratio_to_bare: float


# --- The state and the servers ---------------------------------------------------------------


def fill_state(state_dir: Path) -> None:
    """The 13 demo releases, parsed as the poller parses GitHub's answers, all fresh."""
    store = StateStore(state_dir)
    store.open_for_writing()
    lease = Lease(store, holder="bench-fill", clock=SystemClock())
    if not lease.try_acquire() or lease.fence is None:
        raise RuntimeError(f"the lease of {store.path} is held by someone else")
    now_ms = SystemClock().now_ms()
    releases = demo_releases()
    for app in DEFAULT_APPS:
        body = json.dumps(releases[app.repo]).encode()
        release = parse_release(body, app.repo)
        state = AppState(latest_release=release, fetched_ms=now_ms, etag=f'"{app.key}-demo"')
        store.put_app(app.key, state, fence=lease.fence)
    lease.release()
    store.close()


@contextlib.contextmanager
def running(command: list[str], *, env: dict[str, str], log: Path, ready_url: str) -> Iterator[None]:
    """Runs ``command`` until the block ends; waits until ``ready_url`` answers 200."""
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=output, stderr=output,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{command[0]} exited with {process.returncode}: {_tail(log)}")
            with (
                contextlib.suppress(OSError, urllib.error.URLError),
                urllib.request.urlopen(ready_url, timeout=2) as answer,
            ):
                if answer.status == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command[0]} not ready within {READY_TIMEOUT_S:g} s: {_tail(log)}")
            time.sleep(0.05)  # a starting server, not a timer under test
        yield
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _tail(log: Path) -> str:
    try:
        return " | ".join(log.read_text(errors="replace").strip().splitlines()[-5:])
    except OSError:
        return "(no log)"


def gunicorn_command(port: int, workers: int) -> list[str]:
    return [
        sys.executable, "-m", "gunicorn",
        "--workers", str(workers),
        "--bind", f"127.0.0.1:{port}",
        "--log-level", "warning",
        "config.wsgi:application",
    ]  # fmt: skip


def site_env(state_dir: Path, body_file: Path, workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="bench.site_settings",
        DJANGO_DEBUG="false",
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        DJANGO_DB_NAME=str(workdir / "site.sqlite3"),
        DJANGO_LOG_LEVEL="WARNING",
        CRAFT_APPS_STATE_DIR=str(state_dir),
        PYTHONPATH=str(ROOT),
    )
    env[BARE_BODY_ENV] = str(body_file)
    return env


def nginx_config(www: Path, port: int, workdir: Path, workers: int) -> str:
    return f"""\
worker_processes {workers};
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    client_body_temp_path {workdir}/nginx-body;
    proxy_temp_path {workdir}/nginx-proxy;
    fastcgi_temp_path {workdir}/nginx-fastcgi;
    uwsgi_temp_path {workdir}/nginx-uwsgi;
    scgi_temp_path {workdir}/nginx-scgi;
    types {{ application/json json; }}
    server {{
        listen 127.0.0.1:{port};
        root {www};
    }}
}}
"""


def static_command(kind: str, www: Path, port: int, workdir: Path, workers: int) -> list[str]:
    if kind == "nginx":
        config = workdir / "nginx.conf"
        config.write_text(nginx_config(www, port, workdir, workers))
        nginx = shutil.which("nginx") or "nginx"
        return [nginx, "-e", str(workdir / "nginx-error.log"), "-p", str(workdir), "-c", str(config)]
    return [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(www), str(port)]


# --- A poller's writes while under load --------------------------------------------------------


class ChangeWriter(threading.Thread):
    """Holds the poller's lease and moves one app's fetch time every ``every_s`` seconds."""

    def __init__(self, state_dir: Path, every_s: float) -> None:
        super().__init__(name="bench-change-writer", daemon=True)
        self.stop = threading.Event()
        self.every_s = every_s
        self.store = StateStore(state_dir)
        self.changes = 0
        self.last: tuple[str, int] | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        clock = SystemClock(self.stop)
        lease = Lease(self.store, holder="bench-poller", clock=clock)
        try:
            if not lease.try_acquire() or lease.fence is None:
                raise RuntimeError("the writer could not take the poller's lease")
            apps = self.store.read().apps
            for key in cycle(sorted(apps)):
                if not clock.sleep(self.every_s):
                    break
                if not lease.renew_if_due() or lease.fence is None:
                    raise RuntimeError("the writer lost the poller's lease")
                state = replace(apps[key], fetched_ms=clock.now_ms())
                if self.store.put_app(key, state, fence=lease.fence):
                    apps[key] = state
                    self.changes += 1
                    self.last = (key, state.fetched_ms or 0)
        except BaseException as err:  # reported with the figures
            self.error = err
        finally:
            lease.release()
            self.store.close_current_thread()


def serves_change(url: str, change: tuple[str, int] | None, workers: int) -> bool:
    """Whether every worker serves the last change once the endpoint's recheck window passed."""
    if change is None:
        return False
    time.sleep(RECHECK_S + 0.05)
    key, fetched_ms = change
    for _ in range(4 * workers):
        with urllib.request.urlopen(url, timeout=5) as answer:
            data = json.load(answer)
        if data["release_info"]["apps"][key]["app_last_fetched"] != format_ms(fetched_ms):
            return False
    return True


# --- The benchmark ---------------------------------------------------------------------------


def _choose(requested: str, installed: bool, preferred: str) -> str:
    if requested == "auto":
        return preferred if installed else "python"
    if requested == preferred and not installed:
        raise RuntimeError(f"{preferred} is not installed (bash .ci/bench installs it)")
    return requested


def run_endpoint_benchmark(options: EndpointOptions) -> EndpointReport:
    tool = _choose(options.loadgen, wrk_available(), "wrk")
    static_kind = _choose(options.static, shutil.which("nginx") is not None, "nginx")
    with tempfile.TemporaryDirectory(prefix="bench-endpoint-") as tmp:
        workdir = Path(tmp)
        state_dir = workdir / "state"
        www = workdir / "www"
        www.mkdir()
        fill_state(state_dir)
        body_file = www / STATIC_NAME
        # nginx's workers may run as another user: they need to reach the file.
        for path in (workdir, www):
            path.chmod(0o755)
        site_port, static_port = free_port(), free_port()
        site = f"http://127.0.0.1:{site_port}"
        ours_url, bare_url = f"{site}/{ENDPOINT_PATH}", f"{site}/{bare_path()}"
        static_url = f"http://127.0.0.1:{static_port}/{STATIC_NAME}"
        env = site_env(state_dir, body_file, workdir)

        def load(url: str, headers: dict[str, str] | None = None) -> LoadResult:
            _warm_up(url, options.workers * 4, headers)
            return run_load(
                url, connections=options.connections, seconds=options.seconds, tool=tool, headers=headers
            )

        site_command = gunicorn_command(site_port, options.workers)
        with running(site_command, env=env, log=workdir / "gunicorn.log", ready_url=ours_url):
            body = _get(ours_url)
            coded = {c: settled_form(ours_url, body, c, options.workers) for c in BARE_CODINGS}
            # Before the bare views' first requests, which read them.
            for suffix, content in (("", body), *((f".{c}", coded[c]) for c in BARE_CODINGS)):
                (www / (STATIC_NAME + suffix)).write_bytes(content)
                (www / (STATIC_NAME + suffix)).chmod(0o644)
            if _get(bare_url) != body:
                raise RuntimeError("the bare view doesn't serve the endpoint's bytes")
            for coding in BARE_CODINGS:
                if _get(f"{site}/{bare_path(coding)}", {"Accept-Encoding": coding}) != coded[coding]:
                    raise RuntimeError(f"the bare {coding} view doesn't serve the endpoint's bytes")
            etag = _header(ours_url, "ETag")
            side_by_side = interleaved(
                {
                    "ours": (ours_url, {}),
                    "bare": (bare_url, {}),
                    **{f"ours {c}": (ours_url, {"Accept-Encoding": c}) for c in BARE_CODINGS},
                    **{f"bare {c}": (f"{site}/{bare_path(c)}", {"Accept-Encoding": c}) for c in BARE_CODINGS},
                    "304": (ours_url, {"Accept-Encoding": "br, gzip", "If-None-Match": etag}),
                    "bare 304": (f"{site}/{bare_path(BARE_NOT_MODIFIED)}", {}),
                },
                options,
                tool,
            )
            ours, bare, not_modified = side_by_side["ours"], side_by_side["bare"], side_by_side["304"]
            bare_not_modified = side_by_side["bare 304"]
            ours_coded = {c: side_by_side[f"ours {c}"] for c in BARE_CODINGS}
            bare_coded = {c: side_by_side[f"bare {c}"] for c in BARE_CODINGS}
            with running(
                static_command(static_kind, www, static_port, workdir, options.workers),
                env=dict(os.environ),
                log=workdir / "static.log",
                ready_url=static_url,
            ):
                if _get(static_url) != body:
                    raise RuntimeError("the static server doesn't serve the same bytes")
                static = load(static_url)
            writer = ChangeWriter(state_dir, options.change_every_s)
            writer.start()
            try:
                under_change = load(ours_url)
            finally:
                writer.stop.set()
                writer.join(timeout=30)
            if writer.error is not None:
                raise RuntimeError(f"the change writer failed: {writer.error!r}")
            last_served = serves_change(ours_url, writer.last, options.workers)
    return EndpointReport(
        options=options,
        loadgen=tool,
        static_server=static_kind,
        body_bytes=len(body),
        ours=ours,
        bare=bare,
        static=static,
        under_change=under_change,
        changes_published=writer.changes,
        last_change_served=last_served,
        ratio_to_bare=_ratio(ours, bare),
        coded_bytes={coding: len(content) for coding, content in coded.items()},
        ours_coded=ours_coded,
        bare_coded=bare_coded,
        coded_ratio_to_bare={c: _ratio(ours_coded[c], bare_coded[c]) for c in BARE_CODINGS},
        not_modified=not_modified,
        not_modified_ratio=_ratio(not_modified, ours),
        bare_not_modified=bare_not_modified,
        not_modified_ratio_to_bare=_ratio(not_modified, bare_not_modified),
    )


def interleaved(
    targets: dict[str, tuple[str, dict[str, str]]], options: EndpointOptions, tool: str
) -> dict[str, LoadResult]:
    """Each target's load, in ``ROUNDS`` rounds that take the targets in turn.

    Compared paths so share the machine's moments: on a machine where other work comes and goes
    (two cores, other jobs), back-to-back runs of 10 s each would compare different moments.
    """
    rounds = ROUNDS if options.seconds >= ROUNDS else 1
    results: dict[str, list[LoadResult]] = {name: [] for name in targets}
    for url, headers in targets.values():
        _warm_up(url, options.workers * 4, headers)
    for _ in range(rounds):
        for name, (url, headers) in targets.items():
            result = run_load(
                url,
                connections=options.connections,
                seconds=options.seconds / rounds,
                tool=tool,
                headers=headers,
            )
            results[name].append(result)
    return {name: merge_results(parts) for name, parts in results.items()}


def _ratio(result: LoadResult, baseline: LoadResult) -> float:
    return round(result.rps / baseline.rps, 3) if baseline.rps else 0.0


def settled_form(url: str, body: bytes, coding: str, workers: int) -> bytes:
    """The endpoint's answer in ``coding`` once every worker serves its final bytes.

    Each worker remakes its brotli form at the best quality in the background after its first
    request (``Refiner``), in well under a second on an idle machine; every form is
    deterministic, so every worker ends up sending the same bytes, known in advance for brotli.
    """
    best_br = best_brotli(body)
    deadline = time.monotonic() + SETTLE_S
    accept = {"Accept-Encoding": coding}
    _warm_up(url, workers * 4, accept)
    while True:
        seen = {_get(url, accept) for _ in range(workers * 4)}
        if len(seen) == 1 and (coding != "br" or seen == {best_br}):
            return seen.pop()
        if time.monotonic() > deadline:
            raise RuntimeError(f"the workers' {coding} answers are not settled after {SETTLE_S:g} s")
        time.sleep(0.2)  # the background refinement's time, not a timer under test


def _get(url: str, headers: dict[str, str] | None = None) -> bytes:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return bytes(answer.read())
    except urllib.error.HTTPError as err:
        if err.code == 304:  # urllib's way of telling a revalidation went well
            return b""
        raise


def _header(url: str, name: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return str(answer.headers[name])


def _warm_up(url: str, requests: int, headers: dict[str, str] | None = None) -> None:
    for _ in range(requests):
        _get(url, headers)


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} ms"


def markdown(report: EndpointReport) -> str:
    o = report.options
    static_name = "nginx, static file" if report.static_server == "nginx" else "Python http.server (no nginx)"
    change_note = f"{report.changes_published} changes published, the last one served: " + (
        "yes" if report.last_change_served else "NO"
    )

    def row(name: str, result: LoadResult, note: str) -> tuple[str, ...]:
        return (
            name,
            f"{result.rps:,.0f}",
            _ms(result.p50_ms),
            _ms(result.p99_ms),
            _ms(result.max_ms),
            f"{result.errors:,} of {result.requests:,}",
            note,
        )

    coded_rows = []
    for coding, name in (("br", "brotli"), ("gzip", "gzip")):
        size = f"{report.coded_bytes[coding]:,} bytes"
        ratio = report.coded_ratio_to_bare[coding]
        coded_rows += [
            row(f"our endpoint, {name}", report.ours_coded[coding], f"{size}; {ratio:.2f} of the bare view"),
            row(f"bare Django view, same {name} bytes", report.bare_coded[coding], ""),
        ]
    rows = [
        row("our endpoint, plain", report.ours, f"{report.ratio_to_bare:.2f} of the bare view"),
        row("bare Django view, same bytes", report.bare, ""),
        *coded_rows,
        row(
            "our endpoint, If-None-Match: 304",
            report.not_modified,
            f"{report.not_modified_ratio:.2f} x the plain 200 path; "
            f"{report.not_modified_ratio_to_bare:.2f} of the bare view",
        ),
        row("bare Django view, empty 304", report.bare_not_modified, ""),
        row(static_name, report.static, "the practical ceiling" if report.static_server == "nginx" else ""),
        row(f"our endpoint, plain, a change every {o.change_every_s:g} s", report.under_change, change_note),
    ]
    header = ["", "requests/s", "p50", "p99", "max", "errors", ""]
    tool = "wrk -t2" if report.loadgen == "wrk" else "the built-in Python generator (no wrk)"
    coded = report.coded_ratio_to_bare
    return "\n".join(
        [
            f"gunicorn with {o.workers} sync workers, no debug; {tool}, {o.connections} connections, "
            f"{o.seconds:g} s each; a {report.body_bytes:,}-byte answer (13 apps, 13 assets each).",
            "",
            markdown_table(header, rows),
            "",
            f"Targets: each of our paths at least {RATIO_TARGET} of the bare view serving the same bytes "
            f"(measured: plain {report.ratio_to_bare:.2f}, brotli {coded['br']:.2f}, "
            f"gzip {coded['gzip']:.2f}); "
            f"the 304 path at least {NOT_MODIFIED_TARGET:g} x the plain 200 path (measured "
            f"{report.not_modified_ratio:.2f}; a bare view's empty 304 makes "
            f"{_ratio(report.bare_not_modified, report.ours):.2f} x); "
            f"p99 under {P99_TARGET_MS:g} ms (measured "
            f"{_ms(report.ours.p99_ms)}, {_ms(report.under_change.p99_ms)} under changes).",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    defaults = EndpointOptions()
    parser = argparse.ArgumentParser(prog="python -m bench.endpoint", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=defaults.seconds, help="load per server")
    parser.add_argument("--connections", type=int, default=defaults.connections)
    parser.add_argument("--workers", type=int, default=defaults.workers, help="gunicorn workers")
    parser.add_argument("--loadgen", choices=["auto", "wrk", "python"], default=defaults.loadgen)
    parser.add_argument("--static", choices=["auto", "nginx", "python"], default=defaults.static)
    parser.add_argument("--json", type=Path, help="also write the figures and their Markdown here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    options = EndpointOptions(
        seconds=args.seconds,
        connections=args.connections,
        workers=args.workers,
        loadgen=args.loadgen,
        static=args.static,
    )
    report = run_endpoint_benchmark(options)
    return finish(report, markdown(report), args.json)


if __name__ == "__main__":
    raise SystemExit(main())

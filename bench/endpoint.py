"""The endpoint under load, beside a bare Django view and nginx serving the same bytes, and the
downloads page and a download redirect, which read the same per-process answer.

The demo site runs under gunicorn (one sync worker per core, no debug) on a state file filled
with the 13 demo releases (a dozen assets each, a few KiB of notes). One load generator (wrk, or
the built-in Python one where wrk is missing) hits, taking turns in a few rounds: our endpoint
in each coding (plain, brotli, gzip), each beside a bare Django view on the same server returning
the same bytes with the same ETag, Cache-Control and Vary (``bench.site_urls``), and our
endpoint revalidated (``If-None-Match``: every answer a 304) beside a bare view's 304 with the
same headers, and the downloads page (``/craft_apps/downloads/``,
one rendered variant) and a download redirect (a ``302``) beside them all. Then the same JSON as
a static file under nginx (the practical ceiling; Python's http.server stands in where nginx is
missing, and is labelled so), and our endpoint again while a writer holding the poller's lease
publishes a change to the state file every second. Every load also gives the server's CPU time
per request (``cpu_seconds``), which other work on the machine barely moves. Every server is
started here on a free port and stopped before returning.

With ``--signing``, a second gunicorn serves the same state with a signing key (``SIGNING_KEY``,
one generated for the run) and its rows join the same rounds: our signed endpoint plain, in
brotli, in gzip and revalidated (a 304), each beside a bare view serving the same bytes and the
same headers (the signature, ETag, Cache-Control and Vary our endpoint sent, precomputed).

With ``--controls``, release controls are in force on the site's database before any server
starts (``bench.release_controls``: a staged rollout of one app's latest tag at 25 % with a
step a day ahead, a yank of another app's latest tag), so every row is measured with them, each
bare view serving the bytes of the controlled answer; before timing, every worker's stable and
beta answer (and the signed server's) is checked to carry the rollout field and not the yanked
tag, and afterwards a web process's runtime counts the answers it encodes per state version and
channel (``AnswerCache.encoded``).

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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from itertools import cycle
from pathlib import Path

from bench import release_controls
from bench.loadgen import LoadResult, merge_results, run_load, wrk_available
from bench.report import finish, markdown_table
from bench.site_paths import (
    BARE_BETA,
    BARE_BODY_ENV,
    BARE_CODINGS,
    BARE_HEADERS_ENV,
    BARE_NOT_MODIFIED,
    bare_path,
)
from craft_apps.api.answer import RECHECK_S
from craft_apps.api.representation import best_brotli
from craft_apps.conf import DEFAULT_APPS
from craft_apps.github.parsing import parse_release
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel import signing
from craft_apps.kernel.clock import SystemClock
from craft_apps.kernel.domain import AppState, Release
from craft_apps.kernel.instants import format_ms
from craft_apps.kernel.versions import tag_version
from craft_apps.testing.demo_releases import demo_releases
from tests.support import free_port

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
ENDPOINT_PATH = "v1/craft_apps/release_info"
PAGE_PATH = "craft_apps/downloads/"
REDIRECT_PATH = "v1/craft_apps/download/photocraft/windows/x64"
STATIC_NAME = "release_info.json"
READY_TIMEOUT_S = 30.0
P99_TARGET_MS = 10.0
RATIO_TARGET = 0.9
NOT_MODIFIED_TARGET = 2.0  # the 304 path against the plain 200 path
SIGNED_TARGET = 0.95  # each signed path against the bare view sending the same bytes and headers
# The signed paths, by the suffix of the report's keys (signed, signed_br, ...): their names.
SIGNED_PATHS = {"": "plain", "_br": "brotli", "_gzip": "gzip", "_not_modified": "If-None-Match: 304"}
# What the signed endpoint sends that a bare view must send too (Content-Encoding it sends itself).
SIGNED_HEADERS = (signing.HEADER, "ETag", "Cache-Control", "Vary")
CONTROLS_TARGET = 0.95  # with --controls: each path against the bare view sending the same bytes
ENCODED_VERSIONS = 5  # with --controls: the state versions the answers encoded are counted over
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
    signing: bool = False  # also the signed endpoint beside bare views with its headers
    controls: bool = False  # a staged rollout and a yank in force on every row


@dataclass
class EndpointReport:
    options: EndpointOptions
    loadgen: str
    static_server: str
    body_bytes: int
    page_bytes: int
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
    bare_not_modified: LoadResult  # a bare view's 304 (our headers): the floor of any revalidation
    not_modified_ratio_to_bare: float
    beta: LoadResult  # ?channel=beta, every app on beta, some with a newer prerelease
    bare_beta: LoadResult  # a bare view serving the beta answer's bytes
    beta_ratio_to_bare: float
    beta_bytes: int
    page: LoadResult  # the downloads page, one variant
    redirect: LoadResult  # a download link's 302
    # The server's CPU time per request, by load: the report's field names (ours_br for
    # ours_coded["br"], ...). Unlike requests/s, barely moved by other work on the machine.
    cpu_ms_per_request: dict[str, float]
    # With --signing, by the report's key (signed, signed_br, signed_gzip, signed_not_modified):
    # our signed endpoint, the bare view with the same bytes and headers, and ours over it.
    signed: dict[str, LoadResult] = field(default_factory=dict)
    bare_signed: dict[str, LoadResult] = field(default_factory=dict)
    signed_ratio_to_bare: dict[str, float] = field(default_factory=dict)
    # With --controls: the controls in force, and the answers a runtime encoded per state
    # version, by channel (one each is the design).
    controls: tuple[str, ...] = ()
    encoded_per_version: dict[str, float] = field(default_factory=dict)


# --- The state and the servers ---------------------------------------------------------------


PRERELEASE_APPS = 3  # the first apps (by key) get a newer prerelease in their history


def fill_state(state_dir: Path, older: frozenset[str] = frozenset()) -> None:
    """The 13 demo releases, parsed as the poller parses GitHub's answers, all fresh; the first
    ``PRERELEASE_APPS`` apps also have a release candidate of their next minor version in their
    history, which the beta channel serves, and the apps in ``older`` the patch release before
    their latest (which release controls fall back to)."""
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
        history: tuple[Release, ...] = (release,)
        if app.key in sorted(a.key for a in DEFAULT_APPS)[:PRERELEASE_APPS]:
            history = (_next_candidate(release), release)
        if app.key in older:
            history = (*history, release_controls.previous_release(release))
        store.put_history(app.key, history, fence=lease.fence, repo=app.repo)
    lease.release()
    store.close()


def _next_candidate(stable: Release) -> Release:
    """A release candidate of the minor version after ``stable``'s, a day later."""
    version = tag_version(stable.tag)
    if version is None:
        raise RuntimeError(f"the demo tag {stable.tag} is not a version")
    candidate = f"{version.bump_minor()}-rc.1"
    return replace(
        stable,
        tag=f"v{candidate}",
        version=candidate,
        name=f"{stable.name} {candidate}",
        prerelease=True,
        published_at=None if stable.published_at is None else stable.published_at + timedelta(days=1),
        html_url=stable.html_url.replace(stable.tag, f"v{candidate}"),
    )


def prepare_site_database(env: dict[str, str], workdir: Path, controls: bool = False) -> None:
    """Migrates the benchmark site's database and turns beta on for every app, as an operator
    would (``craft_apps_notices import``); with ``controls``, writes the benchmark's release
    controls (``bench.release_controls``)."""
    document = {
        "format": "craft_apps_notices",
        "version": 1,
        "app_channels": [
            {"id": i + 1, "app_key": app.key, "channels": ["beta"]} for i, app in enumerate(DEFAULT_APPS)
        ],
    }
    channels = workdir / "channels.json"
    channels.write_text(json.dumps(document))
    manage = [sys.executable, str(ROOT / "manage.py")]
    commands = [
        [*manage, "migrate", "--noinput", "-v", "0"],
        [*manage, "craft_apps_notices", "import", str(channels)],
    ]
    if controls:
        commands.append([sys.executable, "-m", "bench.release_controls", "write"])
    for command in commands:
        done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command[1:3])} failed: {done.stderr.strip()[-500:]}")


@contextlib.contextmanager
def running(
    command: list[str], *, env: dict[str, str], log: Path, ready_url: str
) -> Iterator[subprocess.Popen[bytes]]:
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
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def cpu_seconds(root_pid: int) -> float:
    """CPU time (user + system) used so far by a process and its direct children (a server's
    master and workers): unlike requests per second, barely moved by other load on the machine."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(stat.parent.name) == root_pid or int(fields[1]) == root_pid:
            total += int(fields[11]) + int(fields[12])  # utime, stime in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


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
            self.store.file.connections.close_current_thread()


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
        fill_state(state_dir, release_controls.OLDER_APPS if options.controls else frozenset())
        body_file = www / STATIC_NAME
        # nginx's workers may run as another user: they need to reach the file.
        for path in (workdir, www):
            path.chmod(0o755)
        site_port, static_port = free_port(), free_port()
        site = f"http://127.0.0.1:{site_port}"
        ours_url, bare_url = f"{site}/{ENDPOINT_PATH}", f"{site}/{bare_path()}"
        static_url = f"http://127.0.0.1:{static_port}/{STATIC_NAME}"
        page_url, redirect_url = f"{site}/{PAGE_PATH}", f"{site}/{REDIRECT_PATH}"
        env = site_env(state_dir, body_file, workdir)
        # The bare views send the endpoint's ETag, Cache-Control and Vary too: the same answer.
        headers_file = www / "headers.json"
        env[BARE_HEADERS_ENV] = str(headers_file)
        prepare_site_database(env, workdir, options.controls)
        beta_url = f"{ours_url}?channel=beta"
        cpu_ms: dict[str, float] = {}

        def load(name: str, url: str, server: subprocess.Popen[bytes]) -> LoadResult:
            _warm_up(url, options.workers * 4)
            result, used = _load_with_cpu(server.pid, url, {}, options.seconds, options, tool)
            cpu_ms[name] = _cpu_ms(used, result.requests)
            return result

        site_command = gunicorn_command(site_port, options.workers)
        with (
            running(site_command, env=env, log=workdir / "gunicorn.log", ready_url=ours_url) as site_server,
            contextlib.ExitStack() as signed_site,
        ):
            if options.controls:
                controls_in_force({"stable": ours_url, "beta": beta_url}, options.workers)
            body = _get(ours_url)
            coded = {c: settled_form(ours_url, body, c, options.workers) for c in BARE_CODINGS}
            # Before the bare views' first requests, which read them.
            for suffix, content in (("", body), *((f".{c}", coded[c]) for c in BARE_CODINGS)):
                (www / (STATIC_NAME + suffix)).write_bytes(content)
                (www / (STATIC_NAME + suffix)).chmod(0o644)
            beta_body = _get(beta_url)
            if beta_body == body:
                raise RuntimeError("the beta channel serves the stable answer: no prerelease in it")
            (www / f"{STATIC_NAME}.{BARE_BETA}").write_bytes(beta_body)
            etag = _header(ours_url, "ETag")
            sent = {
                "": _headers(ours_url, {}),
                **{f".{c}": _headers(ours_url, {"Accept-Encoding": c}) for c in BARE_CODINGS},
                f".{BARE_NOT_MODIFIED}": _headers(
                    ours_url, {"Accept-Encoding": "br, gzip", "If-None-Match": etag}
                ),
                f".{BARE_BETA}": _headers(beta_url, {}),
            }
            headers_file.write_text(json.dumps({suffix: sorted(h.items()) for suffix, h in sent.items()}))
            if _get(bare_url) != body or _headers(bare_url, {}) != sent[""]:
                raise RuntimeError("the bare view doesn't serve the endpoint's bytes and headers")
            if _headers(f"{site}/{bare_path(BARE_NOT_MODIFIED)}", {}) != sent[f".{BARE_NOT_MODIFIED}"]:
                raise RuntimeError("the bare 304 doesn't send the endpoint's headers")
            if _get(f"{site}/{bare_path(BARE_BETA)}") != beta_body:
                raise RuntimeError("the bare beta view doesn't serve the beta answer's bytes")
            for coding in BARE_CODINGS:
                if _get(f"{site}/{bare_path(coding)}", {"Accept-Encoding": coding}) != coded[coding]:
                    raise RuntimeError(f"the bare {coding} view doesn't serve the endpoint's bytes")
            page_bytes = len(_get(page_url))
            if _status(redirect_url) != 302:
                raise RuntimeError(f"/{REDIRECT_PATH} doesn't redirect")
            signed_targets: dict[str, tuple[str, dict[str, str]]] = {}
            signed_pids: dict[str, int] = {}
            if options.signing:
                signed_targets, signed_pid = signed_site.enter_context(
                    serving_signed(state_dir, workdir, options.workers, options.controls)
                )
                signed_pids = dict.fromkeys(signed_targets, signed_pid)
            side_by_side, side_by_side_cpu = interleaved(
                {
                    "ours": (ours_url, {}),
                    "bare": (bare_url, {}),
                    **{f"ours_{c}": (ours_url, {"Accept-Encoding": c}) for c in BARE_CODINGS},
                    **{f"bare_{c}": (f"{site}/{bare_path(c)}", {"Accept-Encoding": c}) for c in BARE_CODINGS},
                    "not_modified": (ours_url, {"Accept-Encoding": "br, gzip", "If-None-Match": etag}),
                    "bare_not_modified": (f"{site}/{bare_path(BARE_NOT_MODIFIED)}", {}),
                    "beta": (beta_url, {}),
                    "bare_beta": (f"{site}/{bare_path(BARE_BETA)}", {}),
                    "page": (page_url, {}),
                    "redirect": (redirect_url, {}),
                    **signed_targets,
                },
                options,
                tool,
                site_server.pid,
                signed_pids,
            )
            cpu_ms.update(side_by_side_cpu)
            ours, bare = side_by_side["ours"], side_by_side["bare"]
            not_modified, bare_not_modified = side_by_side["not_modified"], side_by_side["bare_not_modified"]
            ours_coded = {c: side_by_side[f"ours_{c}"] for c in BARE_CODINGS}
            bare_coded = {c: side_by_side[f"bare_{c}"] for c in BARE_CODINGS}
            with running(
                static_command(static_kind, www, static_port, workdir, options.workers),
                env=dict(os.environ),
                log=workdir / "static.log",
                ready_url=static_url,
            ) as static_server:
                if _get(static_url) != body:
                    raise RuntimeError("the static server doesn't serve the same bytes")
                static = load("static", static_url, static_server)
            writer = ChangeWriter(state_dir, options.change_every_s)
            writer.start()
            try:
                under_change = load("under_change", ours_url, site_server)
            finally:
                writer.stop.set()
                writer.join(timeout=30)
            if writer.error is not None:
                raise RuntimeError(f"the change writer failed: {writer.error!r}")
            last_served = serves_change(ours_url, writer.last, options.workers)
        encoded = answers_encoded(env) if options.controls else {}
    return EndpointReport(
        options=options,
        loadgen=tool,
        static_server=static_kind,
        body_bytes=len(body),
        page_bytes=page_bytes,
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
        beta=side_by_side["beta"],
        bare_beta=side_by_side["bare_beta"],
        beta_ratio_to_bare=_ratio(side_by_side["beta"], side_by_side["bare_beta"]),
        beta_bytes=len(beta_body),
        page=side_by_side["page"],
        redirect=side_by_side["redirect"],
        cpu_ms_per_request=cpu_ms,
        signed={f"signed{s}": side_by_side[f"signed{s}"] for s in SIGNED_PATHS if signed_targets},
        bare_signed={f"signed{s}": side_by_side[f"bare_signed{s}"] for s in SIGNED_PATHS if signed_targets},
        signed_ratio_to_bare={
            f"signed{s}": _ratio(side_by_side[f"signed{s}"], side_by_side[f"bare_signed{s}"])
            for s in SIGNED_PATHS
            if signed_targets
        },
        controls=release_controls.describe(release_controls.latest_tags()) if options.controls else (),
        encoded_per_version=encoded,
    )


def controls_in_force(urls: Mapping[str, str], workers: int) -> None:
    """Waits until every worker's answer at each of ``urls`` (by channel) applies the
    benchmark's controls (each worker's notices feed reads them in the background); raises
    with what is wrong when they don't within ``READY_TIMEOUT_S``: a bench of a broken
    feature fails before it times anything."""
    tags = release_controls.latest_tags()
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        found = None
        for channel, url in urls.items():
            for _ in range(workers * 4):
                found = found or release_controls.problem(json.loads(_get(url)), tags, channel)
        if found is None:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the controls are not in force after {READY_TIMEOUT_S:g} s: {found}")
        time.sleep(0.2)  # the workers' notices feeds look in the background, not a timer under test


def answers_encoded(env: dict[str, str]) -> dict[str, float]:
    """The answers a web process's runtime encodes per state version, by channel, with the
    controls in force (``bench.release_controls encoded``, in the site's environment)."""
    command = [sys.executable, "-m", "bench.release_controls", "encoded", "--versions", str(ENCODED_VERSIONS)]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"counting the answers encoded failed: {done.stderr.strip()[-500:]}")
    counted = json.loads(done.stdout.strip().splitlines()[-1])
    versions = counted["versions"]
    return {channel: round(count / versions, 2) for channel, count in counted["encoded"].items()}


@contextlib.contextmanager
def serving_signed(
    state_dir: Path, workdir: Path, workers: int, controls: bool = False
) -> Iterator[tuple[dict[str, tuple[str, dict[str, str]]], int]]:
    """A second gunicorn on the same state with a signing key, its bare views sending the bytes
    and headers its endpoint sends; yields the signed rows' targets and the server's pid."""
    signed_dir = workdir / "signed"
    signed_dir.mkdir()
    body_file, headers_file = signed_dir / STATIC_NAME, signed_dir / "headers.json"
    port = free_port()
    site = f"http://127.0.0.1:{port}"
    ours_url = f"{site}/{ENDPOINT_PATH}"
    env = site_env(state_dir, body_file, workdir)
    # In the server's environment only: never written to disk, never printed.
    env["CRAFT_APPS_SIGNING_KEY"] = signing.private_key_text(signing.generate())
    env[BARE_HEADERS_ENV] = str(headers_file)
    command = gunicorn_command(port, workers)
    with running(command, env=env, log=workdir / "gunicorn-signed.log", ready_url=ours_url) as server:
        if controls:
            controls_in_force({"signed stable": ours_url, "signed beta": f"{ours_url}?channel=beta"}, workers)
        body = _get(ours_url)
        forms = {"": body, **{f".{c}": settled_form(ours_url, body, c, workers) for c in BARE_CODINGS}}
        for suffix, content in forms.items():
            (signed_dir / (STATIC_NAME + suffix)).write_bytes(content)
        sent = {
            "": _headers(ours_url, {}),
            **{f".{c}": _headers(ours_url, {"Accept-Encoding": c}) for c in BARE_CODINGS},
        }
        if any(signing.HEADER not in headers for headers in sent.values()):
            raise RuntimeError(f"the endpoint with a signing key sends no {signing.HEADER}")
        etag = sent[""]["ETag"]
        revalidate = {"Accept-Encoding": "br, gzip", "If-None-Match": etag}
        sent[f".{BARE_NOT_MODIFIED}"] = _headers(ours_url, revalidate)
        headers_file.write_text(
            json.dumps({suffix: sorted(headers.items()) for suffix, headers in sent.items()})
        )
        targets: dict[str, tuple[str, dict[str, str]]] = {
            "signed": (ours_url, {}),
            "bare_signed": (f"{site}/{bare_path()}", {}),
            **{f"signed_{c}": (ours_url, {"Accept-Encoding": c}) for c in BARE_CODINGS},
            **{f"bare_signed_{c}": (f"{site}/{bare_path(c)}", {"Accept-Encoding": c}) for c in BARE_CODINGS},
            "signed_not_modified": (ours_url, revalidate),
            "bare_signed_not_modified": (f"{site}/{bare_path(BARE_NOT_MODIFIED)}", {}),
        }
        # The bare views must send what ours sends: the same bytes, the same headers.
        for ours, suffix in (("signed", ""), *((f"signed_{c}", f".{c}") for c in BARE_CODINGS)):
            url, headers = targets[f"bare_{ours}"]
            if _get(url, headers) != forms[suffix] or _headers(url, headers) != sent[suffix]:
                raise RuntimeError(f"the bare view of {ours} doesn't send the endpoint's bytes and headers")
        url, _ = targets["bare_signed_not_modified"]
        if _headers(url, {}) != sent[f".{BARE_NOT_MODIFIED}"]:
            raise RuntimeError("the bare 304 doesn't send the signed endpoint's headers")
        yield targets, server.pid


def interleaved(
    targets: dict[str, tuple[str, dict[str, str]]],
    options: EndpointOptions,
    tool: str,
    server_pid: int,
    pids: Mapping[str, int] | None = None,
) -> tuple[dict[str, LoadResult], dict[str, float]]:
    """Each target's load, in ``ROUNDS`` rounds that take the targets in turn, and the server's
    CPU milliseconds per request of each (``server_pid``'s, or the one ``pids`` names for it).

    Compared paths so share the machine's moments: on a machine where other work comes and goes
    (two cores, other jobs), back-to-back runs of 10 s each would compare different moments.
    """
    rounds = ROUNDS if options.seconds >= ROUNDS else 1
    results: dict[str, list[LoadResult]] = {name: [] for name in targets}
    cpu_s = dict.fromkeys(targets, 0.0)
    for url, headers in targets.values():
        _warm_up(url, options.workers * 4, headers)
    for _ in range(rounds):
        for name, (url, headers) in targets.items():
            pid = (pids or {}).get(name, server_pid)
            result, used = _load_with_cpu(pid, url, headers, options.seconds / rounds, options, tool)
            results[name].append(result)
            cpu_s[name] += used
    merged = {name: merge_results(parts) for name, parts in results.items()}
    return merged, {name: _cpu_ms(cpu_s[name], merged[name].requests) for name in targets}


def _load_with_cpu(
    server_pid: int, url: str, headers: dict[str, str], seconds: float, options: EndpointOptions, tool: str
) -> tuple[LoadResult, float]:
    """A load on ``url`` and the CPU seconds the server (``server_pid`` and its workers) spent."""
    before = cpu_seconds(server_pid)
    result = run_load(url, connections=options.connections, seconds=seconds, tool=tool, headers=headers)
    return result, cpu_seconds(server_pid) - before


def _cpu_ms(cpu_s: float, requests: int) -> float:
    return round(cpu_s * 1000 / requests, 3) if requests else 0.0


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


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A download link's 302 is the answer measured here, not a way to somewhere else."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """A GET's status and body; a redirect is not followed."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with _OPENER.open(request, timeout=10) as answer:
            return answer.status, bytes(answer.read())
    except urllib.error.HTTPError as err:
        # urllib's way of telling a revalidation went well, or of a redirect not followed.
        if err.code in (302, 304):
            with err:
                return err.code, bytes(err.read())
        raise


def _status(url: str) -> int:
    return _fetch(url)[0]


def _get(url: str, headers: dict[str, str] | None = None) -> bytes:
    status, body = _fetch(url, headers)
    if status not in (200, 304):
        raise RuntimeError(f"{url} answered {status}")
    return body


def _header(url: str, name: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return str(answer.headers[name])


def _headers(url: str, headers: dict[str, str]) -> dict[str, str]:
    """Of ``SIGNED_HEADERS``, those a GET of ``url`` answers (a 304's too)."""
    request = urllib.request.Request(url, headers=headers)
    try:
        with _OPENER.open(request, timeout=10) as answer:
            sent = answer.headers
    except urllib.error.HTTPError as err:
        if err.code != 304:
            raise
        with err:
            sent = err.headers
    return {name: str(sent[name]) for name in SIGNED_HEADERS if name in sent}


def _warm_up(url: str, requests: int, headers: dict[str, str] | None = None) -> None:
    for _ in range(requests):
        _fetch(url, headers)


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} ms"


def markdown(report: EndpointReport) -> str:
    o = report.options
    static_name = "nginx, static file" if report.static_server == "nginx" else "Python http.server (no nginx)"
    change_note = f"{report.changes_published} changes published, the last one served: " + (
        "yes" if report.last_change_served else "NO"
    )
    cpu = report.cpu_ms_per_request

    def by_cpu(key: str, baseline: str) -> float:
        """The requests/s ratio as the server's CPU per request tells it (the baseline's over ours)."""
        return cpu.get(baseline, 0.0) / cpu[key] if cpu.get(key) else 0.0

    def row(name: str, result: LoadResult, key: str, note: str) -> tuple[str, ...]:
        return (
            name,
            f"{result.rps:,.0f}",
            _ms(result.p50_ms),
            _ms(result.p99_ms),
            _ms(result.max_ms),
            f"{result.errors:,} of {result.requests:,}",
            f"{cpu.get(key, 0.0):.2f} ms",
            note,
        )

    coded_rows = []
    for coding, name in (("br", "brotli"), ("gzip", "gzip")):
        size = f"{report.coded_bytes[coding]:,} bytes"
        ratio, ratio_by_cpu = report.coded_ratio_to_bare[coding], by_cpu(f"ours_{coding}", f"bare_{coding}")
        coded_rows += [
            row(
                f"our endpoint, {name}",
                report.ours_coded[coding],
                f"ours_{coding}",
                f"{size}; {ratio:.2f} of the bare view (by CPU {ratio_by_cpu:.2f})",
            ),
            row(
                f"bare Django view, same {name} bytes and headers",
                report.bare_coded[coding],
                f"bare_{coding}",
                "",
            ),
        ]
    page_ratio, redirect_ratio = _ratio(report.page, report.ours), _ratio(report.redirect, report.ours)
    rows = [
        row(
            "our endpoint, plain",
            report.ours,
            "ours",
            f"{report.ratio_to_bare:.2f} of the bare view (by CPU {by_cpu('ours', 'bare'):.2f})",
        ),
        row("bare Django view, same bytes and headers", report.bare, "bare", ""),
        *coded_rows,
        row(
            "our endpoint, If-None-Match: 304",
            report.not_modified,
            "not_modified",
            f"{report.not_modified_ratio:.2f} x the plain 200 path "
            f"(by CPU {by_cpu('not_modified', 'ours'):.2f}); "
            f"{report.not_modified_ratio_to_bare:.2f} of the bare view "
            f"(by CPU {by_cpu('not_modified', 'bare_not_modified'):.2f})",
        ),
        row("bare Django view, 304 with the same headers", report.bare_not_modified, "bare_not_modified", ""),
        row(
            "our endpoint, ?channel=beta, plain",
            report.beta,
            "beta",
            f"{report.beta_bytes:,} bytes; {report.beta_ratio_to_bare:.2f} of the bare view "
            f"(by CPU {by_cpu('beta', 'bare_beta'):.2f})",
        ),
        row("bare Django view, same beta bytes and headers", report.bare_beta, "bare_beta", ""),
        row(
            f"downloads page ({report.page_bytes:,} bytes)",
            report.page,
            "page",
            f"{page_ratio:.2f} of our plain endpoint (by CPU {by_cpu('page', 'ours'):.2f})",
        ),
        row(
            "a download redirect (302)",
            report.redirect,
            "redirect",
            f"{redirect_ratio:.2f} of our plain endpoint (by CPU {by_cpu('redirect', 'ours'):.2f})",
        ),
        *signed_rows(report, row, by_cpu),
        row(
            static_name,
            report.static,
            "static",
            "the practical ceiling" if report.static_server == "nginx" else "",
        ),
        row(
            f"our endpoint, plain, a change every {o.change_every_s:g} s",
            report.under_change,
            "under_change",
            change_note,
        ),
    ]
    header = ["", "requests/s", "p50", "p99", "max", "errors", "server CPU / request", ""]
    tool = "wrk -t2" if report.loadgen == "wrk" else "the built-in Python generator (no wrk)"
    coded = report.coded_ratio_to_bare
    return "\n".join(
        [
            f"gunicorn with {o.workers} sync workers, no debug; {tool}, {o.connections} connections, "
            f"{o.seconds:g} s each; a {report.body_bytes:,}-byte answer (13 apps, 13 assets each)"
            + ("; release controls in force on every row." if report.controls else "."),
            "",
            markdown_table(header, rows),
            "",
            "Ratios compare requests/s; the figure after by CPU compares the server's CPU time per request "
            "instead (the other row's over this row's), which other work on the machine barely moves.",
            "",
            f"Targets: each of our paths at least {RATIO_TARGET} of the bare view serving the same bytes "
            f"(measured: plain {report.ratio_to_bare:.2f}, brotli {coded['br']:.2f}, "
            f"gzip {coded['gzip']:.2f}; by CPU {by_cpu('ours', 'bare'):.2f}, "
            f"{by_cpu('ours_br', 'bare_br'):.2f}, {by_cpu('ours_gzip', 'bare_gzip'):.2f}); "
            f"the 304 path at least {NOT_MODIFIED_TARGET:g} x the plain 200 path (measured "
            f"{report.not_modified_ratio:.2f}, by CPU {by_cpu('not_modified', 'ours'):.2f}; a bare view's "
            f"304 makes {_ratio(report.bare_not_modified, report.ours):.2f} x); "
            f"a page view about what an endpoint request costs (measured: the page {page_ratio:.2f}, "
            f"a redirect {redirect_ratio:.2f} of our plain endpoint; by CPU {by_cpu('page', 'ours'):.2f}, "
            f"{by_cpu('redirect', 'ours'):.2f}); "
            f"p99 under {P99_TARGET_MS:g} ms (measured "
            f"{_ms(report.ours.p99_ms)}, {_ms(report.under_change.p99_ms)} under changes).",
            *signed_targets_line(report, by_cpu),
            *controls_targets_line(report, by_cpu),
        ]
    )


Row = tuple[str, ...]


def signed_rows(
    report: EndpointReport,
    row: Callable[[str, LoadResult, str, str], Row],
    by_cpu: Callable[[str, str], float],
) -> list[Row]:
    """With --signing: each signed path beside its bare view with the same bytes and headers."""
    rows = []
    for key in report.signed:
        name = SIGNED_PATHS[key.removeprefix("signed")]
        ratio = report.signed_ratio_to_bare[key]
        rows += [
            row(
                f"our endpoint, signed, {name}",
                report.signed[key],
                key,
                f"{ratio:.2f} of the bare view (by CPU {by_cpu(key, f'bare_{key}'):.2f})",
            ),
            row(
                f"bare Django view, same bytes and headers, {name}",
                report.bare_signed[key],
                f"bare_{key}",
                "",
            ),
        ]
    return rows


def signed_targets_line(report: EndpointReport, by_cpu: Callable[[str, str], float]) -> list[str]:
    if not report.signed:
        return []
    measured = ", ".join(
        f"{SIGNED_PATHS[key.removeprefix('signed')]} {report.signed_ratio_to_bare[key]:.2f}"
        for key in report.signed
    )
    cpu = ", ".join(f"{by_cpu(key, f'bare_{key}'):.2f}" for key in report.signed)
    return [
        "",
        f"Signing (a second gunicorn with `SIGNING_KEY`, its rows in the same rounds): each signed path at "
        f"least {SIGNED_TARGET} of a bare view sending the same bytes and the same {signing.HEADER}, "
        f"ETag, Cache-Control and Vary (measured: {measured}; by CPU {cpu}).",
    ]


def controls_targets_line(report: EndpointReport, by_cpu: Callable[[str, str], float]) -> list[str]:
    """With --controls: the controls, each path against its bare view, the answers encoded."""
    if not report.controls:
        return []
    # By path: (its key, its bare view's key, ours over the bare view in requests/s).
    paths = {
        "plain": ("ours", "bare", report.ratio_to_bare),
        "brotli": ("ours_br", "bare_br", report.coded_ratio_to_bare["br"]),
        "gzip": ("ours_gzip", "bare_gzip", report.coded_ratio_to_bare["gzip"]),
        "If-None-Match: 304": ("not_modified", "bare_not_modified", report.not_modified_ratio_to_bare),
        "?channel=beta": ("beta", "bare_beta", report.beta_ratio_to_bare),
        **{
            f"signed {SIGNED_PATHS[key.removeprefix('signed')]}": (
                key,
                f"bare_{key}",
                report.signed_ratio_to_bare[key],
            )
            for key in report.signed
        },
    }
    measured = ", ".join(f"{name} {ratio:.2f}" for name, (_, _, ratio) in paths.items())
    cpu = ", ".join(f"{by_cpu(key, bare):.2f}" for key, bare, _ in paths.values())
    below = [name for name, (_, _, ratio) in paths.items() if ratio < CONTROLS_TARGET]
    encoded = ", ".join(f"{channel} {count:.2f}" for channel, count in report.encoded_per_version.items())
    return [
        "",
        f"Release controls (`--controls`): {'; '.join(report.controls)}; every worker's stable and beta "
        "answer checked before timing to carry the rollout field and not the yanked tag. Each path at "
        f"least {CONTROLS_TARGET} of the bare view serving the same bytes (measured: {measured}; "
        f"by CPU {cpu}; below: {', '.join(below) or 'none'}). Answers encoded per state version "
        f"(`AnswerCache.encoded`, a web process's runtime over {ENCODED_VERSIONS} versions): {encoded}.",
    ]


def main(argv: list[str] | None = None) -> int:
    defaults = EndpointOptions()
    parser = argparse.ArgumentParser(prog="python -m bench.endpoint", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=defaults.seconds, help="load per server")
    parser.add_argument("--connections", type=int, default=defaults.connections)
    parser.add_argument("--workers", type=int, default=defaults.workers, help="gunicorn workers")
    parser.add_argument("--loadgen", choices=["auto", "wrk", "python"], default=defaults.loadgen)
    parser.add_argument("--static", choices=["auto", "nginx", "python"], default=defaults.static)
    parser.add_argument(
        "--signing",
        action="store_true",
        help="also the endpoint with a signing key beside bare views sending its bytes and headers",
    )
    parser.add_argument(
        "--controls",
        action="store_true",
        help="every row with a staged rollout and a yank in force (bench.release_controls)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures and their Markdown here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    options = EndpointOptions(
        seconds=args.seconds,
        connections=args.connections,
        workers=args.workers,
        loadgen=args.loadgen,
        static=args.static,
        signing=args.signing,
        controls=args.controls,
    )
    report = run_endpoint_benchmark(options)
    return finish(report, markdown(report), args.json)


if __name__ == "__main__":
    raise SystemExit(main())

"""What one launcher pays per poll: bytes on the wire, request and answer, headers included.

A launcher polls the endpoint every 5 minutes for a simulated day, sending back the ETag it
holds, against a host whose poller revalidates each of the 13 demo apps every 120 s (the
interval with a token; the apps spread over it, so a fetch time moves every ~9 s), while a few
new releases are published at seeded random times (the host shows one at its app's next
revalidation). Each poll's state is written to a real state file as the poller would, and the
request goes through the benchmark site's whole Django stack (``bench.site_settings``: the demo
site, with its SecurityMiddleware and CommonMiddleware) in this process, by WSGI.

On the wire, a request is its request line and headers; an answer is gunicorn's status line and
its own headers (``Server``, ``Date``, ``Connection``), then the site's, then the body: the
framing ``tests/api/test_endpoint_gunicorn.py`` checks against a real gunicorn. The host is busy
(thousands of launchers), so a state version's best brotli form is there when the launcher
comes (a second after the version): the refinement runs before any poll that gets a body.

"Today" is the endpoint before issue 11, modelled by ``today_answer``: a strong ETag over the
whole body, compared as one exact string, no compression. The same launcher, with the same
request headers, holds its ETag.

Run ``python -m bench.launcher --help``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import logging
import os
import random
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.fleet import next_version
from bench.report import finish, markdown_table
from craft_apps.conf import DEFAULT_APPS
from craft_apps.github.parsing import parse_release
from craft_apps.host.lease import Lease
from craft_apps.host.store import StateStore
from craft_apps.kernel.clock import SystemClock
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AppSpec, AppState, Release
from craft_apps.testing.demo_releases import demo_release, demo_releases
from tests.support import S

logger = logging.getLogger(__name__)

PATH = "/v1/craft_apps/release_info"
HOST = "api.example.com"
USER_AGENT = "ArtCraftLauncher/1.4.2"
START_MS = 1_793_318_400_000  # 2026-11-01T00:00:00Z
UNCHANGED_TARGET_BYTES = 300
RELEASE_TARGET_SHARE = 0.15
# What gunicorn puts before the application's headers (its Date is always 29 characters).
SERVER_HEADERS = (("Server", "gunicorn"), ("Date", "Sun, 01 Nov 2026 00:00:00 GMT"), ("Connection", "close"))
REASONS = {200: "OK", 304: "Not Modified"}
OURS = ("etag", "cache-control", "vary", "content-length", "content-type", "content-encoding")
OURS_ON_304 = ("etag", "cache-control", "vary")


@dataclass(frozen=True)
class LauncherOptions:
    hours: float = 24.0
    poll_every_s: float = 300.0
    interval_s: float = 120.0  # the poller's interval with a token
    releases: int = 4
    seed: int = 1
    accept_encoding: str = "br, gzip"


@dataclass
class Kind:
    """The polls of one kind: how many, and the bytes each cost, now and today."""

    polls: int = 0
    bytes_now: list[int] = field(default_factory=list)
    bytes_today: list[int] = field(default_factory=list)
    share_of_json: list[float] = field(default_factory=list)  # now, against that poll's plain JSON

    def add(self, now: int, today: int, plain_json: int) -> None:
        self.polls += 1
        self.bytes_now.append(now)
        self.bytes_today.append(today)
        self.share_of_json.append(now / plain_json)


@dataclass
class LauncherReport:
    options: LauncherOptions
    plain_json_bytes: int  # the answer's JSON at the end of the day
    first: Kind
    unchanged: Kind
    release: Kind
    gzip_only_release_bytes: list[int]  # what a launcher accepting only gzip paid at those polls
    statuses: dict[str, int]
    not_modified_breakdown: dict[str, int]  # one 304 exchange, by who put the bytes there
    releases_published: int
    releases_seen: int

    @property
    def day_bytes_now(self) -> int:
        return sum(sum(k.bytes_now) for k in (self.first, self.unchanged, self.release))

    @property
    def day_bytes_today(self) -> int:
        return sum(sum(k.bytes_today) for k in (self.first, self.unchanged, self.release))


# --- The wire --------------------------------------------------------------------------------


def request_bytes(headers: Iterable[tuple[str, str]], method: str = "GET") -> int:
    lines = [f"{method} {PATH} HTTP/1.1", *(f"{name}: {value}" for name, value in headers)]
    return len(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))


def response_bytes(status: int, headers: Iterable[tuple[str, str]], body_length: int) -> int:
    """An answer as gunicorn frames it: status line, its headers, the application's, the body."""
    lines = [f"HTTP/1.1 {status} {REASONS[status]}"]
    lines += [f"{name}: {value}" for name, value in (*SERVER_HEADERS, *headers)]
    return len(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")) + body_length


def launcher_headers(accept_encoding: str, etag: str | None) -> list[tuple[str, str]]:
    headers = [("Host", HOST), ("User-Agent", USER_AGENT), ("Accept-Encoding", accept_encoding)]
    return headers if etag is None else [*headers, ("If-None-Match", etag)]


@dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def wsgi_get(headers: list[tuple[str, str]]) -> Answer:
    """One GET through the site's whole Django stack, as gunicorn would hand it over."""
    from django.core.handlers.wsgi import WSGIHandler

    environ: dict[str, Any] = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": PATH,
        "QUERY_STRING": "",
        "SERVER_NAME": HOST,
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for name, value in headers:
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    started: list[tuple[str, list[tuple[str, str]]]] = []

    def start_response(status: str, response_headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        started.append((status, response_headers))
        return None

    chunks = WSGIHandler()(environ, start_response)
    try:
        body = b"".join(chunks)
    finally:
        getattr(chunks, "close", lambda: None)()
    status, response_headers = started[0]
    return Answer(int(status.split()[0]), list(response_headers), body)


# --- Today's endpoint, modelled ---------------------------------------------------------------


def today_etag(plain_json: bytes) -> str:
    """The old validator: a strong ETag over the whole body, fetch times included."""
    return '"' + hashlib.sha256(plain_json).hexdigest()[:32] + '"'


def today_answer(
    plain_json: bytes, held_etag: str | None, site_headers: list[tuple[str, str]]
) -> tuple[int, list[tuple[str, str]], int]:
    """(status, headers, body length) of the old rule: 304 only on the exact same string."""
    etag = today_etag(plain_json)
    status = 304 if held_etag == etag else 200
    length = 0 if status == 304 else len(plain_json)
    headers = [
        ("Content-Type", "application/json"),
        ("Cache-Control", "public, max-age=60"),
        ("ETag", etag),
        *site_headers,
        ("Content-Length", str(length)),
    ]
    return status, headers, length


# --- The host's state over the day -------------------------------------------------------------


def _release(app: AppSpec, version: str, at_ms: int) -> Release | None:
    published_at = datetime.fromtimestamp(at_ms / 1000, UTC)
    body = json.dumps(demo_release(app, version, published_at)).encode()
    return parse_release(body, app.repo)


class HostDay:
    """Each app's state at any instant of the day: fetched every interval, releases published."""

    def __init__(self, options: LauncherOptions) -> None:
        self.interval_ms = round(options.interval_s * S)
        self.duration_ms = round(options.hours * 3600 * S)
        rng = random.Random(options.seed)
        # Each app is revalidated at its own offset within the interval, then every interval.
        self.offsets = {
            app.key: i * self.interval_ms // len(DEFAULT_APPS) for i, app in enumerate(DEFAULT_APPS)
        }
        demo = demo_releases()
        self.versions: dict[str, list[tuple[int, Release | None]]] = {}
        for app in DEFAULT_APPS:
            body = json.dumps(demo[app.repo]).encode()
            self.versions[app.key] = [(-sys.maxsize, parse_release(body, app.repo))]
        self.published = 0
        window = (self.duration_ms // 20, self.duration_ms * 9 // 10)
        for at_ms in sorted(rng.randint(*window) for _ in range(options.releases)):
            app = rng.choice(DEFAULT_APPS)
            current = self.versions[app.key][-1][1]
            version = next_version(current.version if current else "1.0.0")
            self.versions[app.key].append((at_ms, _release(app, version, START_MS + at_ms)))
            self.published += 1

    def initial_names(self) -> set[str]:
        """The names (``PhotoCraft v0.5.0``) of the releases the day starts with."""
        return {v[0][1].name for v in self.versions.values() if v[0][1] is not None}

    def state(self, key: str, at_ms: int) -> AppState:
        """What the host's state file says about ``key`` at ``at_ms`` (since the start)."""
        offset = self.offsets[key]
        fetched = offset + (at_ms - offset) // self.interval_ms * self.interval_ms  # the last revalidation
        release = next(r for published, r in reversed(self.versions[key]) if published <= fetched)
        return AppState(latest_release=release, fetched_ms=START_MS + fetched, etag=f'"{key}-{fetched}"')


# --- The benchmark ---------------------------------------------------------------------------


def configure_django(state_dir: Path) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="bench.site_settings",
        DJANGO_DEBUG="false",
        DJANGO_ALLOWED_HOSTS=HOST,
        DJANGO_LOG_LEVEL="WARNING",
        CRAFT_APPS_STATE_DIR=str(state_dir),
    )
    import django

    django.setup()


def run_launcher_benchmark(options: LauncherOptions) -> LauncherReport:
    with tempfile.TemporaryDirectory(prefix="bench-launcher-") as tmp:
        state_dir = Path(tmp) / "state"
        configure_django(state_dir)
        from craft_apps.api.representation import Refiner  # once Django is set up
        from craft_apps.api.runtime import Runtime, use

        # Every request looks at the state file. A busy host has a version's best brotli form by
        # the time a launcher comes: it is made before any poll that gets a body (only those).
        refinements: list[Callable[[], None]] = []
        web = Runtime(recheck_s=0.0, refiner=Refiner(start=refinements.append, after_s=0.0))
        with use(web):
            store = StateStore(state_dir)
            store.open_for_writing()
            lease = Lease(store, holder="bench-launcher", clock=SystemClock())
            if not lease.try_acquire() or lease.fence is None:
                raise RuntimeError(f"the lease of {store.path} is held by someone else")
            day = HostDay(options)
            written: dict[str, AppState] = {}
            kinds = {"first": Kind(), "unchanged": Kind(), "release": Kind()}
            gzip_only: list[int] = []
            statuses: dict[str, int] = {}
            breakdown: dict[str, int] = {}
            held: str | None = None  # the launcher's ETag, now
            held_today: str | None = None  # and today
            seen_tags: set[str] = set()
            rng = random.Random(options.seed + 1)
            poll_ms = rng.randint(0, round(options.poll_every_s * S) - 1)
            plain = b""
            while poll_ms < day.duration_ms:
                for app in DEFAULT_APPS:
                    state = day.state(app.key, poll_ms)
                    if written.get(app.key) != state:
                        store.put_app(app.key, state, fence=lease.fence)
                        written[app.key] = state
                current = web.answers.answer()
                if current.etag != held and refinements:
                    refinements.pop()()
                plain = current.body
                sent = launcher_headers(options.accept_encoding, held)
                answer = wsgi_get(sent)
                etag = dict((k.lower(), v) for k, v in answer.headers)["etag"]
                kind = "first" if held is None else "unchanged" if held == etag else "release"
                now = request_bytes(sent) + response_bytes(answer.status, answer.headers, len(answer.body))
                site_headers = [(k, v) for k, v in answer.headers if k.lower() not in OURS]
                today_status, today_headers, today_length = today_answer(plain, held_today, site_headers)
                sent_today = launcher_headers(options.accept_encoding, held_today)
                today = request_bytes(sent_today) + response_bytes(today_status, today_headers, today_length)
                kinds[kind].add(now, today, len(plain))
                statuses[str(answer.status)] = statuses.get(str(answer.status), 0) + 1
                if kind == "release":
                    gzip_sent = launcher_headers("gzip", held)
                    gzip_answer = wsgi_get(gzip_sent)
                    gzip_only.append(
                        request_bytes(gzip_sent)
                        + response_bytes(gzip_answer.status, gzip_answer.headers, len(gzip_answer.body))
                    )
                if answer.status == 304 and not breakdown:
                    breakdown = _breakdown(sent, answer)
                for app_info in json.loads(plain)["release_info"]["apps"].values():
                    if app_info["latest_release"]:
                        seen_tags.add(app_info["latest_release"]["name"])
                held, held_today = etag, today_etag(plain)
                poll_ms += round(options.poll_every_s * S)
            lease.release()
            store.close()
    return LauncherReport(
        options=options,
        plain_json_bytes=len(plain),
        first=kinds["first"],
        unchanged=kinds["unchanged"],
        release=kinds["release"],
        gzip_only_release_bytes=gzip_only,
        statuses=statuses,
        not_modified_breakdown=breakdown,
        releases_published=day.published,
        releases_seen=len(seen_tags - day.initial_names()),
    )


def _breakdown(sent: list[tuple[str, str]], answer: Answer) -> dict[str, int]:
    """Who put the bytes of one 304 exchange on the wire."""
    ours = [(k, v) for k, v in answer.headers if k.lower() in OURS_ON_304]
    site = [(k, v) for k, v in answer.headers if k.lower() not in OURS_ON_304]
    framing = response_bytes(answer.status, [], 0)
    return {
        "request (the launcher)": request_bytes(sent),
        "status line and gunicorn's headers": framing,
        "ours (ETag, Cache-Control, Vary)": response_bytes(answer.status, ours, 0) - framing,
        "the site's (SecurityMiddleware; CommonMiddleware's Content-Length)": response_bytes(
            answer.status, site, 0
        )
        - framing,
    }


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def markdown(report: LauncherReport) -> str:
    o = report.options
    plain = report.plain_json_bytes

    def row(name: str, kind: Kind, target: str) -> tuple[str, ...]:
        if not kind.polls:
            return (name, "0", "n/a", "n/a", "n/a", target)
        share = f"{max(kind.share_of_json):.1%}"
        return (
            name,
            f"{kind.polls:,}",
            f"{_mean(kind.bytes_now):,.0f} B (max {max(kind.bytes_now):,})",
            share,
            f"{_mean(kind.bytes_today):,.0f} B",
            target,
        )

    rows = [
        row("first poll (no ETag yet)", report.first, ""),
        row("nothing it sees changed", report.unchanged, f"<= {UNCHANGED_TARGET_BYTES} B"),
        row("a release it sees changed", report.release, f"<= {RELEASE_TARGET_SHARE:.0%} of the JSON"),
    ]
    header = ["poll", "polls", "bytes now (mean)", "now / plain JSON (max)", "bytes today (mean)", "target"]
    gzip_note = (
        f"A launcher accepting only gzip pays {_mean(report.gzip_only_release_bytes):,.0f} B at those "
        f"release polls ({_mean(report.gzip_only_release_bytes) / plain:.1%} of the JSON)."
        if report.gzip_only_release_bytes
        else ""
    )
    parts = [f"{what}: {n:,} B" for what, n in report.not_modified_breakdown.items()]
    return "\n".join(
        [
            f"One launcher polling every {o.poll_every_s:g} s for {o.hours:g} simulated hours "
            f"(`Accept-Encoding: {o.accept_encoding}`, `If-None-Match` with the ETag it holds); the host "
            f"revalidates each of 13 apps every {o.interval_s:g} s; {report.releases_published} releases "
            f"published, {report.releases_seen} shown; a {plain:,}-byte JSON answer. Bytes are request plus "
            "answer, headers included, over HTTP/1.1.",
            "",
            markdown_table(header, rows),
            "",
            f"The day: {report.day_bytes_now / 1024:,.1f} KiB now, {report.day_bytes_today / 1024:,.1f} KiB "
            f"today ({report.day_bytes_today / max(report.day_bytes_now, 1):,.0f} x). Answers: "
            + ", ".join(f"{n} x {status}" for status, n in sorted(report.statuses.items()))
            + f". {gzip_note}",
            "",
            "Where the bytes of one revalidation (304) come from: " + "; ".join(parts) + ".",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    defaults = LauncherOptions()
    parser = argparse.ArgumentParser(prog="python -m bench.launcher", description=__doc__.split("\n")[0])
    parser.add_argument("--launcher-hours", type=float, default=defaults.hours, help="simulated hours")
    parser.add_argument("--poll-every", type=float, default=defaults.poll_every_s, help="seconds")
    parser.add_argument("--interval", type=float, default=defaults.interval_s, help="the host's, seconds")
    parser.add_argument("--launcher-releases", type=int, default=defaults.releases)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--accept-encoding", default=defaults.accept_encoding)
    parser.add_argument("--json", type=Path, help="also write the figures and their Markdown here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    options = LauncherOptions(
        hours=args.launcher_hours,
        poll_every_s=args.poll_every,
        interval_s=args.interval,
        releases=args.launcher_releases,
        seed=args.seed,
        accept_encoding=args.accept_encoding,
    )
    report = run_launcher_benchmark(options)
    return finish(report, markdown(report), args.json)


if __name__ == "__main__":
    raise SystemExit(main())

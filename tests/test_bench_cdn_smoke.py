"""``bench.cdn`` at a tiny size, so it never rots (the figures come from the full run the docs
name): a release and a yank straight at the origin reach every launcher, Varnish and nginx
answer every poll through a short outage with signatures that verify, and the launcher's own
pieces (an answer's head, its codings, a signature kept across a 304, a refused one) work."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import brotli
import pytest

from bench.cdn_fleet import Event, Fleet, decode, parse_head
from craft_apps.kernel import signing
from tests.support import ONE_AT_A_TIME

ROOT = Path(__file__).resolve().parent.parent
CONNECTIONS = 4  # the launchers' connections: at most this many polls are in flight at once
TINY = [
    "--launchers", "40", "--poll-every", "1", "--steady", "2",
    "--connections", str(CONNECTIONS), "--max-run", "120",
]  # fmt: skip
# Straight at the origin a launcher meets both gunicorn workers. A change reaches every worker
# within 2 s (docs/controls.md), so a launcher polling less often never gets the older answer
# after the newer one: a signature refused as a rollback there is a bug.
SLOWER_THAN_WORKERS_AGREE = ["--poll-every", "2.5"]


def run_bench(tmp_path: Path, *flags: str) -> list[dict[str, Any]]:
    output = tmp_path / "cdn.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAFT_APPS_", "DJANGO_"))}
    done = subprocess.run(
        [sys.executable, "-m", "bench.cdn", *TINY, *flags, "--json", str(output)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    runs: list[dict[str, Any]] = json.loads(output.read_text())["figures"]["runs"]
    return runs


def phase(run: dict[str, Any], name: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [p for p in run["phases"] if p["name"] == name]
    assert len(found) == 1, run["phases"]
    return found[0]


@pytest.mark.slow
@ONE_AT_A_TIME
def test_a_release_and_a_yank_reach_every_launcher_straight_at_the_origin(tmp_path: Path):
    [run] = run_bench(tmp_path, *SLOWER_THAN_WORKERS_AGREE, "--proxy", "none", "--phases", "release,yank")
    changes = {c["name"]: c for c in run["changes"]}
    for name in ("release", "yank"):
        assert changes[name]["seen"] == changes[name]["launchers"] == 40, changes[name]
        # The origin shows a change within a few seconds (the poller wakes within one).
        assert changes[name]["stale_window_s"] < 10, changes[name]
    steady = phase(run, "steady")
    assert steady["failed"] == 0 and steady["not_modified"] > 0
    # Straight at the origin, every poll is an origin request. gunicorn writes a request's
    # access line after its answer, so the polls in flight at an edge of the phase (one per
    # connection) may count in the phase next to it.
    assert abs(steady["origin_requests"] - steady["polls"]) <= CONNECTIONS, steady
    refused = {p["name"]: p["bad_signatures"] for p in run["phases"] if p["bad_signatures"]}
    assert not refused, refused


@pytest.mark.slow
@ONE_AT_A_TIME
@pytest.mark.parametrize("proxy", ["varnish", "nginx"])
def test_every_poll_through_a_proxy_is_answered_through_an_outage(tmp_path: Path, proxy: str):
    runs = run_bench(tmp_path, "--proxy", proxy, "--phases", "outage", "--outage", "3")
    assert [r["options"]["proxy"] for r in runs] == [proxy]
    for run in runs:
        steady, outage = phase(run, "steady"), phase(run, "outage")
        # Dozens of polls a second, and the proxy asks the origin at most once in the window.
        assert steady["polls"] >= 40 and steady["origin_requests"] <= 1, steady
        assert outage["polls"] > 0 and outage["failed"] == 0, outage
        assert outage["not_modified"] == outage["polls"], "each launcher revalidates what it holds"
        assert not outage["bad_signatures"] and not steady["bad_signatures"]


# --- the launcher's pieces, in process ----------------------------------------------------------


def test_an_answers_head_is_read_and_anything_else_refused():
    status, headers = parse_head(b'HTTP/1.1 304 Not Modified\r\nETag: W/"a"\r\nContent-Length: 0\r\n\r\n')
    assert (status, headers["etag"], headers["content-length"]) == (304, 'W/"a"', "0")
    with pytest.raises(ValueError):
        parse_head(b"SSH-2.0-OpenSSH\r\n\r\n")
    with pytest.raises(ValueError):
        parse_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    body = b'{"release_info": {}}'
    assert decode(brotli.compress(body), "br") == decode(gzip.compress(body), "gzip") == body
    assert decode(body, "") == body


def test_a_launcher_keeps_a_verified_answer_across_a_304_and_refuses_a_bad_signature():
    key = signing.generate()
    config = signing.SigningConfig((key,), signing.DEFAULT_VALIDITY_SECS)
    body = b'{"release_info": {"apps": {"photocraft": {"latest_release": {"tag": "v2.0.0"}}}}}'
    now = int(time.time())  # the fleet verifies on the real clock, as a launcher does
    header = signing.sign(config, body, now, order=2)
    fleet = Fleet(
        "127.0.0.1", 9, "/", 2, poll_every_s=1, jitter=0, connections=1, public_keys=[key.public], seed=1
    )
    event = Event("release", at=0.0, shows=lambda held: b"v2.0.0" in held)
    fleet.add_event(event)
    signed_headers = {signing.HEADER.lower(): header, "etag": 'W/"2"'}
    fleet._answered(fleet.totals, 0, 1.0, 200, signed_headers, body)
    fleet._answered(fleet.totals, 0, 2.0, 304, signed_headers, b"")
    fleet._answered(fleet.totals, 0, 2.5, 304, {"etag": 'W/"2"'}, b"")  # the origin's 304: the signature held
    forged = {signing.HEADER.lower(): header.replace("order=2", "order=3")}
    fleet._answered(fleet.totals, 1, 1.0, 200, forged, body)
    totals = fleet.take_totals()
    assert (totals.ok, totals.not_modified, totals.bad_signatures) == (2, 2, {"bad signature": 1})
    assert fleet.held[0].etag == 'W/"2"' and fleet.held[0].order == 2
    assert fleet.held[1].body_key is None, "a refused answer is not held"
    assert fleet.holding(event) == 1 and set(event.first_seen) == {0}
    # An older order than the one held is a rollback, refused however well signed.
    older = signing.sign(config, body, now, order=1)
    fleet._answered(fleet.totals, 0, 3.0, 200, {signing.HEADER.lower(): older, "etag": 'W/"1"'}, body)
    assert fleet.take_totals().bad_signatures == {"rollback": 1}
    assert fleet.held[0].etag == 'W/"2"'


def test_a_late_poll_is_not_followed_at_once_by_the_next():
    fleet = Fleet("127.0.0.1", 9, "/", 1, poll_every_s=1, jitter=0, connections=1, public_keys=[], seed=1)

    async def no_answer(*_: object) -> None:
        return None

    fleet._open = no_answer  # type: ignore[method-assign]
    fleet._poll = no_answer  # type: ignore[method-assign,assignment]
    queue: asyncio.Queue[tuple[float, int]] = asyncio.Queue()
    due: list[tuple[float, int]] = []
    before = time.monotonic()
    queue.put_nowait((before - 5.0, 0))  # due five periods ago
    queue.put_nowait((0.0, -1))  # then stop
    asyncio.run(fleet._connection(queue, due))
    [(next_at, launcher)] = due
    assert launcher == 0 and next_at >= before + 1.0

"""The release info behind Varnish with ``examples/cdn/varnish.vcl`` as shipped, in front of real
gunicorn workers: nothing is kept before every app is fetched, each channel and each coding is
its own entry (Varnish reads Vary itself, brotli kept apart from gzip), and when the origin goes
down its health check fails and the kept answer is served, with a signature that verifies; a
due answer is refreshed by the origin's 304 with the current signature.
Varnish's clock can't be moved (it clashes with libfaketime), so the day of stale-if-error past
max-age is tested on nginx (``test_nginx_cache``); here the VCL's grace for it is checked as
Varnish reports it."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from craft_apps.kernel import signing
from tests.cdn.support import BETA_PATH, EXAMPLES, ROOT, URL_PATH, Answer, Origin, Varnish, ask
from tests.signing.vectors import KEY_B
from tests.support import ONE_AT_A_TIME

DOCS = ROOT / "docs" / "cdn.md"

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]


def test_nothing_is_kept_before_every_app_is_fetched(origin: Origin, varnish: Varnish):
    cold = [ask(varnish.port) for _ in range(3)]
    assert all(a.headers["cache-control"] == "no-store" for a in cold)
    assert [a.cache for a in cold] == ["MISS", "MISS", "MISS"]
    origin.warm()
    warm = [ask(varnish.port) for _ in range(3)]
    assert [a.cache for a in warm] == ["MISS", "HIT", "HIT"]
    assert warm[0].verdict(int(time.time())).accepted


def test_each_channel_and_each_coding_is_its_own_entry(origin: Origin, varnish: Varnish):
    origin.warm()
    bodies = set()
    for path in (URL_PATH, BETA_PATH):
        for coding in ("br", "gzip", ""):
            first, again = ask(varnish.port, path, coding), ask(varnish.port, path, coding)
            assert (first.cache, again.cache) == ("MISS", "HIT"), (path, coding)
            assert again.raw == first.raw and again.headers.get("content-encoding") == (coding or None)
            variant = "beta" if path == BETA_PATH else ""
            assert again.verdict(int(time.time()), variant=variant).accepted, (path, coding)
            bodies.add(again.body)
    assert len(bodies) == 1, "one answer, in three codings and two channels' signatures"


def test_an_outage_is_answered_from_the_kept_answer(origin: Origin, varnish: Varnish):
    origin.warm()
    kept = kept_while_healthy(varnish)
    origin.stop()
    deadline = time.monotonic() + 60  # a hang guard: the loop waits for its signal
    while "sick" not in (health := backend_health(varnish)):  # the probe's signal: 2 of 3 failed
        assert time.monotonic() < deadline, health
    during = ask(varnish.port)
    assert (during.status, during.cache, during.raw) == (200, "HIT", kept.raw)
    assert during.verdict(int(time.time())).accepted


def test_the_probe_asks_the_health_endpoint_and_an_unreadable_state_file_makes_it_sick(
    origin: Origin, varnish: Varnish
):
    """The probe costs 12 requests a minute (one every 5 s, as docs/cdn.md says), each the health
    endpoint's state file and signing rules; a state file that can't be read makes the origin
    sick within two of them, and the kept answer is served."""
    probe = re.search(r"\.probe = \{(.*?)\}", (EXAMPLES / "varnish.vcl").read_text(), re.S)
    assert probe is not None
    assert '.url = "/v1/craft_apps/health?rules=state_file";' in probe.group(1)
    assert ".interval = 5s;" in probe.group(1)
    docs = " ".join(DOCS.read_text().split())
    assert "probe asks `/v1/craft_apps/health?rules=state_file` every 5 s: 12 requests a minute" in docs
    origin.warm()
    kept = kept_while_healthy(varnish)
    assert origin.logged('"GET /v1/craft_apps/health?rules=state_file HTTP/1.1" 200')
    (origin.state_dir / "craft_apps_state.sqlite3").write_bytes(b"this is not SQLite" * 500)
    deadline = time.monotonic() + 60  # a hang guard: the loop waits for its signal
    while "sick" not in (health := backend_health(varnish)):  # 2 of the last 3 probes failed
        assert time.monotonic() < deadline, health
    assert origin.logged('"GET /v1/craft_apps/health?rules=state_file HTTP/1.1" 503')
    during = ask(varnish.port)
    assert (during.status, during.cache, during.raw) == (200, "HIT", kept.raw)


def kept_while_healthy(varnish: Varnish) -> Answer:
    """The answer Varnish keeps, asked once its probe finds the origin healthy: a cold worker may
    miss the probe's 2 s on a loaded machine, and a sick origin's answer is Varnish's 503."""
    deadline = time.monotonic() + 60  # a hang guard: the loop waits for its signal
    while " healthy" not in (health := backend_health(varnish)):
        assert time.monotonic() < deadline, health
        time.sleep(0.1)
    kept = ask(varnish.port)
    assert kept.status == 200 and kept.cache in ("MISS", "HIT"), (kept.status, kept.cache)
    return kept


def backend_health(varnish: Varnish) -> str:
    instance = str(varnish.log.parent / "varnish" / "instance")
    done = subprocess.run(
        ["varnishadm", "-n", instance, "backend.list"], capture_output=True, text=True, timeout=10
    )
    return done.stdout + done.stderr


def test_the_vcl_keeps_an_answer_for_the_day_stale_if_error_gives(origin: Origin, varnish: Varnish):
    """What Varnish decided for the kept answer, as its log says: 60 s fresh, a day of grace
    (stale answers while the origin is sick), an hour more kept to revalidate with a 304."""
    origin.warm()
    ask(varnish.port)
    instance = str(varnish.log.parent / "varnish" / "instance")
    done = subprocess.run(
        ["varnishlog", "-n", instance, "-d", "-b", "-i", "TTL"], capture_output=True, text=True, timeout=10
    )
    vcl = [line.split() for line in done.stdout.splitlines() if "TTL" in line and " VCL " in line]
    assert vcl, done.stdout + done.stderr
    ttl, grace, keep = (float(value) for value in vcl[-1][3:6])
    assert (ttl, grace, keep) == (60, 86400, 3600)


def test_a_304_refreshes_the_kept_answer_and_a_new_signature_replaces_it(origin: Origin, tmp_path: Path):
    """Varnish revalidates a due answer with If-None-Match; the origin's 304 means the same ETag,
    which covers the signing period and keys, so the kept signature is the current one. A key
    added changes the ETag: the origin sends a 200 and the edge keeps the new signature."""
    varnish = Varnish(tmp_path, origin.port, fresh_s=1)
    try:
        origin.warm()
        first = ask(varnish.port)
        assert first.cache == "MISS"
        asked_again = until(lambda: ask(varnish.port), lambda _: '" 304 ' in origin.output())
        assert asked_again.body == first.body
        refreshed = ask(varnish.port)
        current = ask(origin.port).headers["craft-apps-signature"]
        assert refreshed.headers["craft-apps-signature"] == current == first.headers["craft-apps-signature"]
        assert refreshed.verdict(int(time.time())).accepted

        origin.stop()  # a second key signs too, as while rotating
        origin.env["CRAFT_APPS_SIGNING_KEY_PREVIOUS"] = signing.private_key_text(KEY_B)
        origin.start()
        replaced = until(
            lambda: ask(varnish.port), lambda a: a.headers["craft-apps-signature"].count("keyid=") == 2
        )
        assert replaced.headers["craft-apps-signature"] == ask(origin.port).headers["craft-apps-signature"]
        assert replaced.body == first.body and replaced.verdict(int(time.time())).accepted
    finally:
        varnish.stop()


def until(get: Callable[[], Answer], done: Callable[[Answer], bool], timeout: float = 20) -> Answer:
    """Asks again until ``done`` says the signal came (each ask past fresh_s starts a revalidation)."""
    deadline = time.monotonic() + timeout
    while not done(answer := get()):
        assert time.monotonic() < deadline, answer.headers
        time.sleep(0.05)
    return answer

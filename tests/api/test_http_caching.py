"""What a launcher pays per poll, through Django's test client: the weak ETag and what it covers,
If-None-Match, HEAD and 304 headers, Accept-Encoding, the kept compressed forms, Cache-Control,
and a site that also has Django's GZipMiddleware."""

from __future__ import annotations

import gzip
import json
import logging
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import brotli
import pytest
from django.conf import settings
from django.middleware.gzip import GZipMiddleware
from django.test import Client, override_settings

from craft_apps.api import representation
from craft_apps.api.representation import BROTLI_BEST_QUALITY, BROTLI_FAST_QUALITY, EncodedAnswer, Refiner
from tests.api.support import T0, decoded, warm
from tests.support import RELEASE_INFO_URL as URL
from tests.support import apps_setting

BOTH = ("photocraft", "artcraft-launcher")
WEAK_ETAG = re.compile(r'W/"[A-Za-z0-9_-]{16}"')
SAME_ON_EVERY_ANSWER = ("ETag", "Cache-Control", "Vary")
CACHEABLE = "public, max-age=60, stale-while-revalidate=300, stale-if-error=86400"


def plain(client: Client) -> bytes:
    return bytes(client.get(URL).content)


class TestTheValidator:
    def test_is_weak_and_short(self, site: Path, client: Client):
        assert WEAK_ETAG.fullmatch(client.get(URL)["ETag"])
        warm(site)
        assert WEAK_ETAG.fullmatch(client.get(URL)["ETag"])

    def test_ignores_fetch_times_but_the_body_shows_them(self, site: Path, client: Client):
        warm(site)
        first = client.get(URL)
        warm(site, fetched_ms=T0 + 120_000)
        second = client.get(URL)
        assert second.content != first.content, "the new fetch times are served at once"
        assert second["ETag"] == first["ETag"]
        revalidated = client.get(URL, headers={"If-None-Match": first["ETag"]})
        assert revalidated.status_code == 304 and revalidated.content == b""

    def test_changes_with_a_release_and_the_launcher_gets_it(self, site: Path, client: Client):
        warm(site)
        first = client.get(URL)
        warm(site, version="0.6.0", fetched_ms=T0 + 120_000)
        after = client.get(URL, headers={"If-None-Match": first["ETag"]})
        assert after.status_code == 200
        assert after["ETag"] != first["ETag"]
        assert json.loads(after.content)["release_info"]["apps"]["photocraft"]["latest_release"]["tag"] == (
            "v0.6.0"
        )

    def test_a_cold_and_a_warm_host_differ(self, site: Path, client: Client):
        cold = client.get(URL)["ETag"]
        warm(site)
        assert client.get(URL)["ETag"] != cold

    def test_is_the_same_on_every_host_holding_the_same_releases(self, tmp_path: Path, client: Client):
        etags = []
        for host, fetched_ms in (("host-a", T0), ("host-b", T0 + 93_000)):
            warm(tmp_path / host, fetched_ms=fetched_ms)
            with override_settings(CRAFT_APPS={"APPS": apps_setting(), "STATE_DIR": str(tmp_path / host)}):
                etags.append(client.get(URL)["ETag"])
        assert etags[0] == etags[1]


class TestIfNoneMatch:
    @pytest.fixture
    def etag(self, site: Path, client: Client) -> str:
        warm(site)
        return str(client.get(URL)["ETag"])

    @pytest.mark.parametrize(
        "header",
        [
            "{etag}",
            "{strong}",  # weak comparison: the opaque tags are equal
            '"other", {etag}, W/"more"',
            '"other",{etag}',
            "  {etag}  ",
            "*",
            "garbage, {etag}",  # an element that isn't an entity tag is skipped
        ],
    )
    def test_a_match_gets_304(self, etag: str, client: Client, header: str):
        value = header.format(etag=etag, strong=etag.removeprefix("W/"))
        assert client.get(URL, headers={"If-None-Match": value}).status_code == 304
        assert client.head(URL, headers={"If-None-Match": value}).status_code == 304

    @pytest.mark.parametrize(
        "header",
        ['"other"', 'W/"other", "another"', "", "garbage", "{lower}", "W/{unquoted}", "**"],
    )
    def test_anything_else_gets_the_answer(self, etag: str, client: Client, header: str):
        value = header.format(lower=etag.replace("W/", "w/"), unquoted=etag[3:-1])
        response = client.get(URL, headers={"If-None-Match": value})
        assert response.status_code == 200 and response.content == plain(client)

    def test_if_modified_since_alone_is_ignored_and_no_last_modified_is_sent(self, etag: str, client: Client):
        response = client.get(URL, headers={"If-Modified-Since": "Sun, 06 Nov 2099 08:49:37 GMT"})
        assert response.status_code == 200
        assert not response.has_header("Last-Modified")


@pytest.mark.parametrize("accept_encoding", [None, "gzip", "br, gzip"])
@pytest.mark.parametrize("state", ["cold", "warm"])
def test_head_and_304_carry_the_200s_headers(site: Path, client: Client, accept_encoding, state):
    if state == "warm":
        warm(site)
    headers = {"Accept-Encoding": accept_encoding} if accept_encoding else {}
    full = client.get(URL, headers=headers)
    head = client.head(URL, headers=headers)
    not_modified = client.get(URL, headers={**headers, "If-None-Match": full["ETag"]})
    head_not_modified = client.head(URL, headers={**headers, "If-None-Match": full["ETag"]})
    assert (full.status_code, head.status_code) == (200, 200)
    assert (not_modified.status_code, head_not_modified.status_code) == (304, 304)
    for response in (head, not_modified, head_not_modified):
        assert [response[h] for h in SAME_ON_EVERY_ANSWER] == [full[h] for h in SAME_ON_EVERY_ANSWER]
        assert response.content == b""
    assert head["Content-Length"] == full["Content-Length"] == str(len(full.content))
    # A 304 names no length of ours (the site's CommonMiddleware adds its 0): some clients would
    # wait for a body of the length named.
    assert not_modified["Content-Length"] == head_not_modified["Content-Length"] == "0"
    assert full["Cache-Control"] == (CACHEABLE if state == "warm" else "no-store")
    assert full["Vary"] == "Accept-Encoding"
    assert head.get("Content-Encoding") == full.get("Content-Encoding")
    assert head["Content-Type"] == full["Content-Type"] == "application/json"
    assert not not_modified.has_header("Content-Type") and not not_modified.has_header("Content-Encoding")


@pytest.mark.parametrize(
    ("accept_encoding", "coding"),
    [
        (None, None),
        ("", None),
        ("gzip", "gzip"),
        ("br", "br"),
        ("gzip, br", "br"),
        ("GZIP", "gzip"),
        ("x-gzip", "gzip"),
        ("gzip;q=1, br;q=0.5", "gzip"),
        ("br;q=0.5, gzip;q=0.5", "br"),
        ("identity;q=1, br;q=0.5", None),
        ("br;q=0, gzip;q=0", None),
        ("br;q=0, *", "gzip"),
        ("*", "br"),
        ("*;q=0", None),  # nothing acceptable: the plain bytes all the same
        ("identity;q=0", None),
        ("identity", None),
        ("identity;q=0, gzip;q=0.001", "gzip"),
        ("deflate, zstd", None),
        ("br;q=1.5, gzip", "gzip"),  # a q outside the grammar: br counts as not listed
        ("br;Q=0.2, gzip;level=1;q=0.1", "br"),
        ("gzip;q=0.9, gzip;q=0", "gzip"),  # the first element that names a coding counts
    ],
)
def test_accept_encoding_picks_one_coding(site: Path, client: Client, accept_encoding, coding):
    warm(site)
    expected = plain(client)
    headers = {} if accept_encoding is None else {"Accept-Encoding": accept_encoding}
    response = client.get(URL, headers=headers)
    assert response.status_code == 200
    assert response.get("Content-Encoding") == coding
    assert response["Vary"] == "Accept-Encoding"
    assert response["Content-Length"] == str(len(response.content))
    assert decoded(response) == expected


def test_brotli_is_smaller_than_gzip_and_both_a_fraction_of_the_json(site: Path, client: Client):
    warm(site)
    sizes = {
        coding: len(client.get(URL, headers={"Accept-Encoding": coding}).content)
        for coding in ("identity", "gzip", "br")
    }
    assert sizes["br"] < sizes["gzip"] < sizes["identity"] / 2


def test_every_form_is_made_once_per_state_version(site: Path, client: Client, monkeypatch):
    made: list[tuple[str, int]] = []
    real_brotli, real_gzip = brotli.compress, gzip.compress

    def counting_brotli(body: bytes, **options: Any) -> bytes:
        made.append(("br", options["quality"]))
        return bytes(real_brotli(body, **options))

    def counting_gzip(body: bytes, **options: Any) -> bytes:
        made.append(("gzip", options["compresslevel"]))
        return bytes(real_gzip(body, **options))

    monkeypatch.setattr(brotli, "compress", counting_brotli)
    monkeypatch.setattr(gzip, "compress", counting_gzip)  # the site's runtime refines at once
    warm(site)
    once = [("gzip", 9), ("br", BROTLI_FAST_QUALITY), ("br", BROTLI_BEST_QUALITY)]
    for _ in range(3):
        for coding in ("br", "gzip", "identity", "br, gzip"):
            client.get(URL, headers={"Accept-Encoding": coding})
    assert made == once
    warm(site, fetched_ms=T0 + 1000)
    for coding in ("br", "gzip", "identity"):
        client.get(URL, headers={"Accept-Encoding": coding})
    assert made == once + once


class TestTheBrotliRefinement:
    @pytest.fixture
    def jobs(self, site: Path, install_runtime) -> list[Callable[[], None]]:
        jobs: list[Callable[[], None]] = []
        install_runtime(recheck_s=0.0, refiner=Refiner(start=jobs.append, after_s=0.0))
        return jobs

    def br(self, client: Client) -> bytes:
        return bytes(client.get(URL, headers={"Accept-Encoding": "br"}).content)

    def test_the_quick_form_is_served_until_the_best_one_is_made(self, site: Path, client: Client, jobs):
        warm(site)
        body = plain(client)
        quick = self.br(client)
        assert quick == brotli.compress(body, mode=brotli.MODE_TEXT, quality=BROTLI_FAST_QUALITY)
        [job] = jobs
        job()
        best = self.br(client)
        assert best == brotli.compress(body, mode=brotli.MODE_TEXT, quality=BROTLI_BEST_QUALITY)
        assert len(best) < len(quick)

    def test_a_refinement_of_an_old_version_is_dropped_and_the_newest_one_is_made(
        self, site: Path, client: Client, jobs
    ):
        warm(site)
        self.br(client)  # version 1: a job starts (and has not run yet)
        warm(site, fetched_ms=T0 + 1000)
        body = plain(client)  # version 2: waits for the running job
        [job] = jobs
        job()  # refines version 2 only (version 1 was replaced while waiting)
        assert brotli.decompress(self.br(client)) == body
        assert self.br(client) == brotli.compress(body, mode=brotli.MODE_TEXT, quality=BROTLI_BEST_QUALITY)

    def test_a_failure_keeps_the_quick_form_and_logs_one_line(
        self, site: Path, client: Client, jobs, monkeypatch, caplog
    ):
        def broken(answer: EncodedAnswer) -> EncodedAnswer:
            raise MemoryError("no room")

        monkeypatch.setattr(representation, "refine", broken)
        warm(site)
        quick = self.br(client)
        with caplog.at_level(logging.WARNING, logger="craft_apps.api.representation"):
            jobs.pop()()
        assert self.br(client) == quick
        [line] = [r.getMessage() for r in caplog.records if r.name == "craft_apps.api.representation"]
        assert "brotli refinement failed" in line and "\n" not in line

    def test_no_thread_to_be_had_keeps_the_quick_form(
        self, site: Path, client: Client, install_runtime, caplog
    ):
        def no_thread(job) -> None:
            raise RuntimeError("can't start new thread")

        install_runtime(recheck_s=0.0, refiner=Refiner(start=no_thread, after_s=0.0))
        warm(site)
        with caplog.at_level(logging.WARNING, logger="craft_apps.api.representation"):
            response = client.get(URL, headers={"Accept-Encoding": "br"})
        assert response.status_code == 200 and brotli.decompress(response.content) == plain(client)
        assert "refinement not started" in caplog.text

    def test_only_a_version_that_stayed_current_for_a_second_is_refined(
        self, site: Path, client: Client, install_runtime
    ):
        clock = [100.0]
        jobs: list[Callable[[], None]] = []
        refiner = Refiner(start=jobs.append, monotonic=lambda: clock[0])
        install_runtime(recheck_s=0.0, refiner=refiner)
        warm(site)
        self.br(client)
        clock[0] += 0.9
        self.br(client)
        assert jobs == [], "not yet: it may be replaced"
        warm(site, fetched_ms=T0 + 1000)  # a new version at 100.9 s
        self.br(client)
        clock[0] += 0.2
        self.br(client)
        assert jobs == [], "the first version was replaced within the second, the new one is young"
        clock[0] += 0.8
        self.br(client)
        [job] = jobs
        job()
        body = plain(client)
        assert self.br(client) == brotli.compress(body, mode=brotli.MODE_TEXT, quality=BROTLI_BEST_QUALITY)
        clock[0] += 5
        self.br(client)
        assert len(jobs) == 1, "refined once"

    def test_the_default_refiner_runs_in_a_thread(self, site: Path, client: Client, install_runtime):
        install_runtime(recheck_s=0.0)
        warm(site)
        body = plain(client)
        best = brotli.compress(body, mode=brotli.MODE_TEXT, quality=BROTLI_BEST_QUALITY)
        deadline = time.monotonic() + 10  # a real thread (~0.3 s of work), polled with a deadline
        while self.br(client) != best and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.br(client) == best


GZIP_SITE = ["django.middleware.gzip.GZipMiddleware", *settings.MIDDLEWARE]


@pytest.mark.parametrize(
    ("accept_encoding", "coding"),
    [
        (None, None),
        ("gzip", "gzip"),
        ("br, gzip", "br"),
        # We answer plain (identity is preferred); the middleware, blind to q-values, gzips it
        # per request. Still one coding, the same ETag.
        ("identity, gzip;q=0.5", "gzip"),
    ],
)
def test_behind_gzip_middleware_nothing_is_compressed_twice_and_the_etag_still_matches(
    site: Path, accept_encoding, coding, monkeypatch
):
    seen: list[int] = []
    real = GZipMiddleware.process_response

    def watched(self, request, response):
        seen.append(response.status_code)
        return real(self, request, response)

    monkeypatch.setattr(GZipMiddleware, "process_response", watched)
    warm(site)
    headers = {} if accept_encoding is None else {"Accept-Encoding": accept_encoding}
    without = Client().get(URL, headers=headers)
    client = Client()  # its handler loads the middleware at its first request
    with override_settings(MIDDLEWARE=GZIP_SITE):
        response = client.get(URL, headers=headers)
        again = client.get(URL, headers={**headers, "If-None-Match": response["ETag"]})
    assert seen == [200, 304], "the middleware saw both answers"
    assert decoded(response) == decoded(without) == plain(client), "one decoding gives the JSON"
    assert response.get("Content-Encoding") == coding
    assert response["ETag"] == without["ETag"]
    assert response["Vary"] == "Accept-Encoding"
    assert again.status_code == 304 and again["ETag"] == response["ETag"]

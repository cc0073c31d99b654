"""The release info behind a real caching proxy, nginx with ``examples/cdn/nginx-cache.conf`` as
shipped, in front of real gunicorn workers: nothing is kept before every app is fetched, each
channel and each coding is its own entry, an origin outage is answered from the kept answer for
the day ``stale-if-error`` gives (its signature still verifies) and no longer, and a due answer
is revalidated with a 304 that keeps the current signature, or replaced when the signing period
moved on. The proxy's clock (and the origin's) is moved forward, never waited for."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from craft_apps.kernel import signing
from tests.cdn.support import BETA_PATH, URL_PATH, Nginx, Origin, ask
from tests.signing.vectors import KEY_B
from tests.support import ONE_AT_A_TIME

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]

DAY_S = 86_400


class Edge:
    def __init__(self, origin: Origin, nginx: Nginx) -> None:
        self.origin, self.nginx = origin, nginx

    def now_s(self) -> int:
        """The launcher's clock: the proxy's."""
        return int(time.time()) + self.nginx.clock.ahead_s

    def warm(self) -> None:
        self.origin.warm()


@pytest.fixture
def edge(origin: Origin, tmp_path: Path) -> Iterator[Edge]:
    nginx = Nginx(tmp_path, origin.port)
    try:
        yield Edge(origin, nginx)
    finally:
        nginx.stop()


def test_nothing_is_kept_before_every_app_is_fetched(edge: Edge):
    cold = [ask(edge.nginx.port) for _ in range(3)]
    assert all(a.headers["cache-control"] == "no-store" for a in cold), cold[0].headers
    assert [a.cache for a in cold] == ["MISS", "MISS", "MISS"], "a cold host's answer is never kept"
    edge.warm()
    warm = [ask(edge.nginx.port) for _ in range(4)]
    # nginx learns the answer's Vary on its first miss, and keeps the variant on the second.
    assert warm[0].cache == "MISS" and [a.cache for a in warm[2:]] == ["HIT", "HIT"]
    assert warm[0].verdict(edge.now_s()).accepted


def test_each_channel_and_each_coding_is_its_own_entry(edge: Edge):
    edge.warm()
    firsts = {}
    for path in (URL_PATH, BETA_PATH):
        for coding in ("br", "gzip", ""):
            first = ask(edge.nginx.port, path, coding)
            ask(edge.nginx.port, path, coding)  # the variant is kept at the second miss at the most
            again = ask(edge.nginx.port, path, coding)
            assert (first.cache, again.cache) == ("MISS", "HIT"), (path, coding)
            assert again.raw == first.raw and again.headers.get("content-encoding") == (coding or None)
            firsts[path, coding] = first
    stable, beta = firsts[URL_PATH, "br"], firsts[BETA_PATH, "br"]
    assert stable.verdict(edge.now_s()).accepted
    assert beta.verdict(edge.now_s(), variant="beta").accepted, "beta's entry keeps beta's signature"
    assert not stable.verdict(edge.now_s(), variant="beta").accepted
    assert {firsts[URL_PATH, c].body for c in ("br", "gzip", "")} == {stable.body}


def test_an_outage_is_answered_from_the_kept_answer_for_a_day_and_no_longer(edge: Edge):
    edge.warm()
    kept = ask(edge.nginx.port)
    order = int(kept.verdict(edge.now_s()).order or 0)
    edge.origin.stop()
    for ahead_s, expected in ((120, "STALE"), (DAY_S - 60, "STALE")):
        edge.nginx.clock.advance(ahead_s - edge.nginx.clock.ahead_s)
        during = ask(edge.nginx.port)
        assert (during.status, during.cache) == (200, expected), during.headers
        assert during.raw == kept.raw
        verdict = during.verdict(edge.now_s(), order)
        assert verdict.accepted, f"{ahead_s} s into the outage: {verdict.reason}"
    edge.nginx.clock.advance(DAY_S + 300 - edge.nginx.clock.ahead_s)
    assert ask(edge.nginx.port).status >= 500, "past stale-if-error, the error shows"


def test_a_due_answer_is_revalidated_with_a_304_and_a_new_signature_replaces_it(edge: Edge):
    """A 304 means the same ETag, which covers the signing period and keys: the kept signature
    is the one the origin sends now. When the signature changes (a key added, a new period), so
    does the ETag, and the edge takes the 200 with the new one."""
    edge.warm()
    first = ask(edge.nginx.port)
    edge.nginx.clock.advance(60 + 300 + 1)  # past max-age and stale-while-revalidate
    revalidated = ask(edge.nginx.port)  # asked of the origin with If-None-Match, while it waits
    assert revalidated.cache == "REVALIDATED", revalidated.headers
    assert edge.origin.logged('" 304 '), "the origin answered the revalidation with a 304"
    current = ask(edge.origin.port).headers["craft-apps-signature"]
    assert revalidated.headers["craft-apps-signature"] == current == first.headers["craft-apps-signature"]

    edge.origin.stop()  # a second key signs too, as while rotating
    edge.origin.env["CRAFT_APPS_SIGNING_KEY_PREVIOUS"] = signing.private_key_text(KEY_B)
    edge.origin.start()
    edge.nginx.clock.advance(60 + 300 + 1)
    replaced = ask(edge.nginx.port)
    assert replaced.cache == "EXPIRED", replaced.headers
    assert replaced.headers["craft-apps-signature"] == ask(edge.origin.port).headers["craft-apps-signature"]
    assert replaced.headers["craft-apps-signature"].count("keyid=") == 2
    assert replaced.body == first.body and replaced.verdict(edge.now_s()).accepted

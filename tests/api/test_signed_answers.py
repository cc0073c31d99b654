"""Signed answers through Django's test client: the header verifies in every coding and on
HEAD, a 304 carries none and costs no signature, one signature per answer and period, a new
period sends a fresh one (never a 304), two keys while rotating; and without a key, every
answer byte for byte what today's code sends."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from django.test import Client, RequestFactory

from craft_apps.api import views
from craft_apps.api.negotiation import IDENTITY, choose_encoding
from craft_apps.api.runtime import runtime
from craft_apps.api.validators import not_modified, weak_etag
from craft_apps.kernel import signing
from tests.api.support import decoded, warm
from tests.signing.vectors import KEY_A, KEY_B
from tests.support import RELEASE_INFO_URL as URL

WINDOW = signing.DEFAULT_VALIDITY_SECS
PERIOD = WINDOW // 3
NOW = 1_790_000_000  # inside a period
START = signing.period_start(NOW, WINDOW)
CODINGS = (None, "br", "gzip")


def today_respond(request: HttpRequest) -> HttpResponse:
    """``views.respond`` as it was before signing: the reference for "nothing changes"."""
    answer = runtime().answers.answer()
    response: HttpResponse
    if not_modified(request.META.get("HTTP_IF_NONE_MATCH"), answer.etag):
        response = HttpResponseNotModified()
    else:
        coding = choose_encoding(request.META.get("HTTP_ACCEPT_ENCODING"))
        content = answer.content(coding)
        response = HttpResponse(b"" if request.method == "HEAD" else content, content_type="application/json")
        response["Content-Length"] = str(len(content))
        if coding != IDENTITY:
            response["Content-Encoding"] = coding
    response["ETag"] = answer.etag
    response["Cache-Control"] = answer.cache_control
    response["Vary"] = views.VARY
    return response


def at(now: float) -> Callable[..., HttpResponse]:
    factory = RequestFactory()

    def get(method: str = "GET", **headers: str) -> HttpResponse:
        request = factory.generic(method, URL, headers=headers)
        return views.respond(request, now=lambda: now)

    return get


def with_keys(settings, site: Path, *keys: signing.SigningKey) -> None:
    config = {"APPS": settings.CRAFT_APPS["APPS"], "STATE_DIR": str(site)}
    if keys:
        config["SIGNING_KEY"] = signing.private_key_text(keys[0])
    if len(keys) > 1:
        config["SIGNING_KEY_PREVIOUS"] = signing.private_key_text(keys[1])
    settings.CRAFT_APPS = config


def verdict(response: HttpResponse, keys: list[signing.SigningKey], now: int = NOW) -> signing.Verdict:
    return signing.verify(decoded(response), response.headers, [key.public for key in keys], now)


@pytest.mark.parametrize("key", [None, "", "   ", "not a key"])
def test_without_a_usable_key_every_answer_is_todays_byte_for_byte(site: Path, settings, key):
    warm(site)
    if key is not None:
        settings.CRAFT_APPS = {**settings.CRAFT_APPS, "SIGNING_KEY": key}
    factory = RequestFactory()
    etag = runtime().answers.answer().etag
    requests = [
        {},
        {"Accept-Encoding": "br, gzip"},
        {"Accept-Encoding": "gzip"},
        {"If-None-Match": etag},
        {"If-None-Match": 'W/"other"'},
    ]
    for method in ("GET", "HEAD"):
        for headers in requests:
            ours = views.respond(factory.generic(method, URL, headers=headers), now=lambda: NOW)
            today = today_respond(factory.generic(method, URL, headers=headers))
            assert (ours.status_code, dict(ours.headers), ours.content) == (
                today.status_code,
                dict(today.headers),
                today.content,
            ), (method, headers)
    answer = Client().get(URL)
    assert answer["ETag"] == weak_etag(json.loads(answer.content)) and signing.HEADER not in answer


def test_every_coding_and_head_carry_a_signature_over_the_plain_json(site: Path, settings):
    warm(site)
    with_keys(settings, site, KEY_A)
    get = at(NOW)
    answers = [get(**({"Accept-Encoding": c} if c else {})) for c in CODINGS]
    bodies = {decoded(answer) for answer in answers}
    assert len(bodies) == 1
    headers = {answer[signing.HEADER] for answer in answers}
    assert len(headers) == 1, "one signature, whatever the coding"
    for answer in answers:
        found = verdict(answer, [KEY_A])
        assert found.accepted, found
        assert (found.signed, found.expires) == (signing.rfc3339(START), signing.rfc3339(START + WINDOW))
    head = get("HEAD", **{"Accept-Encoding": "br"})
    assert head[signing.HEADER] == answers[1][signing.HEADER] and head.content == b""
    # The ETag says a signed answer; without the key it is today's again.
    unsigned_etag = runtime().answers.answer().etag
    assert answers[0]["ETag"] != unsigned_etag and answers[0]["ETag"].startswith('W/"')
    with_keys(settings, site)
    assert at(NOW)()["ETag"] == unsigned_etag


def test_a_304_carries_no_signature_and_makes_none(site: Path, settings, monkeypatch):
    warm(site)
    with_keys(settings, site, KEY_A)
    made: list[int] = []
    real_sign = signing.sign

    def counting_sign(*args, **kwargs) -> str:
        made.append(1)
        return real_sign(*args, **kwargs)

    monkeypatch.setattr(signing, "sign", counting_sign)
    get = at(NOW)
    etag = get("HEAD")["ETag"]  # the period's ETag: a HEAD signs (it carries the 200's headers)
    made.clear()
    runtime().answers.clear()  # a new process: nothing signed yet
    for _ in range(5):
        revalidated = get(**{"If-None-Match": etag, "Accept-Encoding": "br"})
        assert revalidated.status_code == 304 and signing.HEADER not in revalidated
        assert revalidated["ETag"] == etag
    assert made == [], "a 304 needs no signature"
    for coding in CODINGS * 3:
        get(**({"Accept-Encoding": coding} if coding else {}))
    at(START + PERIOD - 1)()  # later in the same period
    assert made == [1], "one signature per answer and period"


def test_a_new_period_sends_a_fresh_signature_never_a_304(site: Path, settings):
    warm(site)
    with_keys(settings, site, KEY_A)
    before = at(START + PERIOD - 1)()
    assert at(START + PERIOD - 1)(**{"If-None-Match": before["ETag"]}).status_code == 304
    after = at(START + PERIOD)(**{"If-None-Match": before["ETag"]})
    assert after.status_code == 200 and after["ETag"] != before["ETag"]
    found = verdict(after, [KEY_A], START + PERIOD)
    assert found.accepted and found.signed == signing.rfc3339(START + PERIOD)
    # The launcher that accepted the new one still accepts an edge's previous-period answer:
    # the same content, the same order.
    assert found.order is not None and found.order == verdict(before, [KEY_A]).order
    old = signing.verify(decoded(before), before.headers, [KEY_A.public], START + PERIOD, int(found.order))
    assert old.accepted, old
    # A release changes the ETag within a period too.
    warm(site, version="0.6.0")
    assert at(START + PERIOD)(**{"If-None-Match": after["ETag"]}).status_code == 200


def test_two_keys_sign_while_rotating_and_the_etag_follows_the_keys(site: Path, settings):
    warm(site)
    etags = []
    for keys, pinned_ok in (
        ((KEY_A,), ([KEY_A],)),
        ((KEY_B, KEY_A), ([KEY_A], [KEY_B])),
        ((KEY_B,), ([KEY_B],)),
    ):
        with_keys(settings, site, *keys)
        answer = at(NOW)(**{"Accept-Encoding": "gzip"})
        etags.append(answer["ETag"])
        assert answer[signing.HEADER].count("keyid=") == len(keys)
        for pinned in pinned_ok:
            assert verdict(answer, pinned).accepted
    assert len(set(etags)) == 3, "each change of keys reaches every launcher as a 200"
    assert verdict(answer, [KEY_A]).reason == "unknown key"


def test_the_refined_brotli_form_keeps_the_signature(site: Path, settings, install_runtime):
    """The brotli form remade off the request path shares its answer's signature."""
    from craft_apps.api.representation import Refiner

    pending: list[Callable[[], None]] = []
    install_runtime(recheck_s=0.0, refiner=Refiner(start=pending.append, after_s=0.0))
    warm(site)
    with_keys(settings, site, KEY_A)
    first = at(NOW)(**{"Accept-Encoding": "br"})
    at(NOW)()
    assert pending
    pending.pop()()
    refined = at(NOW)(**{"Accept-Encoding": "br"})
    assert refined.content != first.content, "the best brotli form is served"
    assert refined[signing.HEADER] == first[signing.HEADER] and verdict(refined, [KEY_A]).accepted


VALIDITY_VALUES: tuple[object, ...] = (
    99_999_999_999_999, 10**30, 2**63, signing.MAX_VALIDITY_SECS + 1, signing.MAX_VALIDITY_SECS,
    -(10**20), -1, 0, 1, "99999999999999", " 7 ", "1e20", "abc", "", 1.5, 1e300, True, None, [],
)  # fmt: skip
KEY_VALUES: tuple[object, ...] = (
    "not a key", "", 12, 1.5, True, None, ["x"], b"bytes", "\x00", "=" * 44, "-----BEGIN PRIVATE KEY-----",
    "AAAA" * 19,  # 57 bytes: an Ed448 key
)  # fmt: skip


@pytest.mark.parametrize(
    "extra",
    [{"SIGNING_VALIDITY_SECS": value} for value in VALIDITY_VALUES]
    + [{"SIGNING_KEY_PREVIOUS": value} for value in KEY_VALUES]
    + [{"POLL_INTERVAL_SECS": 10**15}, {"POLL_INTERVAL_SECS": 10**15, "SIGNING_VALIDITY_SECS": 10**16}],
    ids=repr,
)
def test_no_signing_setting_makes_the_endpoint_fail(site: Path, settings, extra):
    """Every value of a signing setting (and a polling interval that raises the window) through
    Django's full request path: a 200 whose signature verifies, its window at most a year."""
    warm(site)
    with_keys(settings, site, KEY_A)
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, **extra}
    for coding in ("identity", "br", "gzip"):
        answer: Any = Client().get(URL, headers={"Accept-Encoding": coding})
        assert answer.status_code == 200, extra
        found = verdict(answer, [KEY_A], int(time.time()))
        assert found.accepted, (extra, found)
        window = signing.parse_rfc3339(found.expires or "") - signing.parse_rfc3339(found.signed or "")
        assert 0 < window <= signing.MAX_VALIDITY_SECS


@pytest.mark.parametrize("value", KEY_VALUES, ids=repr)
def test_an_unusable_key_alone_serves_the_unsigned_answer(site: Path, settings, value):
    warm(site)
    settings.CRAFT_APPS = {**settings.CRAFT_APPS, "SIGNING_KEY": value, "SIGNING_VALIDITY_SECS": 10**30}
    answer = Client().get(URL)
    assert answer.status_code == 200 and signing.HEADER not in answer

"""POST /v1/craft_apps/github_webhook: verified before anything else, then due marks in Redis and
on the host's state file, each delivery once. A real redis-server and a real state file."""

from __future__ import annotations

import hmac
import io
import json
import logging
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.test import Client, RequestFactory, override_settings

from craft_apps.api import webhook
from craft_apps.api.refresh import DELIVERIES_KEPT, refresh_stores, request_refresh
from craft_apps.fleet.options import poller_cache
from craft_apps.host.due import DueMark, HostDueMarks
from craft_apps.host.store import StateStore
from tests.fleet.server import RedisServer
from tests.support import publish, release_event, signed, webhook_headers

URL = "/v1/craft_apps/github_webhook"
SECRET = "first-webhook-secret-0123456789"
NEXT_SECRET = "second-webhook-secret-9876543210"
APPS = (
    "photocraft=PhotoCraft=storytold/photocraft,twin=Twin=storytold/photocraft,"
    "vectorcraft=VectorCraft=storytold/vectorcraft"
)
LOCAL = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}


@pytest.fixture(autouse=True)
def every_log_line(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.DEBUG)
    yield
    for secret in (SECRET, NEXT_SECRET):
        assert secret not in caplog.text, "a secret was logged"


@pytest.fixture
def host_dir(state_dir: Path) -> Path:
    publish(state_dir, {})  # the state file a poller made
    return state_dir


def settings_for(state_dir: Path, redis_url: str | None, secret: object = SECRET) -> Any:
    caches: dict[str, Any] = {"default": LOCAL}
    if redis_url is not None:
        caches["craft_apps"] = poller_cache(redis_url)
    return override_settings(
        CRAFT_APPS={"STATE_DIR": str(state_dir), "GITHUB_WEBHOOK_SECRET": secret, "APPS": APPS}, CACHES=caches
    )


@pytest.fixture
def site(host_dir: Path, redis_server: RedisServer, redis_client: redis.Redis) -> Iterator[None]:
    with settings_for(host_dir, redis_server.url):
        yield


def post(
    payload: object = None,
    *,
    secret: str = SECRET,
    event: str = "release",
    delivery: str = "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    body: bytes | None = None,
    **headers: str,
) -> Any:
    data = body if body is not None else json.dumps(release_event() if payload is None else payload).encode()
    sent = {**webhook_headers(data, secret, event, delivery), **headers}
    return Client().post(URL, data=data, content_type="application/json", headers=sent)


def nothing_done(state_dir: Path, client: redis.Redis) -> bool:
    return HostDueMarks(state_dir).marks() == [] and client.keys("*") == []


# -- verified before anything else --------------------------------------------------------


def test_without_a_secret_the_url_is_not_there(host_dir: Path, redis_server: RedisServer, redis_client):
    with settings_for(host_dir, redis_server.url, secret=" , "):
        assert post().status_code == 404
        assert Client().get(URL).status_code == 404
    assert nothing_done(host_dir, redis_client)


def test_a_good_signature_marks_the_app_due_in_redis_and_on_the_host(site, host_dir: Path, redis_client):
    response = post()
    assert response.status_code == 202
    assert response.json() == {"status": "due", "apps": ["photocraft", "twin"]}
    due = redis_client.hgetall("craftApps:releases:due")
    assert set(due) == {b"photocraft", b"twin"}
    assert redis_client.get("craftApps:releases:due:seq") == b"1"
    assert 0 < redis_client.pttl("craftApps:releases:due") <= 86_400_000
    marks = HostDueMarks(host_dir).marks()
    assert [(m.app, m.shared) for m in marks] == [("photocraft", True), ("twin", True)]
    assert marks[0].requested_ms == int(due[b"photocraft"])


@pytest.mark.parametrize(
    "signature",
    [None, "", "sha256=", "sha256=" + "0" * 64, "sha1=abc", "sha256=" + "é" * 64],
    ids=["missing", "empty", "no-digest", "wrong", "sha1", "not-ascii"],
)
def test_a_missing_or_wrong_signature_is_401_and_nothing_is_done(
    site, host_dir: Path, redis_client, signature: str | None
):
    data = json.dumps(release_event()).encode()
    headers = {"X-GitHub-Event": "release", "X-GitHub-Delivery": "d-1"}
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature
    response = Client().post(URL, data=data, content_type="application/json", headers=headers)
    assert response.status_code == 401
    assert nothing_done(host_dir, redis_client)


def test_a_signature_of_another_body_or_secret_is_401(site, host_dir: Path, redis_client):
    data = json.dumps(release_event()).encode()
    other = json.dumps(release_event(action="edited")).encode()
    assert post(body=data, **{"X-Hub-Signature-256": signed(other, SECRET)}).status_code == 401
    assert post(secret="guessed").status_code == 401
    assert nothing_done(host_dir, redis_client)


def test_secrets_rotate_without_downtime(host_dir: Path, redis_server: RedisServer, redis_client):
    with settings_for(host_dir, redis_server.url, secret=f"{SECRET},{NEXT_SECRET}"):
        assert post(secret=SECRET, delivery="a").status_code == 202
        assert post(secret=NEXT_SECRET, delivery="b").status_code == 202
    with settings_for(host_dir, redis_server.url, secret=[NEXT_SECRET]):  # the old one retired
        assert post(secret=SECRET, delivery="c").status_code == 401
        assert post(secret=NEXT_SECRET, delivery="d").status_code == 202


def test_every_secret_is_compared_in_constant_time(site, monkeypatch: pytest.MonkeyPatch):
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    body = json.dumps(release_event()).encode()
    header = signed(body, SECRET)
    assert webhook.signature_matches(body, header, [SECRET, NEXT_SECRET])
    assert compared == [
        (header.encode(), header.encode()),
        (signed(body, NEXT_SECRET).encode(), header.encode()),
    ], "both secrets, even after a match"
    compared.clear()
    assert post(body=body).status_code == 202
    assert len(compared) == 1


class ExplodingStream(io.RawIOBase):
    def readinto(self, buffer: Any) -> int:
        raise AssertionError("the body was read")


def test_a_body_over_1_mib_is_refused_unread(site, host_dir: Path, redis_client):
    request = RequestFactory().post(
        URL, data=b"", content_type="application/json", CONTENT_LENGTH=str(webhook.MAX_BODY_BYTES + 1)
    )
    request.META["wsgi.input"] = ExplodingStream()
    request._stream = ExplodingStream()  # type: ignore[assignment]
    response = webhook.github_webhook(request)
    assert response.status_code == 413
    assert nothing_done(host_dir, redis_client)


def test_a_body_of_exactly_1_mib_is_read(site):
    payload = release_event(repo="storytold/unknown")
    text = json.dumps(payload)
    payload["padding"] = "x" * (webhook.MAX_BODY_BYTES - len(text) - len(', "padding": ""'))
    body = json.dumps(payload).encode()
    assert len(body) == webhook.MAX_BODY_BYTES
    assert post(body=body).status_code == 202
    assert post(body=body + b" ").status_code == 413


@pytest.mark.parametrize("body", [b"payload=%7B%7D", b"{", b"[1, 2]", b"", b"[" * 100_000], ids=str)
def test_a_body_that_is_not_a_json_object_is_400(site, host_dir: Path, redis_client, body: bytes):
    response = post(body=body)
    assert response.status_code == 400
    assert "application/json" in response.json()["error"]
    assert nothing_done(host_dir, redis_client)


def test_only_post(site):
    response = Client().get(URL)
    assert response.status_code == 405 and response["Allow"] == "POST"


# -- events and actions -------------------------------------------------------------------


def test_a_ping_is_200(site, host_dir: Path, redis_client, caplog: pytest.LogCaptureFixture):
    response = post({"zen": "Keep it logically awesome.", "hook": {"events": ["release"]}}, event="ping")
    assert response.status_code == 200 and response.json() == {"status": "pong"}
    assert "ping" in caplog.text and "signature matches" in caplog.text
    response = post({"hook": {"events": ["push"]}}, event="ping")
    assert response.status_code == 200 and "Releases" in response.json()["warning"]
    assert nothing_done(host_dir, redis_client)


@pytest.mark.parametrize("action", sorted(webhook.RELEASE_ACTIONS))
def test_every_release_action_that_changes_the_latest_release_marks_it_due(site, redis_client, action: str):
    assert post(release_event(action=action)).status_code == 202
    assert redis_client.hexists("craftApps:releases:due", "photocraft")


@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("push", release_event()),
        ("release", release_event(action="created")),
        ("release", release_event(action="drafted")),
        ("release", release_event(repo="storytold/elsewhere")),
        ("release", release_event(repo="other/photocraft")),
        ("release", {"action": "published", "repository": "storytold/photocraft"}),
        ("release", {"action": ["published"], "repository": {"full_name": "storytold/photocraft"}}),
        ("release", {}),
    ],
    ids=[
        "push",
        "created",
        "drafted",
        "other-repo",
        "other-org",
        "repository-not-object",
        "bad-action",
        "empty",
    ],
)
def test_other_events_repositories_and_actions_are_ignored_with_one_debug_line(
    site, host_dir: Path, redis_client, caplog: pytest.LogCaptureFixture, event: str, payload: dict[str, Any]
):
    caplog.clear()
    response = post(payload, event=event)
    assert response.status_code == 202 and response.json() == {"status": "ignored"}
    lines = [r for r in caplog.records if r.name == "craft_apps.api.webhook"]
    assert len(lines) == 1 and lines[0].levelno == logging.DEBUG and "ignored" in lines[0].getMessage()
    assert nothing_done(host_dir, redis_client)


def test_the_repository_matches_in_any_case(site, redis_client):
    assert post(release_event(repo="StoryTold/VectorCraft")).json() == {
        "status": "due",
        "apps": ["vectorcraft"],
    }


def test_the_payloads_release_is_never_stored_or_served(site, host_dir: Path, redis_client):
    assert post().status_code == 202
    assert StateStore(host_dir).read().apps == {}
    stored = b" ".join(
        v for k in redis_client.keys("*") if redis_client.type(k) == b"hash" for v in redis_client.hvals(k)
    )
    assert b"v9.9.9" not in stored and b"evil" not in stored


# -- replays ------------------------------------------------------------------------------


def test_a_repeated_delivery_does_nothing_more(site, host_dir: Path, redis_client):
    assert post(delivery="same").json()["status"] == "due"
    HostDueMarks(host_dir).forget(HostDueMarks(host_dir).marks())
    redis_client.delete("craftApps:releases:due", "craftApps:releases:due:seq")

    response = post(delivery="same")
    assert response.status_code == 202 and response.json() == {"status": "duplicate"}
    assert HostDueMarks(host_dir).marks() == [] and redis_client.exists("craftApps:releases:due") == 0
    assert 0 < redis_client.pttl("craftApps:releases:deliveries") <= 86_400_000
    assert redis_client.zrange("craftApps:releases:deliveries", 0, -1) == [b"same"]
    assert post(delivery="another").json()["status"] == "due"


def test_a_delivery_taken_by_another_host_is_a_replay_here(site, host_dir: Path, redis_client):
    redis_client.zadd("craftApps:releases:deliveries", {"seen-elsewhere": time.time() * 1000})
    assert post(delivery="seen-elsewhere").json() == {"status": "duplicate"}
    assert HostDueMarks(host_dir).marks() == []


def test_a_delivery_seen_on_this_host_is_a_replay_even_after_redis_forgot_it(
    site, host_dir: Path, redis_client
):
    assert post(delivery="x").json()["status"] == "due"
    redis_client.flushall()
    assert post(delivery="x").json() == {"status": "duplicate"}
    assert redis_client.keys("*") == []


def test_a_malformed_delivery_id_is_400(site, host_dir: Path, redis_client):
    assert post(delivery="a b:*").status_code == 400
    assert post(delivery="x" * 101).status_code == 400
    assert nothing_done(host_dir, redis_client)


# -- without Redis, or without a state file -------------------------------------------------


def test_with_redis_down_the_host_alone_has_the_mark(
    host_dir: Path, fresh_redis_server: RedisServer, caplog: pytest.LogCaptureFixture
):
    url = fresh_redis_server.url
    fresh_redis_server.kill()
    with settings_for(host_dir, url):
        assert post().json()["status"] == "due"
    assert [m.shared for m in HostDueMarks(host_dir).marks()] == [False, False]
    assert "marked in this host's state file only" in caplog.text


def test_without_coordination_only_the_host_is_marked(host_dir: Path):
    with settings_for(host_dir, None):
        assert post().json()["status"] == "due"
    assert HostDueMarks(host_dir).marks() == [
        DueMark("photocraft", HostDueMarks(host_dir).marks()[0].requested_ms, False),
        DueMark("twin", HostDueMarks(host_dir).marks()[1].requested_ms, False),
    ]


def test_with_nowhere_to_write_it_is_503(state_dir: Path, caplog: pytest.LogCaptureFixture):
    with settings_for(state_dir, None):
        response = post()
    assert response.status_code == 503
    assert "doesn't exist yet" in caplog.text
    assert not state_dir.exists(), "the state file is the poller's to create"


def test_a_secret_setting_of_the_wrong_type_is_named_without_its_value(host_dir: Path):
    from craft_apps.checks import configuration_problems

    with settings_for(host_dir, None, secret=[SECRET, 42]):
        found = [p for p in configuration_problems() if p.id == "craft_apps.E121"]
        assert post().status_code == 404
    assert len(found) == 1 and "GITHUB_WEBHOOK_SECRET" in found[0].msg and "list" in found[0].msg
    assert SECRET not in found[0].msg + found[0].hint


# -- bounds -------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_flood_of_deliveries_leaves_at_most_the_bound_in_redis_and_on_the_host(
    site, host_dir: Path, redis_client
):
    """10,000 deliveries (someone holding the secret) leave one Redis key of DELIVERIES_KEPT
    members, and the host's state file as many rows (a flood of 1.5 times the bound there, as
    each is a transaction on disk); GitHub is still asked at most once per app per 10 s (the
    refresh rule, tests/polling/test_wakeup.py)."""
    start_ms = int(time.time() * 1000)
    host, fleet = refresh_stores()
    try:
        for n in range(10_000):
            on_host = host if n >= 10_000 - DELIVERIES_KEPT * 3 // 2 else None
            outcome = request_refresh(
                ["photocraft"], now_ms=start_ms + n, host=on_host, fleet=fleet, delivery=f"flood-{n}"
            )
            assert outcome.shared and not outcome.duplicate
    finally:
        host.close()
    prefix = "craftApps:releases:"
    assert set(redis_client.keys("*")) == {f"{prefix}{k}".encode() for k in ("due", "due:seq", "deliveries")}
    assert redis_client.zcard(f"{prefix}deliveries") == DELIVERIES_KEPT
    assert redis_client.hlen(f"{prefix}due") == 1
    db = sqlite3.connect(host_dir / "craft_apps_state.sqlite3")
    try:
        assert db.execute("SELECT count(*) FROM webhook_delivery").fetchone()[0] == DELIVERIES_KEPT
    finally:
        db.close()
    # The newest are still replays; one past the bound is taken again (and asks no sooner).
    assert post(delivery="flood-9999").json() == {"status": "duplicate"}
    assert post(delivery="flood-0").json()["status"] == "due"

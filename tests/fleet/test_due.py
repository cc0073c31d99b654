"""Due marks and deliveries shared through a real redis-server, and Redis trouble as RedisTrouble."""

from __future__ import annotations

import pytest
import redis

from craft_apps.fleet.due import DELIVERY_TTL_MS, DUE_TTL_MS, SharedDueMarks
from craft_apps.fleet.errors import RedisTrouble
from tests.fleet.helpers import t
from tests.fleet.server import RedisServer


def test_a_mark_moves_the_counter_and_expires_in_a_day(redis_client: redis.Redis):
    due = SharedDueMarks(redis_client, key_prefix="p:")
    assert due.seq() is None and due.marks() == {}
    due.mark(["photocraft", "vectorcraft"], t(0))
    due.mark(["photocraft"], t(1))
    assert due.seq() == b"2"
    assert due.marks() == {"photocraft": t(1), "vectorcraft": t(0)}
    for key in ("p:due", "p:due:seq"):
        assert DUE_TTL_MS - 60_000 < redis_client.pttl(key) <= DUE_TTL_MS
    due.mark([], t(2))
    assert due.seq() == b"2", "nothing to mark: nothing moves"


def test_unreadable_marks_are_left_out(redis_client: redis.Redis):
    redis_client.hset("craftApps:releases:due", mapping={"a": "soon", "b": "-5", "c": str(t(0))})
    assert SharedDueMarks(redis_client).marks() == {"c": t(0)}


def test_a_delivery_is_taken_once_a_day(redis_client: redis.Redis):
    due = SharedDueMarks(redis_client)
    assert due.take_delivery("d-1", t(0), keep=10)
    assert not due.take_delivery("d-1", t(0) + DELIVERY_TTL_MS, keep=10)
    assert DELIVERY_TTL_MS - 60_000 < redis_client.pttl("craftApps:releases:deliveries") <= DELIVERY_TTL_MS
    assert due.take_delivery("d-1", t(0) + DELIVERY_TTL_MS + 1, keep=10), "over a day ago: taken again"


def test_only_the_newest_deliveries_are_kept_in_one_key(redis_client: redis.Redis):
    due = SharedDueMarks(redis_client)
    for n in range(25):
        assert due.take_delivery(f"d-{n}", t(0) + n, keep=10)
    assert not due.take_delivery("d-24", t(0) + 30, keep=10), "a recent one is still a replay"
    assert due.take_delivery("d-0", t(0) + 31, keep=10), "one past the bound is taken again"
    assert redis_client.keys("*") == [b"craftApps:releases:deliveries"]
    kept = redis_client.zrange("craftApps:releases:deliveries", 0, -1)
    assert kept == [f"d-{n}".encode() for n in range(16, 25)] + [b"d-0"]


def test_redis_trouble_is_one_line_without_credentials(fresh_redis_server: RedisServer):
    url = fresh_redis_server.acl_user("poller", "pw-123", ["~*", "&*", "+@all"])
    client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
    due = SharedDueMarks(client)
    fresh_redis_server.kill()
    for call in (
        due.seq,
        due.marks,
        lambda: due.mark(["a"], t(0)),
        lambda: due.take_delivery("d", t(0), keep=1),
    ):
        with pytest.raises(RedisTrouble) as caught:
            call()
        assert "\n" not in str(caught.value) and "pw-123" not in str(caught.value)


def test_bytes_a_decoding_client_cant_read_are_redis_trouble_too(redis_server: RedisServer, redis_client):
    # The one rule of fleet.errors.redis_trouble: a client that decodes answers meeting bytes that
    # aren't UTF-8 is trouble with Redis, as for the shared store, not an error out of the poller.
    redis_client.set("craftApps:releases:due:seq", b"\xff\xfe")
    redis_client.hset("craftApps:releases:due", b"\xff", b"\xfe")
    decoding = redis_server.client(decode_responses=True)
    try:
        due = SharedDueMarks(decoding)
        for call in (due.seq, due.marks):
            with pytest.raises(RedisTrouble) as caught:
                call()
            assert "UnicodeDecodeError" in str(caught.value) or "utf-8" in str(caught.value).lower()
    finally:
        decoding.close()

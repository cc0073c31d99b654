"""Due marks and deliveries shared through a real redis-server, and Redis trouble as RedisTrouble."""

from __future__ import annotations

import pytest
import redis

from craft_apps.fleet.due import DELIVERY_TTL_MS, DUE_TTL_MS, SharedDueMarks
from craft_apps.fleet.store import RedisTrouble
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


def test_a_delivery_is_taken_once(redis_client: redis.Redis):
    due = SharedDueMarks(redis_client)
    assert due.take_delivery("d-1")
    assert not due.take_delivery("d-1")
    assert DELIVERY_TTL_MS - 60_000 < redis_client.pttl("craftApps:releases:delivery:d-1") <= DELIVERY_TTL_MS


def test_redis_trouble_is_one_line_without_credentials(fresh_redis_server: RedisServer):
    url = fresh_redis_server.acl_user("poller", "pw-123", ["~*", "&*", "+@all"])
    client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
    due = SharedDueMarks(client)
    fresh_redis_server.kill()
    for call in (due.seq, due.marks, lambda: due.mark(["a"], t(0)), lambda: due.take_delivery("d")):
        with pytest.raises(RedisTrouble) as caught:
            call()
        assert "\n" not in str(caught.value) and "pw-123" not in str(caught.value)

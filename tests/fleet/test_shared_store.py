"""The shared store against a real redis-server: every guarded-write rule through the Lua script
and through WATCH/MULTI/EXEC with the same results, the switch between them, and Redis trouble.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from redis.connection import Connection

from craft_apps.domain import Backoff
from craft_apps.fleet import store as shared_store
from craft_apps.fleet.entry import APP_TTL_MS, BACKOFF_TTL_MS, SharedAppEntry, SharedFailure, SharedFetch
from craft_apps.fleet.store import GuardedWrite, RedisTrouble, SharedStore, write_wins
from tests.fleet.helpers import release, t
from tests.fleet.server import RedisServer, free_port

PREFIX = "craftApps:releases:"
LOGGER = "craft_apps.fleet.store"
REFUSAL_LOG = "refused the guarded-write script"


def store(client: redis.Redis, host: str = "pod-a", *, use_scripts: bool = True) -> SharedStore:
    return SharedStore(client, hostname=host, use_scripts=use_scripts)


def only_entry(pod: SharedStore, app: str) -> SharedAppEntry:
    entries, _ = pod.read([app])
    assert entries[0] is not None
    return entries[0]


def command_calls(client: redis.Redis, command: str) -> int:
    stats = client.info("commandstats").get(f"cmdstat_{command}")
    return int(stats["calls"]) if stats else 0


def exercise_guarded_writes(pod_a: SharedStore, pod_b: SharedStore, admin: redis.Redis) -> None:
    """Every guarded-write rule, as two hosts sharing one Redis see it."""
    app, other = "photocraft", "vectorcraft"
    assert pod_a.read([app, other]) == ([None, None], Backoff())

    # Two hosts tick together: only one asks GitHub; the claim lapses after its window.
    assert pod_a.claim(app, t(0))
    assert not pod_b.claim(app, t(0) + 5_000)
    assert not pod_b.claim(app, t(1) - 1)
    assert pod_b.claim(app, t(1))
    assert admin.hget(PREFIX + "app:" + app, "by") == b"pod-b"

    # A newer fetch is never replaced by an older one.
    assert pod_a.write_fetched(app, release("0.5.0"), '"e2"', t(2))
    assert not pod_b.write_fetched(app, release("0.4.0"), '"e1"', t(1))
    assert only_entry(pod_b, app).fetched == SharedFetch(release("0.5.0"), '"e2"', t(2))

    # A 304 moves only the time, and only for the release it revalidated.
    assert not pod_b.write_unchanged(app, '"e1"', t(3)), "stale ETag"
    assert not pod_b.write_unchanged(app, '"e2"', t(1)), "older than the shared fetch"
    assert not pod_b.write_unchanged(app, "", t(3)), "no ETag to revalidate"
    assert pod_b.write_unchanged(app, '"e2"', t(3))
    assert only_entry(pod_a, app).fetched == SharedFetch(release("0.5.0"), '"e2"', t(3))

    # Failures: the newest wins, and leave the fetch alone.
    assert pod_a.write_failure(app, t(5), 2)
    assert not pod_b.write_failure(app, t(4), 1)
    assert only_entry(pod_b, app) == SharedAppEntry(
        fetched=SharedFetch(release("0.5.0"), '"e2"', t(3)), failure=SharedFailure(t(5), 2)
    )

    # Garbage in an entry reads as absent and is overwritten, not trusted.
    other_key = PREFIX + "app:" + other
    admin.hset(other_key, mapping={"v": "1", "fetched_ms": "soon", "release": "{", "etag": ""})
    assert pod_a.read([app, other])[0][1] == SharedAppEntry()
    assert pod_a.write_fetched(other, None, None, t(1))
    assert pod_a.read([app, other])[0][1] == SharedAppEntry(fetched=SharedFetch(None, None, t(1)))

    # Entries expire a week after their last write.
    for key in (PREFIX + "app:" + app, other_key):
        assert APP_TTL_MS - 60_000 < admin.pttl(key) <= APP_TTL_MS

    # The fleet backoff: shared for a day, deleted after a good round.
    backoff = Backoff(until_ms=t(30), trouble=2)
    pod_a.write_backoff(backoff)
    assert pod_b.read([app])[1] == backoff
    assert BACKOFF_TTL_MS - 60_000 < admin.pttl(PREFIX + "backoff") <= BACKOFF_TTL_MS
    pod_b.write_backoff(Backoff())
    assert admin.exists(PREFIX + "backoff") == 0
    assert pod_a.read([app])[1] == Backoff()


@pytest.mark.parametrize("use_scripts", [True, False], ids=["script", "watch"])
def test_guarded_writes(redis_client: redis.Redis, use_scripts: bool) -> None:
    pod_a = store(redis_client, "pod-a", use_scripts=use_scripts)
    pod_b = store(redis_client, "pod-b", use_scripts=use_scripts)
    evalsha_before = command_calls(redis_client, "evalsha")
    exercise_guarded_writes(pod_a, pod_b, redis_client)
    assert (command_calls(redis_client, "evalsha") > evalsha_before) is use_scripts
    assert pod_a.scripts_refused is not use_scripts


def test_a_redis_user_without_scripting_falls_back_to_watch(
    redis_server: RedisServer, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    url = redis_server.acl_user("no-scripts", "pw-1", ["~*", "&*", "+@all", "-@scripting"])
    client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=3)
    pod_a, pod_b = store(client, "pod-a"), store(client, "pod-b")

    exercise_guarded_writes(pod_a, pod_b, redis_client)
    assert pod_a.scripts_refused and pod_b.scripts_refused
    refusals = [r.getMessage() for r in caplog.records if REFUSAL_LOG in r.getMessage()]
    assert len(refusals) == 2, "logged once per store"
    assert "evalsha" in refusals[0] and "pw-1" not in refusals[0]


def test_a_command_denied_inside_the_script_is_trouble_not_a_refusal(
    redis_server: RedisServer, redis_client: redis.Redis
) -> None:
    url = redis_server.acl_user("no-hset", "pw-2", ["~*", "&*", "+@all", "-hset"])
    pod = store(redis.Redis.from_url(url, socket_timeout=5))
    with pytest.raises(RedisTrouble, match=r"can't run this command|no permissions"):
        pod.claim("photocraft", t(0))
    assert not pod.scripts_refused, "WATCH/MULTI/EXEC would be denied HSET as well"
    assert pod.read(["photocraft"]) == ([None], Backoff())


def test_script_flush_between_writes_is_survived(redis_client: redis.Redis) -> None:
    pod = store(redis_client)
    assert pod.write_fetched("photocraft", release(), '"e1"', t(1))
    redis_client.script_flush()
    assert pod.write_fetched("photocraft", release("0.6.0"), '"e2"', t(2))
    assert not pod.scripts_refused
    assert command_calls(redis_client, "script|load") >= 1
    assert only_entry(pod, "photocraft").fetched == SharedFetch(release("0.6.0"), '"e2"', t(2))


def test_a_key_prefix_is_honoured(redis_client: redis.Redis) -> None:
    pod = SharedStore(redis_client, hostname="pod-a", key_prefix="staging:craft:")
    assert pod.claim("photocraft", t(0))
    pod.write_backoff(Backoff(until_ms=t(9), trouble=1))
    assert sorted(redis_client.keys("*")) == [b"staging:craft:app:photocraft", b"staging:craft:backoff"]


# -- the script and write_wins decide alike -----------------------------------------------

GARBAGE_TIMES = ["soon", "", "1e15", "0x7fffffffffff", " 1790000000000", "1.5", "+5", "-5", "9" * 16]

CASES: list[tuple[str, dict[Any, Any] | str | None, str, int, int, str | None, bool]] = [
    # (id, stored hash (or a string key), time field, new time, gap, required ETag, expected)
    ("absent", None, "fetched_ms", t(2), 0, None, True),
    ("older stored", {"fetched_ms": t(1)}, "fetched_ms", t(2), 0, None, True),
    ("same time", {"fetched_ms": t(2)}, "fetched_ms", t(2), 0, None, True),
    ("newer stored", {"fetched_ms": t(3)}, "fetched_ms", t(2), 0, None, False),
    ("15 digits", {"fetched_ms": "9" * 15}, "fetched_ms", t(2), 0, None, False),
    ("leading zeros", {"fetched_ms": "0" * 14 + "5"}, "fetched_ms", t(2), 0, None, True),
    ("claim inside window", {"claimed_ms": t(0.5)}, "claimed_ms", t(1), 60_000, None, False),
    ("claim 1 ms early", {"claimed_ms": t(0)}, "claimed_ms", t(1) - 1, 60_000, None, False),
    ("claim window over", {"claimed_ms": t(0)}, "claimed_ms", t(1), 60_000, None, True),
    ("other field newer", {"fetched_ms": t(9)}, "failed_ms", t(2), 0, None, True),
    ("etag matches", {"fetched_ms": t(1), "etag": '"e2"'}, "fetched_ms", t(2), 0, '"e2"', True),
    ("etag differs", {"fetched_ms": t(1), "etag": '"e1"'}, "fetched_ms", t(2), 0, '"e2"', False),
    ("etag empty", {"fetched_ms": t(1), "etag": ""}, "fetched_ms", t(2), 0, '"e2"', False),
    ("etag absent", {"fetched_ms": t(1)}, "fetched_ms", t(2), 0, '"e2"', False),
    ("etag not utf-8", {"fetched_ms": t(1), "etag": b"\xff"}, "fetched_ms", t(2), 0, '"e2"', False),
    ("etag but older", {"fetched_ms": t(3), "etag": '"e2"'}, "fetched_ms", t(2), 0, '"e2"', False),
    ("etag, garbage time", {"fetched_ms": "x", "etag": '"e2"'}, "fetched_ms", t(2), 0, '"e2"', True),
    ("string key", "not a hash", "fetched_ms", t(2), 0, None, True),
    ("string key, etag", "not a hash", "fetched_ms", t(2), 0, '"e2"', False),
    *[(f"garbage {g!r}", {"fetched_ms": g}, "fetched_ms", t(2), 0, None, True) for g in GARBAGE_TIMES],
]


def _set_up(client: redis.Redis, key: str, stored: dict[Any, Any] | str | None) -> None:
    if isinstance(stored, str):
        client.set(key, stored)
    elif stored is not None:
        client.hset(key, mapping=stored)


def _stored_fields(client: redis.Redis, key: str, time_field: str) -> tuple[Any, Any]:
    if client.type(key) != b"hash":
        return None, None
    time_value, etag = client.hmget(key, [time_field, "etag"])
    return time_value, etag


@pytest.mark.parametrize(
    ("case", "stored", "field", "new_ms", "gap_ms", "etag", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_script_watch_and_write_wins_decide_alike(
    redis_client: redis.Redis,
    case: str,
    stored: dict[Any, Any] | str | None,
    field: str,
    new_ms: int,
    gap_ms: int,
    etag: str | None,
    expected: bool,
) -> None:
    results: dict[str, bool] = {}
    hashes: dict[str, Any] = {}
    for path in ("script", "watch"):
        key = f"case:{path}"
        _set_up(redis_client, key, stored)
        write = GuardedWrite(key, field, new_ms, {"v": "1", field: str(new_ms), "by": path}, gap_ms, etag)
        if path == "script":
            results["write_wins"] = write_wins(write, *_stored_fields(redis_client, key, field))
        pod = store(redis_client, use_scripts=path == "script")
        results[path] = pod.apply(write)
        assert pod.scripts_refused is (path == "watch")
        contents = redis_client.hgetall(key) if redis_client.type(key) == b"hash" else redis_client.get(key)
        if isinstance(contents, dict):
            contents.pop(b"by", None)
        hashes[path] = (contents, redis_client.pttl(key) > APP_TTL_MS - 60_000)
    assert results == {"write_wins": expected, "script": expected, "watch": expected}
    assert hashes["script"] == hashes["watch"], "both paths leave the same entry"
    assert hashes["script"][1] is expected, "a write sets the TTL; a lost one leaves it alone"


# -- WATCH: another writer in between ----------------------------------------------------


def test_watch_decides_again_after_another_writer_got_in(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = PREFIX + "app:photocraft"
    redis_client.hset(key, mapping={"v": "1", "fetched_ms": t(1), "etag": '"e1"', "release": "null"})
    decisions: list[bool] = []

    def racing_write_wins(write: GuardedWrite, stored_time: Any, stored_etag: Any) -> bool:
        if not decisions:  # another host shares a newer fetch right after this one read
            redis_client.hset(key, mapping={"fetched_ms": t(5), "etag": '"e5"'})
        decisions.append(write_wins(write, stored_time, stored_etag))
        return decisions[-1]

    monkeypatch.setattr(shared_store, "write_wins", racing_write_wins)
    pod = store(redis_client, use_scripts=False)
    assert not pod.write_fetched("photocraft", release(), '"e2"', t(2))
    assert decisions == [True, False], "the first decision was dropped by EXEC, the second sees t(5)"
    assert redis_client.hmget(key, ["fetched_ms", "etag"]) == [str(t(5)).encode(), b'"e5"']


def test_watch_gives_up_after_three_interrupted_attempts(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = PREFIX + "app:photocraft"
    calls: list[int] = []

    def always_interrupted(write: GuardedWrite, stored_time: Any, stored_etag: Any) -> bool:
        calls.append(1)
        redis_client.hset(key, "by", f"intruder-{len(calls)}")
        return write_wins(write, stored_time, stored_etag)

    monkeypatch.setattr(shared_store, "write_wins", always_interrupted)
    assert not store(redis_client, use_scripts=False).claim("photocraft", t(0))
    assert len(calls) == shared_store.WATCH_ATTEMPTS == 3
    assert redis_client.hgetall(key) == {b"by": b"intruder-3"}


# -- reading ------------------------------------------------------------------------------


class CountingConnection(Connection):
    sends = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sends += 1
        super().send_packed_command(command, check_health)


@pytest.fixture
def counting_client(redis_server: RedisServer, redis_client: redis.Redis) -> Iterator[redis.Redis]:
    pool = redis.ConnectionPool(
        connection_class=CountingConnection, host="127.0.0.1", port=redis_server.port, socket_timeout=5
    )
    client = redis.Redis(connection_pool=pool)
    client.ping()  # connect (and handshake) before counting
    yield client
    client.close()


def test_read_is_one_round_trip_for_every_app_and_the_backoff(
    counting_client: redis.Redis, redis_client: redis.Redis
) -> None:
    apps = [f"app-{n}" for n in range(13)]
    pod = store(counting_client)
    assert pod.write_fetched("app-3", release(), '"e1"', t(1))
    hgetall_before = command_calls(redis_client, "hgetall")
    CountingConnection.sends = 0

    entries, backoff = pod.read(apps)

    assert CountingConnection.sends == 1
    assert command_calls(redis_client, "hgetall") - hgetall_before == 14
    assert [n for n, entry in enumerate(entries) if entry is not None] == [3]
    assert backoff == Backoff()


def test_an_unchanged_release_is_decoded_once_across_reads(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[str] = []
    real_decode = shared_store.decode_release  # type: ignore[attr-defined]

    def counting_decode(text: str) -> Any:
        decoded.append(text)
        return real_decode(text)

    monkeypatch.setattr(shared_store, "decode_release", counting_decode)
    pod = store(redis_client)
    assert pod.write_fetched("app", release("0.5.0"), '"e1"', t(1))
    first = pod.read(["app"])[0][0]
    assert pod.write_unchanged("app", '"e1"', t(2))
    second = pod.read(["app"])[0][0]
    assert len(decoded) == 1, "the same JSON is decoded once"
    assert first is not None and second is not None and second.fetched is not None
    assert second.fetched.fetched_ms == t(2)
    assert pod.write_fetched("app", release("0.6.0"), '"e2"', t(3))
    third = pod.read(["app"])[0][0]
    assert len(decoded) == 2
    assert third is not None and third.fetched is not None and third.fetched.latest_release is not None
    assert third.fetched.latest_release.version == "0.6.0"


@pytest.mark.parametrize("use_scripts", [True, False], ids=["script", "watch"])
def test_a_key_of_another_type_reads_as_absent_and_is_replaced(
    redis_client: redis.Redis, use_scripts: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    redis_client.set(PREFIX + "app:photocraft", "oops")
    redis_client.rpush(PREFIX + "backoff", "oops")
    pod = store(redis_client, use_scripts=use_scripts)
    assert pod.read(["photocraft", "vectorcraft"]) == ([None, None], Backoff())
    pod.read(["photocraft"])
    assert len([r for r in caplog.records if "photocraft" in r.getMessage()]) == 1, "logged once"

    assert pod.write_fetched("photocraft", None, None, t(1))
    pod.write_backoff(Backoff(until_ms=t(3), trouble=1))
    assert pod.read(["photocraft"]) == (
        [SharedAppEntry(fetched=SharedFetch(None, None, t(1)))],
        Backoff(t(3), 1),
    )


def test_an_unreadable_entry_is_logged_once_per_reason(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    key = PREFIX + "app:photocraft"
    redis_client.hset(key, mapping={"v": "1", "fetched_ms": t(1), "etag": "", "release": "{"})
    pod = store(redis_client)
    for _ in range(3):
        assert pod.read(["photocraft"])[0] == [SharedAppEntry()]
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and key in messages[0] and "release is unreadable" in messages[0]


# -- Redis trouble leaves the script switch alone ----------------------------------------


def _wait_until_busy(client: redis.Redis) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            client.ping()
        except redis.ResponseError as err:
            if str(err).startswith("BUSY"):
                return
            raise
        time.sleep(0.005)  # the server's own busy threshold, not a timer under test
    raise AssertionError("the busy script never made Redis answer BUSY")


def test_a_busy_redis_is_trouble_not_a_refusal(fresh_redis_server: RedisServer) -> None:
    admin = fresh_redis_server.client()
    admin.config_set("lua-time-limit", 10)
    pod, watch_pod = store(fresh_redis_server.client()), store(fresh_redis_server.client(), use_scripts=False)
    busy_errors: list[Exception] = []

    def run_forever() -> None:
        try:
            fresh_redis_server.client().eval("while true do end", 0)
        except redis.ResponseError as err:
            busy_errors.append(err)

    runner = threading.Thread(target=run_forever)
    runner.start()
    try:
        _wait_until_busy(admin)
        with pytest.raises(RedisTrouble, match="BUSY"):
            pod.claim("photocraft", t(0))
        with pytest.raises(RedisTrouble, match="BUSY"):
            watch_pod.claim("photocraft", t(0))
        with pytest.raises(RedisTrouble, match="BUSY"):
            pod.read(["photocraft"])
    finally:
        fresh_redis_server.client().script_kill()
        runner.join(timeout=10)
    assert busy_errors, "the busy script was killed"
    assert not pod.scripts_refused
    assert pod.claim("photocraft", t(0)), "works again once the script is gone"


def test_out_of_memory_is_trouble_not_a_refusal(fresh_redis_server: RedisServer) -> None:
    admin = fresh_redis_server.client()
    pod, watch_pod = store(fresh_redis_server.client()), store(fresh_redis_server.client(), use_scripts=False)
    admin.config_set("maxmemory-policy", "noeviction")
    admin.config_set("maxmemory", 1)
    with pytest.raises(RedisTrouble, match=r"OutOfMemoryError|OOM"):
        pod.write_fetched("photocraft", release(), '"e1"', t(1))
    with pytest.raises(RedisTrouble, match=r"maxmemory|OOM|EXECABORT"):
        watch_pod.write_fetched("photocraft", release(), '"e1"', t(1))
    with pytest.raises(RedisTrouble, match=r"maxmemory|OOM|EXECABORT"):
        pod.write_backoff(Backoff(until_ms=t(9), trouble=1))
    assert not pod.scripts_refused
    admin.config_set("maxmemory", 0)
    evalsha_before = command_calls(admin, "evalsha")
    assert pod.write_fetched("photocraft", release(), '"e1"', t(1))
    assert command_calls(admin, "evalsha") == evalsha_before + 1, "still writing with the script"


def test_a_read_only_replica_is_trouble_not_a_refusal(fresh_redis_server: RedisServer) -> None:
    admin = fresh_redis_server.client()
    admin.execute_command("REPLICAOF", "127.0.0.1", str(free_port()))  # a master that never answers
    try:
        pod, watch_pod = (
            store(fresh_redis_server.client()),
            store(fresh_redis_server.client(), use_scripts=False),
        )
        with pytest.raises(RedisTrouble, match=r"ReadOnlyError|read only"):
            pod.claim("photocraft", t(0))
        with pytest.raises(RedisTrouble, match=r"read only|READONLY|EXECABORT"):
            watch_pod.claim("photocraft", t(0))
        assert not pod.scripts_refused
        assert pod.read(["photocraft"]) == ([None], Backoff()), "reading still works"
    finally:
        admin.execute_command("REPLICAOF", "NO", "ONE")
    assert pod.claim("photocraft", t(0))

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

from craft_apps.fleet import entries as shared_entries
from craft_apps.fleet import guarded_writes
from craft_apps.fleet.entry import APP_TTL_MS, BACKOFF_TTL_MS, SharedAppEntry, SharedFailure, SharedFetch
from craft_apps.fleet.errors import RedisOperation, RedisTrouble
from craft_apps.fleet.guarded_writes import GuardedWrite, StoredKey, WriteEffect, decide_write
from craft_apps.fleet.store import SharedStore
from craft_apps.kernel.domain import Backoff
from tests.fleet.helpers import release, t
from tests.fleet.server import RedisServer
from tests.support import free_port

REPO = "storytold/photocraft"  # the repository every shared fetch here is of

PREFIX = "craftApps:releases:"
LOGGER = "craft_apps.fleet"
REFUSAL_LOG = "refused the guarded-write script"


def store(client: redis.Redis, host: str = "pod-a", *, use_scripts: bool = True) -> SharedStore:
    return SharedStore(client, hostname=host, use_scripts=use_scripts)


def only_entry(pod: SharedStore, app: str) -> SharedAppEntry:
    entries, _ = pod.entries.read([app])
    assert entries[0] is not None
    return entries[0]


def command_calls(client: redis.Redis, command: str) -> int:
    stats = client.info("commandstats").get(f"cmdstat_{command}")
    return int(stats["calls"]) if stats else 0


def exercise_guarded_writes(pod_a: SharedStore, pod_b: SharedStore, admin: redis.Redis) -> None:
    """Every guarded-write rule, as two hosts sharing one Redis see it."""
    app, other = "photocraft", "vectorcraft"
    assert pod_a.entries.read([app, other]) == ([None, None], Backoff())

    # Two hosts tick together: only one asks GitHub; the claim lapses after its window.
    assert pod_a.claims.claim(app, t(0))
    assert not pod_b.claims.claim(app, t(0) + 5_000)
    assert not pod_b.claims.claim(app, t(1) - 1)
    assert pod_b.claims.claim(app, t(1))
    assert admin.hget(PREFIX + "app:" + app, "by") == b"pod-b"

    # A newer fetch is never replaced by an older one.
    assert pod_a.entries.write_fetched(app, release("0.5.0"), '"e2"', t(2), REPO)
    assert not pod_b.entries.write_fetched(app, release("0.4.0"), '"e1"', t(1), REPO)
    assert only_entry(pod_b, app).fetched == SharedFetch(release("0.5.0"), '"e2"', t(2), REPO)

    # A 304 moves only the time, and only for the release it revalidated.
    assert not pod_b.entries.write_unchanged(app, release("0.4.0"), '"e1"', t(3), REPO), "stale ETag"
    assert not pod_b.entries.write_unchanged(app, release("0.5.0"), '"e2"', t(1), REPO), (
        "older than the shared fetch"
    )
    assert not pod_b.entries.write_unchanged(app, release("0.5.0"), "", t(3), REPO), "no ETag to revalidate"
    assert pod_b.entries.write_unchanged(app, release("0.5.0"), '"e2"', t(3), REPO)
    assert only_entry(pod_a, app).fetched == SharedFetch(release("0.5.0"), '"e2"', t(3), REPO)

    # Failures: the newest wins, and leave the fetch alone.
    assert pod_a.entries.write_failure(app, t(5), 2)
    assert not pod_b.entries.write_failure(app, t(4), 1)
    assert only_entry(pod_b, app) == SharedAppEntry(
        fetched=SharedFetch(release("0.5.0"), '"e2"', t(3), REPO), failure=SharedFailure(t(5), 2)
    )

    # Garbage in an entry reads as absent and is overwritten, not trusted.
    other_key = PREFIX + "app:" + other
    admin.hset(other_key, mapping={"v": "1", "fetched_ms": "soon", "release": "{", "etag": ""})
    assert pod_a.entries.read([app, other])[0][1] == SharedAppEntry()
    assert pod_a.entries.write_fetched(other, None, None, t(1), REPO)
    assert pod_a.entries.read([app, other])[0][1] == SharedAppEntry(
        fetched=SharedFetch(None, None, t(1), REPO)
    )

    # Entries expire a week after their last write.
    for key in (PREFIX + "app:" + app, other_key):
        assert APP_TTL_MS - 60_000 < admin.pttl(key) <= APP_TTL_MS

    # The fleet backoff: shared for a day, deleted after a good round.
    backoff = Backoff(until_ms=t(30), trouble=2)
    pod_a.entries.write_backoff(backoff)
    assert pod_b.entries.read([app])[1] == backoff
    assert BACKOFF_TTL_MS - 60_000 < admin.pttl(PREFIX + "backoff") <= BACKOFF_TTL_MS
    pod_b.entries.write_backoff(Backoff())
    assert admin.exists(PREFIX + "backoff") == 0
    assert pod_a.entries.read([app])[1] == Backoff()


@pytest.mark.parametrize("use_scripts", [True, False], ids=["script", "watch"])
def test_guarded_writes(redis_client: redis.Redis, use_scripts: bool) -> None:
    pod_a = store(redis_client, "pod-a", use_scripts=use_scripts)
    pod_b = store(redis_client, "pod-b", use_scripts=use_scripts)
    evalsha_before = command_calls(redis_client, "evalsha")
    exercise_guarded_writes(pod_a, pod_b, redis_client)
    assert (command_calls(redis_client, "evalsha") > evalsha_before) is use_scripts
    assert pod_a.writes.scripts_refused is not use_scripts


def test_a_redis_user_without_scripting_falls_back_to_watch(
    redis_server: RedisServer, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    url = redis_server.acl_user("no-scripts", "pw-1", ["~*", "&*", "+@all", "-@scripting"])
    client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=3)
    pod_a, pod_b = store(client, "pod-a"), store(client, "pod-b")

    exercise_guarded_writes(pod_a, pod_b, redis_client)
    assert pod_a.writes.scripts_refused and pod_b.writes.scripts_refused
    refusals = [r.getMessage() for r in caplog.records if REFUSAL_LOG in r.getMessage()]
    assert len(refusals) == 2, "logged once per store"
    assert "evalsha" in refusals[0] and "pw-1" not in refusals[0]


def test_a_command_denied_inside_the_script_is_trouble_not_a_refusal(
    redis_server: RedisServer, redis_client: redis.Redis
) -> None:
    url = redis_server.acl_user("no-hset", "pw-2", ["~*", "&*", "+@all", "-hset"])
    pod = store(redis.Redis.from_url(url, socket_timeout=5))
    with pytest.raises(RedisTrouble, match=r"may not run hset"):
        pod.claims.claim("photocraft", t(0))
    assert not pod.writes.scripts_refused, "WATCH/MULTI/EXEC would be denied HSET as well"
    assert pod.entries.read(["photocraft"]) == ([None], Backoff())


# -- another format, an emptied Redis, garbage: never adopted, filled again by a 304 ------

EFFECTCRAFT = PREFIX + "app:effectcraft"


@pytest.mark.parametrize("use_scripts", [True, False], ids=["script", "watch"])
def test_a_hash_of_another_format_is_never_adopted_and_only_a_full_write_replaces_it(
    redis_client: redis.Redis, use_scripts: bool
) -> None:
    redis_client.hset(EFFECTCRAFT, mapping={"v": "2", "fetched_ms": t(0), "etag": '"x"', "release": "null"})
    pod = store(redis_client, use_scripts=use_scripts)
    assert pod.entries.read(["effectcraft"])[0] == [None]

    assert pod.claims.claim("effectcraft", t(1))
    assert pod.entries.write_failure("effectcraft", t(2), 1)
    assert redis_client.hget(EFFECTCRAFT, "v") == b"2", "a claim or a failure keeps the foreign v"
    assert pod.entries.read(["effectcraft"])[0] == [None], "so nobody serves its release: null"

    # The 304 after that read shares the whole entry, which replaces the foreign hash whole.
    assert pod.entries.write_unchanged("effectcraft", release("0.5.0"), '"e1"', t(3), REPO)
    stored = redis_client.hgetall(EFFECTCRAFT)
    assert stored.keys() == {b"v", b"fetched_ms", b"etag", b"release", b"by", b"repo", b"repo_fetched_ms"}, (
        "no foreign field kept"
    )
    assert only_entry(pod, "effectcraft") == SharedAppEntry(
        fetched=SharedFetch(release("0.5.0"), '"e1"', t(3), REPO)
    )


@pytest.mark.parametrize("use_scripts", [True, False], ids=["script", "watch"])
def test_after_a_flush_a_304_shares_the_whole_entry(redis_client: redis.Redis, use_scripts: bool) -> None:
    pod_a = store(redis_client, "pod-a", use_scripts=use_scripts)
    pod_b = store(redis_client, "pod-b", use_scripts=use_scripts)
    assert pod_a.entries.write_fetched("photocraft", release("0.5.0"), '"e1"', t(1), REPO)
    redis_client.flushall()
    assert pod_a.entries.read(["photocraft"])[0] == [None]
    assert pod_a.claims.claim("photocraft", t(30))
    assert pod_a.entries.write_unchanged("photocraft", release("0.5.0"), '"e1"', t(30), REPO)
    assert only_entry(pod_b, "photocraft").fetched == SharedFetch(release("0.5.0"), '"e1"', t(30), REPO)
    # Once the entry reads again, a 304 moves only the time, as long as the ETag is the shared one.
    assert pod_b.entries.write_unchanged("photocraft", release("0.4.0"), '"e0"', t(31), REPO) is False
    assert pod_b.entries.write_unchanged("photocraft", release("0.5.0"), '"e1"', t(32), REPO)
    assert only_entry(pod_a, "photocraft").fetched == SharedFetch(release("0.5.0"), '"e1"', t(32), REPO)


def test_garbage_on_an_app_that_only_gets_304s_is_replaced(redis_client: redis.Redis) -> None:
    key = PREFIX + "app:photocraft"
    garbage = b"x" * (10 * 1024 * 1024)
    redis_client.hset(key, mapping={"v": "1", "fetched_ms": t(0), "etag": '"e1"', "release": garbage})
    pod = store(redis_client)
    assert pod.entries.read(["photocraft"])[0] == [SharedAppEntry()], "the 10 MB release reads as absent"
    assert pod.entries.write_unchanged("photocraft", release("0.5.0"), '"e1"', t(30), REPO)
    assert redis_client.hstrlen(key, "release") < 10_000
    assert only_entry(pod, "photocraft").fetched == SharedFetch(release("0.5.0"), '"e1"', t(30), REPO)


# -- no half-done write: every write or none -------------------------------------------------


@pytest.mark.parametrize("use_scripts", [True, False], ids=["script", "watch"])
@pytest.mark.parametrize("denied", ["pexpire", "hset", "del"])
def test_a_denied_write_leaves_nothing_half_done(
    redis_server: RedisServer, redis_client: redis.Redis, denied: str, use_scripts: bool
) -> None:
    """Redis does not undo a script's earlier writes when a later one fails: a user allowed HSET
    but not PEXPIRE left a hash that never expires, one allowed DEL but not HSET a lost entry."""
    url = redis_server.acl_user(f"no-{denied}", "pw-3", ["~*", "&*", "+@all", f"-{denied}"])
    pod = store(redis.Redis.from_url(url, socket_timeout=5), use_scripts=use_scripts)
    other = PREFIX + "app:vectorcraft"
    redis_client.hset(EFFECTCRAFT, mapping={"v": "2", "etag": '"x"'})  # a full write must delete it
    redis_client.hset(other, mapping={"v": "1", "claimed_ms": t(0)})
    redis_client.pexpire(other, 5_000)
    before = {key: (redis_client.hgetall(key), redis_client.pttl(key) > 0) for key in (EFFECTCRAFT, other)}

    attempts = {
        "claim of a new hash": lambda: pod.claims.claim("photocraft", t(1)),
        "claim of a hash with a TTL": lambda: pod.claims.claim("vectorcraft", t(1)),
        "full write over another format": lambda: pod.entries.write_fetched(
            "effectcraft", release(), '"e"', t(1), REPO
        ),
    }
    for what, attempt in attempts.items():
        if denied == "del" and what != "full write over another format":
            assert attempt(), f"{what} needs no DEL"
            continue
        with pytest.raises(RedisTrouble) as caught:
            attempt()
        assert caught.value.operation is RedisOperation.WRITE, what
        assert pod.writes.scripts_refused is not use_scripts, f"{what}: trouble, not a refused script"
    if denied == "del":
        return
    assert redis_client.exists(PREFIX + "app:photocraft") == 0, "no hash without a TTL"
    after = {key: (redis_client.hgetall(key), redis_client.pttl(key) > 0) for key in (EFFECTCRAFT, other)}
    assert after == before, "what was there is left as it was"


def test_script_flush_between_writes_is_survived(redis_client: redis.Redis) -> None:
    pod = store(redis_client)
    assert pod.entries.write_fetched("photocraft", release(), '"e1"', t(1), REPO)
    redis_client.script_flush()
    assert pod.entries.write_fetched("photocraft", release("0.6.0"), '"e2"', t(2), REPO)
    assert not pod.writes.scripts_refused
    assert command_calls(redis_client, "script|load") >= 1
    assert only_entry(pod, "photocraft").fetched == SharedFetch(release("0.6.0"), '"e2"', t(2), REPO)


def test_a_key_prefix_is_honoured(redis_client: redis.Redis) -> None:
    pod = SharedStore(redis_client, hostname="pod-a", key_prefix="staging:craft:")
    assert pod.claims.claim("photocraft", t(0))
    pod.entries.write_backoff(Backoff(until_ms=t(9), trouble=1))
    assert sorted(redis_client.keys("*")) == [b"staging:craft:app:photocraft", b"staging:craft:backoff"]


# -- the script, WATCH and decide_write decide alike --------------------------------------

GARBAGE_TIMES = ["soon", "", "1e15", "0x7fffffffffff", " 1790000000000", "1.5", "+5", "-5", "9" * 16]
FOREIGN = {"v": "2", "fetched_ms": t(1), "etag": '"x"', "release": "null", "claimed_ms": t(0.5)}
Stored = dict[Any, Any] | str | None
Case = tuple[str, Stored, str, int, int, str | None, bool, WriteEffect]


def ours(**fields: Any) -> dict[Any, Any]:
    """A hash of this format version."""
    return {"v": "1", **fields}


NOTHING, HSET, KEEP_V, REPLACE = (
    WriteEffect.NOTHING,
    WriteEffect.HSET,
    WriteEffect.HSET_KEEPING_VERSION,
    WriteEffect.REPLACE,
)
CASES: list[Case] = [
    # (id, stored hash (or a string key), time field, new time, gap, required ETag, full, effect)
    ("absent", None, "fetched_ms", t(2), 0, None, False, HSET),
    ("absent, full", None, "fetched_ms", t(2), 0, None, True, HSET),
    ("older stored", ours(fetched_ms=t(1)), "fetched_ms", t(2), 0, None, False, HSET),
    ("same time", ours(fetched_ms=t(2)), "fetched_ms", t(2), 0, None, False, HSET),
    ("newer stored", ours(fetched_ms=t(3)), "fetched_ms", t(2), 0, None, False, NOTHING),
    ("newer stored, full", ours(fetched_ms=t(3)), "fetched_ms", t(2), 0, None, True, NOTHING),
    ("15 digits", ours(fetched_ms="9" * 15), "fetched_ms", t(2), 0, None, False, NOTHING),
    ("leading zeros", ours(fetched_ms="0" * 14 + "5"), "fetched_ms", t(2), 0, None, False, HSET),
    ("claim inside window", ours(claimed_ms=t(0.5)), "claimed_ms", t(1), 60_000, None, False, NOTHING),
    ("claim 1 ms early", ours(claimed_ms=t(0)), "claimed_ms", t(1) - 1, 60_000, None, False, NOTHING),
    ("claim window over", ours(claimed_ms=t(0)), "claimed_ms", t(1), 60_000, None, False, HSET),
    ("other field newer", ours(fetched_ms=t(9)), "failed_ms", t(2), 0, None, False, HSET),
    ("etag matches", ours(fetched_ms=t(1), etag='"e2"'), "fetched_ms", t(2), 0, '"e2"', False, HSET),
    ("etag differs", ours(fetched_ms=t(1), etag='"e1"'), "fetched_ms", t(2), 0, '"e2"', False, NOTHING),
    ("etag empty", ours(fetched_ms=t(1), etag=""), "fetched_ms", t(2), 0, '"e2"', False, NOTHING),
    ("etag absent", ours(fetched_ms=t(1)), "fetched_ms", t(2), 0, '"e2"', False, NOTHING),
    ("etag absent, no key", None, "fetched_ms", t(2), 0, '"e2"', False, NOTHING),
    ("etag not utf-8", ours(fetched_ms=t(1), etag=b"\xff"), "fetched_ms", t(2), 0, '"e2"', False, NOTHING),
    ("etag but older", ours(fetched_ms=t(3), etag='"e2"'), "fetched_ms", t(2), 0, '"e2"', False, NOTHING),
    ("etag, garbage time", ours(fetched_ms="x", etag='"e2"'), "fetched_ms", t(2), 0, '"e2"', False, HSET),
    ("string key", "not a hash", "fetched_ms", t(2), 0, None, False, REPLACE),
    ("string key, full", "not a hash", "fetched_ms", t(2), 0, None, True, REPLACE),
    ("string key, etag", "not a hash", "fetched_ms", t(2), 0, '"e2"', False, NOTHING),
    *[
        (f"garbage {g!r}", ours(fetched_ms=g), "fetched_ms", t(2), 0, None, False, HSET)
        for g in GARBAGE_TIMES
    ],
    # A hash of another format version: never adopted, its times guard nothing, and only a full
    # write replaces it; a claim, a failure or a 304 leaves its `v` (so it stays unreadable).
    ("v 2, claim", FOREIGN, "claimed_ms", t(1), 60_000, None, False, KEEP_V),
    ("v 2, failure", FOREIGN, "failed_ms", t(2), 0, None, False, KEEP_V),
    ("v 2, 304", FOREIGN, "fetched_ms", t(2), 0, '"x"', False, KEEP_V),
    ("v 2, 304 other etag", FOREIGN, "fetched_ms", t(2), 0, '"e2"', False, NOTHING),
    ("v 2, full", FOREIGN, "fetched_ms", t(2), 0, None, True, REPLACE),
    ("v 2, full, newer stored", {**FOREIGN, "fetched_ms": t(9)}, "fetched_ms", t(2), 0, None, True, REPLACE),
    ("no v, claim", {"claimed_ms": t(0.5), "x": "y"}, "claimed_ms", t(1), 60_000, None, False, KEEP_V),
    ("no v, full", {"fetched_ms": t(9), "release": "x" * 1000}, "fetched_ms", t(2), 0, None, True, REPLACE),
    ("v not utf-8, claim", {"v": b"\xff", "by": "?"}, "claimed_ms", t(1), 60_000, None, False, KEEP_V),
    ("v ' 1', full", {"v": " 1", "etag": "e"}, "fetched_ms", t(2), 0, None, True, REPLACE),
]


def _set_up(client: redis.Redis, key: str, stored: Stored) -> None:
    if isinstance(stored, str):
        client.set(key, stored)
    elif stored is not None:
        client.hset(key, mapping=stored)


def _stored_key(client: redis.Redis, key: str, time_field: str) -> StoredKey:
    answer = client.type(key)
    kind = answer.decode() if isinstance(answer, bytes) else answer
    if kind != "hash":
        return StoredKey(kind)
    return StoredKey(kind, *client.hmget(key, ["v", time_field, "etag"]))


def _contents(client: redis.Redis, key: str) -> object:
    if client.type(key) != b"hash":
        return client.get(key)
    contents = client.hgetall(key)
    contents.pop(b"by", None)
    return contents


def _as_redis_returns(fields: dict[Any, Any]) -> dict[bytes, bytes]:
    return {
        (n if isinstance(n, bytes) else str(n).encode()): (v if isinstance(v, bytes) else str(v).encode())
        for n, v in fields.items()
    }


def _expected_contents(stored: Stored, write: dict[str, str], effect: WriteEffect) -> object:
    """What the key holds after ``effect`` (``by`` left out)."""
    if effect is WriteEffect.NOTHING and not isinstance(stored, dict):
        return stored.encode() if isinstance(stored, str) else None
    kept = {} if effect is WriteEffect.REPLACE or not isinstance(stored, dict) else stored
    written = {} if effect is WriteEffect.NOTHING else dict(write)
    if effect is WriteEffect.HSET_KEEPING_VERSION:
        written.pop("v")
    contents = _as_redis_returns({**kept, **written})
    contents.pop(b"by", None)
    return contents


@pytest.mark.parametrize(
    ("case", "stored", "field", "new_ms", "gap_ms", "etag", "full", "expected"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_script_watch_and_decide_write_decide_alike(
    redis_client: redis.Redis,
    case: str,
    stored: Stored,
    field: str,
    new_ms: int,
    gap_ms: int,
    etag: str | None,
    full: bool,
    expected: WriteEffect,
) -> None:
    results: dict[str, object] = {}
    hashes: dict[str, Any] = {}
    for path in ("script", "watch"):
        key = f"case:{path}"
        _set_up(redis_client, key, stored)
        fields = {"v": "1", field: str(new_ms), "by": path}
        write = GuardedWrite(key, field, new_ms, fields, gap_ms, etag, full)
        if path == "script":
            results["decide_write"] = decide_write(write, _stored_key(redis_client, key, field))
        pod = store(redis_client, use_scripts=path == "script")
        results[path] = pod.writes.apply(write)
        assert pod.writes.scripts_refused is (path == "watch")
        hashes[path] = (_contents(redis_client, key), redis_client.pttl(key) > APP_TTL_MS - 60_000)
    written = expected is not WriteEffect.NOTHING
    assert results == {"decide_write": expected, "script": written, "watch": written}
    assert hashes["script"] == hashes["watch"], "both paths leave the same entry"
    assert hashes["script"][0] == _expected_contents(stored, fields, expected)
    assert hashes["script"][1] is written, "a write sets the TTL; a lost one leaves it alone"


# -- WATCH: another writer in between ----------------------------------------------------


def test_watch_decides_again_after_another_writer_got_in(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = PREFIX + "app:photocraft"
    redis_client.hset(key, mapping={"v": "1", "fetched_ms": t(1), "etag": '"e1"', "release": "null"})
    decisions: list[bool] = []

    def racing_decide_write(write: GuardedWrite, stored: StoredKey) -> WriteEffect:
        if not decisions:  # another host shares a newer fetch right after this one read
            redis_client.hset(key, mapping={"fetched_ms": t(5), "etag": '"e5"'})
        effect = decide_write(write, stored)
        decisions.append(effect is not WriteEffect.NOTHING)
        return effect

    monkeypatch.setattr(guarded_writes, "decide_write", racing_decide_write)
    pod = store(redis_client, use_scripts=False)
    assert not pod.entries.write_fetched("photocraft", release(), '"e2"', t(2), REPO)
    assert decisions == [True, False], "the first decision was dropped by EXEC, the second sees t(5)"
    assert redis_client.hmget(key, ["fetched_ms", "etag"]) == [str(t(5)).encode(), b'"e5"']


def test_watch_gives_up_after_three_interrupted_attempts(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = PREFIX + "app:photocraft"
    calls: list[int] = []

    def always_interrupted(write: GuardedWrite, stored: StoredKey) -> WriteEffect:
        calls.append(1)
        redis_client.hset(key, "by", f"intruder-{len(calls)}")
        return decide_write(write, stored)

    monkeypatch.setattr(guarded_writes, "decide_write", always_interrupted)
    assert not store(redis_client, use_scripts=False).claims.claim("photocraft", t(0))
    assert len(calls) == guarded_writes.WATCH_ATTEMPTS == 3
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


def test_an_idle_read_is_one_small_round_trip_and_a_release_is_read_only_when_it_changed(
    counting_client: redis.Redis, redis_client: redis.Redis
) -> None:
    apps = [f"app-{n}" for n in range(13)]
    pod = store(counting_client)
    other = store(redis_client, "pod-b")
    assert other.entries.write_fetched("app-3", release(), '"e1"', t(1), REPO)
    CountingConnection.sends = 0
    entries, backoff = pod.entries.read(apps)
    assert CountingConnection.sends == 3, "what changed, then app-3's small fields, then its release"
    assert [n for n, entry in enumerate(entries) if entry is not None] == [3]
    assert backoff == Backoff()

    before = {command: command_calls(redis_client, command) for command in ("hmget", "hgetall")}
    CountingConnection.sends = 0
    assert pod.entries.read(apps) == (entries, backoff)
    assert CountingConnection.sends == 1, "nothing changed: one round trip"
    calls = {command: command_calls(redis_client, command) - n for command, n in before.items()}
    assert calls == {"hmget": 13, "hgetall": 1}, "three small fields per app, and the backoff"

    other.entries.read(["app-3"])
    assert other.entries.write_unchanged("app-3", release(), '"e1"', t(2), REPO)
    CountingConnection.sends = 0
    entries, _ = pod.entries.read(apps)
    assert CountingConnection.sends == 2, "a 304 moved the time: the small fields, not the release"
    assert entries[3] == SharedAppEntry(fetched=SharedFetch(release(), '"e1"', t(2), REPO))

    assert other.entries.write_fetched("app-3", release("0.6.0"), '"e2"', t(3), REPO)
    CountingConnection.sends = 0
    entries, _ = pod.entries.read(apps)
    assert CountingConnection.sends == 3
    assert entries[3] == SharedAppEntry(fetched=SharedFetch(release("0.6.0"), '"e2"', t(3), REPO))


def test_an_unchanged_release_is_decoded_once_across_reads(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[str] = []
    real_decode = shared_entries.decode_release  # type: ignore[attr-defined]

    def counting_decode(text: str) -> Any:
        decoded.append(text)
        return real_decode(text)

    monkeypatch.setattr(shared_entries, "decode_release", counting_decode)
    pod = store(redis_client)
    assert pod.entries.write_fetched("app", release("0.5.0"), '"e1"', t(1), REPO)
    first = pod.entries.read(["app"])[0][0]
    assert pod.entries.write_unchanged("app", release("0.5.0"), '"e1"', t(2), REPO)
    second = pod.entries.read(["app"])[0][0]
    assert len(decoded) == 1, "the same JSON is decoded once"
    assert first is not None and second is not None and second.fetched is not None
    assert second.fetched.fetched_ms == t(2)
    assert pod.entries.write_fetched("app", release("0.6.0"), '"e2"', t(3), REPO)
    third = pod.entries.read(["app"])[0][0]
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
    assert pod.entries.read(["photocraft", "vectorcraft"]) == ([None, None], Backoff())
    pod.entries.read(["photocraft"])
    assert len([r for r in caplog.records if "photocraft" in r.getMessage()]) == 1, "logged once"

    assert pod.entries.write_fetched("photocraft", None, None, t(1), REPO)
    pod.entries.write_backoff(Backoff(until_ms=t(3), trouble=1))
    assert pod.entries.read(["photocraft"]) == (
        [SharedAppEntry(fetched=SharedFetch(None, None, t(1), REPO))],
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
        assert pod.entries.read(["photocraft"])[0] == [SharedAppEntry()]
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
            pod.claims.claim("photocraft", t(0))
        with pytest.raises(RedisTrouble, match="BUSY"):
            watch_pod.claims.claim("photocraft", t(0))
        with pytest.raises(RedisTrouble, match="BUSY"):
            pod.entries.read(["photocraft"])
    finally:
        fresh_redis_server.client().script_kill()
        runner.join(timeout=10)
    assert busy_errors, "the busy script was killed"
    assert not pod.writes.scripts_refused
    assert pod.claims.claim("photocraft", t(0)), "works again once the script is gone"


def test_out_of_memory_is_trouble_not_a_refusal(fresh_redis_server: RedisServer) -> None:
    admin = fresh_redis_server.client()
    pod, watch_pod = store(fresh_redis_server.client()), store(fresh_redis_server.client(), use_scripts=False)
    admin.config_set("maxmemory-policy", "noeviction")
    admin.config_set("maxmemory", 1)
    with pytest.raises(RedisTrouble, match=r"OutOfMemoryError|OOM") as caught:
        pod.entries.write_fetched("photocraft", release(), '"e1"', t(1), REPO)
    assert caught.value.operation is RedisOperation.WRITE
    assert pod.entries.read(["photocraft"]) == ([None], Backoff()), "reading still works"
    with pytest.raises(RedisTrouble, match=r"maxmemory|OOM|EXECABORT"):
        watch_pod.entries.write_fetched("photocraft", release(), '"e1"', t(1), REPO)
    with pytest.raises(RedisTrouble, match=r"maxmemory|OOM|EXECABORT"):
        pod.entries.write_backoff(Backoff(until_ms=t(9), trouble=1))
    assert not pod.writes.scripts_refused
    admin.config_set("maxmemory", 0)
    evalsha_before = command_calls(admin, "evalsha")
    assert pod.entries.write_fetched("photocraft", release(), '"e1"', t(1), REPO)
    assert command_calls(admin, "evalsha") == evalsha_before + 1, "still writing with the script"


def test_a_read_only_replica_is_trouble_not_a_refusal(fresh_redis_server: RedisServer) -> None:
    admin = fresh_redis_server.client()
    admin.execute_command("REPLICAOF", "127.0.0.1", str(free_port()))  # a master that never answers
    try:
        pod, watch_pod = (
            store(fresh_redis_server.client()),
            store(fresh_redis_server.client(), use_scripts=False),
        )
        with pytest.raises(RedisTrouble, match=r"ReadOnlyError|read only") as caught:
            pod.claims.claim("photocraft", t(0))
        assert caught.value.operation is RedisOperation.WRITE
        with pytest.raises(RedisTrouble, match=r"read only|READONLY|EXECABORT"):
            watch_pod.claims.claim("photocraft", t(0))
        assert not pod.writes.scripts_refused
        assert pod.entries.read(["photocraft"]) == ([None], Backoff()), "reading still works"
    finally:
        admin.execute_command("REPLICAOF", "NO", "ONE")
    assert pod.claims.claim("photocraft", t(0))

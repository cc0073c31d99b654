"""The guarded-write rule in Python (``decide_write``) and telling a refused script apart from
Redis trouble (``is_script_refusal``), with errors built as redis-py builds them. No Redis here:
test_shared_store.py pins both against a real server."""

from __future__ import annotations

import socket

import pytest
from redis._parsers.base import BaseParser
from redis.exceptions import (
    AuthenticationError,
    BusyLoadingError,
    ConnectionError,
    InvalidResponse,
    NoPermissionError,
    ResponseError,
    TimeoutError,
)

from craft_apps.fleet.claims import CLAIM_WINDOW_MS
from craft_apps.fleet.guarded_writes import (
    GuardedWrite,
    StoredKey,
    WriteEffect,
    decide_write,
    is_script_refusal,
)
from tests.fleet.helpers import t


def from_server(reply: str) -> Exception:
    """The exception redis-py raises for this error reply (without the leading '-')."""
    err: Exception = BaseParser.parse_error(reply)
    return err


def write(time_ms: int, gap_ms: int = 0, etag: str | None = None, *, full: bool = False) -> GuardedWrite:
    return GuardedWrite(
        "k", "fetched_ms", time_ms, {"v": "1", "by": "x"}, min_gap_ms=gap_ms, required_etag=etag, full=full
    )


def ours(time: bytes | str | None = None, etag: bytes | str | None = None) -> StoredKey:
    """A hash of this format version holding ``time`` in the guarding field and ``etag``."""
    return StoredKey("hash", b"1", time, etag)


def wins(write: GuardedWrite, stored: StoredKey) -> bool:
    return decide_write(write, stored) is not WriteEffect.NOTHING


class TestDecideWrite:
    def test_a_write_never_goes_back_in_time(self) -> None:
        assert decide_write(write(t(2)), StoredKey()) is WriteEffect.HSET, "nothing stored"
        assert wins(write(t(2)), ours(str(t(1)).encode())), "newer than stored"
        assert wins(write(t(2)), ours(str(t(2)))), "the same time, as the script allows"
        assert not wins(write(t(2)), ours(str(t(3)).encode())), "older than stored"
        assert not wins(write(t(2), full=True), ours(str(t(3)).encode())), "a full write as well"

    def test_a_claim_waits_for_the_window(self) -> None:
        assert not wins(write(t(1), CLAIM_WINDOW_MS), ours(str(t(0.5)).encode()))
        assert not wins(write(t(1) - 1, CLAIM_WINDOW_MS), ours(str(t(0)).encode()))
        assert wins(write(t(1), CLAIM_WINDOW_MS), ours(str(t(0)).encode())), "one window later"

    def test_a_required_etag_must_match(self) -> None:
        assert wins(write(t(2), etag='"e2"'), ours(str(t(1)).encode(), b'"e2"'))
        assert not wins(write(t(2), etag='"e2"'), ours(str(t(1)).encode(), b'"e1"')), "another release"
        assert not wins(write(t(2), etag='"e2"'), ours(str(t(1)).encode())), "no release shared"
        assert not wins(write(t(2), etag='"e2"'), StoredKey()), "nothing stored"
        assert wins(write(t(2), etag=""), StoredKey()), "empty means none required"

    @pytest.mark.parametrize("stored", [b"soon", b"", b"1.5", b" 5", b"0x10", b"1e3", b"+5", b"9" * 16])
    def test_an_unreadable_stored_time_never_blocks(self, stored: bytes) -> None:
        assert wins(write(t(2)), ours(stored))

    @pytest.mark.parametrize("version", [b"2", None, b"", b" 1", b"1.0", b"\xff"])
    def test_a_hash_of_another_format_is_never_adopted(self, version: bytes | None) -> None:
        foreign = StoredKey("hash", version, str(t(9)).encode(), b'"x"')
        assert decide_write(write(t(2), CLAIM_WINDOW_MS), foreign) is WriteEffect.HSET_KEEPING_VERSION, (
            "a claim or a failure keeps its v, and its times guard nothing"
        )
        assert decide_write(write(t(2), etag='"x"'), foreign) is WriteEffect.HSET_KEEPING_VERSION
        assert decide_write(write(t(2), etag='"y"'), foreign) is WriteEffect.NOTHING
        assert decide_write(write(t(2), full=True), foreign) is WriteEffect.REPLACE, "only a full write"

    def test_a_key_of_another_type_is_replaced(self) -> None:
        assert decide_write(write(t(2)), StoredKey("string")) is WriteEffect.REPLACE
        assert decide_write(write(t(2), full=True), StoredKey("list")) is WriteEffect.REPLACE
        assert decide_write(write(t(2), etag='"e"'), StoredKey("string")) is WriteEffect.NOTHING

    def test_bad_writes_are_refused_before_any_io(self) -> None:
        for time_ms, gap_ms in [(0, 0), (-1, 0), (10**15, 0), (t(1), -1)]:
            with pytest.raises(ValueError):
                write(time_ms, gap_ms)
        for fields in [{}, {"v": "1"}, {"by": "x"}]:
            with pytest.raises(ValueError):
                GuardedWrite("k", "fetched_ms", t(1), fields)


REFUSALS = [
    from_server("NOPERM this user has no permissions to run the 'evalsha' command"),
    from_server("NOPERM this user has no permissions to run the 'script|load' command"),
    from_server("NOPERM User poller has no permissions to run the 'eval' command"),
    from_server("NOPERM this user has no permissions to run the 'evalsha' command or its subcommand"),
    NoPermissionError("this user has no permissions to run the 'evalsha' command"),
    from_server("ERR unknown command 'EVALSHA', with args beginning with: 'abc' '1' "),
    from_server("ERR unknown command `SCRIPT`, with args beginning with: `LOAD`, "),
    from_server("ERR unknown command 'eval', with args beginning with: "),
    from_server("ERR This Redis instance has scripting disabled"),
    from_server("ERR scripting is disabled in this proxy"),
    ResponseError("unsupported command 'evalsha'"),
]

NOT_REFUSALS = [
    # Redis being unavailable: the WATCH path couldn't get past it either.
    ConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused."),
    TimeoutError("Timeout reading from socket"),
    BusyLoadingError("Redis is loading the dataset in memory"),
    from_server("LOADING Redis is loading the dataset in memory"),
    from_server("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."),
    from_server("OOM command not allowed when used memory > 'maxmemory'."),
    from_server(
        "OOM command not allowed when used memory > 'maxmemory'. script: "
        "a32970f28f7e83f8e63d301845c0b2a16df7238c, on @user_script:1."
    ),
    from_server("READONLY You can't write against a read only replica."),
    from_server(
        "READONLY You can't write against a read only replica. script: "
        "a32970f28f7e83f8e63d301845c0b2a16df7238c, on @user_script:1."
    ),
    from_server("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."),
    from_server("NOSCRIPT No matching script. Please use EVAL."),
    from_server("EXECABORT Transaction discarded because of previous errors."),
    from_server("WRONGPASS invalid username-password pair or user is disabled."),
    AuthenticationError("invalid username-password pair"),
    InvalidResponse("Protocol Error: b'garbage'"),
    # A command denied inside the script: the script ran, and WATCH would be denied too.
    from_server(
        "ERR The user executing the script can't run this command or subcommand script: "
        "a32970f28f7e83f8e63d301845c0b2a16df7238c, on @user_script:1."
    ),
    from_server(
        "NOPERM User poller has no permissions to run the 'hset' command script: "
        "a32970f28f7e83f8e63d301845c0b2a16df7238c, on @user_script:1."
    ),
    from_server("NOPERM this user has no permissions to run the 'hset' command"),
    # The guarded-write script's own answer when the ACL denies one of its writes.
    from_server(
        "NOPERM this user may not run pexpire on the shared release key "
        "craftApps:releases:app:photocraft; nothing was written"
    ),
    from_server("NOPERM this user has no permissions to access one of the keys used as arguments"),
    from_server(
        "WRONGTYPE Operation against a key holding the wrong kind of value script: "
        "fd1f62702330c26137b50b4d8f15f201f6699d84, on @user_script:1."
    ),
    from_server("ERR wrong number of arguments for 'hset' command"),
    from_server("ERR Error running script (call to f_abc): @user_script:1: user_script:1: Script attempted"),
    from_server("ERR unknown command 'HSETX', with args beginning with: "),
    # Not Redis errors at all.
    OSError("network is unreachable"),
    socket.timeout("timed out"),  # noqa: UP041 - what a socket raises
    ValueError("evalsha"),
]


@pytest.mark.parametrize("err", REFUSALS, ids=lambda e: f"{type(e).__name__}:{e}"[:60])
def test_redis_refusing_the_script_is_a_refusal(err: Exception) -> None:
    assert is_script_refusal(err)


@pytest.mark.parametrize("err", NOT_REFUSALS, ids=lambda e: f"{type(e).__name__}:{e}"[:60])
def test_redis_trouble_is_not_a_refusal(err: Exception) -> None:
    assert not is_script_refusal(err)


def test_redis_py_builds_the_errors_these_tests_assume() -> None:
    assert isinstance(
        from_server("NOPERM this user has no permissions to run the 'evalsha' command"), NoPermissionError
    )
    busy = from_server(
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    )
    assert type(busy) is ResponseError and str(busy).startswith("BUSY")
    assert isinstance(from_server("LOADING Redis is loading the dataset in memory"), BusyLoadingError)

"""The shared hash fields: round trips, and garbage reading as absent (pure, no Redis)."""

from __future__ import annotations

import pytest

from craft_apps.fleet.entry import (
    FIELD_CLAIMED_MS,
    FIELD_ETAG,
    FIELD_FAILED_MS,
    FIELD_FAILURES,
    FIELD_FETCHED_MS,
    FIELD_RELEASE,
    FIELD_TROUBLE,
    FIELD_UNTIL_MS,
    FIELD_VERSION,
    SharedAppEntry,
    SharedFailure,
    SharedFetch,
    app_entry_problems,
    app_key,
    backoff_key,
    decode_app_entry,
    decode_backoff,
    encode_backoff,
    encode_claim,
    encode_failure,
    encode_fetch,
    encode_unchanged,
)
from craft_apps.kernel.codec import encode_release
from craft_apps.kernel.domain import Backoff
from tests.fleet.helpers import release, t

REPO = "storytold/photocraft"  # the repository every shared fetch here is of

BY = "web-7f9c"


def as_bytes(fields: dict[str, str]) -> dict[bytes, bytes]:
    return {name.encode(): value.encode() for name, value in fields.items()}


def test_key_names_match_the_reference() -> None:
    assert app_key("craftApps:releases:", "photocraft") == "craftApps:releases:app:photocraft"
    assert backoff_key("craftApps:releases:") == "craftApps:releases:backoff"


def test_a_fetch_round_trips_as_redis_returns_it() -> None:
    fields = encode_fetch(release(), '"e1"', t(0), BY, REPO)
    assert fields == {
        "v": "1",
        "fetched_ms": str(t(0)),
        "etag": '"e1"',
        "release": encode_release(release()),
        "by": BY,
        "repo": REPO,
        "repo_fetched_ms": str(t(0)),
    }
    entry = decode_app_entry(as_bytes(fields))
    assert entry == SharedAppEntry(fetched=SharedFetch(release(), '"e1"', t(0), REPO), failure=None)
    assert decode_app_entry(fields) == entry  # a client with decode_responses=True


def test_a_repository_without_release_or_etag_round_trips() -> None:
    fields = encode_fetch(None, None, t(0), BY, REPO)
    assert (fields[FIELD_RELEASE], fields[FIELD_ETAG]) == ("null", "")
    assert decode_app_entry(fields) == SharedAppEntry(fetched=SharedFetch(None, None, t(0), REPO))


def test_a_304_moves_only_the_time() -> None:
    fields = encode_fetch(release(), '"e1"', t(0), BY, REPO)
    fields.update(encode_unchanged(t(2), "other-host", REPO))
    entry = decode_app_entry(fields)
    assert entry is not None
    assert entry.fetched == SharedFetch(release(), '"e1"', t(2), REPO)


def test_a_fetch_moved_by_a_writer_that_records_no_repository_is_of_an_unrecorded_one() -> None:
    """0.2 and the reference pods write neither field: a 200 or a 304 of theirs leaves the
    recorded repository behind its time, and it no longer vouches for the fetch."""
    fields = encode_fetch(release(), '"e1"', t(0), BY, REPO)
    fields.update({"v": "1", "fetched_ms": str(t(2)), "by": "reference-pod"})  # their 304
    assert decode_app_entry(fields) == SharedAppEntry(fetched=SharedFetch(release(), '"e1"', t(2), None))
    their_200 = {k: v for k, v in fields.items() if not k.startswith("repo")}
    assert decode_app_entry(their_200) == SharedAppEntry(fetched=SharedFetch(release(), '"e1"', t(2), None))
    fields.update(encode_unchanged(t(3), BY, "Acme/Uno"))  # ours again: recorded again
    recorded = SharedFetch(release(), '"e1"', t(3), "Acme/Uno")
    assert decode_app_entry(fields) == SharedAppEntry(fetched=recorded)


@pytest.mark.parametrize("repo", ["", "acme", "acme/uno/x", "a b/c", "x" * 141, "acme/\x00"])
def test_an_unreadable_recorded_repository_is_an_unrecorded_one(repo: str) -> None:
    fields = encode_fetch(release(), '"e1"', t(0), BY, REPO) | {"repo": repo}
    entry = decode_app_entry(fields)
    assert entry is not None and entry.fetched == SharedFetch(release(), '"e1"', t(0), None)
    assert app_entry_problems(fields) == []


def test_a_failure_round_trips_beside_a_fetch_and_a_claim() -> None:
    fields = encode_fetch(None, None, t(0), BY, REPO)
    fields.update(encode_failure(SharedFailure(failed_ms=t(1), failures=3), BY))
    fields.update(encode_claim(t(3), BY))
    assert fields[FIELD_CLAIMED_MS] == str(t(3))
    entry = decode_app_entry(fields)
    assert entry == SharedAppEntry(
        fetched=SharedFetch(None, None, t(0), REPO), failure=SharedFailure(t(1), 3)
    )
    assert app_entry_problems(fields) == []


def test_a_claim_alone_is_an_entry_without_fetch_or_failure() -> None:
    assert decode_app_entry(encode_claim(t(0), BY)) == SharedAppEntry()
    assert app_entry_problems(encode_claim(t(0), BY)) == []


GOOD = encode_fetch(release(), '"e1"', t(0), BY, REPO) | encode_failure(SharedFailure(t(1), 2), BY)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        (FIELD_FETCHED_MS, "yesterday"),
        (FIELD_FETCHED_MS, "0"),
        (FIELD_FETCHED_MS, "-5"),
        (FIELD_FETCHED_MS, "1.7e12"),
        (FIELD_FETCHED_MS, " 1790000000000"),
        (FIELD_FETCHED_MS, "99999999999999999999"),
        (FIELD_RELEASE, "{not json"),
        (FIELD_RELEASE, '{"tag":1}'),
        (FIELD_RELEASE, "[" * 100_000),
        (FIELD_RELEASE, None),
        (FIELD_ETAG, None),
    ],
)
def test_an_unreadable_fetch_reads_as_no_fetch(field: str, value: str | None) -> None:
    fields = dict(GOOD)
    if value is None:
        del fields[field]
    else:
        fields[field] = value
    entry = decode_app_entry(fields)
    assert entry is not None and entry.fetched is None
    assert entry.failure == SharedFailure(t(1), 2), "the readable failure is kept"
    assert len(app_entry_problems(fields)) == 1


def test_unreadable_bytes_read_as_absent() -> None:
    raw = as_bytes(GOOD)
    raw[FIELD_RELEASE.encode()] = b"\xff\xfe"
    entry = decode_app_entry(raw)
    assert entry is not None and entry.fetched is None
    raw[FIELD_VERSION.encode()] = b"\xc3"
    assert decode_app_entry(raw) is None


@pytest.mark.parametrize("version", ["2", "", "01", None])
def test_another_format_version_reads_as_absent(version: str | None) -> None:
    fields = dict(GOOD)
    if version is None:
        del fields[FIELD_VERSION]
    else:
        fields[FIELD_VERSION] = version
    assert decode_app_entry(fields) is None
    assert app_entry_problems(fields)


def test_an_empty_hash_is_absent_without_a_problem() -> None:
    assert decode_app_entry({}) is None
    assert app_entry_problems({}) == []


@pytest.mark.parametrize(
    ("failed_ms", "failures", "expected"),
    [
        (str(t(1)), "3", SharedFailure(t(1), 3)),
        (str(t(1)), "0", SharedFailure(t(1), 1)),
        (str(t(1)), "-1", SharedFailure(t(1), 1)),
        (str(t(1)), "many", SharedFailure(t(1), 1)),
        (str(t(1)), str(2**32), SharedFailure(t(1), 1)),
        (str(t(1)), None, SharedFailure(t(1), 1)),
        ("-5", "3", None),
        ("0", "3", None),
        ("soon", "3", None),
    ],
)
def test_failure_decoding(failed_ms: str, failures: str | None, expected: SharedFailure | None) -> None:
    fields = {FIELD_VERSION: "1", FIELD_FAILED_MS: failed_ms}
    if failures is not None:
        fields[FIELD_FAILURES] = failures
    entry = decode_app_entry(fields)
    assert entry is not None and entry.failure == expected


def test_encoded_failure_counts_stay_in_the_references_range() -> None:
    assert encode_failure(SharedFailure(t(1), 0), BY)[FIELD_FAILURES] == "1"
    assert encode_failure(SharedFailure(t(1), 2**40), BY)[FIELD_FAILURES] == str(2**32 - 1)


def test_a_backoff_round_trips() -> None:
    backoff = Backoff(until_ms=t(30), trouble=4)
    fields = encode_backoff(backoff, BY)
    assert fields == {"v": "1", "until_ms": str(t(30)), "trouble": "4", "by": BY}
    assert decode_backoff(as_bytes(fields)) == backoff


def test_garbage_reads_as_no_backoff() -> None:
    assert decode_backoff({}) == Backoff()
    fields = encode_backoff(Backoff(until_ms=t(30), trouble=4), BY)
    assert decode_backoff(fields | {FIELD_VERSION: "zz"}) == Backoff()
    assert decode_backoff(fields | {FIELD_UNTIL_MS: "soon", FIELD_TROUBLE: "-1"}) == Backoff()
    assert decode_backoff(fields | {FIELD_UNTIL_MS: "0"}) == Backoff(until_ms=None, trouble=4)

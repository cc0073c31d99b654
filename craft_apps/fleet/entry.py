"""What the fleet shares in Redis about each app's release, and how it is encoded (docs/fleet.md).

Pure: the I/O is in ``store``. ``app_key(prefix, app)`` names an app's hash; ``encode_fetch``,
``encode_failure``, ``encode_claim`` and ``encode_backoff`` return its fields, in the reference
pods' format; ``read_app_entry(raw)`` returns the ``SharedAppEntry`` and why any part reads as
absent. Nothing unreadable is trusted: another version, a bad number, bad JSON, a time not above
zero or bytes that aren't UTF-8 read as absent, so the app is asked about again and the next
200 or 304 writes the whole entry over it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from craft_apps.kernel.codec import decode_release, encode_release
from craft_apps.kernel.domain import (
    MAX_COUNT,
    Backoff,
    Release,
    is_stored_count,
    is_stored_etag,
    is_stored_repo,
    is_stored_time,
)
from craft_apps.kernel.text import one_line

APP_TTL_MS = 7 * 24 * 3600 * 1000
BACKOFF_TTL_MS = 24 * 3600 * 1000
FORMAT_VERSION = "1"

FIELD_VERSION = "v"
FIELD_FETCHED_MS = "fetched_ms"
FIELD_ETAG = "etag"
FIELD_RELEASE = "release"
FIELD_FAILED_MS = "failed_ms"
FIELD_FAILURES = "failures"
FIELD_CLAIMED_MS = "claimed_ms"
FIELD_BY = "by"
FIELD_UNTIL_MS = "until_ms"
FIELD_TROUBLE = "trouble"
FIELD_REPO = "repo"
FIELD_REPO_FETCHED_MS = "repo_fetched_ms"

_INTEGER = re.compile(r"[+-]?[0-9]+")

RawHash = Mapping[str, str] | Mapping[bytes, bytes] | Mapping[str | bytes, str | bytes]


@dataclass(frozen=True, slots=True)
class SharedFetch:
    """A 200 or 304 from GitHub, as some host shared it; ``repo`` None: not recorded."""

    latest_release: Release | None
    etag: str | None
    fetched_ms: int
    repo: str | None = None


@dataclass(frozen=True, slots=True)
class SharedFailure:
    """The latest failed request for an app, as some host shared it."""

    failed_ms: int
    failures: int


@dataclass(frozen=True, slots=True)
class SharedAppEntry:
    fetched: SharedFetch | None = None
    failure: SharedFailure | None = None


def app_key(prefix: str, app: str) -> str:
    return f"{prefix}app:{app}"


def backoff_key(prefix: str) -> str:
    return f"{prefix}backoff"


def text_fields(raw: RawHash) -> dict[str, str]:
    """The hash with str names and values; a name or value that isn't UTF-8 is left out."""
    fields: dict[str, str] = {}
    for name, value in raw.items():
        try:
            text_name = name.decode() if isinstance(name, bytes) else name
            fields[text_name] = value.decode() if isinstance(value, bytes) else value
        except UnicodeDecodeError:
            continue
    return fields


def decode_app_entry(raw: RawHash) -> SharedAppEntry | None:
    """An app's hash; None when empty or of another format version."""
    return read_app_entry(raw)[0]


def app_entry_problems(raw: RawHash) -> list[str]:
    """Why (part of) a non-empty app hash reads as absent, one short reason each."""
    return read_app_entry(raw)[1]


def read_app_entry(
    raw: RawHash, decode: Callable[[str], Release | None] = decode_release
) -> tuple[SharedAppEntry | None, list[str]]:
    """An app's hash and why parts of it read as absent. ``decode`` reads the release JSON (a
    caller that reads the same hash every tick passes one that remembers its last answer)."""
    return _decode_app_entry(text_fields(raw), decode)


def _decode_app_entry(
    fields: dict[str, str], decode: Callable[[str], Release | None]
) -> tuple[SharedAppEntry | None, list[str]]:
    if not fields:
        return None, []
    version = fields.get(FIELD_VERSION)
    if version != FORMAT_VERSION:
        return None, [f"format version {version!r} is not {FORMAT_VERSION!r}"]
    problems: list[str] = []
    fetched = _decode_fetch(fields, problems, decode)
    failure = None
    failed_ms = _time_field(fields, FIELD_FAILED_MS, problems)
    if failed_ms is not None:
        failures = _count(fields.get(FIELD_FAILURES))
        failure = SharedFailure(failed_ms=failed_ms, failures=max(1, failures if failures is not None else 1))
    return SharedAppEntry(fetched=fetched, failure=failure), problems


def _decode_fetch(
    fields: dict[str, str], problems: list[str], decode: Callable[[str], Release | None]
) -> SharedFetch | None:
    fetched_ms = _time_field(fields, FIELD_FETCHED_MS, problems)
    release_json = fields.get(FIELD_RELEASE)
    etag = fields.get(FIELD_ETAG)
    if fetched_ms is None:
        return None
    if release_json is None or etag is None:
        problems.append(f"{FIELD_RELEASE} or {FIELD_ETAG} is missing")
        return None
    try:
        release = decode(release_json)
    except (ValueError, TypeError, RecursionError) as err:
        problems.append(f"{FIELD_RELEASE} is unreadable ({one_line(err, 120)})")
        return None
    if etag and not is_stored_etag(etag):
        problems.append(f"{FIELD_ETAG} {etag[:40]!r} is not one line of printable text")
        return None
    repo = fields.get(FIELD_REPO)
    recorded = is_stored_repo(repo) and _integer(fields.get(FIELD_REPO_FETCHED_MS)) == fetched_ms
    return SharedFetch(
        latest_release=release, etag=etag or None, fetched_ms=fetched_ms, repo=repo if recorded else None
    )


def _integer(text: str | None) -> int | None:
    if text is None or not _INTEGER.fullmatch(text) or len(text) > 25:
        return None
    return int(text)


def decode_time(value: str | bytes | None) -> int | None:
    """A Unix-ms field's value; None when absent or unreadable (the claim time, read alone)."""
    if isinstance(value, bytes):
        value = value.decode("ascii", errors="replace")
    ms = _integer(value)
    return ms if is_stored_time(ms) else None


def _time_field(fields: dict[str, str], name: str, problems: list[str]) -> int | None:
    """A Unix-ms field: None when absent; when unreadable, zero or negative also noted."""
    text = fields.get(name)
    if text is None:
        return None
    ms = _integer(text)
    if ms is None or not is_stored_time(ms):
        problems.append(f"{name} {text[:40]!r} is not a time in Unix ms")
        return None
    return ms


def _count(text: str | None) -> int | None:
    number = _integer(text)
    return number if is_stored_count(number) else None


def _clamp_count(number: int, low: int) -> int:
    return min(max(number, low), MAX_COUNT)


def encode_fetch(
    release: Release | None, etag: str | None, fetched_ms: int, by: str, repo: str
) -> dict[str, str]:
    """The fields of a 200: the release, its ETag, the time and its repository, together."""
    return {
        FIELD_VERSION: FORMAT_VERSION,
        FIELD_FETCHED_MS: str(fetched_ms),
        FIELD_ETAG: etag or "",
        FIELD_RELEASE: encode_release(release),
        FIELD_BY: by,
        **_repo_fields(repo, fetched_ms),
    }


def encode_unchanged(fetched_ms: int, by: str, repo: str) -> dict[str, str]:
    """The fields of a 304: the time moves, and the repository is recorded with it."""
    return {
        FIELD_VERSION: FORMAT_VERSION,
        FIELD_FETCHED_MS: str(fetched_ms),
        FIELD_BY: by,
        **_repo_fields(repo, fetched_ms),
    }


def _repo_fields(repo: str, fetched_ms: int) -> dict[str, str]:
    if not is_stored_repo(repo):
        raise ValueError(f"not a repository to record: {repo!r}")
    return {FIELD_REPO: repo, FIELD_REPO_FETCHED_MS: str(fetched_ms)}


def encode_failure(failure: SharedFailure, by: str) -> dict[str, str]:
    return {
        FIELD_VERSION: FORMAT_VERSION,
        FIELD_FAILED_MS: str(failure.failed_ms),
        FIELD_FAILURES: str(_clamp_count(failure.failures, 1)),
        FIELD_BY: by,
    }


def encode_claim(claimed_ms: int, by: str) -> dict[str, str]:
    return {FIELD_VERSION: FORMAT_VERSION, FIELD_CLAIMED_MS: str(claimed_ms), FIELD_BY: by}


def decode_backoff(raw: RawHash) -> Backoff:
    """The fleet's backoff; anything absent or unreadable is no backoff."""
    fields = text_fields(raw)
    if fields.get(FIELD_VERSION) != FORMAT_VERSION:
        return Backoff()
    return Backoff(
        until_ms=_time_field(fields, FIELD_UNTIL_MS, []),
        trouble=_count(fields.get(FIELD_TROUBLE)) or 0,
    )


def encode_backoff(backoff: Backoff, by: str) -> dict[str, str]:
    return {
        FIELD_VERSION: FORMAT_VERSION,
        FIELD_UNTIL_MS: str(backoff.until_ms or 0),
        FIELD_TROUBLE: str(_clamp_count(backoff.trouble, 0)),
        FIELD_BY: by,
    }

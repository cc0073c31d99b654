"""The answer's validator and the conditional requests it answers (RFC 9110 §8.8.3, §13).

Pure functions. ``weak_etag(data)`` takes the answer's data and returns its weak ETag (``W/"…"``,
fetch times left out); ``folded_etag`` folds a signature's period and keys into it;
``not_modified(header, etag)`` takes ``If-None-Match`` and the current ETag and returns whether
a GET or HEAD gets ``304``. Each function's docstring holds its rules (why no
``Last-Modified``: ``not_modified``'s); docs/endpoint.md the contract.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

# Fields that say when something was fetched: left out of the validator.
FETCH_TIME_FIELD = "last_fetched"
APP_FETCH_TIME_FIELD = "app_last_fetched"

_ETAG_DIGEST_BYTES = 12  # 96 bits, 16 base64url characters
# One element of an If-None-Match list: an optional W/, then a quoted opaque tag (§8.8.3).
_ENTITY_TAG = re.compile(r'\s*(W/)?("[\x21\x23-\x7e\x80-\xff]*")\s*(?:,|$)')


def without_fetch_times(data: Mapping[str, Any]) -> dict[str, Any]:
    """The answer's data as far as the validator is concerned: all of it but the fetch times."""
    stripped = dict(data)
    release_info = data.get("release_info")
    if isinstance(release_info, Mapping):
        info = {k: v for k, v in release_info.items() if k != FETCH_TIME_FIELD}
        apps = release_info.get("apps")
        if isinstance(apps, Mapping):
            info["apps"] = {
                key: {k: v for k, v in app.items() if k != APP_FETCH_TIME_FIELD}
                if isinstance(app, Mapping)
                else app
                for key, app in apps.items()
            }
        stripped["release_info"] = info
    return stripped


def weak_etag(data: Mapping[str, Any]) -> str:
    """``W/"<16 characters>"`` for the answer's data.

    - **What it covers.** Everything a launcher sees except when things were fetched: the
      answer's data with ``release_info.last_fetched`` and every app's ``app_last_fetched`` taken
      out (``without_fetch_times``). Releases, renames, notices and any field added to the contract
      later count without a change here. Fetch times move at every revalidation of GitHub (every
      ~9 s with a token) while a launcher would act on nothing new, so they don't.
    - **Weak, and the same everywhere.** Answers whose fetch times differ, and the ``br``,
      ``gzip`` and plain forms of one answer, share it, which RFC 9110 allows only for a weak
      validator (§8.8.1). It is a hash of the data's canonical JSON (sorted keys), with no
      per-process or per-host input: every worker and every host holding the same releases gives
      the same one. 96 bits of SHA-256 in base64url: 16 characters, short on the wire, and a
      collision between two states of one site is out of reach.
    """
    canonical = json.dumps(
        without_fetch_times(data), ensure_ascii=False, sort_keys=True, separators=(",", ":")
    ).encode("utf-8")
    digest = hashlib.sha256(canonical).digest()[:_ETAG_DIGEST_BYTES]
    return 'W/"' + base64.urlsafe_b64encode(digest).decode("ascii") + '"'


def folded_etag(etag: str, *parts: object) -> str:
    """A weak ETag for ``etag``'s answer sent with what ``parts`` name (the signature's period
    and keys): it changes when any of them does, so a cache or launcher revalidating gets a 200
    with the new headers, never a 304 that keeps the old ones. The same inputs give the same
    tag on every host.

    With a signing key set, the answer's tag is this one: a new period (a third of the validity
    window) sends every launcher a fresh signature, and hosts in the same period still agree.
    Without a key it is ``weak_etag``'s tag."""
    text = "\n".join([opaque_tag(etag), *(str(part) for part in parts)])
    digest = hashlib.sha256(text.encode("utf-8")).digest()[:_ETAG_DIGEST_BYTES]
    return 'W/"' + base64.urlsafe_b64encode(digest).decode("ascii") + '"'


def opaque_tag(etag: str) -> str:
    """The quoted part of an entity tag, without ``W/``."""
    return etag[2:] if etag.startswith("W/") else etag


def parse_if_none_match(header: str) -> list[str] | None:
    """The entity tags of an ``If-None-Match`` field, or None for ``*``. Bad elements are skipped."""
    if header.strip() == "*":
        return None
    tags: list[str] = []
    position = 0
    while position < len(header):
        match = _ENTITY_TAG.match(header, position)
        if match is None:  # not an entity tag: skip to the next element
            comma = header.find(",", position)
            if comma < 0:
                break
            position = comma + 1
            continue
        tags.append((match.group(1) or "") + match.group(2))
        position = match.end()
    return tags


def not_modified(header: str | None, etag: str) -> bool:
    """True when ``If-None-Match`` names the current answer, so a GET or HEAD gets 304.

    The field (§13.1.2) is ``*`` or a comma-separated list of entity tags. ``*`` matches (the
    answer always exists); otherwise any tag that matches the current one by weak comparison (the
    opaque tags are equal, ``W/`` or not) makes the request's condition false. Elements that
    aren't entity tags are skipped; they match nothing.

    No ``Last-Modified`` is sent, as no date is correct for it: the newest ``published_at``
    doesn't move when a release is replaced by one published earlier, nor for renames or notices;
    the time the state file last changed differs from host to host and after a restart, so a
    launcher moving between hosts could be told ``304`` while it holds another answer; and
    one-second resolution misses two changes within a second. ``If-Modified-Since`` is therefore
    ignored, as §13.1.3 requires for a resource without a modification date; the ETag covers
    every revalidation.
    """
    if header is None:
        return False
    if header == etag:  # what a launcher sends back, most of the time
        return True
    tags = parse_if_none_match(header)
    if tags is None:
        return True
    current = opaque_tag(etag)
    return any(opaque_tag(tag) == current for tag in tags)

"""Which answers changed and the requests that drop them: the pure rules of ``cdn.plan``."""

from __future__ import annotations

import json

from craft_apps.cdn.backends import requests_for
from craft_apps.cdn.backends.cloudflare import FILES_PER_CALL as CLOUDFLARE_FILES_PER_CALL
from craft_apps.cdn.plan import RELEASE_INFO, UPDATER_PREFIX, answer_path, changed_paths
from craft_apps.conf import PurgeTarget
from craft_apps.kernel.domain import Channel

BETA = RELEASE_INFO + "?channel=beta"


def target(
    kind: str = "http", method: str = "PURGE", url: str = "http://127.0.0.1:6081{path}"
) -> PurgeTarget:
    return PurgeTarget(
        kind, url, method, "https://updates.example.com", 5.0, token="s3cret-token", zone="zone-1"
    )


def test_each_channel_has_its_own_path():
    assert answer_path(Channel.STABLE) == RELEASE_INFO
    assert answer_path(Channel.BETA) == BETA


def test_a_path_changed_when_its_etag_did_and_it_was_cacheable_before():
    before = {RELEASE_INFO: 'W/"a"', BETA: 'W/"b"'}
    assert changed_paths(before, {RELEASE_INFO: 'W/"a2"', BETA: 'W/"b"'}) == (RELEASE_INFO,)
    assert changed_paths(before, before) == ()
    # Cold before (no-store: no cache kept it), or the first look: nothing to drop.
    assert changed_paths({}, {RELEASE_INFO: 'W/"a"'}) == ()
    assert changed_paths({RELEASE_INFO: 'W/"a"'}, {RELEASE_INFO: 'W/"a"', BETA: 'W/"b"'}) == ()


def test_purge_sends_one_request_per_url_with_the_public_host():
    sent = requests_for(target(), [RELEASE_INFO, BETA])
    assert [(r.method, r.url) for r in sent] == [
        ("PURGE", "http://127.0.0.1:6081/v1/craft_apps/release_info"),
        ("PURGE", "http://127.0.0.1:6081/v1/craft_apps/release_info?channel=beta"),
    ]
    assert all(dict(r.headers) == {"Host": "updates.example.com"} for r in sent)
    assert all("s3cret" not in repr(r) for r in sent), "the token is the sender's to add"


def test_ban_drops_the_answers_path_and_every_updater_path_by_prefix():
    sent = requests_for(target(method="BAN"), [BETA])
    assert [(r.method, r.url) for r in sent] == [
        ("BAN", "http://127.0.0.1:6081" + RELEASE_INFO),
        ("BAN", "http://127.0.0.1:6081" + UPDATER_PREFIX),
    ]


def test_cloudflare_purges_full_public_urls_in_calls_of_at_most_thirty():
    paths = [f"{RELEASE_INFO}?n={n}" for n in range(CLOUDFLARE_FILES_PER_CALL + 1)]
    sent = requests_for(target("cloudflare", url="http://127.0.0.1:9/client/v4"), paths)
    assert [(r.method, r.url) for r in sent] == [
        ("POST", "http://127.0.0.1:9/client/v4/zones/zone-1/purge_cache")
    ] * 2
    files = [json.loads(r.body or b"")["files"] for r in sent]
    assert [len(chunk) for chunk in files] == [CLOUDFLARE_FILES_PER_CALL, 1]
    assert files[0][0] == "https://updates.example.com/v1/craft_apps/release_info?n=0"


def test_nothing_changed_sends_nothing():
    assert requests_for(target(), []) == ()
    assert repr(target()).count("s3cret") == 0  # a target named in a log line hides its token

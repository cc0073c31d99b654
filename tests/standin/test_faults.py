"""Injected faults: each one reaches a real client the way a failing GitHub would."""

from __future__ import annotations

import json
import threading
import time

import pytest
import requests

from craft_apps.testing.fake_github import (
    MAX_CLIENT_BODY_BYTES,
    DripFault,
    DropFault,
    FakeGitHub,
    ForeignAssetsFault,
    GarbageFault,
    HangFault,
    OversizedFault,
    RateLimited429Fault,
    SlowFault,
    StatusFault,
)
from tests.standin.support import latest_url

PHOTOCRAFT = "storytold/photocraft"
VECTORCRAFT = "storytold/vectorcraft"
TINY_RELEASE = {"tag_name": "v1.0.0", "assets": []}


def handler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if "process_request_thread" in t.name and t.is_alive()]


def in_background(call):
    """Runs ``call`` in a thread; the returned dict gets its result or exception."""
    outcome: dict[str, object] = {}

    def run():
        try:
            outcome["result"] = call()
        except Exception as err:
            outcome["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def wait_for_requests(stand_in: FakeGitHub, count: int) -> None:
    deadline = time.monotonic() + 5
    while len(stand_in.requests) < count:
        assert time.monotonic() < deadline, "the stand-in never saw the request"
        time.sleep(0.005)


def test_a_status_fault_answers_with_its_code_and_body(demo_github, http):
    demo_github.set_fault(PHOTOCRAFT, StatusFault(502, b'{"message": "Bad Gateway"}'))

    response = http.get(latest_url(demo_github, PHOTOCRAFT))

    assert response.status_code == 502
    assert response.json() == {"message": "Bad Gateway"}
    assert "etag" not in response.headers
    assert demo_github.requests[-1].status == 502


def test_a_repository_fault_beats_the_global_one_and_clearing_restores(demo_github, http):
    demo_github.set_fault(None, StatusFault(500))
    demo_github.set_fault(VECTORCRAFT, StatusFault(418, b"teapot", "text/plain"))

    assert http.get(latest_url(demo_github, PHOTOCRAFT)).status_code == 500
    assert http.get(latest_url(demo_github, VECTORCRAFT)).status_code == 418

    demo_github.set_fault(None, None)
    assert http.get(latest_url(demo_github, PHOTOCRAFT)).status_code == 200
    assert http.get(latest_url(demo_github, VECTORCRAFT)).status_code == 418
    demo_github.set_fault(VECTORCRAFT, None)
    assert http.get(latest_url(demo_github, VECTORCRAFT)).status_code == 200


def test_slow_answers_after_the_delay(demo_github, http):
    demo_github.set_fault(PHOTOCRAFT, SlowFault(0.3))

    with pytest.raises(requests.ReadTimeout):
        http.get(latest_url(demo_github, PHOTOCRAFT), timeout=(1, 0.1))
    started = time.monotonic()
    response = requests.get(latest_url(demo_github, PHOTOCRAFT), timeout=2)

    assert response.status_code == 200
    assert time.monotonic() - started >= 0.3
    assert response.json()["tag_name"] == "v0.5.0"


def test_hang_never_answers_so_the_client_times_out(demo_github):
    demo_github.set_fault(PHOTOCRAFT, HangFault())
    started = time.monotonic()

    with pytest.raises(requests.ReadTimeout):
        requests.get(latest_url(demo_github, PHOTOCRAFT), timeout=(1, 0.2))

    assert time.monotonic() - started < 5, "the read timeout, not the hang, ended it"
    (recorded,) = demo_github.requests
    assert (recorded.repo, recorded.status) == (PHOTOCRAFT, None)


def test_stop_releases_hanging_slow_and_dripping_connections(epoch):
    # Other stand-ins of this test process (fixtures kept across tests) may still hold handler
    # threads of their own: only this one's must be gone.
    others = set(handler_threads())
    stand_in = FakeGitHub(now=epoch).start()
    for repo in ("a/hang", "b/slow", "c/drip"):
        stand_in.publish(repo, TINY_RELEASE)
    stand_in.set_fault("a/hang", HangFault())
    stand_in.set_fault("b/slow", SlowFault(60))
    stand_in.set_fault("c/drip", DripFault(60))
    clients = [
        in_background(lambda repo=repo: requests.get(latest_url(stand_in, repo), timeout=30).content)
        for repo in ("a/hang", "b/slow", "c/drip")
    ]
    wait_for_requests(stand_in, 3)

    started = time.monotonic()
    stand_in.stop()

    assert time.monotonic() - started < 2
    assert [thread for thread in handler_threads() if thread not in others] == []
    for thread, outcome in clients:
        thread.join(5)
        assert not thread.is_alive()
        assert "error" in outcome or outcome["result"] != json.dumps(TINY_RELEASE).encode()


def test_stop_is_idempotent_and_closes_the_port(epoch):
    stand_in = FakeGitHub(now=epoch).start()
    url = stand_in.url
    stand_in.stop()
    stand_in.stop()

    with pytest.raises(requests.ConnectionError):
        requests.get(url + "/", timeout=1)


def test_drop_closes_the_connection_without_an_answer(demo_github):
    demo_github.set_fault(PHOTOCRAFT, DropFault())

    with pytest.raises(requests.ConnectionError):
        requests.get(latest_url(demo_github, PHOTOCRAFT), timeout=2)

    assert demo_github.requests[-1].status is None


@pytest.mark.parametrize("content_length", [True, False])
def test_oversized_sends_a_valid_release_bigger_than_4_mib(demo_github, content_length):
    demo_github.set_fault(PHOTOCRAFT, OversizedFault(content_length=content_length))

    response = requests.get(latest_url(demo_github, PHOTOCRAFT), timeout=5)

    assert response.status_code == 200
    assert len(response.content) > MAX_CLIENT_BODY_BYTES == 4 * 1024 * 1024
    assert json.loads(response.content)["tag_name"] == "v9.9.9"
    if content_length:
        assert int(response.headers["content-length"]) == len(response.content)
    else:
        assert "content-length" not in response.headers
        assert response.headers["transfer-encoding"] == "chunked"


def test_a_client_that_stops_reading_an_oversized_answer_does_not_hurt_the_server(demo_github):
    demo_github.set_fault(PHOTOCRAFT, OversizedFault(size=32 * 1024 * 1024, content_length=False))

    with requests.get(latest_url(demo_github, PHOTOCRAFT), stream=True, timeout=5) as response:
        assert len(next(response.iter_content(1024))) > 0

    demo_github.set_fault(PHOTOCRAFT, None)
    assert requests.get(latest_url(demo_github, PHOTOCRAFT), timeout=5).status_code == 200


def test_garbage_is_a_200_that_is_not_json(demo_github, http):
    demo_github.set_fault(PHOTOCRAFT, GarbageFault())

    response = http.get(latest_url(demo_github, PHOTOCRAFT))

    assert response.status_code == 200
    assert response.content.startswith(b"<!DOCTYPE html>")
    with pytest.raises(ValueError):
        response.json()


def test_foreign_assets_point_elsewhere_and_change_the_etag(demo_github, http):
    normal_etag = demo_github.etag_of(PHOTOCRAFT)
    demo_github.set_fault(PHOTOCRAFT, ForeignAssetsFault("https://evil.example/"))

    response = http.get(latest_url(demo_github, PHOTOCRAFT))

    urls = [a["browser_download_url"] for a in response.json()["assets"]]
    assert len(urls) == 13
    assert all(url.startswith("https://evil.example/") for url in urls)
    assert response.json()["tag_name"] == "v0.5.0"
    assert response.headers["etag"] != normal_etag


def test_rate_limited_429_carries_retry_after(demo_github, http):
    demo_github.set_fault(None, RateLimited429Fault(retry_after_s=90))

    response = http.get(latest_url(demo_github, PHOTOCRAFT))

    assert response.status_code == 429
    assert response.headers["retry-after"] == "90"
    assert "secondary rate limit" in response.json()["message"]
    assert response.headers["x-ratelimit-resource"] == "core"


def test_drip_sends_the_body_one_byte_per_interval(github):
    github.publish(PHOTOCRAFT, TINY_RELEASE)
    expected = requests.get(latest_url(github, PHOTOCRAFT), timeout=2).content
    github.set_fault(PHOTOCRAFT, DripFault(interval_s=0.01))
    started = time.monotonic()

    # Every single read is quick, so only a limit on the whole exchange would notice.
    response = requests.get(latest_url(github, PHOTOCRAFT), timeout=(1, 0.2))

    assert response.content == expected
    assert time.monotonic() - started >= (len(expected) - 1) * 0.01
    assert time.monotonic() - started > 0.2

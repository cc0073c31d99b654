"""The webhook under a real gunicorn (sync workers), its body sent chunked, without Content-Length,
as streaming proxies send it: signed and under 1 MiB it is taken, over 1 MiB it is refused with
413 after reading no more than the limit."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.endpoint import ENDPOINT_PATH, fill_state, gunicorn_command, running, site_env
from craft_apps.api.webhook import MAX_BODY_BYTES
from craft_apps.host.due import HostDueMarks
from tests.support import free_port, release_event, webhook_headers

SECRET = "chunked-webhook-secret-0123456789"
URL = "/v1/craft_apps/github_webhook"

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    state_dir = tmp_path / "state"
    fill_state(state_dir)  # the state file a poller made: the webhook writes its marks there
    port = free_port()
    env = site_env(state_dir, tmp_path / "unused.json", tmp_path)
    env["CRAFT_APPS_RELEASE_GITHUB_WEBHOOK_SECRET"] = SECRET
    with running(
        gunicorn_command(port, workers=1),
        env=env,
        log=tmp_path / "gunicorn.log",
        ready_url=f"http://127.0.0.1:{port}/{ENDPOINT_PATH}",
    ):
        yield port, state_dir


def post_chunked(port: int, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    """POSTs ``body`` in 16 KiB chunks (Transfer-Encoding: chunked, no Content-Length)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        chunks = (body[i : i + 16384] for i in range(0, len(body), 16384))
        connection.request(
            "POST",
            URL,
            body=chunks,
            headers={"Content-Type": "application/json", "Host": "127.0.0.1", **headers},
            encode_chunked=True,
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_a_signed_chunked_delivery_is_taken(server: tuple[int, Path]):
    port, state_dir = server
    body = json.dumps(release_event(repo="storytold/photocraft")).encode()
    status, answer = post_chunked(port, body, webhook_headers(body, SECRET, delivery="chunked-1"))
    assert (status, answer) == (202, {"status": "due", "apps": ["photocraft"]})
    assert [mark.app for mark in HostDueMarks(state_dir).marks()] == ["photocraft"]
    # A wrong signature is still refused, chunked or not.
    status, _ = post_chunked(port, body, webhook_headers(body + b" ", SECRET, delivery="chunked-2"))
    assert status == 401


def test_a_chunked_body_over_1_mib_is_413(server: tuple[int, Path]):
    port, state_dir = server
    payload = release_event(repo="storytold/photocraft")
    payload["padding"] = "x" * MAX_BODY_BYTES
    body = json.dumps(payload).encode()
    status, answer = post_chunked(port, body, webhook_headers(body, SECRET, delivery="chunked-big"))
    assert status == 413 and "over" in str(answer["error"])
    assert HostDueMarks(state_dir).marks() == []

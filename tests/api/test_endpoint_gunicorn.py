"""End to end under a real gunicorn (two sync workers, the benchmark's site): each coding, a 304,
HEAD, one ETag from every worker and from this process, and the framing the launcher benchmark
counts bytes with."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import brotli
import pytest
from django.test import Client, override_settings

from bench.endpoint import ENDPOINT_PATH, fill_state, gunicorn_command, running, site_env
from bench.launcher import request_bytes, response_bytes
from craft_apps.api import caching
from tests.api.support import exchange
from tests.support import free_port

URL = "/" + ENDPOINT_PATH


@pytest.mark.slow
def test_under_gunicorn_every_worker_answers_alike_in_every_coding(tmp_path: Path):
    state_dir = tmp_path / "state"
    fill_state(state_dir)
    port = free_port()
    env = site_env(state_dir, tmp_path / "unused.json", tmp_path)
    host = [("Host", "127.0.0.1")]
    with running(
        gunicorn_command(port, workers=2),
        env=env,
        log=tmp_path / "gunicorn.log",
        ready_url=f"http://127.0.0.1:{port}{URL}",
    ):
        plain = exchange(port, host)
        coded = {c: exchange(port, [*host, ("Accept-Encoding", c)]) for c in ("br", "gzip")}
        etag = plain.headers["etag"]
        revalidated = [
            exchange(port, [*host, ("Accept-Encoding", "br, gzip"), ("If-None-Match", etag)])
            for _ in range(8)
        ]
        head = exchange(port, [*host, ("Accept-Encoding", "br")], method="HEAD")

    body = json.loads(plain.body)
    assert plain.status == 200 and body["success"] is True and len(body["release_info"]["apps"]) == 13
    assert bytes(brotli.decompress(coded["br"].body)) == plain.body
    assert gzip.decompress(coded["gzip"].body) == plain.body
    for coding, answer in coded.items():
        assert answer.headers["content-encoding"] == coding
        assert answer.headers["content-length"] == str(len(answer.body))
    for answer in (plain, *coded.values(), *revalidated, head):
        assert answer.headers["etag"] == etag and etag.startswith('W/"')
        assert answer.headers["cache-control"] == caching.CACHEABLE
        assert answer.headers["vary"] == "Accept-Encoding"
    assert all(r.status == 304 and r.body == b"" for r in revalidated)
    assert head.status == 200 and head.body == b""
    assert head.headers["content-length"] == coded["br"].headers["content-length"]

    # The same ETag from this process, which has never seen gunicorn's workers.
    with override_settings(CRAFT_APPS={"STATE_DIR": str(state_dir)}):  # the runtime forgets at once
        assert Client().get(URL)["ETag"] == etag

    # The launcher benchmark's framing is gunicorn's, to the byte.
    assert revalidated[0].sent == request_bytes(
        [*host, ("Accept-Encoding", "br, gzip"), ("If-None-Match", etag)]
    )
    for answer in (plain, coded["br"], revalidated[0]):
        assert answer.received == response_bytes(answer.status, answer.app_headers(), len(answer.body))

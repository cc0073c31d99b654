"""Signed answers as a real gunicorn (two sync workers) serves them: every verdict of the test
vectors computed by the reference verifier from the plain, gzip and brotli answers, a changed
byte anywhere refused, ``craft_apps_verify`` against it, a key rotation run end to end, and
the private key in none of the log lines (every level), the state file or the command's output."""

from __future__ import annotations

import gzip
import io
import json
import time
from pathlib import Path

import brotli
import pytest
from django.core.management import CommandError, call_command

from bench.endpoint import ENDPOINT_PATH, fill_state, gunicorn_command, running, site_env
from craft_apps.kernel import signing
from tests.api.support import Exchange, exchange
from tests.signing.vectors import KEY_A, KEY_B
from tests.support import free_port

URL = "/" + ENDPOINT_PATH
HOST = [("Host", "127.0.0.1")]
SKEW = signing.CLOCK_SKEW_SECS


def decoded(answer: Exchange) -> bytes:
    coding = answer.headers.get("content-encoding")
    if coding == "br":
        return bytes(brotli.decompress(answer.body))
    if coding == "gzip":
        return gzip.decompress(answer.body)
    assert coding is None
    return answer.body


def serve(tmp_path: Path, name: str, state_dir: Path, **keys: str):
    port = free_port()
    env = site_env(state_dir, tmp_path / "unused.json", tmp_path)
    env.update(DJANGO_LOG_LEVEL="DEBUG", **keys)
    command = [*gunicorn_command(port, workers=2)]
    command[command.index("--log-level") + 1] = "debug"
    log = tmp_path / f"{name}.log"
    return port, log, running(command, env=env, log=log, ready_url=f"http://127.0.0.1:{port}{URL}")


def served(port: int) -> list[Exchange]:
    """Plain, gzip and brotli, each on fresh connections (so both workers answer)."""
    return [
        exchange(port, [*HOST, *([("Accept-Encoding", coding)] if coding else [])])
        for coding in (None, "gzip", "br", None, "gzip", "br")
    ]


def verdict(answer: Exchange, pinned: list[signing.SigningKey], now: int, last: int | None = None, body=None):
    return signing.verify(
        decoded(answer) if body is None else body, answer.headers, [k.public for k in pinned], now, last
    )


@pytest.mark.slow
def test_every_vector_verdict_from_what_gunicorn_served(tmp_path: Path):
    state_dir = tmp_path / "state"
    fill_state(state_dir)
    private = signing.private_key_text(KEY_A)
    port, log, server = serve(tmp_path, "one", state_dir, CRAFT_APPS_SIGNING_KEY=private)
    with server:
        answers = served(port)
        etag = answers[0].headers["etag"]
        revalidated = exchange(port, [*HOST, ("If-None-Match", etag), ("Accept-Encoding", "br")])
        out = io.StringIO()
        call_command(
            "craft_apps_verify", f"http://127.0.0.1:{port}{URL}", "--public-key",
            signing.public_key_text(KEY_A.public), stdout=out,
        )  # fmt: skip
        with pytest.raises(CommandError) as refused:
            call_command(
                "craft_apps_verify", f"http://127.0.0.1:{port}{URL}", "--public-key",
                signing.public_key_text(KEY_B.public), stdout=io.StringIO(),
            )  # fmt: skip
    now = int(time.time())
    assert out.getvalue().startswith(f"accepted (key {KEY_A.key_id}") and "sent as br" in out.getvalue()
    assert str(refused.value).startswith("refused: unknown key")
    assert revalidated.status == 304 and "craft-apps-signature" not in revalidated.headers

    codings = {a.headers.get("content-encoding") for a in answers}
    assert codings == {None, "br", "gzip"}
    assert len({decoded(a) for a in answers}) == 1 and len({a.headers["etag"] for a in answers}) == 1
    assert len({a.headers["craft-apps-signature"] for a in answers}) == 1, "every worker signs alike"
    good = verdict(answers[0], [KEY_A], now)
    expires, order = signing.parse_rfc3339(good.expires or ""), int(good.order or "0")
    assert order > 0, "the order of an answer of fetched apps"
    for answer in answers:
        assert verdict(answer, [KEY_A], now).reason == "accepted"
        assert verdict(answer, [KEY_B], now).reason == "unknown key"
        assert verdict(answer, [KEY_A], expires + SKEW + 1).reason == "expired"
        assert verdict(answer, [KEY_A], now, last=order + 1).reason == "rollback"
        assert verdict(answer, [KEY_A], now, last=order).reason == "accepted"
        v1 = signing.verify_v1(decoded(answer), answer.headers, [KEY_A.public], now)
        assert v1.accepted, "a launcher built before the order verifies as it did"
    body = decoded(answers[0])
    for position in range(0, len(body), 7):  # a changed byte anywhere (every 7th: 13,000 of them)
        changed = bytearray(body)
        changed[position] ^= 0x20
        assert verdict(answers[0], [KEY_A], now, body=bytes(changed)).reason == "bad signature", position
    assert private not in log.read_text(encoding="utf-8")
    assert all(private.encode() not in path.read_bytes() for path in state_dir.iterdir() if path.is_file())


@pytest.mark.slow
def test_a_key_rotation_end_to_end_with_two_workers(tmp_path: Path):
    """Old key signing, then both, then the new one: a launcher pinning the old key verifies
    until the last step, one pinning the new key from the second, one pinning both throughout;
    each step's first answer reaches a launcher that revalidates as a 200, not a 304."""
    state_dir = tmp_path / "state"
    fill_state(state_dir)
    old, new = signing.private_key_text(KEY_A), signing.private_key_text(KEY_B)
    steps = [
        ("old", {"CRAFT_APPS_SIGNING_KEY": old}, {"old": True, "new": False}),
        ("both", {"CRAFT_APPS_SIGNING_KEY": new, "CRAFT_APPS_SIGNING_KEY_PREVIOUS": old}, {}),
        ("new", {"CRAFT_APPS_SIGNING_KEY": new}, {"old": False, "new": True}),
    ]
    launchers = {"old": [KEY_A], "new": [KEY_B], "both": [KEY_A, KEY_B]}
    last: dict[str, int | None] = dict.fromkeys(launchers)
    etag = None
    logs = []
    for name, keys, expected in steps:
        port, log, server = serve(tmp_path, name, state_dir, **keys)
        logs.append(log)
        with server:
            if etag is not None:
                first = exchange(port, [*HOST, ("If-None-Match", etag), ("Accept-Encoding", "br")])
                assert first.status == 200, f"{name}: a 304 would keep launchers on the old keys"
            answers = served(port)
        now = int(time.time())
        etag = answers[0].headers["etag"]
        for answer in answers:
            for launcher, pinned in launchers.items():
                found = verdict(answer, pinned, now, last[launcher])
                assert found.accepted is expected.get(launcher, True), (name, launcher, found)
                if found.accepted:
                    last[launcher] = max(last[launcher] or 0, int(found.order or "0"))
    assert all(old not in log.read_text() and new not in log.read_text() for log in logs)


@pytest.mark.slow
def test_the_beta_channel_is_signed_as_its_own_variant_in_every_coding(tmp_path: Path):
    """Every app on beta (imported into the site's database, as an operator would), the first
    apps with a newer prerelease: what gunicorn serves on ``?channel=beta`` verifies as the
    ``beta`` variant in each coding, never as the stable answer's, and differs from it."""
    import http.client

    from bench.endpoint import prepare_site_database

    state_dir = tmp_path / "state"
    fill_state(state_dir)
    port = free_port()
    env = site_env(state_dir, tmp_path / "unused.json", tmp_path)
    env["CRAFT_APPS_SIGNING_KEY"] = signing.private_key_text(KEY_A)
    prepare_site_database(env, tmp_path)
    log = tmp_path / "beta.log"
    with running(
        gunicorn_command(port, workers=2), env=env, log=log, ready_url=f"http://127.0.0.1:{port}{URL}"
    ):
        now = int(time.time())
        bodies = set()
        for coding in (None, "gzip", "br"):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            connection.request(
                "GET", f"{URL}?channel=beta", headers={"Accept-Encoding": coding or "identity"}
            )
            response = connection.getresponse()
            raw, headers = response.read(), dict(response.getheaders())
            connection.close()
            assert response.status == 200, raw[:200]
            coded = headers.get("Content-Encoding")
            body = (
                brotli.decompress(raw) if coded == "br" else gzip.decompress(raw) if coded == "gzip" else raw
            )
            assert coded == coding
            assert signing.verify(body, headers, [KEY_A.public], now, variant="beta").accepted
            assert not signing.verify(body, headers, [KEY_A.public], now).accepted, "not as stable's"
            bodies.add(bytes(body))
        stable = exchange(port, HOST)
    assert len(bodies) == 1 and bodies != {decoded(stable)}, "the beta answer lists the prereleases"
    assert signing.verify(decoded(stable), stable.headers, [KEY_A.public], now).accepted


HEALTH = "/v1/craft_apps/health"


def probe(port: int, path: str) -> tuple[int, str]:
    """The status and body of one GET of ``path``."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8")
    finally:
        connection.close()


@pytest.mark.slow
def test_a_key_that_cant_be_used_says_so_once_and_fails_readiness(tmp_path: Path):
    """gunicorn with a truncated key: every answer a 200 without a signature, one ERROR line
    for the process (not one per request), the health endpoint a 503 naming the setting (even
    under the rules a load balancer asks), never the key; with the key whole, none of it."""
    state_dir = tmp_path / "state"
    fill_state(state_dir)
    whole = signing.private_key_text(KEY_A)
    truncated = whole[:40]
    results = {}
    for name, key in (("truncated", truncated), ("whole", whole)):
        port = free_port()
        env = site_env(state_dir, tmp_path / "unused.json", tmp_path)
        env["CRAFT_APPS_SIGNING_KEY"] = key
        log = tmp_path / f"{name}.log"
        with running(
            gunicorn_command(port, workers=1), env=env, log=log, ready_url=f"http://127.0.0.1:{port}{URL}"
        ):
            answers = [exchange(port, HOST) for _ in range(20)]
            health = [probe(port, f"{HEALTH}?rules={rules}") for rules in ("stale", "", "state_file,poller")]
        results[name] = (answers, health, log.read_text(encoding="utf-8"))

    answers, health, text = results["truncated"]
    assert {a.status for a in answers} == {200} and all(
        "craft-apps-signature" not in a.headers for a in answers
    )
    assert {status for status, _ in health} == {503}
    problems = json.loads(health[0][1])["problems"]
    assert [p["rule"] for p in problems] == ["signing"]
    assert "CRAFT_APPS_SIGNING_KEY" in problems[0]["detail"] and "30 bytes" in problems[0]["detail"]
    errors = [line for line in text.splitlines() if " ERROR craft_apps.api.health" in line]
    assert len(errors) == 1, text
    assert "CRAFT_APPS_SIGNING_KEY" in errors[0] and "serves unsigned answers" in errors[0]
    assert truncated not in text and all(truncated not in body for _, body in health)

    answers, health, text = results["whole"]
    assert all(signing.HEADER.lower() in a.headers for a in answers)
    assert health[0][0] == 200 and "ERROR" not in text


def every_worker_serves_a_new_answer(port: int, old_etag: str) -> Exchange:
    """The answer once both workers have left ``old_etag``: twelve new ones in a row, each on a
    fresh connection, so ``craft_apps_verify``'s own request can't meet the old one."""
    deadline = time.monotonic() + 10
    in_a_row = 0
    while in_a_row < 12:
        assert time.monotonic() < deadline, "the new state file version was never served by both"
        answer = exchange(port, HOST)
        in_a_row = in_a_row + 1 if answer.headers["etag"] != old_etag else 0
    return answer


@pytest.mark.slow
def test_the_answer_from_before_github_deleted_a_release_is_refused_after_it(tmp_path: Path):
    """gunicorn serves an answer, then the poller's next fetch finds photocraft's release gone:
    the answer before, replayed on the path, is refused by the reference verifier and by
    ``craft_apps_verify`` pinning the key after the answer after; the v1 rule took it."""
    from craft_apps.host.lease import Lease
    from craft_apps.host.store import StateStore
    from craft_apps.kernel.clock import SystemClock
    from craft_apps.kernel.domain import AppState
    from tests.api.signed_support import replaying, verify_command

    state_dir = tmp_path / "state"
    fill_state(state_dir)
    port, _, server = serve(
        tmp_path, "order", state_dir, CRAFT_APPS_SIGNING_KEY=signing.private_key_text(KEY_A)
    )
    with server:
        before = exchange(port, HOST)
        first = verdict(before, [KEY_A], int(time.time()))
        store = StateStore(state_dir)
        store.open_for_writing()
        lease = Lease(store, holder="test-poller", clock=SystemClock())
        assert lease.try_acquire() and lease.fence is not None
        fetched_ms = int(first.order or "0") + 1000
        gone = AppState(latest_release=None, fetched_ms=fetched_ms, repo="storytold/photocraft")
        assert store.put_app("photocraft", gone, fence=lease.fence)
        lease.release()
        store.close()
        after = every_worker_serves_a_new_answer(port, before.headers["etag"])
        url = f"http://127.0.0.1:{port}{URL}"
        seen = verdict(after, [KEY_A], int(time.time()))
        assert seen.accepted and int(seen.order or "0") == fetched_ms
        assert verify_command(url, fetched_ms).startswith("accepted")
    now = int(time.time())
    assert b'"photocraft":{' in after.body and after.body != before.body
    assert verdict(before, [KEY_A], now, last=fetched_ms).reason == "rollback"
    assert signing.verify_v1(before.body, before.headers, [KEY_A.public], now).accepted
    with (
        replaying(before.body, list(before.headers.items())) as replay,
        pytest.raises(CommandError) as refused,
    ):
        verify_command(replay, fetched_ms)
    assert str(refused.value).startswith("refused: rollback")

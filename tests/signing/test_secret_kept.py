"""The signing key is never written anywhere by us: a run that polls (GitHub's stand-in, a real
Redis), serves signed answers, scrapes the metrics, fails a check and runs the commands, with
every logger at DEBUG, leaves it in no log line, in neither the state file nor Redis, and in
neither the metrics nor the commands' output."""

from __future__ import annotations

import base64
import io
import logging
from pathlib import Path

import pytest
import redis
from django.core.management import CommandError, call_command
from django.test import Client

from craft_apps.api.runtime import runtime
from craft_apps.checks import configuration_problems
from craft_apps.github.client import GitHubClient
from craft_apps.kernel import signing
from craft_apps.polling.process import PollerRunner, RunnerOptions
from craft_apps.testing.clock import START_MS, FakeClock
from tests.fleet.server import RedisServer
from tests.signing.vectors import KEY_A
from tests.support import RELEASE_INFO_URL as URL
from tests.support import apps_setting, stand_in

METRICS_TOKEN = "metrics-token-for-this-test-0123456789"


@pytest.mark.django_db  # the poller's round closes old database connections; status reads notices
def test_the_key_is_in_no_log_line_file_redis_key_or_metric(
    settings, state_dir: Path, fresh_redis_server: RedisServer, caplog, monkeypatch, install_runtime
):
    private = signing.private_key_text(KEY_A)
    seed = base64.b64decode(private)
    broken = base64.b64encode(b"another-secret-31-bytes-long...").decode()  # fails its check
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    install_runtime(recheck_s=0.0)
    settings.CACHES = {
        **settings.CACHES,
        "craft_apps": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": fresh_redis_server.url + "?client_name=craft_apps_poller",
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 1},
        },
    }
    out = io.StringIO()
    with stand_in() as github, caplog.at_level(logging.DEBUG):
        logging.getLogger().setLevel(logging.DEBUG)
        settings.CRAFT_APPS = {
            "STATE_DIR": str(state_dir),
            "GITHUB_API_URL": github.url,
            "APPS": apps_setting(),
            "POLL_INTERVAL_SECS": 1800,
            "SIGNING_KEY": private,
            "SIGNING_KEY_PREVIOUS": broken,
            "METRICS_TOKEN": METRICS_TOKEN,
        }
        runner = PollerRunner(
            clock=FakeClock(START_MS),
            options=RunnerOptions(once=True, keep_lease_in_background=False),
            make_source=GitHubClient.from_settings,
        )
        assert runner.run() == 0
        runtime().answers.clear()
        client = Client()
        answer = client.get(URL, HTTP_ACCEPT_ENCODING="br")
        assert signing.HEADER in answer, "the run signs"
        metrics = client.get("/v1/craft_apps/metrics", HTTP_AUTHORIZATION=f"Bearer {METRICS_TOKEN}")
        assert metrics.status_code == 200
        found = [f.id for f in configuration_problems()]
        assert "craft_apps.E141" in found, "the run fails a check"
        with pytest.raises(CommandError) as refused:  # the good key shows, the broken one is named
            call_command("craft_apps_keys", "show", stdout=out, stderr=out)
        out.write(str(refused.value))
        call_command("craft_apps_status", stdout=out, stderr=out)
    runtime().answers.clear()
    logged = caplog.text + "\n".join(str(record.__dict__) for record in caplog.records)
    assert any(record.levelno == logging.DEBUG for record in caplog.records), "DEBUG lines captured"
    outputs = {
        "the log": logged.encode(),
        "the metrics": metrics.content,
        "the commands' output": out.getvalue().encode(),
        "the answer's headers": str(dict(answer.headers)).encode(),
    }
    for path in state_dir.rglob("*"):
        if path.is_file():
            outputs[str(path)] = path.read_bytes()
    stored = redis.Redis.from_url(fresh_redis_server.url)
    keys = list(stored.scan_iter("*"))
    assert keys, "the poller wrote to Redis"
    outputs["Redis"] = b"\n".join(key + b"=" + (stored.dump(key) or b"") for key in keys)
    for where, data in outputs.items():
        for secret in (private.encode(), seed, broken.encode(), base64.b64decode(broken)):
            assert secret not in data, f"a private key in {where}"

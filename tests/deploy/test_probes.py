"""The Kubernetes example's pod, run here from the manifest itself: the migration Job's command on a
fresh PostgreSQL database, then gunicorn, nginx and the poller with exactly the containers'
commands and environment (the ConfigMap's values, the Secret's with real ones in place of the
placeholders), and the kubelet's probes sent as it sends them (path, port, Host header).

Only what a pod has and this machine hasn't is replaced: the fixed ports (8000, 8080) by free ones,
the volumes' mount paths (and nginx's /tmp) by directories of the test, the image's ``python``
and ``gunicorn`` by this virtual environment's, and GitHub by the local stand-in."""

from __future__ import annotations

import http.client
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from craft_apps.kernel.compat import UTC
from craft_apps.testing.demo_releases import demo_release
from craft_apps.testing.fake_github import FakeGitHub
from tests.deploy.support import (
    ROOT,
    containers,
    environment_of,
    outside_environment,
    postgres_database,
    resource,
    strong_secret_key,
)
from tests.fleet.server import RedisServer
from tests.support import ONE_AT_A_TIME, PHOTOCRAFT, free_port

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME]

APP = PHOTOCRAFT
GUNICORN_BIND = "127.0.0.1:8000"
NGINX_PORT = 8080
STARTS_WITHIN_S = 60  # four workers and a poller importing Django on a loaded two-core machine


def replaced_once(text: str, old: str, new: str) -> str:
    """``text`` with its one ``old`` replaced: the test fails if the manifest stops saying it."""
    assert text.count(old) == 1, f"expected {old!r} once in {text!r}"
    return text.replace(old, new)


def executable(name: str) -> str:
    """The image's ``python`` or ``gunicorn``: this virtual environment's."""
    if name == "python":
        return sys.executable
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    assert found, f"{name} is not installed beside {sys.executable}"
    return found


class Pod:
    """The pod's processes; each one's output in its own log file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, command: list[str], env: dict[str, str] | None = None) -> None:
        log = (self.directory / f"{name}.log").open("wb")
        self.processes[name] = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()

    def output(self) -> str:
        return "\n".join(
            f"--- {name}\n" + (self.directory / f"{name}.log").read_text(errors="replace")
            for name in self.processes
        )

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def get(port: int, path: str, host: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", path, headers={"Host": host})
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def probe_request(probe: dict[str, Any]) -> tuple[str, int, str]:
    """What the kubelet sends for an httpGet probe: its path, its port, its Host header."""
    action = probe["httpGet"]
    headers = {header["name"].lower(): header["value"] for header in action.get("httpHeaders", [])}
    return action["path"], action["port"], headers["host"]


@dataclass(frozen=True)
class Running:
    processes: Pod
    nginx_port: int  # in place of the manifest's 8080
    gunicorn_port: int  # in place of its 8000
    poller_env: dict[str, str]


@pytest.fixture(scope="module")
def running_pod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """The pod (started once for this module's tests), its own redis-server as the fleet's Redis."""
    tmp_path = tmp_path_factory.mktemp("pod")
    web, nginx, poller = containers()["web"], containers()["nginx"], containers()["poller"]
    volumes = {name: tmp_path / name for name in ("state", "metrics", "nginx-tmp")}
    for directory in volumes.values():
        directory.mkdir()
    gunicorn_port, nginx_port = free_port(), free_port()
    with ExitStack() as stack:
        redis_server = RedisServer.start(tmp_path / "redis")
        stack.callback(redis_server.stop)
        github = stack.enter_context(FakeGitHub())
        github.publish(APP.repo, demo_release(APP, "1.0.0", datetime(2026, 10, 8, tzinfo=UTC)))
        database_url = stack.enter_context(postgres_database())
        secret = {
            "DJANGO_SECRET_KEY": strong_secret_key(),
            "DATABASE_URL": database_url,
            "CRAFT_APPS_REDIS_URL": redis_server.url,
            "CRAFT_APPS_RELEASE_GITHUB_TOKEN": "not-a-real-token",
            "CRAFT_APPS_METRICS_TOKEN": strong_secret_key(),
        }

        def env_for(container: dict[str, Any]) -> dict[str, str]:
            env = outside_environment()
            env.update(environment_of(container, secret))
            for mount in container.get("volumeMounts", []):
                for name, value in env.items():
                    if value == mount["mountPath"]:
                        env[name] = str(volumes[mount["name"]])
            env.update(
                CRAFT_APPS_RELEASE_GITHUB_API_URL=github.url,
                CRAFT_APPS_RELEASE_APPS=f"{APP.key}={APP.name}={APP.repo}",
            )
            return env

        job = resource("Job", "craft-apps-migrate")["spec"]["template"]["spec"]["containers"][0]
        migrated = subprocess.run(
            [executable(job["command"][0]), *job["command"][1:]],
            cwd=ROOT,
            env=env_for(job),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert migrated.returncode == 0, migrated.stdout + migrated.stderr
        assert "Applying craft_apps." in migrated.stdout

        running = Pod(tmp_path)
        stack.callback(running.stop)
        web_command = [executable(web["command"][0]), *web["command"][1:]]
        web_command[web_command.index(GUNICORN_BIND)] = f"127.0.0.1:{gunicorn_port}"
        running.start("web", web_command, env_for(web))
        running.start("poller", [executable(poller["command"][0]), *poller["command"][1:]], env_for(poller))

        conf = resource("ConfigMap", "craft-apps-nginx")["data"]["nginx.conf"]
        conf = replaced_once(conf, f"listen {NGINX_PORT};", f"listen 127.0.0.1:{nginx_port};")
        conf = replaced_once(
            conf, f"proxy_pass http://{GUNICORN_BIND};", f"proxy_pass http://127.0.0.1:{gunicorn_port};"
        )
        conf = conf.replace(" /tmp/", f" {volumes['nginx-tmp']}/")
        (mount,) = (m for m in nginx["volumeMounts"] if m["name"] == "nginx-conf")
        conf_dir = tmp_path / "nginx-conf"
        conf_dir.mkdir()
        (conf_dir / "nginx.conf").write_text(conf)
        nginx_command = [(shutil.which(nginx["command"][0]) or "/usr/sbin/nginx"), *nginx["command"][1:]]
        nginx_command[-1] = replaced_once(nginx_command[-1], mount["mountPath"], str(conf_dir))
        assert Path(nginx_command[0]).exists(), "nginx is missing: .ci/setup installs Debian's nginx"
        running.start("nginx", nginx_command)
        yield Running(running, nginx_port, gunicorn_port, env_for(poller))
        assert all(p.poll() is None for p in running.processes.values()), running.output()


def until_answered(port: int, path: str, host: str) -> tuple[int, bytes]:
    """The first answer that isn't a connection refused or a 502/503 of a pod still starting."""
    deadline = time.monotonic() + STARTS_WITHIN_S
    while True:
        try:
            status, body = get(port, path, host)
            if status not in (502, 503):
                return status, body
        except OSError:
            status, body = 0, b""
        if time.monotonic() > deadline:
            return status, body
        time.sleep(0.2)


def test_the_readiness_and_liveness_probes_answer_200_through_nginx_and_from_gunicorn(running_pod: Running):
    web = containers()["web"]
    for probe in (web["readinessProbe"], web["livenessProbe"]):
        path, port, host = probe_request(probe)
        assert port == NGINX_PORT, "the kubelet reaches the pod's nginx"
        status, body = until_answered(running_pod.nginx_port, path, host)
        assert status == 200, (path, host, status, body[:500], running_pod.processes.output())
        # gunicorn itself answers the same request, the probe's Host header included.
        status, body = get(running_pod.gunicorn_port, path, host)
        assert status == 200, (path, host, status, body[:500])


def test_the_kubelets_default_host_the_pods_ip_would_be_refused(running_pod: Running):
    """Why the probes send a Host header: without it the kubelet sends the pod's IP."""
    path, _, host = probe_request(containers()["web"]["livenessProbe"])
    assert until_answered(running_pod.nginx_port, path, host)[0] == 200, running_pod.processes.output()
    assert get(running_pod.nginx_port, path, "10.244.1.17")[0] == 400


def test_the_pollers_liveness_command_passes_in_the_running_pod(running_pod: Running):
    path, _, host = probe_request(containers()["web"]["readinessProbe"])
    status = until_answered(running_pod.nginx_port, path, host)[0]
    assert status == 200, ("the poller holds the lease", running_pod.processes.output())
    command = containers()["poller"]["livenessProbe"]["exec"]["command"]
    done = subprocess.run(
        [executable(command[0]), *command[1:]],
        cwd=ROOT,
        env=running_pod.poller_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


SLOW_BODY = (
    b"POST /v1/craft_apps/github_webhook HTTP/1.1\r\nHost: localhost\r\n"
    b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
)
# A request still coming in, for a sync worker: its headers not finished. (A slow body holds a
# worker only while the view reads it, and a view may answer first: the webhook without a
# secret answers 404 unread. A worker that hasn't the whole head yet is held whatever the view.)
SLOW_HEAD = b"POST /v1/craft_apps/github_webhook HTTP/1.1\r\nHost: localhost\r\n"


def slow_bodies(port: int, count: int, start: bytes = SLOW_BODY) -> list[socket.socket]:
    """``count`` webhook deliveries that send ``start`` only: the headers and the first byte of
    the body, by default."""
    held = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(start)
        held.append(sock)
    return held


def test_slow_bodies_hold_nginx_not_the_sync_workers(running_pod: Running):
    """Twice as many slow bodies as the pod has workers: through nginx the probe still answers;
    as many slow requests sent to gunicorn itself (which the pod doesn't expose) hold every
    worker."""
    web = containers()["web"]
    workers = int(web["command"][web["command"].index("--workers") + 1])
    path, _, host = probe_request(web["livenessProbe"])
    assert until_answered(running_pod.nginx_port, path, host)[0] == 200, running_pod.processes.output()
    held = slow_bodies(running_pod.nginx_port, workers * 2)
    try:
        assert get(running_pod.nginx_port, path, host)[0] == 200, "nginx holds the bodies"
    finally:
        for sock in held:
            sock.close()
    held = slow_bodies(running_pod.gunicorn_port, workers, SLOW_HEAD)
    try:
        with pytest.raises(TimeoutError):
            connection = http.client.HTTPConnection("127.0.0.1", running_pod.gunicorn_port, timeout=2)
            connection.request("GET", path, headers={"Host": host})
            connection.getresponse()
    finally:
        for sock in held:
            sock.close()
    assert until_answered(running_pod.gunicorn_port, path, host)[0] == 200, "the workers come back"

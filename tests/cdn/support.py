"""A real caching proxy in front of a real origin, for the CDN tests: ``Origin`` runs gunicorn on
the site (signing with a test key), ``Nginx`` runs Debian's nginx with
``examples/cdn/nginx-cache.conf`` as shipped (its placeholders filled), and ``Varnish`` runs
varnishd with ``examples/cdn/varnish.vcl``. nginx's clock can be moved forward through
libfaketime (a file of seconds ahead), so a test sees a minute's max-age or a day's
stale-if-error pass without waiting for it."""

from __future__ import annotations

import gzip
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import brotli

from craft_apps.kernel import signing
from craft_apps.kernel.domain import AppState
from tests.signing.vectors import KEY_A
from tests.support import free_port, publish, release

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "cdn"
LIBFAKETIME = next(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"), Path("libfaketime.so.1"))
URL_PATH = "/v1/craft_apps/release_info"
BETA_PATH = URL_PATH + "?channel=beta"
FETCHED_MS = 1_790_000_000_000


class Clock:
    """A process's clock, ahead of the real one by what the file says (libfaketime reads it at
    every call)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ahead_s = 0
        path.write_text("+0\n")

    def advance(self, seconds: int) -> None:
        self.ahead_s += seconds
        self.path.write_text(f"+{self.ahead_s}\n")

    def env(self) -> dict[str, str]:
        return {
            "LD_PRELOAD": str(LIBFAKETIME),
            "FAKETIME_TIMESTAMP_FILE": str(self.path),
            "FAKETIME_NO_CACHE": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        }


def until_listening(port: int, process: subprocess.Popen[bytes], log: Path, timeout: float = 20) -> None:
    """Waits for ``port`` to accept a connection (the signal that the server is up)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"not listening on {port}:\n{log.read_text(errors='replace')}") from None
            time.sleep(0.02)


class Server:
    """A process the test started, stopped at the end."""

    process: subprocess.Popen[bytes]
    log: Path

    def _start(self, args: list[str], env: dict[str, str], port: int) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        until_listening(port, self.process, self.log)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def logged(self, text: str, timeout: float = 10) -> bool:
        """Whether ``text`` reaches the log within ``timeout``: a server writes its access line
        after the answer, so the client can be told before the line is there."""
        deadline = time.monotonic() + timeout
        while text not in self.output():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True


class Origin(Server):
    """gunicorn serving the site, signing with ``KEY_A`` (on the real clock: Python's timed waits
    don't survive libfaketime)."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.log = tmp / "origin.log"
        self.state_dir = Path(env["CRAFT_APPS_STATE_DIR"])
        self.env = {**env, "CRAFT_APPS_SIGNING_KEY": signing.private_key_text(KEY_A)}
        self.start()

    def warm(self) -> None:
        """Every app fetched, and both workers serving it: a cacheable answer from each worker
        (``X-Worker-Pid``), each asked on a new connection, so neither still says no-store."""
        publish(self.state_dir, {"photocraft": AppState(latest_release=release(), fetched_ms=FETCHED_MS)})
        deadline = time.monotonic() + 60  # a hang guard: the loop waits for its signal
        serving: set[str] = set()
        while len(serving) < 2:
            assert time.monotonic() < deadline, self.output()
            answer = ask(self.port)
            if answer.headers["cache-control"] != "no-store":
                serving.add(answer.headers["x-worker-pid"])

    def start(self) -> None:
        """Starts gunicorn and waits until both workers answer: a proxy in front gives up on an
        origin after 10 s, less than a worker may take to start on a busy machine."""
        args = [sys.executable, "-m", "gunicorn", "config.wsgi", "--workers", "2", "--timeout", "0"]
        args += ["--access-logfile", "-"]
        self._start([*args, "--bind", f"127.0.0.1:{self.port}"], self.env, self.port)
        deadline = time.monotonic() + 60  # a hang guard: the loop waits for its signal
        answered: set[str] = set()
        while len(answered) < 2:
            assert time.monotonic() < deadline, self.output()
            answered.add(ask(self.port, coding="").headers["x-worker-pid"])


class Nginx(Server):
    """Debian's nginx with the shipped example, in one process, on its own clock."""

    def __init__(self, tmp: Path, origin_port: int) -> None:
        self.port = free_port()
        self.log = tmp / "nginx.log"
        self.clock = Clock(tmp / "nginx.faketime")
        work = tmp / "nginx"
        (work / "temp").mkdir(parents=True)
        site = (EXAMPLES / "nginx-cache.conf").read_text()
        for name, value in {
            "@LISTEN@": f"127.0.0.1:{self.port}",
            "@ORIGIN@": f"127.0.0.1:{origin_port}",
            "@CACHE_DIR@": str(work / "cache"),
        }.items():
            site = site.replace(name, value)
        temp = work / "temp"
        config = work / "nginx.conf"
        config.write_text(
            "daemon off;\nmaster_process off;\n"
            + "".join(f"env {name};\n" for name in self.clock.env())
            + f"pid {work / 'nginx.pid'};\nerror_log {self.log} info;\nevents {{}}\nhttp {{\n"
            + "access_log off;\n"
            + "".join(
                f"{kind}_temp_path {temp / kind};\n"
                for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
            )
            + site
            + "\n}\n"
        )
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        env = {"PATH": os.environ.get("PATH", ""), **self.clock.env()}
        self._start([binary, "-c", str(config), "-e", str(self.log)], env, self.port)


class Varnish(Server):
    """varnishd with the shipped VCL, in the foreground, with a work directory of its own.
    ``fresh_s`` shortens how long a kept answer is fresh (Varnish runs the VCL's subroutines of
    the same name in order): its clock can't be moved, and a revalidation shouldn't take a minute."""

    def __init__(self, tmp: Path, origin_port: int, fresh_s: int | None = None) -> None:
        self.port = free_port()
        self.log = tmp / "varnish.log"
        work = tmp / "varnish"
        work.mkdir()
        vcl = (EXAMPLES / "varnish.vcl").read_text()
        vcl = vcl.replace("@ORIGIN_HOST@", "127.0.0.1").replace("@ORIGIN_PORT@", str(origin_port))
        if fresh_s is not None:
            vcl += f"\nsub vcl_backend_response {{\n    set beresp.ttl = {fresh_s}s;\n}}\n"
        (work / "craft-apps.vcl").write_text(vcl)
        os.chmod(work, 0o755)
        binary = shutil.which("varnishd") or "/usr/sbin/varnishd"
        args = [binary, "-F", "-a", f"127.0.0.1:{self.port}", "-f", str(work / "craft-apps.vcl")]
        args += ["-n", str(work / "instance"), "-s", "malloc,64m", "-p", "http_gzip_support=off"]
        args += ["-j", "none"]  # no jail: the test's directories are its own user's
        self._start(args, {"PATH": os.environ.get("PATH", "")}, self.port)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    raw: bytes

    @property
    def body(self) -> bytes:
        coding = self.headers.get("content-encoding")
        if coding == "br":
            return bytes(brotli.decompress(self.raw))
        if coding == "gzip":
            return gzip.decompress(self.raw)
        return self.raw

    @property
    def cache(self) -> str:
        """What the proxy did: nginx's $upstream_cache_status, or varnish's HIT/MISS."""
        return self.headers.get("x-cache-status", "")

    def verdict(self, now_s: int, last_order: int | None = None, variant: str = "") -> signing.Verdict:
        return signing.verify(self.body, self.headers, [KEY_A.public], now_s, last_order, variant)


def ask(
    port: int,
    path: str = URL_PATH,
    coding: str = "br",
    etag: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Answer:
    """One GET through ``port``, as a launcher sends it (``coding`` empty: no Accept-Encoding)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=dict(headers or {}))
    if coding:
        request.add_header("Accept-Encoding", coding)
    if etag:
        request.add_header("If-None-Match", etag)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # a hang guard
            headers = {k.lower(): v for k, v in response.headers.items()}
            return Answer(response.status, headers, response.read())
    except urllib.error.HTTPError as err:
        return Answer(err.code, {k.lower(): v for k, v in err.headers.items()}, err.read())

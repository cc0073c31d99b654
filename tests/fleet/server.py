"""A real redis-server for tests, on a free port, in its own directory, without persistence.

Reuse it from any test package::

    from tests.fleet.server import RedisServer
    server = RedisServer.start(tmp_dir)       # waits until it answers PING
    client = server.client()                  # socket_timeout=5, socket_connect_timeout=3, no retries
    url = server.acl_user("poller", "pw", ["~*", "&*", "+@all", "-@scripting"])
    server.pause(); server.resume()           # SIGSTOP / SIGCONT: a Redis that stops answering
    server.kill(); server.restart()           # SIGKILL; the same port again, empty
    server.stop()

Clients get no redis-py retries (``Retry(NoBackoff(), 0)``), like the connections django-redis
makes for the poller, so a test sees each failure once and at once. The fixtures
(``redis_server``, ``redis_client``, ``fresh_redis_server``) are in tests/conftest.py.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.support.ports import free_port

INSTALL_HINT = "redis-server is not installed: run `apt-get install redis-server`."
START_TIMEOUT_SECS = 10.0


class RedisServerMissing(RuntimeError):
    pass


class RedisServer:
    def __init__(self, executable: str, directory: Path, port: int) -> None:
        self.executable = executable
        self.directory = directory
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None
        self.paused = False

    @classmethod
    def start(cls, directory: Path) -> RedisServer:
        executable = shutil.which("redis-server")
        if executable is None:
            raise RedisServerMissing(INSTALL_HINT)
        directory.mkdir(parents=True, exist_ok=True)
        # The port was free a moment ago; if another process took it since, try another one.
        for _ in range(3):
            server = cls(executable, directory, free_port())
            if server._launch():
                return server
        raise RuntimeError(f"redis-server didn't start; see {directory / 'redis.log'}")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self, **kwargs: Any) -> redis.Redis:
        options: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": self.port,
            "socket_timeout": 5,
            "socket_connect_timeout": 3,
            "retry": Retry(NoBackoff(), 0),
        }
        options.update(kwargs)
        return redis.Redis(**options)

    def acl_user(self, name: str, password: str, rules: list[str]) -> str:
        """Creates (or resets) an ACL user with ``rules``; returns a URL that logs in as it."""
        admin = self.client()
        try:
            admin.execute_command("ACL", "SETUSER", name, "reset", "on", f">{password}", *rules)
        finally:
            admin.close()
        return f"redis://{quote(name, safe='')}:{quote(password, safe='')}@127.0.0.1:{self.port}/0"

    def kill(self) -> None:
        """SIGKILL: the server vanishes without a word; its port is closed."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self.paused = False

    def pause(self) -> None:
        """SIGSTOP: connections stay open but nothing answers."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)
        self.paused = False

    def restart(self) -> None:
        """Kills the server and starts an empty one on the same port."""
        self.kill()
        if not self._launch():
            raise RuntimeError(f"redis-server didn't restart on port {self.port}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        if self.paused:
            self.resume()
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()

    def _launch(self) -> bool:
        """Starts the process and waits until it answers PING; False if it exited instead."""
        log = self.directory / "redis.log"
        self.process = subprocess.Popen(
            [
                self.executable,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(self.directory),
                "--logfile", str(log),
                "--daemonize", "no",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C of the test run doesn't reach it first
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_SECS
        probe = self.client(socket_timeout=1, socket_connect_timeout=1)
        try:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    return False
                try:
                    if probe.ping():
                        return True
                except redis.RedisError:
                    time.sleep(0.02)  # a starting process, not a timer under test
        finally:
            probe.close()
        self.process.kill()
        self.process.wait()
        return False

    def __repr__(self) -> str:
        return f"RedisServer(port={self.port}, pid={self.process.pid if self.process else None})"


def ensure_installed() -> None:
    if shutil.which("redis-server") is None:
        raise RedisServerMissing(INSTALL_HINT)


__all__ = ["INSTALL_HINT", "RedisServer", "RedisServerMissing", "ensure_installed"]

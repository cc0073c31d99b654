"""The total deadline of one GitHub request, however slowly the server drips.

``RequestDeadline(seconds, deadlines)`` is a context manager: while it is open, every connect and
read of the session's ``DeadlineAdapter`` waits at most the time left, and a timer shuts the
socket down when the time is up (``expired`` then says so). ``Deadlines`` is the real time it
reads (``RealDeadlines``: ``time.monotonic`` and a timer thread); tests hand in their own.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from types import TracebackType
from typing import Any, Protocol

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

logger = logging.getLogger("craft_apps.github.client")

_LEAST_WAIT_S = 0.001  # a connect or read that starts with no time left fails at once

# --- The total deadline ---------------------------------------------------------------------------
#
# requests' read timeout restarts at every byte, so a server dripping one byte per second could
# hold a request forever. A timer shuts down the request's socket when the deadline passes; the
# blocked read then fails at once. The socket reaches the timer through connection classes that
# register it, with the request's deadline, as soon as it is connected. The same classes cut each
# connect and each read's timeout to the time the deadline has left, so a redirect's new
# connection can't start a fresh connect timeout after the deadline.


class Armed(Protocol):
    def cancel(self) -> None:
        """Stops the expiry; should it be running, waits until it has ended."""
        ...


class Deadlines(Protocol):
    """Real time for a request's deadline: what reads it and what arms its expiry."""

    def monotonic(self) -> float:
        """Seconds, only ever increasing."""
        ...

    def arm(self, seconds: float, expire: Callable[[], None]) -> Armed:
        """Calls ``expire`` from another thread ``seconds`` from now, unless cancelled first."""
        ...


class _ArmedTimer:
    def __init__(self, timer: threading.Timer) -> None:
        self._timer = timer

    def cancel(self) -> None:
        self._timer.cancel()
        self._timer.join()


class RealDeadlines:
    """``time.monotonic`` and a daemon timer thread per request."""

    def monotonic(self) -> float:
        return time.monotonic()

    def arm(self, seconds: float, expire: Callable[[], None]) -> Armed:
        timer = threading.Timer(seconds, expire)
        timer.daemon = True
        timer.start()
        return _ArmedTimer(timer)


_current_deadline: ContextVar[RequestDeadline | None] = ContextVar("craft_apps_github_deadline", default=None)


class RequestDeadline:
    def __init__(self, seconds: float, deadlines: Deadlines) -> None:
        self.seconds = seconds
        self._deadlines = deadlines
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.expired = False
        self._started = deadlines.monotonic()
        self._armed: Armed | None = None

    def __enter__(self) -> RequestDeadline:
        self._context_token = _current_deadline.set(self)
        self._armed = self._deadlines.arm(self.seconds, self._expire)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # Should the expiry be running right now, wait: no shutdown may reach a connection that
        # is back in the pool for the next request.
        if self._armed is not None:
            self._armed.cancel()
        _current_deadline.reset(self._context_token)
        with self._lock:
            self._sockets.clear()

    def remaining(self) -> float:
        """Seconds left before the deadline (0 or less once it has passed)."""
        return self.seconds - (self._deadlines.monotonic() - self._started)

    def cut(self, timeout: object) -> float:
        """``timeout`` (a socket timeout: seconds, or None for none) cut to the time left."""
        left = max(self.remaining(), _LEAST_WAIT_S)
        return min(timeout, left) if isinstance(timeout, int | float) else left

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            if not self.expired:
                if sock not in self._sockets:
                    self._sockets.append(sock)
                return
        _shut_down(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets, self._sockets = self._sockets, []
        elapsed = self._deadlines.monotonic() - self._started
        logger.debug("A GitHub request overran its deadline after %.2f s.", elapsed)
        for sock in sockets:
            _shut_down(sock)


def _shut_down(sock: socket.socket) -> None:
    # The plain socket's shutdown, also for TLS sockets: it only wakes the blocked reader.
    # OSError: the socket is already closed, so there is nothing left to interrupt.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _cut_to_deadline(connection: HTTPConnection) -> None:
    """The connection's next connect or read waits no longer than the request's deadline allows."""
    deadline = _current_deadline.get()
    if deadline is not None:
        connection.timeout = deadline.cut(connection.timeout)


def _watch_current(sock: Any) -> None:
    deadline = _current_deadline.get()
    if deadline is not None and isinstance(sock, socket.socket):
        deadline.watch(sock)


class _WatchedHTTPConnection(HTTPConnection):
    def connect(self) -> None:
        _cut_to_deadline(self)
        super().connect()
        _watch_current(self.sock)

    def getresponse(self) -> Any:
        _cut_to_deadline(self)  # the answer's reads wait this long each (urllib3 sets it)
        _watch_current(self.sock)
        return super().getresponse()


class _WatchedHTTPSConnection(_WatchedHTTPConnection, HTTPSConnection):
    """The same, for https: ``connect`` (the TLS handshake's reads too) and ``getresponse``."""


class _WatchedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_WATCHED_POOLS: dict[str, type[HTTPConnectionPool]] = {
    "http": _WatchedHTTPConnectionPool,
    "https": _WatchedHTTPSConnectionPool,
}


class DeadlineAdapter(HTTPAdapter):
    """An adapter whose connections (direct or through an HTTP proxy) honour ``RequestDeadline``."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _WATCHED_POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):  # SOCKS pools keep their own connection classes
            manager.pool_classes_by_scheme = _WATCHED_POOLS
        return manager

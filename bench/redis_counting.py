"""Counting what a poller asks of Redis, from both ends.

``counted_client`` gives a redis-py client whose connections count round trips (one per packed
send: a pipeline is one, a WATCH/MULTI/EXEC exchange several), the commands in them, and the
bytes sent and received on the socket. The handshake a new connection makes is counted apart, so
a tick is charged only for its own work.
``command_stats`` reads Redis's own view (INFO commandstats), to check the two agree.
"""

from __future__ import annotations

import socket
from collections import Counter
from dataclasses import dataclass
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.connection import Connection
from redis.retry import Retry


@dataclass
class RedisCounter:
    round_trips: int = 0
    commands: int = 0
    handshake_round_trips: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0

    def snapshot(self) -> tuple[int, int]:
        return self.round_trips, self.commands

    @property
    def bytes(self) -> int:
        return self.bytes_sent + self.bytes_received


class CountingSocket:
    """A connected socket that counts the bytes the connection sends and receives outside its
    handshake (a peek that leaves the bytes in the socket is not a receipt)."""

    def __init__(self, sock: socket.socket, connection: CountingConnection) -> None:
        self._sock = sock
        self._connection = connection

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)

    def _count(self) -> RedisCounter | None:
        return None if self._connection._in_handshake else self._connection._counter

    def sendall(self, data: Any, *args: Any) -> None:
        counter = self._count()
        if counter is not None:
            counter.bytes_sent += len(data)
        self._sock.sendall(data, *args)

    def recv(self, size: int, flags: int = 0) -> bytes:
        data = self._sock.recv(size, flags)
        counter = self._count()
        if counter is not None and not flags & socket.MSG_PEEK:
            counter.bytes_received += len(data)
        return data

    def recv_into(self, buffer: Any, size: int = 0, flags: int = 0) -> int:
        received = self._sock.recv_into(buffer, size, flags)
        counter = self._count()
        if counter is not None and not flags & socket.MSG_PEEK:
            counter.bytes_received += received
        return received


class CountingConnection(Connection):
    def __init__(self, *, counter: RedisCounter, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._counter = counter
        self._in_handshake = False

    def _connect(self) -> Any:
        return CountingSocket(super()._connect(), self)

    def on_connect(self) -> None:
        self._in_handshake = True
        try:
            super().on_connect()
        finally:
            self._in_handshake = False

    def on_connect_check_health(self, check_health: bool = True) -> None:
        """The handshake of redis-py 6 and later (``on_connect`` before)."""
        self._in_handshake = True
        try:
            super().on_connect_check_health(check_health=check_health)
        finally:
            self._in_handshake = False

    def send_command(self, *args: Any, **kwargs: Any) -> None:
        if not self._in_handshake:
            self._counter.commands += 1
        super().send_command(*args, **kwargs)

    def pack_commands(self, commands: Any) -> Any:
        commands = list(commands)
        self._counter.commands += len(commands)
        return super().pack_commands(commands)

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if self._in_handshake:
            self._counter.handshake_round_trips += 1
        else:
            self._counter.round_trips += 1
        super().send_packed_command(command, check_health)


def counted_client(port: int, counter: RedisCounter, health_check_interval: float = 0) -> redis.Redis:
    """A client like the poller's (small pool, timeouts, no retries) that counts into ``counter``."""
    pool = redis.ConnectionPool(
        health_check_interval=health_check_interval,
        connection_class=CountingConnection,
        counter=counter,
        host="127.0.0.1",
        port=port,
        socket_timeout=5,
        socket_connect_timeout=3,
        retry=Retry(NoBackoff(), 0),
        max_connections=2,
    )
    return redis.Redis(connection_pool=pool)


def command_stats(client: redis.Redis) -> Counter[str]:
    """Calls per command as Redis counts them, without the INFO calls that read them."""
    stats = client.info("commandstats")
    calls: Counter[str] = Counter()
    for name, values in stats.items():
        command = str(name).removeprefix("cmdstat_")
        if command != "info" and isinstance(values, dict):
            calls[command] = int(values.get("calls", 0))
    return calls

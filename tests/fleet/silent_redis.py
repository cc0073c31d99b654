"""A fake Redis that completes redis-py's connection handshake, then never answers again.

It stands for a wedged server or a half-open connection: the socket stays open, so only the
client's own I/O timeout can end a call. It answers ``HELLO`` (with a RESP3 map, or RESP2 array),
``CLIENT ...``, ``SELECT`` and ``AUTH`` as redis-py 8 expects while connecting; the first other
command (``PING``, ``HGETALL``, ``EVALSHA``...) gets no reply, nor does anything after it.

    with SilentRedis() as silent:
        client = redis.Redis.from_url(silent.url, socket_timeout=0.5)
"""

from __future__ import annotations

import socketserver
import threading
from types import TracebackType

_HANDSHAKE = {b"HELLO", b"CLIENT", b"SELECT", b"AUTH"}


def _hello_reply(protocol: bytes) -> bytes:
    fields = [(b"server", b"$5\r\nredis\r\n"), (b"version", b"$5\r\n7.0.0\r\n")]
    if protocol == b"3":
        fields.append((b"proto", b":3\r\n"))
        head = b"%" + str(len(fields)).encode() + b"\r\n"
    else:
        fields.append((b"proto", b":2\r\n"))
        head = b"*" + str(2 * len(fields)).encode() + b"\r\n"
    body = b"".join(b"$%d\r\n%s\r\n%s" % (len(name), name, value) for name, value in fields)
    return head + body


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        silent = False
        self.server.connections += 1  # type: ignore[attr-defined]
        while True:
            command = self._read_command()
            if command is None:
                return  # the client hung up
            if silent or not command or command[0].upper() not in _HANDSHAKE:
                silent = True
                self.server.unanswered.append(command)  # type: ignore[attr-defined]
                continue
            name = command[0].upper()
            reply = _hello_reply(command[1] if len(command) > 1 else b"2") if name == b"HELLO" else b"+OK\r\n"
            self.wfile.write(reply)
            self.wfile.flush()

    def _read_command(self) -> list[bytes] | None:
        header = self.rfile.readline()
        if not header:
            return None
        if not header.startswith(b"*"):
            return header.strip().split()  # an inline command
        args: list[bytes] = []
        for _ in range(int(header[1:].strip())):
            length = self.rfile.readline()
            if not length.startswith(b"$"):
                return None
            data = self.rfile.read(int(length[1:].strip()) + 2)
            args.append(data[:-2])
        return args


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.connections = 0
        self.unanswered: list[list[bytes]] = []


class SilentRedis:
    def __init__(self) -> None:
        self._server = _Server()
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="silent-redis", daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def connections(self) -> int:
        return self._server.connections

    @property
    def unanswered(self) -> list[list[bytes]]:
        """The commands that got no reply, in order."""
        return list(self._server.unanswered)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> SilentRedis:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

"""Simulated launchers for ``bench.cdn``: each polls one URL on its own schedule with the ETag it
holds, verifies the signature as a launcher does, and is counted.

One asyncio loop drives every launcher over a pool of keep-alive HTTP/1.1 connections written
as raw bytes (a launcher's poll is one request and one answer; sharing connections only spares
this process the handshakes). A launcher's polls are ``poll_every_s`` apart with its own jitter
(uniform within ``jitter``, from a seeded generator); the first comes at a random moment of the
first period. How late a poll starts against its schedule is measured: it says whether this
process kept up with the fleet asked of it.

A poll counts the bytes of its request and its answer (headers included). A ``200`` is decoded
(brotli or gzip) and its signature verified; a ``304`` keeps the body held and verifies it
against the signature the ``304`` carries (a proxy's does), or the one held (the origin's
``304`` has none: its ETag names the signed form). Verifications are shared between launchers holding
the same bytes and header (the same work; only the rollback rule is the launcher's own).
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import heapq
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import brotli
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from craft_apps.kernel import signing

logger = logging.getLogger("bench.cdn")

USER_AGENT = "ArtCraftLauncher/bench-cdn"
ACCEPT_ENCODING = "br, gzip"


@dataclass
class Event:
    """A change the fleet should see: ``shows(body)`` is true of an answer that shows it."""

    name: str
    at: float  # time.monotonic() when it was made
    shows: Callable[[bytes], bool]
    first_seen: dict[int, float] = field(default_factory=dict)  # launcher -> seconds after ``at``
    stale_polls: int = 0  # polls sent after ``at`` answered with an answer not showing it
    last_stale_s: float = 0.0  # the latest such poll, seconds after ``at``


@dataclass
class Totals:
    """What the fleet saw in one window of time."""

    polls: int = 0
    ok: int = 0  # 200
    not_modified: int = 0  # 304
    failed: int = 0  # no answer, or another status
    bytes: int = 0  # request plus answer, headers included
    bad_signatures: dict[str, int] = field(default_factory=dict)
    late_s: list[float] = field(default_factory=list)  # a sample of how late polls started
    latency_s: list[float] = field(default_factory=list)  # a sample of request to answer

    SAMPLE = 50_000

    def sample(self, values: list[float], value: float) -> None:
        if len(values) < self.SAMPLE:
            values.append(value)


@dataclass
class Held:
    etag: str | None = None
    body_key: bytes | None = None  # the digest of the decoded body held
    order: int | None = None  # the highest order accepted
    signature: str = ""  # the signature header accepted with the body held


class Fleet:
    """``count`` launchers polling ``path`` at ``host:port``."""

    def __init__(
        self,
        host: str,
        port: int,
        path: str,
        count: int,
        *,
        poll_every_s: float,
        jitter: float,
        connections: int,
        public_keys: Sequence[Ed25519PublicKey],
        seed: int,
    ) -> None:
        self.host, self.port, self.path = host, port, path
        self.poll_every_s, self.jitter = poll_every_s, jitter
        self.connections = connections
        self.public_keys = list(public_keys)
        self.rng = random.Random(seed)
        self.held = [Held() for _ in range(count)]
        self.bodies: dict[bytes, bytes] = {}  # digest -> decoded body
        self.shown: dict[tuple[int, bytes], bool] = {}  # (event, digest) -> shows it
        self.verdicts: dict[tuple[bytes, str], signing.Verdict] = {}
        self.events: list[Event] = []
        self.totals = Totals()
        self.errors: dict[str, int] = {}  # unexpected errors in a poll, by type
        self._stop = asyncio.Event()

    # --- what the bench reads and changes between phases --------------------------------------

    def take_totals(self) -> Totals:
        """The totals since the last call, and a fresh count from now."""
        taken, self.totals = self.totals, Totals()
        return taken

    def add_event(self, event: Event) -> None:
        """Follows ``event`` from now; a launcher already holding it (a change saved by a process
        that ended at ``event.at``) saw it at once."""
        self.events.append(event)
        index = len(self.events) - 1
        for launcher, held in enumerate(self.held):
            if held.body_key is not None and self._shows(index, held.body_key):
                event.first_seen[launcher] = 0.0

    def holding(self, event: Event) -> int:
        """How many launchers hold an answer that shows ``event``."""
        index = self.events.index(event)
        return sum(1 for held in self.held if held.body_key is not None and self._shows(index, held.body_key))

    def stop(self) -> None:
        self._stop.set()

    # --- the run ----------------------------------------------------------------------------

    async def run(self) -> None:
        """Polls until ``stop``; every launcher's first poll falls in the first period."""
        start = time.monotonic()
        due = [(start + self.rng.uniform(0, self.poll_every_s), i) for i in range(len(self.held))]
        heapq.heapify(due)
        queue: asyncio.Queue[tuple[float, int]] = asyncio.Queue(maxsize=self.connections * 4)
        workers = [asyncio.create_task(self._connection(queue, due)) for _ in range(self.connections)]
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if due and due[0][0] <= now and not queue.full():
                    queue.put_nowait(heapq.heappop(due))
                    continue
                if due and due[0][0] <= now:
                    await asyncio.sleep(0.001)  # every connection busy: the poll starts late
                    continue
                wait = min(0.05, due[0][0] - now) if due else 0.05
                await asyncio.sleep(max(wait, 0.0))
        finally:
            self._stop.set()
            for worker in workers:
                worker.cancel()
            # Python 3.11's wait_for may swallow a cancellation: a worker that missed it finds
            # the stop at its next item.
            while not queue.empty():
                queue.get_nowait()
            for _ in workers:
                queue.put_nowait((0.0, -1))
            await asyncio.wait(workers, timeout=30)

    async def _connection(
        self, queue: asyncio.Queue[tuple[float, int]], due: list[tuple[float, int]]
    ) -> None:
        stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        while True:
            scheduled, index = await queue.get()
            if index < 0 or self._stop.is_set():
                return
            started = time.monotonic()
            self.totals.sample(self.totals.late_s, max(0.0, started - scheduled))
            try:
                if stream is None:
                    stream = await self._open()
                stream = await self._poll(stream, index)
            except Exception as err:  # counted and told once; the launcher polls again later
                self._errored(err)
                if stream is not None:
                    stream[1].close()
                stream = None
            # As a launcher's timer: the next poll a period after this one started, so a late
            # poll is never followed at once by the next.
            spread = self.poll_every_s * self.jitter
            after = max(scheduled, started) + self.poll_every_s
            heapq.heappush(due, (after + self.rng.uniform(-spread, spread), index))

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        try:
            return await asyncio.wait_for(asyncio.open_connection(self.host, self.port), timeout=5)
        except (OSError, TimeoutError):
            return None

    async def _poll(
        self, stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None, index: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        held = self.held[index]
        request = self._request(held.etag)
        sent = time.monotonic()
        totals = self.totals  # a poll and its outcome count in the phase it was sent in
        totals.polls += 1
        answer = None if stream is None else await self._exchange(stream, request)
        if answer is None:
            totals.failed += 1
            if stream is not None:
                stream[1].close()
            return None
        status, headers, raw, wire, keep = answer
        totals.bytes += len(request) + wire
        totals.sample(totals.latency_s, time.monotonic() - sent)
        self._answered(totals, index, sent, status, headers, raw)
        if not keep and stream is not None:
            stream[1].close()
            return None
        return stream

    def _errored(self, err: Exception) -> None:
        name = type(err).__name__
        if name not in self.errors:
            logger.error("a launcher's poll failed", exc_info=err)
        self.errors[name] = self.errors.get(name, 0) + 1
        self.totals.failed += 1

    def _request(self, etag: str | None) -> bytes:
        lines = [
            f"GET {self.path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",  # as a client names a port that is not 80
            f"User-Agent: {USER_AGENT}",
            f"Accept-Encoding: {ACCEPT_ENCODING}",
        ]
        if etag is not None:
            lines.append(f"If-None-Match: {etag}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _exchange(
        self, stream: tuple[asyncio.StreamReader, asyncio.StreamWriter], request: bytes
    ) -> tuple[int, dict[str, str], bytes, int, bool] | None:
        reader, writer = stream
        try:
            writer.write(request)
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=15)
            status, headers = parse_head(head)
            length = int(headers.get("content-length", "0"))
            raw = await asyncio.wait_for(reader.readexactly(length), timeout=15) if length else b""
        except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            return None
        keep = headers.get("connection", "").lower() != "close"
        return status, headers, raw, len(head) + len(raw), keep

    # --- what a launcher does with an answer ------------------------------------------------

    def _answered(
        self, totals: Totals, index: int, sent: float, status: int, headers: dict[str, str], raw: bytes
    ) -> None:
        held = self.held[index]
        if status == 200:
            totals.ok += 1
            digest = self._keep_body(raw, headers.get("content-encoding", ""))
        elif status == 304 and held.body_key is not None:
            totals.not_modified += 1
            digest = held.body_key
        else:
            totals.failed += 1
            return
        # The ETag names the signed form: a 304 without the header keeps the one held.
        header = headers.get(signing.HEADER.lower(), "") or (held.signature if status == 304 else "")
        verdict = self._verdict(digest, header)
        order = int(verdict.order) if verdict.order and verdict.order.isdigit() else None
        reason = verdict.reason if not verdict.accepted else None
        if reason is None and held.order is not None and order is not None and order < held.order:
            reason = "rollback"
        if reason is not None:
            totals.bad_signatures[reason] = totals.bad_signatures.get(reason, 0) + 1
            return  # refused: the launcher keeps what it held
        held.etag, held.body_key, held.signature = headers.get("etag"), digest, header
        held.order = order if held.order is None or (order or 0) > held.order else held.order
        self._count_events(index, sent, digest)

    def _keep_body(self, raw: bytes, coding: str) -> bytes:
        digest = hashlib.blake2b(raw, digest_size=16).digest() + coding.encode()
        if digest not in self.bodies:
            self.bodies[digest] = decode(raw, coding)
        return digest

    def _verdict(self, digest: bytes, header: str) -> signing.Verdict:
        key = (digest, header)
        if key not in self.verdicts:
            headers = {signing.HEADER: header} if header else {}
            self.verdicts[key] = signing.verify(
                self.bodies[digest], headers, self.public_keys, int(time.time())
            )
        return self.verdicts[key]

    def _shows(self, index: int, digest: bytes) -> bool:
        key = (index, digest)
        if key not in self.shown:
            self.shown[key] = self.events[index].shows(self.bodies[digest])
        return self.shown[key]

    def _count_events(self, launcher: int, sent: float, digest: bytes) -> None:
        now = time.monotonic()
        for index, event in enumerate(self.events):
            if self._shows(index, digest):
                # A poll in flight as the change was made may already show it (the yank's row
                # is saved just before ``at``): seen at once.
                event.first_seen.setdefault(launcher, max(0.0, now - event.at))
            elif sent >= event.at:
                event.stale_polls += 1
                event.last_stale_s = max(event.last_stale_s, sent - event.at)


def parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    """The status and headers (names in lower case) of an answer's head; ValueError if it isn't one."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ValueError(f"not an HTTP answer: {lines[0]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    if "transfer-encoding" in headers:
        raise ValueError("chunked answers are not expected here")
    return int(parts[1]), headers


def decode(raw: bytes, coding: str) -> bytes:
    if coding == "br":
        return bytes(brotli.decompress(raw))
    if coding == "gzip":
        return gzip.decompress(raw)
    return raw

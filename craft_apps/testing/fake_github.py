"""A fake GitHub for the end-to-end tests, the demo and the benchmarks: a real HTTP server on a
loopback port serving releases held in memory, with ETags, 304s, 404s and the rate limit.

``FakeGitHub(...).start()`` returns the running server; ``publish(repo, release)`` serves a
release, ``set_fault(repo, fault)`` injects a fault, ``requests`` lists what it received. Its
parts: ``releases`` (``fake_releases``), ``faults`` (``fake_faults``), ``private``. Run
``python -m craft_apps.testing.fake_github [--host H] [--port P] [--empty] [--web-url U]`` to
serve the demo releases until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from types import FrameType, TracebackType
from typing import Any

from craft_apps.conf import DEFAULT_GITHUB_WEB_URL
from craft_apps.testing.demo_releases import demo_files, demo_releases
from craft_apps.testing.fake_faults import (
    MAX_CLIENT_BODY_BYTES,
    DripFault,
    DropFault,
    Fault,
    FaultBoard,
    ForeignAssetsFault,
    GarbageFault,
    HangFault,
    OversizedFault,
    RateLimited429Fault,
    SlowFault,
    StatusFault,
)
from craft_apps.testing.fake_http import FakeServer
from craft_apps.testing.fake_quota import Quotas
from craft_apps.testing.fake_releases import ReleaseCatalogue
from craft_apps.testing.fake_responder import Parts, RecordedRequest, RequestLog, Responder
from craft_apps.testing.private import PrivateGitHub

__all__ = [
    "MAX_CLIENT_BODY_BYTES",
    "DripFault",
    "DropFault",
    "FakeGitHub",
    "Fault",
    "ForeignAssetsFault",
    "GarbageFault",
    "HangFault",
    "OversizedFault",
    "RateLimited429Fault",
    "RecordedRequest",
    "SlowFault",
    "StatusFault",
    "main",
]

logger = logging.getLogger(__name__)


class FakeGitHub:
    """The fake server. Thread-safe: tests publish and set faults while clients poll.

    Every request is recorded, with its headers, before it is answered; a token never reaches
    a log line or a ``repr``; ``stop()`` releases every fault that holds a connection (hang,
    slow, drip), closes every connection and returns with no handler thread left running.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        web_url: str = DEFAULT_GITHUB_WEB_URL,
        unauthenticated_limit: int = 60,
        authenticated_limit: int = 5000,
        window_s: int = 3600,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._address = (host, port)
        self.web_url = web_url.rstrip("/")
        self.releases = ReleaseCatalogue()
        self.faults = FaultBoard()
        self.private = PrivateGitHub(now)  # private repositories and GitHub Apps
        self._log = RequestLog()
        quotas = Quotas(
            unauthenticated=unauthenticated_limit,
            authenticated=authenticated_limit,
            window_s=window_s,
            now=now,
        )
        parts = Parts(self.releases, self.faults, quotas, self.private, self._log)
        self._responder = Responder(parts, url=lambda: self.url, now=now)
        self._server: FakeServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeGitHub:
        """Starts serving on the loopback port; returns itself."""
        if self._server is not None:
            return self
        self._responder.stopping.clear()
        server = FakeServer(self._address, self._responder)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-github", daemon=True
        )
        self._thread.start()
        logger.debug("fake GitHub listening on %s", self.url)
        return self

    def stop(self) -> None:
        """Stops serving: held and slow answers end, every connection closes."""
        server, self._server = self._server, None
        if server is None:
            return
        self._responder.stopping.set()  # releases hang, slow and drip before the sockets go
        server.shutdown()
        server.close_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        left = server.join_handlers(timeout=5)
        if left:
            logger.warning("fake GitHub: %d handler thread(s) still running after stop()", left)

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The API base URL, without a trailing slash."""
        if self._server is None:
            raise RuntimeError("FakeGitHub is not running; call start() first")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def publish(self, repo: str, release: dict[str, Any], files: Mapping[str, bytes] | None = None) -> None:
        """Serves ``release`` as ``repo``'s latest release (``ReleaseCatalogue.publish``)."""
        self.releases.publish(repo, release, files)

    def load_demo(self) -> FakeGitHub:
        """Publishes the demo release of each of the 13 apps, with the bytes of their files."""
        files = demo_files(web_url=self.web_url)
        for repo, release in demo_releases(web_url=self.web_url).items():
            self.publish(repo, release, files.get(repo))
        return self

    def published(self) -> dict[str, dict[str, Any]]:
        """Each repository's latest release, a copy."""
        return self.releases.published()

    def etag_of(self, repo: str) -> str | None:
        """The ETag a plain request for ``repo`` gets, or None without a release."""
        return self.releases.etag_of(repo)

    def set_fault(self, repo: str | None, fault: Fault | None) -> None:
        """Injects ``fault`` for ``repo`` (None: every repo without its own); None clears it."""
        self.faults.set_fault(repo, fault)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order."""
        return self._log.all()

    def requests_for(self, repo: str) -> list[RecordedRequest]:
        """The requests about ``repo``'s releases, in order."""
        wanted = repo.lower()
        return [r for r in self.requests if r.repo is not None and r.repo.lower() == wanted]

    def reset_requests(self) -> None:
        """Forgets every request received so far."""
        self._log.clear()


# --- Command line -------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m craft_apps.testing.fake_github",
        description="Serve GitHub's latest-release API for the Craft Apps from memory.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--empty", action="store_true", help="start without the demo releases")
    parser.add_argument(
        "--web-url",
        default=DEFAULT_GITHUB_WEB_URL,
        help="where release links point; this server's own URL serves the files too (works offline)",
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="log every request")
    options = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=logging.DEBUG if options.verbose else logging.INFO, format="%(message)s"
    )

    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    try:
        stand_in = FakeGitHub(host=options.host, port=options.port, web_url=options.web_url).start()
    except OSError as err:
        logger.error("fake GitHub: cannot listen on %s:%s: %s", options.host, options.port, err)
        return 1
    if not options.empty:
        stand_in.load_demo()
    releases = len(stand_in.published())
    logger.info("fake GitHub serving %d release(s) at %s", releases, stand_in.url)
    while not stop.wait(0.5):
        pass
    stand_in.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``GET``/``HEAD /v1/craft_apps/health``: 200 when this host is healthy, 503 with the problems when not.

``health(request)`` reads the host's state file once (three tiny SQLite reads; never GitHub or
Redis; never cached: ``no-store``) and applies ``craft_apps.host.health``'s rules, those of
``craft_apps_status --check``; ``?rules=`` picks some (400 for an unknown one), ``state_file`` and
``signing`` always apply. ``report_unusable_key()`` logs once per process that a configured
signing key can't be used (``UnusableKeyReport`` says why here). See docs/operations.md.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from craft_apps.api.caching import NOT_CACHEABLE
from craft_apps.api.runtime import runtime
from craft_apps.conf import app_settings
from craft_apps.host.health import (
    current_policy,
    health_document,
    health_problems,
    parse_rules,
    unusable_key_problem,
)
from craft_apps.host.observe import HostView, observe

logger = logging.getLogger(__name__)

LOOK_EVERY_S = 1.0


class UnusableKeyReport:
    """What this process said about its signing keys, and when it reads the settings again.

    gunicorn runs no system checks, so ``E141``/``E142`` never reach a web worker's log: the
    endpoint and the health endpoint call this on each request, it reads the settings at most once
    a second (a clock read otherwise) and logs each distinct problem once per process (one ERROR
    line), never the key.
    """

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._next_look = -math.inf
        self._pid = os.getpid()
        self._said: set[str] = set()

    def look(self) -> None:
        """Logs the configured keys' problem if this process hasn't yet (at most one look a second)."""
        now = self._monotonic()
        if now < self._next_look and self._pid == os.getpid():
            return
        with self._lock:
            if self._pid != os.getpid():  # a forked worker: its own process, its own line
                self._pid, self._said = os.getpid(), set()
            elif now < self._next_look:
                return
            self._next_look = now + LOOK_EVERY_S
            signing = app_settings.signing_resolved()
            problem = unusable_key_problem(signing.problems)
            if problem is None or problem in self._said:
                return
            self._said.add(problem)
        serving = "unsigned answers" if signing.value is None else "answers signed by the usable key only"
        logger.error(
            "Craft apps signing: %s; this process serves %s and its health readiness fails until it is fixed",
            problem,
            serving,
        )


_REPORT = UnusableKeyReport()


def report_unusable_key() -> None:
    """This process's one report (the endpoint and the health endpoint call it)."""
    _REPORT.look()


def host_view() -> HostView:
    """The host's state file now, through this process's store of the configured directory."""
    return observe(runtime().state_store())


def health(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        return _json({"status": "method_not_allowed"}, 405, Allow="GET, HEAD")
    try:
        rules = parse_rules(request.GET.get("rules", "").split(","))
    except ValueError as err:
        return _json({"status": "bad_request", "problems": [{"rule": "rules", "detail": str(err)}]}, 400)
    report_unusable_key()
    problems = health_problems(host_view(), current_policy(), runtime().clock.now_ms(), rules)
    response = _json(health_document(problems, rules), 503 if problems else 200)
    # A 503 here is an answer, not a server error: keep django.request from logging an error at
    # every probe of an unhealthy host (the poller's log says what went wrong, once).
    response._has_been_logged = True  # type: ignore[attr-defined]
    return without_body(request, response)


def _json(body: dict[str, object], status: int, **headers: str) -> HttpResponse:
    response = HttpResponse(
        json.dumps(body, ensure_ascii=False).encode(), status=status, content_type="application/json"
    )
    response["Cache-Control"] = NOT_CACHEABLE
    for name, value in headers.items():
        response[name] = value
    return response


def without_body(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """A HEAD request's answer: the GET's headers, its length, no body."""
    if request.method == "HEAD":
        response["Content-Length"] = str(len(response.content))
        response.content = b""
    return response

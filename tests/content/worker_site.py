"""The demo site as the two-worker test runs it: each answer says which worker process made it,
and each log line carries the process id. ``TEST_SQLITE_BUSY_TIMEOUT_S`` sets how long a SQLite
query waits on a lock (Django's default is 5 s)."""

from __future__ import annotations

import os
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from config.settings import *  # noqa: F403
from config.settings import DATABASES, LOGGING, MIDDLEWARE

MIDDLEWARE = [*MIDDLEWARE, "tests.content.worker_site.worker_pid"]
if "TEST_SQLITE_BUSY_TIMEOUT_S" in os.environ and DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    _options: dict[str, object] = DATABASES["default"].setdefault("OPTIONS", {})  # type: ignore[assignment,arg-type]
    _options["timeout"] = float(os.environ["TEST_SQLITE_BUSY_TIMEOUT_S"])
LOGGING["formatters"]["plain"]["format"] = "%(process)d %(levelname)s %(name)s: %(message)s"  # type: ignore[index]


def worker_pid(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        response["X-Worker-Pid"] = str(os.getpid())
        return response

    return middleware

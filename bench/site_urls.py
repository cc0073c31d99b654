"""The demo site's URLs plus ``/bench/bare``: a plain Django view that returns the bytes of the
file named by ``BENCH_BARE_BODY_FILE`` (the endpoint's own answer, saved by the benchmark), read
once per process at its first request. It is the floor our endpoint is compared with."""

from __future__ import annotations

import os
from pathlib import Path

from django.http import HttpRequest, HttpResponse
from django.urls import path

from bench.site_paths import BARE_BODY_ENV, BARE_PATH
from config.urls import urlpatterns as site_urlpatterns

_body: bytes | None = None


def bare(request: HttpRequest) -> HttpResponse:
    global _body
    if _body is None:
        _body = Path(os.environ[BARE_BODY_ENV]).read_bytes()
    return HttpResponse(_body, content_type="application/json")


urlpatterns = [*site_urlpatterns, path(BARE_PATH, bare)]

"""The demo site's URLs plus ``/bench/bare``: a plain Django view that returns the bytes of the
file named by ``BENCH_BARE_BODY_FILE`` (the endpoint's own answer, saved by the benchmark), read
once per process at its first request, and ``/bench/bare/br`` and ``/bench/bare/gzip``, the same
for that file's compressed forms (``<file>.br``, ``<file>.gzip``) with their Content-Encoding;
``/bench/bare/304`` answers 304 with nothing. They are the floor our endpoint is compared with.
Where ``BENCH_BARE_HEADERS_FILE`` names a file, each also sends the headers it lists for it,
read once per process: the endpoint's ETag, Cache-Control and Vary (and, on the signed server,
its signature), precomputed, so each bare view sends the endpoint's whole answer."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from django.urls import path

from bench.site_paths import (
    BARE_BETA,
    BARE_BODY_ENV,
    BARE_CODINGS,
    BARE_HEADERS_ENV,
    BARE_NOT_MODIFIED,
    bare_path,
)
from config.urls import urlpatterns as site_urlpatterns

_bodies: dict[str, bytes] = {}
_headers: list[dict[str, list[tuple[str, str]]]] = []  # once read: [the headers by suffix]


def _body(suffix: str) -> bytes:
    body = _bodies.get(suffix)
    if body is None:
        body = _bodies[suffix] = Path(os.environ[BARE_BODY_ENV] + suffix).read_bytes()
    return body


def _with_headers(response: HttpResponse, suffix: str) -> HttpResponse:
    if not _headers:
        named = os.environ.get(BARE_HEADERS_ENV)
        table = json.loads(Path(named).read_text()) if named else {}
        _headers.append({key: [(name, value) for name, value in pairs] for key, pairs in table.items()})
    for name, value in _headers[0].get(suffix, ()):
        response[name] = value
    return response


def bare(request: HttpRequest) -> HttpResponse:
    return _with_headers(HttpResponse(_body(""), content_type="application/json"), "")


def bare_coded(coding: str) -> Callable[[HttpRequest], HttpResponse]:
    def view(request: HttpRequest) -> HttpResponse:
        response = HttpResponse(_body(f".{coding}"), content_type="application/json")
        response["Content-Encoding"] = coding
        return _with_headers(response, f".{coding}")

    return view


def bare_beta(request: HttpRequest) -> HttpResponse:
    return _with_headers(
        HttpResponse(_body(f".{BARE_BETA}"), content_type="application/json"), f".{BARE_BETA}"
    )


def bare_not_modified(request: HttpRequest) -> HttpResponse:
    return _with_headers(HttpResponseNotModified(), f".{BARE_NOT_MODIFIED}")


urlpatterns = [
    *site_urlpatterns,
    path(bare_path(), bare),
    *(path(bare_path(coding), bare_coded(coding)) for coding in BARE_CODINGS),
    path(bare_path(BARE_BETA), bare_beta),
    path(bare_path(BARE_NOT_MODIFIED), bare_not_modified),
]

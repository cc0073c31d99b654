"""``POST /v1/craft_apps/reports``: a launcher's or an app's report of how an update went.

It reads at most ``MAX_BODY_BYTES`` + 1 bytes, checks the report and puts it on the intake's
queue: 202 ``{"success": true}``; a malformed report 400 with the reason in ``error``; a body
over 4 KiB 413; another method 405. It never waits on Redis or on a file. See docs/reports.md.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from craft_apps.conf import app_settings
from craft_apps.reports import meters
from craft_apps.reports.intake import intake
from craft_apps.reports.report import Malformed, parse_report

MAX_BODY_BYTES = 4096
NOT_CACHEABLE = "no-store"


@csrf_exempt
def reports(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        response = _answer(405, {"success": False, "error": "only POST"})
        response["Allow"] = "POST"
        return response
    body = _body(request)
    if body is None:
        return _answer(413, {"success": False, "error": f"the body is over {MAX_BODY_BYTES} bytes"})
    try:
        report = parse_report(body, {app.key for app in app_settings.APPS})
    except Malformed as err:
        return _answer(400, {"success": False, "error": str(err)})
    intake().offer(report, str(request.META.get("REMOTE_ADDR") or ""))
    return _answer(202, {"success": True})


def _body(request: HttpRequest) -> bytes | None:
    """The body, read at most one byte past the bound; None when it is over it."""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > MAX_BODY_BYTES:
        return None
    stream: Any = request
    if not declared and request.META.get("wsgi.input_terminated") and "wsgi.input" in request.META:
        # A chunked body: Django reads none without a length; the server ends this input at the
        # body's end (gunicorn), so it is read there, as far as the bound.
        stream = request.META["wsgi.input"]
    body = bytes(stream.read(MAX_BODY_BYTES + 1))
    return None if len(body) > MAX_BODY_BYTES else body


def _answer(status: int, data: dict[str, Any]) -> HttpResponse:
    """Count the answer; return ``data`` as JSON (``JsonResponse``'s bytes, made for less)."""
    meters.answered(status)
    response = HttpResponse(json.dumps(data), content_type="application/json", status=status)
    response["Cache-Control"] = NOT_CACHEABLE
    return response

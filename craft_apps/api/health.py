"""``GET /v1/craft_apps/health``: 200 when this host is healthy, 503 with the problems when not.

Cheap and local: one look at the host's state file per request (three tiny SQLite reads), never
GitHub or Redis, and never cached (``no-store``), so a probe always sees now. The rules are
``craft_apps.host.health``'s, the same ``craft_apps_status --check`` applies; ``?rules=`` picks
some of them (``state_file,poller`` for a load balancer, see docs/operations.md).
"""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse

from craft_apps.api.caching import NOT_CACHEABLE
from craft_apps.api.runtime import runtime
from craft_apps.host.health import current_policy, health_document, health_problems, parse_rules
from craft_apps.host.observe import HostView, observe


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

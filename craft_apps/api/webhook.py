"""``POST /v1/craft_apps/github_webhook``: a signed GitHub ``release`` event makes the fleet ask
GitHub about that app now, ahead of its schedule.

``github_webhook(request)`` answers, in order: 404 without ``GITHUB_WEBHOOK_SECRET``, 405, 413 for
a body over 1 MiB (read at most one byte past it), 401 (``signature_matches``), 400 unless a JSON
object; then 200 to ``ping`` and 202 to the rest: a release event for a configured repository
marks its apps due (``apps_to_refresh``, ``api.refresh``), a delivery taken in the last day does
nothing more. Nothing is read, written or parsed before the signature is verified. See docs/webhook.md.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from craft_apps.api.refresh import refresh_stores, request_refresh
from craft_apps.api.runtime import runtime
from craft_apps.conf import app_settings
from craft_apps.kernel.domain import AppSpec

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 20  # GitHub's release payloads are a few KiB; its own cap is 25 MB
SIGNATURE_HEADER = "X-Hub-Signature-256"
RELEASE_ACTIONS = frozenset({"published", "released", "prereleased", "edited", "deleted", "unpublished"})
_DELIVERY = re.compile(r"[0-9A-Za-z._-]{1,100}")  # GitHub sends a GUID; it becomes part of a key


def signature_matches(body: bytes, header: str | None, secrets: Sequence[str]) -> bool:
    """Whether ``header`` is ``sha256=`` and the hex HMAC-SHA256 of ``body`` with one of
    ``secrets``. Every secret is compared, each in constant time, so the time taken tells
    nothing about the signature or which secret matched. Secrets and signatures are never logged."""
    if not header:
        return False
    given = header.strip().encode("utf-8", errors="replace")
    matched = False
    for secret in secrets:
        digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
        matched |= hmac.compare_digest(b"sha256=" + digest.encode("ascii"), given)
    return matched


def apps_to_refresh(
    event: str, payload: dict[str, Any], apps: Iterable[AppSpec]
) -> tuple[list[AppSpec], str]:
    """The configured apps a delivery asks about, and what it is (for the log); none when it
    is to be ignored (the view then logs one debug line).

    A ``release`` event with an action of ``RELEASE_ACTIONS``, for a repository some configured
    app names (``org/repo``, any case). Only ``action`` and ``repository.full_name`` are read from
    the payload: its release data is never trusted or served, GitHub is asked."""
    if event != "release":
        return [], f"a {_short(event)!r} event"
    action = payload.get("action")
    repository = payload.get("repository")
    full_name = repository.get("full_name") if isinstance(repository, dict) else None
    if not isinstance(full_name, str) or not isinstance(action, str):
        return [], "a release event without action or repository.full_name"
    what = f"release {_short(action)!r} in {_short(full_name)}"
    if action not in RELEASE_ACTIONS:
        return [], what
    wanted = full_name.strip().lower()
    matching = [app for app in apps if app.repo.lower() == wanted]
    return matching, what if matching else f"{what}, which no configured app names"


@csrf_exempt
def github_webhook(request: HttpRequest) -> HttpResponse:
    secrets = app_settings.GITHUB_WEBHOOK_SECRET
    if not secrets:
        raise Http404("the GitHub webhook is not enabled")
    if request.method != "POST":
        response = HttpResponse(status=405)
        response["Allow"] = "POST"
        return response
    declared = _content_length(request)
    if declared is not None and declared > MAX_BODY_BYTES:
        return _too_large(declared)
    body = _body(request, declared)
    if len(body) > MAX_BODY_BYTES:
        return _too_large(None)
    delivery = request.headers.get("X-GitHub-Delivery")
    if not signature_matches(body, request.headers.get(SIGNATURE_HEADER), secrets):
        logger.warning(
            "GitHub webhook: refused a delivery (%s) whose %s is %s.",
            _short(delivery or "no id"),
            SIGNATURE_HEADER,
            "missing" if not request.headers.get(SIGNATURE_HEADER) else "not made with a configured secret",
        )
        return JsonResponse({"error": f"{SIGNATURE_HEADER} doesn't match"}, status=401)
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        payload = None
    if not isinstance(payload, dict):
        return JsonResponse(
            {"error": "the body is not a JSON object: set the webhook's content type to application/json"},
            status=400,
        )
    event = request.headers.get("X-GitHub-Event", "")
    if event == "ping":
        return _pong(payload, delivery)
    apps, what = apps_to_refresh(event, payload, app_settings.APPS)
    if not apps:
        logger.debug("GitHub webhook: ignored %s (delivery %s).", what, _short(delivery or "without id"))
        return JsonResponse({"status": "ignored"}, status=202)
    if delivery is not None and not _DELIVERY.fullmatch(delivery):
        return JsonResponse({"error": "X-GitHub-Delivery is not a delivery id"}, status=400)
    return _refresh(apps, what, delivery)


def _refresh(apps: list[AppSpec], what: str, delivery: str | None) -> HttpResponse:
    keys = [app.key for app in apps]
    now_ms = runtime().clock.now_ms()
    host, fleet = refresh_stores()
    try:
        outcome = request_refresh(keys, now_ms=now_ms, host=host, fleet=fleet, delivery=delivery)
    finally:
        host.close()
    if outcome.duplicate:
        logger.info("GitHub webhook: delivery %s was taken before; nothing more to do.", delivery)
        return JsonResponse({"status": "duplicate"}, status=202)
    if not outcome.marked:
        logger.warning(
            "GitHub webhook: couldn't mark %s due for %s: %s",
            ", ".join(keys),
            what,
            "; ".join(outcome.problems),
        )
        return JsonResponse({"error": "the refresh couldn't be recorded; redeliver later"}, status=503)
    logger.info(
        "GitHub webhook: %s (delivery %s): %s due now (marked in %s).",
        what,
        delivery or "without id",
        ", ".join(keys),
        outcome.where(),
    )
    for problem in outcome.problems:
        logger.warning("GitHub webhook: marked in %s only: %s", outcome.where(), problem)
    return JsonResponse({"status": "due", "apps": keys}, status=202)


def _pong(payload: dict[str, Any], delivery: str | None) -> HttpResponse:
    hook = payload.get("hook")
    events = hook.get("events") if isinstance(hook, dict) else None
    answer: dict[str, Any] = {"status": "pong"}
    if isinstance(events, list) and not {"release", "*"} & {e for e in events if isinstance(e, str)}:
        answer["warning"] = "this webhook doesn't send release events: select 'Releases'"
        logger.warning(
            "GitHub webhook: ping (delivery %s) from a hook without release events.",
            _short(delivery or "no id"),
        )
    else:
        logger.info("GitHub webhook: ping (delivery %s); the signature matches.", _short(delivery or "no id"))
    return JsonResponse(answer, status=200)


def _content_length(request: HttpRequest) -> int | None:
    try:
        return int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None


def _body(request: HttpRequest, declared: int | None) -> bytes:
    """The body, read at most one byte past the limit."""
    environ = request.META
    if declared is None and environ.get("wsgi.input_terminated") and "wsgi.input" in environ:
        # Django limits its stream to the declared length, 0 without one, so a chunked body reads
        # as empty there. A server that sets wsgi.input_terminated ends the input itself at the
        # body's end, so it is read from there, never past the bound.
        return _read_at_most(environ["wsgi.input"], MAX_BODY_BYTES + 1)
    return request.read(MAX_BODY_BYTES + 1)


def _read_at_most(stream: Any, limit: int) -> bytes:
    parts: list[bytes] = []
    left = limit
    while left > 0:
        part = stream.read(min(left, 64 * 1024))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _too_large(declared: int | None) -> HttpResponse:
    if declared is None:
        logger.warning("GitHub webhook: refused a body read as far as the limit (%d bytes).", MAX_BODY_BYTES)
    else:
        logger.warning(
            "GitHub webhook: refused a %d-byte body unread (the limit is %d).", declared, MAX_BODY_BYTES
        )
    return JsonResponse({"error": f"the body is over {MAX_BODY_BYTES} bytes"}, status=413)


def _short(text: str, limit: int = 100) -> str:
    """Text from a request, for one log line: printable, and not too long."""
    clean = "".join(c if c.isprintable() else "?" for c in text)
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."

"""A middleware that starts a web process's background work when the server builds its request
handler: at the process's start (each gunicorn worker's, runserver's, an ASGI server's), not at
its first request. Management commands build no handler, so they start nothing. It then leaves
the chain: no request goes through it. See docs/controls.md#guarded-rollouts."""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import MiddlewareNotUsed
from django.http import HttpRequest, HttpResponse

from craft_apps.api.runtime import start_background


class StartBackground:
    """Start the notices beat and the guarded rollouts' watch, then drop out of the chain."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        start_background()
        raise MiddlewareNotUsed

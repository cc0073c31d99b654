"""GitHub's core rate limit as the fake GitHub counts it, with its headers and its 403.

``Quotas.caller(authorization, client_ip)`` takes a request's ``Authorization`` and address and
returns who it counts against (per token, else per IP); ``window(caller)`` the caller's current
fixed window; ``headers(caller, window)`` the ``x-ratelimit-*`` headers; ``exceeded`` the 403.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from craft_apps.testing.fake_http import DOCS, JSON, Answer, error_body


@dataclass
class Window:
    """One caller's fixed window: when it resets and how much of it is used."""

    reset: int  # epoch seconds
    used: int = 0


@dataclass(frozen=True)
class Caller:
    """Who a request counts against. ``key`` holds a digest of the token, never the token."""

    key: str
    limit: int
    description: str  # for the 403 message
    authenticated: bool


class Quotas:
    """Fixed windows of ``window_s`` starting at a caller's first request. Not thread-safe: the
    fake GitHub counts under its own lock."""

    def __init__(
        self, *, unauthenticated: int, authenticated: int, window_s: int, now: Callable[[], float]
    ) -> None:
        self._unauthenticated = unauthenticated
        self._authenticated = authenticated
        self._window_s = window_s
        self._now = now
        self._windows: dict[str, Window] = {}
        self._user_ids: dict[str, int] = {}

    def caller(self, authorization: str | None, client_ip: str) -> Caller:
        """Who the request counts against: its token's user, else its address."""
        token = bearer_token(authorization)
        if token is None:
            return Caller(f"ip:{client_ip}", self._unauthenticated, client_ip, authenticated=False)
        key = "token:" + hashlib.sha256(token.encode()).hexdigest()
        user_id = self._user_ids.setdefault(key, 1000 + len(self._user_ids))
        return Caller(key, self._authenticated, f"user ID {user_id}", authenticated=True)

    def window(self, caller: Caller) -> Window:
        """The caller's current window, a new one once the last has reset."""
        now = self._now()
        window = self._windows.get(caller.key)
        if window is None or now >= window.reset:
            window = Window(reset=int(now) + self._window_s)
            self._windows[caller.key] = window
        return window

    @staticmethod
    def headers(caller: Caller, window: Window) -> list[tuple[str, str]]:
        """GitHub's ``x-ratelimit-*`` headers for the caller's window."""
        return [
            ("x-ratelimit-limit", str(caller.limit)),
            ("x-ratelimit-remaining", str(max(0, caller.limit - window.used))),
            ("x-ratelimit-used", str(window.used)),
            ("x-ratelimit-reset", str(window.reset)),
            ("x-ratelimit-resource", "core"),
        ]

    def exceeded(self, caller: Caller, window: Window) -> Answer:
        """GitHub's 403 once the caller's window is used up."""
        message = f"API rate limit exceeded for {caller.description}."
        if not caller.authenticated:
            message += (
                " (But here's the good news: Authenticated requests get a higher rate limit."
                " Check out the documentation for more details.)"
            )
        body = error_body(message, f"{DOCS}/overview/rate-limits-for-the-rest-api", 403)
        headers = [("content-type", JSON), *self.headers(caller, window)]
        return Answer(403, headers, body)


def bearer_token(authorization: str | None) -> str | None:
    """The token of ``Bearer <token>`` (or GitHub's older ``token <token>``); None otherwise."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() not in {"bearer", "token"} or not token.strip():
        return None
    return token.strip()

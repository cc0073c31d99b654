"""One ``requests.Session`` whose requests keep to a total deadline and refuse unsafe redirects.

``GuardedSession.get(url, headers, seconds=..., connect=..., api_only=..., read=...)`` asks for
``url``, hands the streamed answer to ``read`` and returns what ``read`` returns, or a ``Failed``
with a one-line reason (no answer in time, a refused redirect, a network error).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit

import requests
from requests.utils import get_environ_proxies

from craft_apps.github.answers import echo
from craft_apps.github.deadline import DeadlineAdapter, Deadlines, RequestDeadline
from craft_apps.kernel.source import Failed

MAX_REDIRECTS = 5
T = TypeVar("T")


class _RedirectRefused(requests.RequestException):
    """A redirect the client won't follow; the message is the one-line reason."""


class GuardedSession:
    """A session passed in becomes this one's: it stops reading the environment's netrc (proxy
    and CA-bundle variables are still honoured, per request) and gets the deadline adapters."""

    def __init__(
        self, session: requests.Session | None, *, api_url: str, deadlines: Deadlines, secret: str | None
    ) -> None:
        self._api_host = urlsplit(api_url).hostname or ""
        self._deadlines = deadlines
        self._secret = secret
        self._session = session if session is not None else requests.Session()
        # Off so that netrc can never add an Authorization header, not even on a redirect.
        self._session.trust_env = False
        self._session.max_redirects = MAX_REDIRECTS
        adapter = DeadlineAdapter()
        self._session.mount("https://", adapter)
        self._session.mount("http://", adapter)

    def close(self) -> None:
        """Close the session's connections."""
        self._session.close()

    def get(
        self,
        url: str,
        headers: dict[str, str],
        *,
        seconds: float,
        connect: float,
        api_only: bool,
        read: Callable[[requests.Response], T],
    ) -> T | Failed:
        """``read`` of the answer to ``GET url``, or why there is none within ``seconds``. With
        ``api_only``, no redirect leaves the API's host; none ever leaves https."""
        hook = self._refuse_off_api if api_only else self._refuse_insecure_redirect
        with RequestDeadline(seconds, self._deadlines) as deadline:
            try:
                response = self._session.get(
                    url,
                    headers=headers,
                    timeout=(connect, seconds),
                    stream=True,
                    allow_redirects=True,
                    hooks={"response": [hook]},
                    proxies=get_environ_proxies(url),
                    verify=self._verify(),
                )
            except requests.RequestException as exc:
                return self._request_failed(exc, deadline, connect)
            # Closing an unread answer drops its connection instead of reading the rest.
            with response:
                try:
                    result = read(response)
                except requests.RequestException as exc:
                    return self._request_failed(exc, deadline, connect)
            # A socket cut mid-headers reads like an answer that ended there: never trust it.
            if deadline.expired:
                return Failed(f"no complete answer within {seconds:g} s")
            return result

    def _verify(self) -> bool | str:
        """The CA bundle requests would take from the environment, which ``trust_env`` turned off."""
        configured = self._session.verify
        if configured is not True and configured is not None:
            return configured
        return os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True

    def _refuse_insecure_redirect(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        """A response hook: a redirect from https to anything else is refused (a download's
        whole rule; the API's adds its host)."""
        target = self._session.get_redirect_target(response)
        if target is None:
            return
        resolved = urlsplit(urljoin(response.url, target))
        if urlsplit(response.url).scheme == "https" and resolved.scheme != "https":
            response.close()
            raise _RedirectRefused(
                f"refused a redirect from https to {echo(resolved.scheme or 'no scheme', 20)}"
            )

    def _refuse_off_api(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        """A response hook, run on every answer of a request, redirects included, before the
        next one is asked for: an answer that came over https is never followed elsewhere, and
        no answer is followed off the API's host (a rename redirects within it)."""
        self._refuse_insecure_redirect(response)
        target = self._session.get_redirect_target(response)
        if target is None:
            return
        resolved = urlsplit(urljoin(response.url, target))
        if (resolved.hostname or "") != self._api_host:
            response.close()
            raise _RedirectRefused(
                f"refused a redirect off the API host to {echo(resolved.hostname or 'no host', 80)}"
            )

    def _request_failed(
        self, exc: requests.RequestException, deadline: RequestDeadline, connect: float
    ) -> Failed:
        """One line for a request that raised; the times named are the ones this request had."""
        if isinstance(exc, _RedirectRefused):
            return Failed(str(exc))
        if deadline.expired or deadline.remaining() <= 0:
            return Failed(f"no complete answer within {deadline.seconds:g} s")
        if isinstance(exc, requests.ConnectTimeout):
            return Failed(f"could not connect within {connect:g} s")
        if isinstance(exc, requests.ReadTimeout):
            return Failed(f"the answer stalled for {deadline.seconds:g} s")
        if isinstance(exc, requests.TooManyRedirects):
            return Failed(f"more than {MAX_REDIRECTS} redirects")
        return Failed(f"request failed: {type(exc).__name__}: {echo(str(exc), secret=self._secret)}")

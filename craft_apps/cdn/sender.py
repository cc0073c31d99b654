"""One purge request over HTTP: sent with the target's timeout, the token added here and only
here, and its outcome as one line that never holds the token (nor a password in the URL)."""

from __future__ import annotations

import requests

from craft_apps.cdn.backends import backend_named
from craft_apps.cdn.plan import PurgeRequest, Refused
from craft_apps.conf import PurgeTarget
from craft_apps.kernel.text import url_for_log


class Sender:
    """Sends purge requests to ``target`` over one session (kept-alive connections)."""

    def __init__(self, target: PurgeTarget, session: requests.Session | None = None) -> None:
        self.target = target
        self._backend = backend_named(target.backend)
        self._session = session or requests.Session()
        # Off so that ~/.netrc can never add credentials (nor the environment a proxy) to a purge.
        self._session.trust_env = False

    def __call__(self, request: PurgeRequest) -> str | None:
        """None when the CDN took the request; else why not, in one line (``Refused`` when
        trying again can't help)."""
        headers = dict(request.headers)
        headers.update(self._auth())
        timeout = self.target.timeout_s
        try:
            response = self._session.request(
                request.method,
                request.url,
                headers=headers,
                data=request.body,
                timeout=(timeout, timeout),
                allow_redirects=False,
            )
        except requests.RequestException as err:
            return f"{request.method} {url_for_log(request.url)}: {type(err).__name__}"
        refused = self._backend.refusal(response)
        if refused is None:
            return None
        line = f"{request.method} {url_for_log(request.url)}: {refused}"
        status = response.status_code
        return Refused(line) if 400 <= status < 500 and status != 429 else line

    def _auth(self) -> dict[str, str]:
        token = self.target.token
        return {} if token is None else self._backend.auth(token)

    def close(self) -> None:
        self._session.close()

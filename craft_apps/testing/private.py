"""What the fake GitHub (``fake_github``) adds for private repositories and GitHub Apps.

``PrivateGitHub``: a private repository (``make_private``) answers ``404`` unless the request
carries a token allowed to read it (``allow_token``, or an unexpired installation token of an
installation it is in). An asset asked for as ``application/octet-stream`` answers ``302`` to a
signed URL here, valid ``SIGNED_URL_VALIDITY_S``, then ``403``. A GitHub App (``add_app``) trades
a JWT (RS256 with its key, ``iss`` its id, at most 10 minutes long) for installation tokens
lasting ``INSTALLATION_TOKEN_S``. Time is the injected ``now``; no token reaches a log line.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qs, quote, unquote

import jwt

SIGNED_URL_VALIDITY_S = 300  # what GitHub's release asset URLs last (X-Amz-Expires=300)
INSTALLATION_TOKEN_S = 3600
_ASSET_PATH = re.compile(r"^/repos/([^/]+)/([^/]+)/releases/assets/([0-9]+)/?$")
_INSTALLATION_PATH = re.compile(r"^/repos/([^/]+)/([^/]+)/installation/?$")
_TOKENS_PATH = re.compile(r"^/app/installations/([0-9]+)/access_tokens/?$")
_OBJECT_PATH = re.compile(r"^/_objects/([^/]+)/([^/]+)/([0-9]+)/([^/]+)$")
_JSON = "application/json; charset=utf-8"

# (status, headers, body); the fake GitHub makes its answer of it.
Reply = tuple[int, list[tuple[str, str]], bytes]
# A repository's asset by id: its JSON and the bytes served for it (None: a line of text).
FindAsset = Callable[[str, int], tuple[dict[str, Any], bytes | None] | None]


def _reply(status: int, value: object) -> Reply:
    return status, [("content-type", _JSON)], json.dumps(value).encode()


def _not_found() -> Reply:
    return _reply(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})


@dataclass
class _App:
    app_id: str
    public_key: Any
    installations: dict[int, set[str]] = field(default_factory=dict)  # id -> repos (lowercase)


class PrivateGitHub:
    """The private repositories, allowed tokens, GitHub Apps and signed URLs of one fake GitHub."""

    def __init__(self, now: Callable[[], float], secret: bytes | None = None) -> None:
        self._now = now
        self._secret = secret if secret is not None else os.urandom(32)
        self._lock = threading.Lock()
        self._private: set[str] = set()
        self._tokens: set[str] = set()
        self._apps: dict[str, _App] = {}
        self._issued: dict[str, tuple[int, float]] = {}  # token -> (installation, expiry)
        self.exchanges = 0  # installation tokens made

    def now(self) -> float:
        """This server's clock, which signed URLs and tokens expire on."""
        return self._now()

    def issued_tokens(self) -> list[str]:
        """Every installation token made (for a test to look for it where it must not be)."""
        with self._lock:
            return list(self._issued)

    def make_private(self, repo: str) -> None:
        with self._lock:
            self._private.add(repo.lower())

    def allow_token(self, token: str) -> None:
        """``token`` reads every private repository (a fine-grained token with Contents: read)."""
        with self._lock:
            self._tokens.add(token)

    def add_app(self, app_id: str, public_key: Any, installations: Mapping[int, list[str]]) -> None:
        with self._lock:
            repos = {number: {repo.lower() for repo in listed} for number, listed in installations.items()}
            self._apps[app_id] = _App(app_id, public_key, repos)

    def refused(self, repo: str, authorization: str | None) -> Reply | None:
        """The answer to a request about ``repo`` this token may not make; None: allowed."""
        key = repo.lower()
        with self._lock:
            if key not in self._private:
                return None
            token = _bearer(authorization)
            if token is None:
                return _not_found()
            if token in self._tokens:
                return None
            issued = self._issued.get(token)
            if issued is None or issued[1] <= self._now():
                return _reply(401, {"message": "Bad credentials"})
            seen = any(key in app.installations.get(issued[0], set()) for app in self._apps.values())
            return None if seen else _not_found()

    def answer(
        self, method: str, path: str, query: str, headers: Mapping[str, str], base: str, find: FindAsset
    ) -> Reply | None:
        """The answer to a path this module serves, or None for any other."""
        if (match := _ASSET_PATH.match(path)) and method in ("GET", "HEAD"):
            repo = f"{unquote(match[1])}/{unquote(match[2])}"
            return self._asset(repo, int(match[3]), headers, base, find)
        if (match := _OBJECT_PATH.match(path)) and method in ("GET", "HEAD"):
            repo = f"{unquote(match[1])}/{unquote(match[2])}"
            return self._object(repo, int(match[3]), unquote(match[4]), query, find)
        if (match := _INSTALLATION_PATH.match(path)) and method == "GET":
            return self._installation(f"{unquote(match[1])}/{unquote(match[2])}", headers)
        if (match := _TOKENS_PATH.match(path)) and method == "POST":
            return self._exchange(int(match[1]), headers)
        return None

    def _asset(
        self, repo: str, asset_id: int, headers: Mapping[str, str], base: str, find: FindAsset
    ) -> Reply:
        refused = self.refused(repo, headers.get("authorization"))
        found = find(repo, asset_id)
        if refused is not None or found is None:
            return refused or _not_found()
        asset = found[0]
        if "application/octet-stream" not in headers.get("accept", ""):
            return _reply(200, asset)
        expires = int(self._now()) + SIGNED_URL_VALIDITY_S
        name = str(asset.get("name", "file"))
        signature = self._sign(repo, asset_id, expires)
        location = (
            f"{base}/_objects/{quote(repo)}/{asset_id}/{quote(name)}?expires={expires}&signature={signature}"
        )
        return 302, [("location", location), ("content-length", "0")], b""

    def _object(self, repo: str, asset_id: int, name: str, query: str, find: FindAsset) -> Reply:
        params = parse_qs(query)
        expires = (params.get("expires") or [""])[0]
        signature = (params.get("signature") or [""])[0]
        if not expires.isdigit() or not hmac.compare_digest(
            signature, self._sign(repo, asset_id, int(expires))
        ):
            return 403, [("content-type", "application/xml")], b"<Error><Code>AccessDenied</Code></Error>"
        if int(expires) <= self._now():
            body = b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>"
            return 403, [("content-type", "application/xml")], body
        found = find(repo, asset_id)
        if found is None or found[0].get("name") != name:
            return _not_found()
        body = found[1] if found[1] is not None else f"{name}: a stand-in for this file.\n".encode()
        return 200, [("content-type", "application/octet-stream")], body

    def _sign(self, repo: str, asset_id: int, expires: int) -> str:
        message = f"{repo.lower()}/{asset_id}/{expires}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def _installation(self, repo: str, headers: Mapping[str, str]) -> Reply:
        app = self._verified_app(headers.get("authorization"))
        if app is None:
            return _reply(401, {"message": "A JSON web token could not be decoded"})
        for number, repos in app.installations.items():
            if repo.lower() in repos:
                return _reply(200, {"id": number, "app_id": app.app_id})
        return _not_found()

    def _exchange(self, installation: int, headers: Mapping[str, str]) -> Reply:
        app = self._verified_app(headers.get("authorization"))
        if app is None:
            return _reply(401, {"message": "A JSON web token could not be decoded"})
        if installation not in app.installations:
            return _not_found()
        token = "ghs_" + os.urandom(18).hex()
        expires = self._now() + INSTALLATION_TOKEN_S
        with self._lock:
            self._issued[token] = (installation, expires)
            self.exchanges += 1
        stamp = datetime.fromtimestamp(expires, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return _reply(201, {"token": token, "expires_at": stamp, "permissions": {"contents": "read"}})

    def _verified_app(self, authorization: str | None) -> _App | None:
        """The App whose key signed the request's JWT, if it verifies and is current."""
        token = _bearer(authorization)
        if token is None:
            return None
        try:
            issuer = str(jwt.decode(token, options={"verify_signature": False}).get("iss"))
            app = self._apps.get(issuer)
            if app is None:
                return None
            claims = jwt.decode(
                token,
                app.public_key,
                algorithms=["RS256"],
                options={"verify_exp": False, "verify_iat": False},
            )
        except jwt.PyJWTError:
            return None
        now = self._now()
        iat, exp = claims.get("iat"), claims.get("exp")
        if (
            not isinstance(iat, int)
            or not isinstance(exp, int)
            or not iat - 60 <= now < exp
            or exp - iat > 660
        ):
            return None
        return app


def _bearer(authorization: str | None) -> str | None:
    if authorization is None:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    return value.strip() or None if scheme.lower() in ("bearer", "token") else None

"""One purge request (``cdn.sender``) against ``responses``: the token goes in the header the
CDN reads and nowhere else, and every refusal is one line without it."""

from __future__ import annotations

import json
import re

import requests
import responses

from craft_apps.cdn.plan import PurgeRequest
from craft_apps.cdn.sender import Sender
from craft_apps.conf import PurgeTarget
from craft_apps.kernel.text import url_for_log

TOKEN = "s3cret-token"
CF = "https://cf.test/client/v4/zones/z/purge_cache"


def target(kind: str, token: str | None = TOKEN) -> PurgeTarget:
    url = "https://cf.test/client/v4" if kind == "cloudflare" else "https://edge.test{path}"
    return PurgeTarget(kind, url, "PURGE", "https://updates.example.com", 2.0, token=token, zone="z")


@responses.activate
def test_http_purge_carries_the_fastly_key_and_the_host():
    responses.add("PURGE", "https://edge.test/v1/craft_apps/release_info", status=200)
    request = PurgeRequest(
        "PURGE", "https://edge.test/v1/craft_apps/release_info", (("Host", "updates.example.com"),)
    )
    assert Sender(target("http"))(request) is None
    sent = responses.calls[0].request
    assert sent.headers["Fastly-Key"] == TOKEN and sent.headers["Host"] == "updates.example.com"


@responses.activate
def test_http_purge_without_a_token_sends_no_key():
    responses.add("PURGE", "https://edge.test/x", status=200)
    assert Sender(target("http", token=None))(PurgeRequest("PURGE", "https://edge.test/x")) is None
    assert "Fastly-Key" not in responses.calls[0].request.headers


@responses.activate
def test_cloudflare_needs_its_bearer_token_and_success_true():
    responses.add("POST", CF, json={"success": True, "errors": []})
    body = json.dumps({"files": ["https://updates.example.com/v1/craft_apps/release_info"]}).encode()
    assert Sender(target("cloudflare"))(PurgeRequest("POST", CF, (), body)) is None
    assert responses.calls[0].request.headers["Authorization"] == f"Bearer {TOKEN}"
    responses.replace(
        "POST", CF, json={"success": False, "errors": [{"code": 10000, "message": "Authentication error"}]}
    )
    reason = Sender(target("cloudflare"))(PurgeRequest("POST", CF, (), body))
    assert reason is not None and "Authentication error" in reason and TOKEN not in reason


@responses.activate
def test_a_refusal_or_a_timeout_is_one_line_without_secrets():
    responses.add("PURGE", "https://edge.test/a", status=500)
    responses.add("PURGE", "https://edge.test/b", body=requests.exceptions.ReadTimeout("slow"))
    sender = Sender(target("http"))
    assert sender(PurgeRequest("PURGE", "https://edge.test/a")) == "PURGE https://edge.test/a: HTTP 500"
    assert sender(PurgeRequest("PURGE", "https://edge.test/b")) == "PURGE https://edge.test/b: ReadTimeout"


@responses.activate
def test_a_password_or_query_in_the_url_never_reaches_the_reason():
    url = "https://edge.test/a?key=q-secret"
    responses.add("PURGE", re.compile(r"https://edge\.test/a.*"), status=403)
    reason = Sender(target("http"))(PurgeRequest("PURGE", url))
    assert reason == "PURGE https://edge.test/a: HTTP 403"
    assert url_for_log("https://user:pw-secret@edge.test:8443/a?k=q") == "https://edge.test:8443/a"


@responses.activate
def test_netrc_never_adds_credentials(tmp_path, monkeypatch):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine edge.test login someone password netrc-s3cret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    responses.add("PURGE", "https://edge.test/x", status=200)
    assert Sender(target("http", token=None))(PurgeRequest("PURGE", "https://edge.test/x")) is None
    assert "Authorization" not in responses.calls[0].request.headers

"""A purge backend is one class chosen by name or dotted path: the two shipped ones by name, a
class of the site's own (``tests/cdn/query_backend.py``) by its path, sending its requests to a
real HTTP server; a path that names no class is check E153 and no purge."""

from __future__ import annotations

import pytest
from django.test import override_settings

from craft_apps.cdn.backends import backend_named
from craft_apps.cdn.backends.cloudflare import CloudflarePurge
from craft_apps.cdn.backends.http import HttpPurge
from craft_apps.cdn.plan import RELEASE_INFO
from craft_apps.cdn.sender import Sender
from craft_apps.checks import check_settings
from craft_apps.conf import app_settings
from tests.cdn.edge import PurgeEdge

pytestmark = pytest.mark.usefixtures("clean_environment")

BETA = RELEASE_INFO + "?channel=beta"
CUSTOM = "tests.cdn.query_backend.QueryPurge"


def test_the_shipped_backends_are_chosen_by_name():
    with override_settings(
        CRAFT_APPS={
            "CDN_PURGE_KIND": "http",
            "CDN_PURGE_URL": "http://c{path}",
            "CDN_PUBLIC_URL": "https://u",
        }
    ):
        target = app_settings.CDN_PURGE
    assert target is not None and isinstance(backend_named(target.backend), HttpPurge)
    assert isinstance(backend_named("craft_apps.cdn.backends.cloudflare.CloudflarePurge"), CloudflarePurge)


def test_a_sites_own_backend_by_its_dotted_path_sends_its_requests():
    edge = PurgeEdge()
    try:
        craft_apps = {
            "CDN_PURGE_KIND": CUSTOM,
            "CDN_PURGE_URL": edge.url + "/purge",
            "CDN_PUBLIC_URL": "https://updates.example.com",
            "CDN_PURGE_TOKEN": "s3cret",
        }
        with override_settings(CRAFT_APPS=craft_apps):
            target = app_settings.CDN_PURGE
            assert [message.id for message in check_settings()] == []
        assert target is not None and target.kind == CUSTOM
        sender = Sender(target)
        requests = backend_named(target.backend).requests(target, [RELEASE_INFO, BETA])
        assert [sender(request) for request in requests] == [None, None]
        sender.close()
    finally:
        edge.close()
    assert [path for _, path, _ in edge.requests] == [
        "/purge?path=%2Fv1%2Fcraft_apps%2Frelease_info",
        "/purge?path=%2Fv1%2Fcraft_apps%2Frelease_info%3Fchannel%3Dbeta",
    ]


@pytest.mark.parametrize("kind", ["tests.cdn.query_backend.NoSuchClass", "no_such_module.Purge"])
def test_a_path_that_names_no_class_fails_loudly_and_purges_nothing(kind: str):
    with override_settings(CRAFT_APPS={"CDN_PURGE_KIND": kind, "CDN_PUBLIC_URL": "https://u"}):
        assert app_settings.CDN_PURGE is None
        (message,) = check_settings()
    assert message.id == "craft_apps.E153" and repr(kind) in message.msg

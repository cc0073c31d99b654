"""``PRIVATE_APPS``: which apps are private, what an unknown key is told, and the stored id."""

from __future__ import annotations

from dataclasses import replace

from craft_apps.checks import configuration_problems
from craft_apps.conf import app_settings
from craft_apps.kernel.codec import decode_release, encode_release
from tests.support import release


def test_private_apps_are_named_by_key_and_apps_keeps_its_meaning(settings, tmp_path):
    settings.CRAFT_APPS = {
        "APPS": "a=A=o/a,b=B=o/b",
        "PRIVATE_APPS": " B , ",
        "STATE_DIR": str(tmp_path),
    }
    assert [(app.key, app.repo, app.private) for app in app_settings.APPS] == [
        ("a", "o/a", False),
        ("b", "o/b", True),
    ]


def test_an_unknown_private_key_is_warning_w161(settings, tmp_path):
    settings.CRAFT_APPS = {"APPS": "a=A=o/a", "PRIVATE_APPS": "a,zz", "STATE_DIR": str(tmp_path)}
    [found] = [f for f in configuration_problems() if f.id == "craft_apps.W161"]
    assert "'zz'" not in found.msg and "zz" in found.msg and "PRIVATE_APPS" in found.msg
    assert [app.private for app in app_settings.APPS] == [True]


def test_a_stored_asset_keeps_its_id_and_a_public_one_is_stored_as_before():
    public = release()
    private = replace(public, assets=(replace(public.assets[0], asset_id=123),))
    assert decode_release(encode_release(private)) == private
    assert '"asset_id":123' in encode_release(private)
    assert "asset_id" not in encode_release(public)

"""A release's Tauri updater files in the stores' codec (``craft_apps.kernel.codec``): kept, read back,
absent in every entry written before them, and unknown to the endpoint's answer."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from craft_apps.api.serializers import CraftAppReleaseSerializer
from craft_apps.kernel.codec import (
    decode_release,
    decode_releases,
    encode_release,
    encode_releases,
    release_to_dict,
)
from craft_apps.kernel.domain import UpdaterFile
from tests.support import release

FILES = (
    UpdaterFile("darwin-aarch64", "https://github.com/o/r/releases/download/v1/A.app.tar.gz", "c2ln\n"),
    UpdaterFile("windows-x86_64", "https://github.com/o/r/releases/download/v1/A.msi", "c2ln"),
)


def test_updater_files_are_kept_and_read_back() -> None:
    value = replace(release(), updater=FILES)
    assert decode_release(encode_release(value)) == value
    assert decode_releases(encode_releases([value])) == (value,)
    assert json.loads(encode_release(value))["updater"][0] == {
        "platform": "darwin-aarch64",
        "url": FILES[0].url,
        "signature": "c2ln\n",
    }


def test_a_release_without_updater_files_is_stored_as_before() -> None:
    """No ``updater`` field at all: the bytes an older host and a reference pod write and read."""
    assert "updater" not in json.loads(encode_release(release()))


def test_an_entry_written_before_updater_files_reads_as_none() -> None:
    old = encode_release(release())
    assert decode_release(old) == release() and decode_release(old).updater == ()  # type: ignore[union-attr]


def test_a_field_the_codec_does_not_know_is_passed_over() -> None:
    """What an older host does with the ``updater`` field it doesn't know (its decoder is this
    one without that field): it reads the rest of the release."""
    data = release_to_dict(release())
    data["a_later_field"] = [{"anything": 1}]
    assert decode_release(json.dumps(data)) == release()


@pytest.mark.parametrize(
    "updater",
    [{"platform": "x"}, [1], [{"platform": "windows-x86_64", "url": 3, "signature": "c2ln"}], [{"url": "u"}]],
)
def test_a_malformed_updater_field_spoils_the_entry(updater: object) -> None:
    data = release_to_dict(release())
    data["updater"] = updater
    with pytest.raises(ValueError):
        decode_release(json.dumps(data))


def test_the_endpoints_release_json_does_not_show_updater_files() -> None:
    served = CraftAppReleaseSerializer(replace(release(), updater=FILES)).data
    assert "updater" not in served
    assert served == CraftAppReleaseSerializer(release()).data

"""The release's JSON has one definition: the stores' codec and the HTTP serializer agree.

The codec (``craft_apps.kernel.codec``) writes a release into the state file and Redis; the serializer
(``craft_apps.api.serializers``) writes it into the endpoint's answer. They are two encoders of
the contract's ``CraftAppRelease``, so this pins them as twins: for every demo release and every
awkward value, both give the same JSON, and the codec reads its own output back unchanged.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime

import pytest

from craft_apps.api.serializers import CraftAppReleaseSerializer
from craft_apps.github.parsing import parse_release
from craft_apps.kernel.codec import decode_release, encode_release, release_to_dict
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import AssetPlatform, CraftAppOs, CraftAppPackageType, Release
from craft_apps.testing.demo_releases import demo_releases
from tests.support import release


def demo_cases() -> list[tuple[str, Release]]:
    return [
        (repo, parse_release(json.dumps(data).encode(), repo))
        for repo, data in sorted(demo_releases().items())
    ]


def awkward_cases() -> list[tuple[str, Release]]:
    base = release()
    web = AssetPlatform(CraftAppOs.WEB, None, CraftAppPackageType.WEB_ZIP)
    return [
        ("no published_at", replace(base, published_at=None)),
        ("milliseconds", replace(base, published_at=datetime(2026, 1, 2, 3, 4, 5, 678_000, tzinfo=UTC))),
        ("microseconds", replace(base, published_at=datetime(2026, 1, 2, 3, 4, 5, 1, tzinfo=UTC))),
        ("epoch", replace(base, published_at=datetime(1970, 1, 1, tzinfo=UTC))),
        ("year 9999", replace(base, published_at=datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC))),
        ("no assets", replace(base, assets=())),
        ("asset without arch", replace(base, assets=(replace(base.assets[0], platform=web),))),
        ("unicode and quotes", replace(base, name='Fotó "Craft" ✓', notes_markdown="a\tb\nc \\ </script>")),
        ("empty strings", replace(base, name="", notes_markdown="")),
        ("prerelease", replace(base, prerelease=True, tag="v1.0.0-rc.1", version="1.0.0-rc.1")),
        ("size zero", replace(base, assets=(replace(base.assets[0], size_bytes=0),))),
        ("size 2^53-1", replace(base, assets=(replace(base.assets[0], size_bytes=2**53 - 1),))),
    ]


CASES = demo_cases() + awkward_cases()


@pytest.mark.parametrize(("case", "value"), CASES, ids=[case for case, _ in CASES])
def test_the_codec_and_the_serializer_give_the_same_json(case: str, value: Release) -> None:
    served = json.dumps(CraftAppReleaseSerializer(value).data, sort_keys=True)
    stored = json.dumps(release_to_dict(value), sort_keys=True)
    assert served == stored


@pytest.mark.parametrize(("case", "value"), CASES, ids=[case for case, _ in CASES])
def test_the_codec_reads_back_what_it_wrote(case: str, value: Release) -> None:
    # Instants are kept to the millisecond, the precision the contract writes.
    moment = value.published_at
    if moment is not None:
        value = replace(value, published_at=moment.replace(microsecond=moment.microsecond // 1000 * 1000))
    assert decode_release(encode_release(value)) == value


def test_every_demo_release_is_covered() -> None:
    assert len(demo_cases()) == 13
    assert all(value.assets for _, value in demo_cases())

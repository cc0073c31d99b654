"""The beta channel's precedence rule (craft_apps.kernel.versions), on plain releases."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import Release
from craft_apps.kernel.versions import newest, served_version, tag_version, version_text
from tests.support import release

DAY = timedelta(days=1)
T0 = datetime(2026, 10, 1, tzinfo=UTC)


def tagged(tag: str, *, prerelease: bool = False, day: int = 0) -> Release:
    return replace(release("0.0.1"), tag=tag, version=tag, prerelease=prerelease, published_at=T0 + day * DAY)


# The one rule for tags (craft_apps.kernel.versions): (tag, the SemVer version it names or None, the
# answer's ``version``). Every tag that was a version before prefixes is the same version.
TAGS: list[tuple[str, str | None, str]] = [
    # Plain versions, with or without one leading v.
    ("v1.2.3", "1.2.3", "1.2.3"),
    ("V1.2.3-rc.1", "1.2.3-rc.1", "1.2.3-rc.1"),
    ("1.2.3", "1.2.3", "1.2.3"),
    ("1.0.0+build.5", "1.0.0+build.5", "1.0.0+build.5"),
    # A version whose pre-release part looks like a prefix's end stays the same version.
    ("v1.2.3-rc.1", "1.2.3-rc.1", "1.2.3-rc.1"),
    ("2.0.0-beta", "2.0.0-beta", "2.0.0-beta"),
    ("2.0.0-1.2.3", "2.0.0-1.2.3", "2.0.0-1.2.3"),
    ("v2.0.0-app-v1.0.0", "2.0.0-app-v1.0.0", "2.0.0-app-v1.0.0"),
    # Changesets: what follows the last @.
    ("@storytold/photocraft@1.2.3-rc.1", "1.2.3-rc.1", "1.2.3-rc.1"),
    ("photocraft@v0.6.0", "0.6.0", "0.6.0"),
    # A prefix naming the app: a name, then "-" or "_", maybe a "v".
    ("artcraft-v0.37.0", "0.37.0", "0.37.0"),
    ("app-v1.2.0", "1.2.0", "1.2.0"),
    ("app-V1.2.0", "1.2.0", "1.2.0"),
    ("artcraft-v0.38.0-beta.2", "0.38.0-beta.2", "0.38.0-beta.2"),
    ("release-1.2.3", "1.2.3", "1.2.3"),
    ("photocraft_1.0.0", "1.0.0", "1.0.0"),
    ("photocraft_v1.0.0+ci.7", "1.0.0+ci.7", "1.0.0+ci.7"),
    ("my-app-2.0.0-rc.1", "2.0.0-rc.1", "2.0.0-rc.1"),
    ("tool-2-1.0.0", "1.0.0", "1.0.0"),  # the first split whose rest is a version
    ("apps/artcraft-v1.0.0", "1.0.0", "1.0.0"),
    ("vector-1.0.0", "1.0.0", "1.0.0"),  # a name starting with v is still a name
    # Not versions: the answer's version is the tag less one leading v, as before.
    ("nightly", None, "nightly"),
    ("2025.01", None, "2025.01"),
    ("v1.2", None, "1.2"),
    ("release-7", None, "release-7"),
    ("artcraft-v0.37", None, "artcraft-v0.37"),
    ("v1.2-3.4.5", None, "1.2-3.4.5"),  # a prefix that is itself a version is none
    ("1.2-3.4.5", None, "1.2-3.4.5"),
    ("-1.2.3", None, "-1.2.3"),  # no name before the dash
    ("2024_1.2.3", None, "2024_1.2.3"),  # a name starts with a letter
    ("artcraft.v1.2.3", None, "artcraft.v1.2.3"),  # only "-" or "_" ends a prefix
    ("artcraft/v1.2.3", None, "artcraft/v1.2.3"),
    ("artcraft-v01.2.3", None, "artcraft-v01.2.3"),
    ("", None, ""),
    ("@", None, "@"),
    ("v", None, "v"),
    ("1.2.3.4", None, "1.2.3.4"),
    ("01.2.3", None, "01.2.3"),
]


@pytest.mark.parametrize(("tag", "expected", "served"), TAGS, ids=[tag or "(empty)" for tag, _, _ in TAGS])
def test_a_tag_names_its_version(tag: str, expected: str | None, served: str) -> None:
    assert version_text(tag) == expected
    assert (None if tag_version(tag) is None else str(tag_version(tag))) == expected
    assert served_version(tag) == served


def test_a_prefixed_tag_is_ordered_by_its_version_not_its_publish_time() -> None:
    # tauri-action's releases: the prefix is the same on every tag, the version decides.
    stable = tagged("artcraft-v0.37.0", day=1)
    rc = tagged("artcraft-v0.38.0-rc.1", prerelease=True, day=2)
    older_rc = tagged("artcraft-v0.37.0-rc.9", prerelease=True, day=9)
    assert newest(stable, [older_rc, rc]) == rc
    assert newest(stable, [older_rc]) == stable


def test_a_stable_release_overtakes_its_release_candidates() -> None:
    stable = tagged("v0.6.0", day=5)
    history = [tagged("v0.6.0-rc.2", prerelease=True, day=9), tagged("v0.6.0-rc.1", prerelease=True, day=1)]
    assert newest(stable, history) == stable


def test_a_release_candidate_newer_than_the_stable_one_is_chosen() -> None:
    rc = tagged("v0.7.0-rc.1", prerelease=True, day=9)
    assert newest(tagged("v0.6.0", day=5), [rc]) == rc


def test_rc_10_beats_rc_9() -> None:
    rc9, rc10 = tagged("v1.0.0-rc.9", prerelease=True, day=9), tagged("v1.0.0-rc.10", prerelease=True, day=3)
    assert newest(tagged("v0.9.0"), [rc9, rc10]) == rc10
    assert newest(tagged("v0.9.0"), [rc10, rc9]) == rc10  # whatever the order they come in


def test_a_deleted_prerelease_falls_back_to_the_stable_one() -> None:
    stable, rc = tagged("v0.6.0"), tagged("v0.7.0-rc.1", prerelease=True, day=3)
    assert newest(stable, [rc, stable]) == rc
    assert newest(stable, [stable]) == stable  # the history no longer lists it


def test_without_a_stable_release_the_newest_prerelease_is_chosen() -> None:
    # GitHub's /releases/latest has nothing while a repository has only prereleases.
    rc1, rc2 = tagged("v0.1.0-rc.1", prerelease=True), tagged("v0.1.0-rc.2", prerelease=True, day=1)
    assert newest(None, [rc1, rc2]) == rc2
    assert newest(None, []) is None


def test_a_tag_that_is_not_a_version_never_beats_a_versioned_one() -> None:
    stable = tagged("v0.6.0", day=1)
    nightly = tagged("nightly", prerelease=True, day=30)
    assert newest(stable, [nightly]) == stable
    assert newest(None, [nightly, tagged("v0.1.0-beta", prerelease=True)]).tag == "v0.1.0-beta"  # type: ignore[union-attr]


def test_when_the_stable_tag_is_not_a_version_the_publish_time_decides() -> None:
    stable = tagged("stable-build", day=5)
    later, earlier = (
        tagged("nightly-2", prerelease=True, day=6),
        tagged("v9.0.0-rc.1", prerelease=True, day=4),
    )
    assert newest(stable, [later, earlier]) == later
    assert newest(stable, [earlier]) == stable
    assert newest(stable, [tagged("nightly-tie", prerelease=True, day=5)]) == stable  # a tie: stable


def test_unversioned_prereleases_alone_compete_by_publish_time() -> None:
    a, b = tagged("nightly-a", prerelease=True, day=1), tagged("nightly-b", prerelease=True, day=2)
    assert newest(None, [a, b]) == b
    assert newest(None, [replace(b, published_at=None), a]) == a  # no publish time: the oldest


def test_equal_precedence_is_ordered_by_publish_time_then_tag() -> None:
    older, newer = tagged("v1.0.0+a", day=1), tagged("v1.0.0+b", day=2)
    assert newest(older, [newer]) == newer
    assert newest(tagged("v1.0.0+b", day=1), [tagged("v1.0.0+a", day=1)]).tag == "v1.0.0+b"  # type: ignore[union-attr]

"""What the Tauri updater endpoint offers one app on one platform: pure (no Django, no I/O).

The release is the one the channel serves (``serving.serve``, every control applied): a staged
rollout's when the client's ``bucket`` is below its percentage, else ``latest_release``.
``offer`` says whether it is newer than the client's version and which updater file fits its
platform, found as the plugin finds one in ``latest.json``; ``None`` is a 204. See docs/tauri.md.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import semver

from craft_apps.kernel.domain import AppReleaseInfo, Release, UpdaterFile
from craft_apps.kernel.versions import tag_version, version_text

TARGETS = ("windows", "darwin", "linux")  # the updater's ``{{target}}``: its OS
ARCHES = ("x86_64", "aarch64", "i686", "armv7")  # the updater's ``{{arch}}``
# The updater's ``{{bundle_type}}`` (plugin 2.10 and later): how the running app was installed.
# It sends ``unknown`` when it can't tell, which names no entry.
BUNDLE_TYPES = ("msi", "nsis", "app", "appimage", "deb", "rpm")
BUCKETS = range(100)  # a client's own number, drawn once: as a launcher's (docs/controls.md)
_UNIVERSAL = "darwin-universal"  # tauri-action's key for a universal macOS bundle, when kept


@dataclass(frozen=True)
class Platform:
    """What the client runs on: the updater's target, arch and (when known) bundle type."""

    target: str
    arch: str
    bundle_type: str | None = None

    def updater_keys(self) -> tuple[str, ...]:
        """The updater keys that fit this platform, best first."""
        base = f"{self.target}-{self.arch}"
        keys = [f"{base}-{self.bundle_type}"] if self.bundle_type else []
        keys.append(base)
        if self.target == "darwin":
            keys.append(_UNIVERSAL)
        return tuple(keys)


@dataclass(frozen=True)
class Update:
    """An update to offer: the release and its updater file for the client's platform."""

    release: Release
    version: str  # the version its tag names (``versions.version_text``)
    file: UpdaterFile


def offered_release(app: AppReleaseInfo, bucket: int | None) -> Release | None:
    """The release the client is offered: the rollout's when its ``bucket`` is below the
    percentage, else (no bucket, or not below) the app's ``latest_release``."""
    rollout = app.rollout
    if rollout is not None and bucket is not None and bucket < rollout.percentage:
        return rollout.release
    return app.latest_release


def updater_file(release: Release, platform: Platform) -> UpdaterFile | None:
    """The release's updater file for ``platform`` (the first of its keys that it has)."""
    by_key = {file.platform: file for file in release.updater}
    for key in platform.updater_keys():
        found = by_key.get(key)
        if found is not None:
            return found
    return None


def offer(
    app: AppReleaseInfo, platform: Platform, current: semver.Version, bucket: int | None
) -> Update | None:
    """The update for a client at ``current`` on ``platform``, or None (no update)."""
    release = offered_release(app, bucket)
    if release is None:
        return None
    named = release_version(release.tag)
    if named is None or named[1].compare(current) <= 0:
        return None
    found = updater_file(release, platform)
    return None if found is None else Update(release, named[0], found)


@functools.lru_cache(maxsize=1024)
def release_version(tag: str) -> tuple[str, semver.Version] | None:
    """The version ``tag`` names, as written and parsed (``versions``); kept, since every
    request asks it of the few releases served."""
    text = version_text(tag)
    version = None if text is None else tag_version(tag)
    return None if text is None or version is None else (text, version)


def parse_version(text: str) -> semver.Version | None:
    """The client's version (SemVer, a leading ``v`` allowed as the plugin allows it), or None."""
    try:
        return semver.Version.parse(text[1:] if text[:1] in ("v", "V") else text)
    except (ValueError, TypeError):
        return None

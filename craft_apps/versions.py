"""Which of an app's releases is the newest, prereleases included: the beta channel's rule.

Pure (no Django, no settings). A tag is read as a version by SemVer 2.0 (python-semver): a
leading ``v`` or ``V`` is dropped, and in a changesets-style tag (``@scope/pkg@1.2.3-rc.1``)
only what follows the last ``@`` counts. SemVer precedence orders them: ``0.6.0`` is newer
than ``0.6.0-rc.2``, ``1.0.0-rc.10`` newer than ``1.0.0-rc.9``; build metadata (``+…``) doesn't
count. Two releases of equal precedence are ordered by ``published_at``, then by tag, so the
choice never depends on the order the releases came in.

A tag that isn't a version (``nightly``, ``2025.01``) can't be placed by precedence:

- when the stable latest's tag is a version (or there is no stable latest), releases whose
  tag isn't one are never chosen: a versioned release always beats them;
- when the stable latest's tag isn't a version, precedence can't say what is newer than it, so
  ``published_at`` decides among all the candidates, the stable latest winning a tie.

``docs/endpoint.md`` states the same rule for launcher authors.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import semver

from craft_apps.compat import UTC
from craft_apps.domain import Release

_NEVER = datetime.min.replace(tzinfo=UTC)  # a release with no publish time is the oldest


def tag_version(tag: str) -> semver.Version | None:
    """The SemVer version ``tag`` names, or None when it names none."""
    text = tag.rsplit("@", 1)[-1].strip()
    if text[:1] in ("v", "V"):
        text = text[1:]
    try:
        return semver.Version.parse(text)
    except (ValueError, TypeError):
        return None


def _published(release: Release) -> datetime:
    return release.published_at or _NEVER


def newest(stable: Release | None, history: Iterable[Release]) -> Release | None:
    """The newest of ``stable`` (the app's latest stable release) and ``history`` (its recent
    releases, prereleases included) by the module's rule; None when there is neither."""
    candidates: list[Release] = [] if stable is None else [stable]
    seen = {stable.tag} if stable is not None else set()
    for release in history:
        if release.tag not in seen:
            seen.add(release.tag)
            candidates.append(release)
    if not candidates:
        return None
    if stable is not None and tag_version(stable.tag) is None:
        # ``max`` keeps the first of equals: the stable latest wins a tie.
        return max(candidates, key=_published)
    placed = [(tag_version(release.tag), release) for release in candidates]
    versioned = [(version, release) for version, release in placed if version is not None]
    if not versioned:
        return max(candidates, key=lambda release: (_published(release), release.tag))
    return max(versioned, key=lambda pair: (pair[0], _published(pair[1]), pair[1].tag))[1]

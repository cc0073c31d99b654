"""A tag read as a version, and which of an app's releases is the newest.

One rule reads a tag as a SemVer version (``artcraft-v0.37.0`` is ``0.37.0``): the answer's
``version``, the beta channel's precedence and the release controls' "newer" all use it. A tag
that names no version is placed by its publish time. The cases are listed in
docs/endpoint.md ("Tags and versions").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

import semver

from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import Release

_NEVER = datetime.min.replace(tzinfo=UTC)  # a release with no publish time is the oldest


# Where a prefix may end: "-" or "_", maybe a "v", just before a digit.
_PREFIX_END = re.compile(r"[-_][vV]?(?=[0-9])")
# A prefix is a name: a letter first, and not itself a version ("v1.2" in "v1.2-3.4.5").
_PREFIX = re.compile(r"(?![vV][0-9])[A-Za-z][A-Za-z0-9._/-]*")


def version_text(tag: str) -> str | None:
    """The part of ``tag`` that is its SemVer version, as written (``artcraft-v0.37.0`` ->
    ``0.37.0``), or None when it names none. The module docstring has the rule."""
    text = tag.rsplit("@", 1)[-1].strip()
    plain = text[1:] if text[:1] in ("v", "V") else text
    if _parsed(plain) is not None:
        return plain
    for end in _PREFIX_END.finditer(text):
        rest = text[end.end() :]
        if _PREFIX.fullmatch(text[: end.start()]) and _parsed(rest) is not None:
            return rest
    return None


def tag_version(tag: str) -> semver.Version | None:
    """The SemVer version ``tag`` names, or None when it names none."""
    text = version_text(tag)
    return None if text is None else _parsed(text)


def served_version(tag: str) -> str:
    """A release's ``version`` in the answer: the version its tag names, else (a tag that isn't
    one) the tag without a leading ``v``/``V``; a tag of just ``v`` stays itself."""
    text = version_text(tag)
    if text is not None:
        return text
    return tag[1:] if tag[:1] in ("v", "V") and len(tag) > 1 else tag


def _parsed(text: str) -> semver.Version | None:
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

"""The fake GitHub's releases: each repository's latest release and its release list.

``ReleaseCatalogue.publish(repo, release, files)`` takes GitHub's JSON of a release (and the
bytes of its files) and serves it as the latest from then on; ``latest(repo)`` and
``listing(repo, per_page)`` return the ``Published`` body and ETag a request is answered with.
The list holds prereleases and drafts too, newest first by ``published_at``.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from craft_apps.testing.fake_http import etag, json_bytes


@dataclass(frozen=True)
class Published:
    """A release's JSON, the body served for it, its ETag and its files' bytes."""

    release: dict[str, Any]
    body: bytes
    etag: str
    files: dict[str, bytes] = field(default_factory=dict)  # file name -> the bytes served


def _published(release: dict[str, Any], files: Mapping[str, bytes] | None = None) -> Published:
    body = json_bytes(release)
    return Published(release, body, etag(body), dict(files or {}))


class ReleaseCatalogue:
    """Every repository's releases. Thread-safe: tests publish while clients poll."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._releases: dict[str, Published] = {}
        self._listed: dict[str, list[dict[str, Any]]] = {}  # repo -> every release, drafts too

    def publish(self, repo: str, release: dict[str, Any], files: Mapping[str, bytes] | None = None) -> None:
        """Serves ``release`` (GitHub's JSON shape) as ``repo``'s latest release from now on;
        ``files`` are the bytes its web side serves for those assets (e.g. a Tauri release's
        ``latest.json`` and ``.sig`` files), the others being a line of text."""
        kept = copy.deepcopy(release)
        with self._lock:
            self._releases[repo.lower()] = _published(kept, files)
            self._list_add(repo, kept)

    def publish_prerelease(self, repo: str, release: dict[str, Any]) -> None:
        """Adds ``release`` as a prerelease to ``repo``'s release list; the latest stays."""
        with self._lock:
            self._list_add(repo, {**copy.deepcopy(release), "prerelease": True, "draft": False})

    def add_draft(self, repo: str, release: dict[str, Any]) -> None:
        """Adds ``release`` as a draft to ``repo``'s release list; the latest stays."""
        with self._lock:
            self._list_add(repo, {**copy.deepcopy(release), "draft": True})

    def delete_release(self, repo: str, tag: str) -> None:
        """Deletes the release ``tag``: it leaves the list, and if it was the latest, the newest
        stable, published release left becomes the latest (none left: a 404)."""
        key = repo.lower()
        with self._lock:
            self._listed[key] = [r for r in self._listed.get(key, []) if r.get("tag_name") != tag]
            latest = self._releases.get(key)
            if latest is None or latest.release.get("tag_name") != tag:
                return
            stable = [
                r for r in _newest_first(self._listed[key]) if not r.get("draft") and not r.get("prerelease")
            ]
            if stable:
                self._releases[key] = _published(stable[0])
            else:
                self._releases.pop(key, None)

    def unpublish(self, repo: str) -> None:
        """Removes ``repo``'s latest release and its list: every request for them is a 404."""
        with self._lock:
            self._releases.pop(repo.lower(), None)
            self._listed.pop(repo.lower(), None)

    def published(self) -> dict[str, dict[str, Any]]:
        """Each repository's latest release, a copy."""
        with self._lock:
            return {repo: copy.deepcopy(p.release) for repo, p in self._releases.items()}

    def etag_of(self, repo: str) -> str | None:
        """The ETag a plain request for ``repo`` gets, or None without a release."""
        with self._lock:
            published = self._releases.get(repo.lower())
        return None if published is None else published.etag

    def latest(self, repo: str) -> Published | None:
        """What ``repo``'s latest release is answered with, or None without one."""
        with self._lock:
            return self._releases.get(repo.lower())

    def listing(self, repo: str, per_page: int) -> Published | None:
        """The first ``per_page`` of ``repo``'s release list, or None if it has never had one."""
        with self._lock:
            if repo.lower() not in self._listed:
                return None
            body = json_bytes(_newest_first(self._listed[repo.lower()])[:per_page])
        return Published({}, body, etag(body))

    def find_asset(self, repo: str, asset_id: int) -> tuple[dict[str, Any], bytes | None] | None:
        """``repo``'s asset ``asset_id`` in any release it lists, and the bytes published for it."""
        with self._lock:
            latest = self._releases.get(repo.lower())
            releases = [
                r for r in self._listed.get(repo.lower(), []) if latest is None or r is not latest.release
            ]
            files = latest.files if latest is not None else {}
            for release in ([latest.release] if latest is not None else []) + releases:
                for asset in release.get("assets") or []:
                    if isinstance(asset, dict) and asset.get("id") == asset_id:
                        return copy.deepcopy(asset), files.get(str(asset.get("name")))
        return None

    def _list_add(self, repo: str, release: dict[str, Any]) -> None:
        listed = self._listed.setdefault(repo.lower(), [])
        listed[:] = [r for r in listed if r.get("tag_name") != release.get("tag_name")]
        listed.append(release)


def _newest_first(releases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Newest first, as GitHub lists them (a release without a time, a draft, first).
    return sorted(releases, key=lambda r: str(r.get("published_at") or "~"), reverse=True)


def with_foreign_assets(published: Published, prefix: str) -> Published:
    """The release with every asset's ``browser_download_url`` under ``prefix``."""
    release = copy.deepcopy(published.release)
    for asset in release.get("assets") or []:
        if isinstance(asset, dict):
            asset["browser_download_url"] = prefix + str(asset.get("name", "download"))
    return _published(release)

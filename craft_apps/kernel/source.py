"""What the poller asks of a release source, and the answers it gets back.

The poller is written against this module only; GitHub (``craft_apps.github``) implements it.
A source never raises: every answer is one of the outcomes here. ``Source`` is what a poller
process is built with; an ``UpdaterSource`` also reads a release's Tauri updater files.
Nothing here does I/O. See docs/poller.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from craft_apps.kernel.domain import Release, UpdaterFile

# A release holds at most 1,000 assets (GitHub's own limit, GitHub Docs "About releases"); an
# answer listing more is served with its first 1,000 and the rest dropped as ``over_limit``.
MAX_ASSETS = 1000

# Why an asset of an answer is not served (``Fetched.dropped``), as the metrics and
# craft_apps_status label it.
DROP_REASONS = (
    "link_host",  # its link is on another host than GITHUB_WEB_URL's: that setting is likely wrong
    "link_elsewhere",  # its link is on GitHub's host but outside the repository's release files
    "bad_name",  # no file name, or one we would not hand to a user's file system
    "bad_size",  # no size, or one a JSON client can't read exactly
    "not_an_asset",  # an entry of the list that is not an object
    "over_limit",  # past MAX_ASSETS
)


@dataclass(frozen=True)
class Fetched:
    """The latest release; ``release`` is None when the source has none (GitHub's 404: no
    published release, or no such repository). ``moved_to``: the source answered for this
    repository instead (a rename). ``dropped``: the assets of the answer not served, by reason
    (``DROP_REASONS``)."""

    release: Release | None
    etag: str | None
    moved_to: str | None = None
    dropped: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class NotModified:
    """The ``ETag`` sent still matches: what the caller has is current. Only ever the answer to a
    request that sent one; a 304 to a request without it is ``Failed``."""


@dataclass(frozen=True)
class RateLimited:
    """The source refused for quota; no request should be made before ``retry_at_ms`` if known."""

    retry_at_ms: int | None


@dataclass(frozen=True)
class Failed:
    """Nothing usable came back; ``reason`` is one line, safe to log. ``setting`` names the
    setting to check when GitHub lacked or refused the credentials (a key of ``conf.SETTINGS``,
    never a value); None for any other failure."""

    reason: str
    setting: str | None = None


FetchOutcome = Fetched | NotModified | RateLimited | Failed


@dataclass(frozen=True)
class ListedRelease:
    """One release of a list, with the assets of it not served by reason (``DROP_REASONS``)."""

    release: Release
    dropped: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class ListFetched:
    """A repository's recent releases, in the source's order (newest first), drafts left out;
    empty when it has none (or no such repository). ``refused``: one line for each release
    the rules refused whole, safe to log."""

    releases: tuple[ListedRelease, ...]
    etag: str | None
    refused: tuple[str, ...] = ()


ListOutcome = ListFetched | NotModified | RateLimited | Failed


class ReleaseSource(Protocol):
    """Asks for a repository's latest release, revalidating ``etag`` when given; never raises."""

    def fetch_latest_release(self, repo: str, etag: str | None) -> FetchOutcome: ...


class ReleaseListSource(Protocol):
    """Asks for a repository's ``per_page`` most recent releases (published and prereleases),
    revalidating ``etag`` when given; never raises. A 304 is ``NotModified`` as for the latest."""

    def fetch_releases(self, repo: str, etag: str | None, *, per_page: int) -> ListOutcome: ...


class ReleaseRules(Protocol):
    """Judges a stored release of ``repo`` again as if the source had just sent it: what today's
    rules wouldn't serve is dropped or rebuilt, and a release they refuse whole is None."""

    def rejudge(self, release: Release, repo: str, web_url: str) -> Release | None: ...


@dataclass(frozen=True)
class UpdaterFetched:
    """A release's updater files as read from its small files (``latest.json`` or the ``.sig``
    files), after ``downloads`` downloads; ``refused``: one line for each file or platform
    the rules left out, safe to log (a release is still served without them)."""

    files: tuple[UpdaterFile, ...]
    downloads: int
    refused: tuple[str, ...] = ()


@dataclass(frozen=True)
class UpdaterFailed:
    """A download of a release's small files failed after ``downloads`` downloads (the failed
    one included); asked again on a later round. ``reason`` is one line, safe to log."""

    reason: str
    downloads: int


UpdaterOutcome = UpdaterFetched | UpdaterFailed


@runtime_checkable
class UpdaterSource(Protocol):
    """Reads a release's files for the app's own Tauri updater; never raises.
    ``updater_downloads`` is how many downloads ``fetch_updater`` costs (0: the release has
    none of those files, and there is nothing to fetch)."""

    def updater_downloads(self, release: Release) -> int: ...

    def fetch_updater(self, release: Release) -> UpdaterOutcome: ...


class Source(ReleaseSource, ReleaseListSource, ReleaseRules, Protocol):
    """A source, its release list and the rules its releases are judged by
    (``craft_apps.github.GitHubClient``)."""

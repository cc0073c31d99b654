"""The typed objects every tier shares: releases, apps, channels and the rules on them.

They mirror the reference's ``release_info.rs`` types and know nothing of HTTP, SQLite or Redis.
Instants the poller keeps are Unix milliseconds; ``published_at`` stays a ``datetime``.
See docs/architecture.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from craft_apps.kernel.compat import StrEnum


class CraftAppOs(StrEnum):
    WINDOWS = "windows"
    MACOS = "macos"
    LINUX = "linux"
    FREEBSD = "freebsd"
    WEB = "web"  # the browser build


class CraftAppArch(StrEnum):
    X64 = "x64"
    X86 = "x86"
    ARM64 = "arm64"
    UNIVERSAL = "universal"  # macOS universal binary


class CraftAppPackageType(StrEnum):
    MSI = "msi"
    PORTABLE_ZIP = "portable_zip"
    DMG = "dmg"
    CLI_ZIP = "cli_zip"
    APP_IMAGE = "app_image"
    APP_IMAGE_ZSYNC = "app_image_zsync"
    DEB = "deb"
    RPM = "rpm"
    FLATPAK = "flatpak"
    TAR_GZ = "tar_gz"
    WEB_ZIP = "web_zip"


@dataclass(frozen=True, slots=True)
class AssetPlatform:
    os: CraftAppOs
    arch: CraftAppArch | None  # None for builds that are not for one CPU (the web build)
    package_type: CraftAppPackageType


@dataclass(frozen=True, slots=True)
class ReleaseAsset:
    name: str
    size_bytes: int
    download_url: str
    sha256: str | None  # lowercase hex, when GitHub published a digest
    platform: AssetPlatform | None  # None when the name doesn't follow the naming scheme
    asset_id: int | None = None  # GitHub's id of the asset: kept for a private app's only


@dataclass(frozen=True, slots=True)
class UpdaterFile:
    """One platform's bundle for the app's own Tauri updater (docs/tauri.md)."""

    platform: str  # Tauri's key: windows-x86_64, windows-x86_64-msi, darwin-aarch64, ...
    url: str
    signature: str  # the .sig file's text, as the app's own key made it


@dataclass(frozen=True, slots=True)
class Release:
    tag: str
    version: str
    name: str
    published_at: datetime | None
    html_url: str
    prerelease: bool
    notes_markdown: str
    assets: tuple[ReleaseAsset, ...] = ()
    updater: tuple[UpdaterFile, ...] = ()  # from latest.json or the .sig files; () when none


# Git sets no length on a tag, but it keeps each ref as a file, and a file name over 255 bytes is
# refused by the usual filesystems (ext4, APFS, NTFS); GitHub's tags live within that. So 255
# UTF-8 bytes, not fewer: changesets-style tags (``@scope/package@1.2.3-rc.1``) run long.
MAX_TAG_BYTES = 255
# What ``git check-ref-format`` refuses in a name, beyond spaces and controls.
_GIT_REFUSED_IN_TAG = re.compile(r"\.\.|@\{|//|[~^:?*\[\\]|^/|/$|\.$|^@$|(^|/)\.|\.lock(/|$)")


def tag_problem(tag: str) -> str | None:
    """Why ``tag`` can't be a release's git tag, or None: the one rule for the tags GitHub
    answers and the tags operators type (a release control's). Empty, over ``MAX_TAG_BYTES``,
    spaces or control characters (which would also drive a terminal that prints it), or a name
    git refuses, which also keeps a tag from climbing out of a path or a link built from it."""
    if not tag:
        return "the release has no tag"
    size = len(tag.encode("utf-8", errors="surrogatepass"))
    if size > MAX_TAG_BYTES:
        return f"the tag is {size} bytes long, over {MAX_TAG_BYTES}"
    if not tag.isprintable() or any(c.isspace() for c in tag):
        return "the tag holds spaces or control characters"
    if _GIT_REFUSED_IN_TAG.search(tag):
        return "the tag is not a name git allows ('..', a part starting with '.', ...)"
    return None


MAX_HISTORY = 100  # releases kept in one app's history: bounded, whatever a writer hands over
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def newest_first(releases: Sequence[Release]) -> tuple[Release, ...]:
    """One release per tag (the first given wins), newest first by ``published_at`` (a release
    without one last), at most ``MAX_HISTORY``: the order of every stored history."""
    seen: set[str] = set()
    unique = []
    for release in releases:
        if release.tag not in seen:
            seen.add(release.tag)
            unique.append(release)
    unique.sort(key=lambda release: release.published_at or _EPOCH, reverse=True)  # stable
    return tuple(unique[:MAX_HISTORY])


@dataclass(frozen=True, slots=True)
class HistoryFetch:
    """Where an app's history came from: GitHub's release list's ETag and fetch time (None when
    it was only assembled from releases seen one by one) and the repository it is of."""

    etag: str | None = None
    fetched_ms: int | None = None
    repo: str | None = None


@dataclass(frozen=True, slots=True)
class AppSpec:
    """One configured app: its key (lowercase machine name), display name and GitHub repo;
    ``private``: its releases are served through this server (``PRIVATE_APPS``)."""

    key: str
    name: str
    repo: str
    private: bool = False


# What a stored time, count and ETag may be, wherever an app's state is stored (the host's state
# file and the fleet's Redis hashes both hold them, and both read them as untrusted input).
MAX_TIME_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z, the last instant we can write
MAX_COUNT = 2**32 - 1  # the reference pods keep counts as u32
MAX_ETAG_CHARS = 512  # GitHub's are about 70; an ETag goes back to GitHub in a header
MAX_REPO_CHARS = 140  # owner (39) / name (100)
MAX_ASSET_ID = 2**53 - 1  # GitHub's ids are JSON numbers: what a double holds exactly


def is_stored_time(value: object) -> bool:
    """A Unix-millisecond instant after the epoch and no later than year 9999."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_TIME_MS


def is_stored_count(value: object) -> bool:
    """A count of failures or troubled rounds: 0 to 2^32 - 1."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def is_stored_etag(value: object) -> bool:
    """An ETag we can send back in ``If-None-Match``: printable text on one line, bounded."""
    return isinstance(value, str) and 0 < len(value) <= MAX_ETAG_CHARS and value.isprintable()


def is_stored_repo(value: object) -> bool:
    """A recorded ``owner/name``: one slash between two non-empty parts of printable text."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_REPO_CHARS or not value.isprintable():
        return False
    owner, _, name = value.partition("/")
    return bool(owner and name) and "/" not in name and " " not in value


def newer_wins(stored_ms: int | None, incoming_ms: int | None, *, min_gap_ms: int = 0) -> bool:
    """Whether an entry stamped ``incoming_ms`` replaces one stamped ``stored_ms``.

    Nothing goes back in time: anything replaces an entry without a time, an entry without a
    time replaces nothing that has one, and otherwise the incoming entry must be at least
    ``min_gap_ms`` later (0: the same instant replaces, so a writer may rewrite its own entry;
    1: only a strictly newer one). The host's state file, the merge of the fleet's entries, and
    the fleet's guarded writes (the WATCH path in Python, ``guarded_write.lua`` its twin) all
    decide with this rule.
    """
    if stored_ms is None:
        return True
    return incoming_ms is not None and incoming_ms >= stored_ms + min_gap_ms


def same_repo(a: str, b: str) -> bool:
    """Whether two ``owner/name`` spellings name one repository, as GitHub compares them: without
    regard to (ASCII) case. Every comparison of a stored repository with a configured one uses it."""
    return a.lower() == b.lower()


def release_page_is_of(release: Release, repo: str, web_url: str) -> bool:
    """Whether the release's page lies in ``repo``'s releases on ``web_url``. Parsing rebuilds
    any other page under the repository it was asked about, so a stored release names the
    repository it was fetched for even when the row or hash that holds it doesn't."""
    prefix = f"{web_url.rstrip('/')}/"
    page = release.html_url
    if not page.startswith(prefix):
        return False
    owner, _, rest = page[len(prefix) :].partition("/")
    name, _, rest = rest.partition("/")
    return bool(owner and name) and same_repo(f"{owner}/{name}", repo) and rest.startswith("releases/")


@dataclass(slots=True)
class AppState:
    """What one host knows about one app.

    ``latest_release`` is None both before the first fetch and when the repository has no
    release; ``fetched_ms`` tells the two apart. ``failed_ms``/``failures`` only count while the
    failure is newer than the last fetch. ``repo`` is the repository the fetch (release, ETag and
    time) is of; None when its writer did not record one (0.2, or a 0.2 host's later write).
    """

    latest_release: Release | None = None
    fetched_ms: int | None = None
    etag: str | None = None
    failed_ms: int | None = None
    failures: int = 0
    repo: str | None = None

    def has_fetch(self) -> bool:
        """Whether any part of a fetch is held (a time, a release or an ETag)."""
        return self.fetched_ms is not None or self.latest_release is not None or self.etag is not None

    def fetch_is_of(self, repo: str, web_url: str) -> bool:
        """Whether the fetch held is ``repo``'s and may be served, revalidated and shared as its.
        A recorded repository decides; an unrecorded one is ``repo``'s only when the release's
        page says so (a fetch without a release, or without a page in ``repo``, is not: it is
        asked about again, at once and without its ETag, which costs one request)."""
        if self.repo is not None:
            return same_repo(self.repo, repo)
        return self.latest_release is not None and release_page_is_of(self.latest_release, repo, web_url)

    def as_state_of(self, repo: str, web_url: str) -> AppState:
        """This state as ``repo``'s, recorded so: the same when its fetch is ``repo``'s (or there
        is none and no other repository is recorded), otherwise nothing at all, failures
        included, for they were of the other repository too."""
        if self.has_fetch() and not self.fetch_is_of(repo, web_url):
            return AppState(repo=repo)
        if self.repo is not None and not same_repo(self.repo, repo):
            return AppState(repo=repo)
        return self if self.repo == repo else replace(self, repo=repo)

    def is_failing(self) -> bool:
        if self.failed_ms is None:
            return False
        return self.fetched_ms is None or self.failed_ms > self.fetched_ms


class PollMode(StrEnum):
    """How a poller's tick works; the host's counters and the metrics name the last tick's."""

    COORDINATED = "coordinated"  # with the fleet: shared releases, claims and backoff in Redis
    STANDALONE = "standalone"  # alone, same rules: coordination is off or Redis can't be read

    @classmethod
    def choose(cls, coordination_enabled: bool, shared_state_readable: bool) -> PollMode:
        if coordination_enabled and shared_state_readable:
            return cls.COORDINATED
        return cls.STANDALONE


class Channel(StrEnum):
    """A channel launchers ask for (``release_info?channel=``), and what it serves; the one
    place a channel is defined (``serving`` applies it, the admin and the docs list them).

    Stable serves GitHub's latest release of each app. Beta serves, to each app whose beta
    channel is on (``AppChannel``), the newest of that and the app's history, prereleases
    included (``versions.newest``), and its controls choose among prereleases too.
    """

    STABLE = "stable"
    BETA = "beta"

    @classmethod
    def chosen_per_app(cls) -> tuple[Channel, ...]:
        """The channels an operator turns on app by app (``AppChannel``): all but stable."""
        return tuple(c for c in cls if c is not cls.STABLE)

    @property
    def serves_history(self) -> bool:
        """Whether an app it is on for is served the newest of its latest and its history."""
        return self is not Channel.STABLE

    @property
    def prereleases(self) -> bool:
        """Whether the controls on it may fall back to a prerelease of the history."""
        return self is not Channel.STABLE


@dataclass(frozen=True, init=False)
class ChannelApps:
    """Which apps each channel chosen per app (``Channel.chosen_per_app``) is on for, as the
    ``AppChannel`` rows say; stable is on for every app and takes no set. Made from
    ``{channel: app keys}``; a channel left out is on for none. Equal sets, equal objects."""

    on: tuple[tuple[Channel, frozenset[str]], ...]  # each channel chosen per app, in order

    def __init__(self, on: Mapping[Channel, Iterable[str]] | None = None) -> None:
        given = dict(on or {})
        if Channel.STABLE in given:
            raise ValueError("stable is on for every app: only a channel chosen per app takes a set")
        sets = tuple((c, frozenset(given.pop(c, ()))) for c in Channel.chosen_per_app())
        if given:
            raise ValueError(f"not channels: {sorted(map(str, given))}")
        object.__setattr__(self, "on", sets)

    def apps_on(self, channel: Channel) -> frozenset[str]:
        """The keys of the apps ``channel`` is on for (a channel chosen per app)."""
        for chosen, apps in self.on:
            if chosen == channel:
                return apps
        raise ValueError(f"{channel} is on for every app: it has no set")

    def is_on(self, channel: Channel, app_key: str) -> bool:
        """Whether ``channel`` is on for the app (stable: always)."""
        return channel is Channel.STABLE or app_key in self.apps_on(channel)


NO_CHANNEL_APPS = ChannelApps()  # every channel chosen per app on for none


@dataclass(frozen=True, slots=True)
class Backoff:
    """No request to GitHub before ``until_ms``; ``trouble`` counts troubled rounds in a row."""

    until_ms: int | None = None
    trouble: int = 0

    def is_active(self, now_ms: int) -> bool:
        return self.until_ms is not None and self.until_ms > now_ms


@dataclass(frozen=True, slots=True)
class Rollout:
    """A release being rolled out to a share of the launchers: a launcher whose own number
    (drawn once, 0-99) is below ``percentage`` takes ``release``; every other one stays on the
    app's ``latest_release``."""

    release: Release
    percentage: int  # 0-99: at 100 the release is the app's latest_release and this goes


@dataclass(frozen=True, slots=True)
class AppReleaseInfo:
    """One app as the endpoint lists it."""

    name: str
    repo: str
    latest_release: Release | None
    app_last_fetched: datetime | None
    rollout: Rollout | None = None  # listed only when an operator stages one (``controls``)


@dataclass(frozen=True, slots=True)
class ReleaseInfo:
    apps: dict[str, AppReleaseInfo] = field(default_factory=dict)  # sorted by key
    last_fetched: datetime | None = None


@dataclass(frozen=True)
class LeaseTiming:
    ttl_ms: int = 30_000
    retry_ms: int = 2_000  # how often a standby tries to acquire

    def __post_init__(self) -> None:
        for name in ("ttl_ms", "retry_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(
                    f"lease {name} must be a positive whole number of milliseconds, not {value!r}"
                )
        # The holder must give up before a standby may take over (deadline < TTL), and must get
        # more than one standby retry period to renew in.
        if not self.ttl_ms > self.renew_deadline_ms > 1.2 * self.retry_ms:
            raise ValueError(
                "lease timing needs TTL > renew deadline > 1.2 * retry; got TTL "
                f"{self.ttl_ms} ms, renew deadline {self.renew_deadline_ms} ms, retry {self.retry_ms} ms"
            )

    @property
    def renew_every_ms(self) -> int:
        return self.ttl_ms // 3

    @property
    def renew_deadline_ms(self) -> int:
        return self.ttl_ms * 2 // 3

    @property
    def lock_wait_s(self) -> float:
        """How long a write waits out another process's lock on the state file: a tenth of the
        TTL (3 s by default) lets a crowd of pollers starting together queue up, and still
        leaves a holder time to renew before its deadline."""
        return self.ttl_ms / 10_000


@dataclass(frozen=True, slots=True)
class GitHubQuota:
    """GitHub's rate-limit headers as last seen: requests left in the window, its size, when it
    resets and when the answer carrying them came (Unix ms)."""

    remaining: int
    limit: int
    reset_ms: int | None
    seen_ms: int

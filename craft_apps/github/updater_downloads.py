"""Downloads of a release's Tauri updater files (its ``latest.json`` or its ``.sig`` files).

``UpdaterDownloads.fetch(release)`` takes a release and returns ``UpdaterFetched`` (the files read
and how many downloads it took) or ``UpdaterFailed``; each file is at most ``DOWNLOAD_TIMEOUT_S``
and its size limit, fetched without the token (a private app's through the API, with it).
"""

from __future__ import annotations

import requests

from craft_apps.github.access import RepoAccess
from craft_apps.github.answers import echo, int_header, is_repo_name, read_at_most
from craft_apps.github.guarded_session import GuardedSession
from craft_apps.github.release_requests import GITHUB_API_VERSION
from craft_apps.kernel.domain import Release
from craft_apps.kernel.links import segments_under
from craft_apps.kernel.source import Failed, UpdaterFailed, UpdaterFetched, UpdaterOutcome
from craft_apps.tauri.files import (
    Download,
    UpdaterRejected,
    from_signatures,
    read_manifest,
    updater_plan,
)
from craft_apps.tauri.names import MANIFEST_NAME

# A small file of a release (latest.json, a .sig) takes at most this long, redirects, connects
# and every read included, whatever the client's total timeout: a round downloads a few of them.
DOWNLOAD_TIMEOUT_S = 10.0


class UpdaterDownloads:
    """The updater files' downloads over a ``GuardedSession``, within their own deadline."""

    def __init__(
        self,
        session: GuardedSession,
        access: RepoAccess,
        *,
        urls: tuple[str, str],
        timeouts: tuple[float, float],
        user_agent: str,
    ) -> None:
        self._session = session
        self._access = access
        self._api_url, self._web_url = urls
        self._timeout = min(timeouts[1], DOWNLOAD_TIMEOUT_S)
        self._connect = min(timeouts[0], self._timeout)
        self._user_agent = user_agent

    def fetch(self, release: Release) -> UpdaterOutcome:
        """The release's updater files, one download each as ``updater_plan`` lists them."""
        plan = updater_plan(release)
        texts: dict[str, bytes] = {}
        for count, download in enumerate(plan, start=1):
            body = self._download(download)
            if isinstance(body, Failed):
                return UpdaterFailed(self._access.scrub(f"{download.name}: {body.reason}"), count)
            texts[download.name] = body
        if [download.name for download in plan] == [MANIFEST_NAME]:
            try:
                read = read_manifest(texts[MANIFEST_NAME], release, self._web_url)
            except UpdaterRejected as rejected:
                return UpdaterFetched((), len(plan), (rejected.reason,))
        else:
            read = from_signatures(texts, release)
        return UpdaterFetched(read.files, len(plan), read.refused)

    def _download(self, download: Download) -> bytes | Failed:
        """One small file: at most ``download.limit`` bytes within ``DOWNLOAD_TIMEOUT_S``,
        following redirects (GitHub sends downloads to its file host) but never off https. A
        private app's file is asked of the API with the token (``_private_download``)."""
        headers = {"User-Agent": self._user_agent, "Accept": "application/octet-stream"}
        url = download.url
        if download.asset_id is not None:
            private = self._private_download(download.url, download.asset_id)
            if isinstance(private, Failed):
                return private
            url, headers["Authorization"] = private
            headers["X-GitHub-Api-Version"] = GITHUB_API_VERSION

        def read(response: requests.Response) -> bytes | Failed:
            return _small_file(response, download.limit)

        body = self._session.get(
            url, headers, seconds=self._timeout, connect=self._connect, api_only=False, read=read
        )
        return body

    def _private_download(self, link: str, asset_id: int) -> tuple[str, str] | Failed:
        """The API's URL of a private app's asset (its repository read from ``link``, which
        the parser accepted as the release's own) and the ``Authorization`` to ask it with, or
        why it can't be asked for."""
        segments = segments_under(link, f"{self._web_url}/")
        if segments is None or len(segments) < 2:
            return Failed("the file's link names no repository")
        repo = f"{segments[0]}/{segments[1]}"
        if not self._access.is_private(repo) or not is_repo_name(repo):
            return Failed("the file is not of a private app")
        authorization = self._access.authorization(repo)
        if authorization is None:
            return self._access.no_credentials(repo)
        return f"{self._api_url}/repos/{repo}/releases/assets/{asset_id}", authorization


def _small_file(response: requests.Response, limit: int) -> bytes | Failed:
    """The answer's body, or why it isn't one: not 200, or over ``limit`` bytes."""
    if response.status_code != 200:
        return Failed(f"HTTP {response.status_code} {echo(response.reason or '', 80)}".rstrip())
    declared = int_header(response.headers.get("Content-Length"))
    if declared is not None and declared > limit:
        return Failed(f"too large: {declared} bytes declared, over {limit}")
    body = read_at_most(response, limit)
    return Failed(f"too large: over {limit} bytes") if body is None else body

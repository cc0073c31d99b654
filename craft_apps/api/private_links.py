"""A private app's links: every download URL handed out points at this server's asset view.

``served_privately(info, apps)`` takes an answer's release info and the configured apps and
returns it with each private app's asset ``download_url`` and Tauri updater file ``url`` made the
path of ``api.private_assets``' view (on ``CDN_PUBLIC_URL`` when set); public apps are returned
as they are. Nothing here does I/O. See docs/private.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from craft_apps.kernel.domain import AppReleaseInfo, AppSpec, Release, ReleaseAsset, ReleaseInfo

PathOf = Callable[[str, int, str], str]  # (app key, asset id, file name) -> the view's path


def asset_path(app_key: str, asset_id: int, name: str) -> str:
    """The asset view's path for this site (``craft_apps:private_asset``)."""
    from django.urls import NoReverseMatch, reverse

    kwargs = {"app_key": app_key, "asset_id": asset_id, "name": name}
    try:
        return reverse("craft_apps:private_asset", kwargs=kwargs)
    except NoReverseMatch:  # the site routes the views without the app's namespace
        return reverse("private_asset", kwargs=kwargs)


def asset_link(public_url: str | None) -> PathOf:
    """The asset view's URL on ``public_url`` (``CDN_PUBLIC_URL``); its path when that is None."""
    if public_url is None:
        return asset_path
    base = public_url.rstrip("/")
    return lambda app_key, asset_id, name: base + asset_path(app_key, asset_id, name)


def served_privately(
    info: ReleaseInfo, apps: Iterable[AppSpec], path_of: PathOf | None = None
) -> ReleaseInfo:
    """``info`` with the links of every private app's releases pointing at the asset view
    (by default on ``CDN_PUBLIC_URL``, ``asset_link``).

    GitHub answers an anonymous download of a private repository's file with a 404, hence the
    view, which redirects to the short-lived URL GitHub gives for that asset. Every link handed out
    changes: the answer's, the download links', the downloads page's and the Tauri updater's. An
    asset stored without GitHub's id (a release fetched before the app was marked private) can't be
    asked for, so it is left out until the poller reads the release again.
    """
    private = {app.key for app in apps if app.private}
    if not private.intersection(info.apps):
        return info
    if path_of is None:
        from craft_apps.conf import app_settings

        path_of = asset_link(app_settings.CDN_PUBLIC_URL)
    listed = {
        key: _app_privately(key, app, path_of) if key in private else app for key, app in info.apps.items()
    }
    return replace(info, apps=listed)


def _app_privately(key: str, app: AppReleaseInfo, path_of: PathOf) -> AppReleaseInfo:
    latest = None if app.latest_release is None else release_privately(key, app.latest_release, path_of)
    rollout = app.rollout
    if rollout is not None:
        rollout = replace(rollout, release=release_privately(key, rollout.release, path_of))
    return replace(app, latest_release=latest, rollout=rollout)


def release_privately(app_key: str, release: Release, path_of: PathOf) -> Release:
    """``release`` with each asset's link the asset view's (assets without an id left out) and
    each updater file's link the view's link of the asset it named (others left out)."""
    assets: list[ReleaseAsset] = []
    moved: dict[str, str] = {}
    for asset in release.assets:
        if asset.asset_id is None:
            continue
        path = path_of(app_key, asset.asset_id, asset.name)
        moved[asset.download_url] = path
        assets.append(replace(asset, download_url=path))
    updater = tuple(replace(file, url=moved[file.url]) for file in release.updater if file.url in moved)
    return replace(release, assets=tuple(assets), updater=updater)


def find_asset(info: ReleaseInfo, app_key: str, asset_id: int, name: str) -> ReleaseAsset | None:
    """The asset ``asset_id`` named ``name`` of a release ``info`` serves ``app_key``
    (its latest or its rollout's), or None."""
    app = info.apps.get(app_key)
    if app is None:
        return None
    releases = [app.latest_release, app.rollout.release if app.rollout is not None else None]
    for release in releases:
        for asset in release.assets if release is not None else ():
            if asset.asset_id == asset_id and asset.name == name:
                return asset
    return None

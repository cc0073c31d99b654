"""``GET``/``HEAD /v1/craft_apps/download/<app_key>/<os>/<arch>[/<package_type>]``: a stable link
to a file of an app's latest release.

``choose(assets, os, arch, package_type)`` returns the file to link, or None (the one "which
file" rule: the redirect and the downloads page both call it). ``respond`` answers ``302`` to
that file's ``download_url``, else ``404`` ``{"success": false, "error": "<one line>"}``, ``400``
for an unknown ``?channel=``; its docstring holds the rest. See docs/downloads.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers
from rest_framework.views import APIView

from craft_apps.api.caching import FRESH_FOR_A_MINUTE, NOT_CACHEABLE
from craft_apps.api.channels import ChannelRefused, each_chosen, requested_channel, schema_parameter
from craft_apps.api.runtime import runtime
from craft_apps.kernel.domain import (
    AssetPlatform,
    CraftAppArch,
    CraftAppOs,
    CraftAppPackageType,
    ReleaseAsset,
    ReleaseInfo,
)
from craft_apps.kernel.text import quoted

# Package types tried in this order when the request names none. The macOS command-line tools
# (cli_zip) and AppImage update data (app_image_zsync) are never chosen on their own.
PREFERRED_PACKAGES: dict[CraftAppOs, tuple[CraftAppPackageType, ...]] = {
    CraftAppOs.WINDOWS: (CraftAppPackageType.MSI, CraftAppPackageType.PORTABLE_ZIP),
    CraftAppOs.MACOS: (CraftAppPackageType.DMG,),
    CraftAppOs.LINUX: (
        CraftAppPackageType.APP_IMAGE,
        CraftAppPackageType.DEB,
        CraftAppPackageType.RPM,
        CraftAppPackageType.TAR_GZ,
        CraftAppPackageType.FLATPAK,
    ),
    CraftAppOs.FREEBSD: (CraftAppPackageType.TAR_GZ,),
    CraftAppOs.WEB: (),  # the browser build has no CPU, so no <arch> names it
}
# CPUs tried in this order when the CPU is unknown (the page, for a card not of the visitor's).
_UNKNOWN_CPU_ORDER: dict[CraftAppOs, tuple[CraftAppArch, ...]] = {
    CraftAppOs.MACOS: (CraftAppArch.UNIVERSAL, CraftAppArch.ARM64, CraftAppArch.X64),
}
_DEFAULT_CPU_ORDER = (CraftAppArch.X64, CraftAppArch.ARM64, CraftAppArch.X86)


def arch_order(os: CraftAppOs, arch: CraftAppArch | None) -> tuple[CraftAppArch, ...]:
    """The CPUs whose builds serve ``arch`` on ``os``, best first.

    On macOS a universal build comes before the exact CPU's; elsewhere only the exact CPU fits.
    """
    if arch is None:
        return _UNKNOWN_CPU_ORDER.get(os, _DEFAULT_CPU_ORDER)
    if os is CraftAppOs.MACOS and arch is not CraftAppArch.UNIVERSAL:
        return (CraftAppArch.UNIVERSAL, arch)
    return (arch,)


def choose(
    assets: Iterable[ReleaseAsset],
    os: CraftAppOs,
    arch: CraftAppArch | None,
    package_type: CraftAppPackageType | None = None,
) -> ReleaseAsset | None:
    """The file for ``os``/``arch``: CPUs in ``arch_order``, and for each CPU the package types
    in ``PREFERRED_PACKAGES`` order (only ``package_type`` when given); the first file wins."""
    by_platform: dict[AssetPlatform, ReleaseAsset] = {}
    for asset in assets:
        if asset.platform is not None:
            by_platform.setdefault(asset.platform, asset)
    packages = (package_type,) if package_type is not None else PREFERRED_PACKAGES[os]
    for cpu in arch_order(os, arch):
        for package in packages:
            found = by_platform.get(AssetPlatform(os, cpu, package))
            if found is not None:
                return found
    return None


# --- Looking a download up -----------------------------------------------------------------------


@dataclass(frozen=True)
class Missing:
    """Why there is nothing to redirect to: one line, and whether a cache may keep the answer."""

    reason: str
    cacheable: bool = True


E = TypeVar("E", bound=Enum)


def find_download(
    info: ReleaseInfo, app_key: str, os: str, arch: str, package_type: str | None = None
) -> ReleaseAsset | Missing:
    """The file the path names in ``info``, or why there is none (checked in path order)."""
    app = info.apps.get(app_key)
    if app is None:
        return Missing(f"no app {shown(app_key)} is configured")
    os_member = _member(CraftAppOs, os, "os")
    arch_member = _member(CraftAppArch, arch, "arch")
    package_member = (
        None if package_type is None else _member(CraftAppPackageType, package_type, "package type")
    )
    for member in (os_member, arch_member, package_member):
        if isinstance(member, Missing):
            return member
    assert isinstance(os_member, CraftAppOs) and isinstance(arch_member, CraftAppArch)
    assert package_member is None or isinstance(package_member, CraftAppPackageType)
    if app.app_last_fetched is None:
        return Missing(f"{app.name} has not been fetched from GitHub yet; try again in a minute", False)
    release = app.latest_release
    if release is None:
        return Missing(f"{app.name} has no published release")
    found = choose(release.assets, os_member, arch_member, package_member)
    if found is not None:
        return found
    wanted = f"{os_member}/{arch_member}" + (f" {package_member}" if package_member else "")
    return Missing(f"{app.name} {release.version} has no {wanted} file")


def _member(enum: type[E], value: str, what: str) -> E | Missing:
    try:
        return enum(value)
    except ValueError:
        spellings = ", ".join(member.value for member in enum)
        return Missing(f"{what} {shown(value)} is unknown; one of: {spellings}")


def shown(value: str) -> str:
    """``value`` quoted for a one-line message (``text.quoted``)."""
    return quoted(value)


# --- HTTP --------------------------------------------------------------------------------------


def refused(request: HttpRequest, reason: str, status: int, *, cacheable: bool = True) -> HttpResponse:
    """``{"success": false, "error": reason}`` with ``status``: what the endpoints answer a
    request they can't serve (``cacheable``: a cache may keep it a minute)."""
    body = json.dumps({"success": False, "error": reason}, ensure_ascii=False).encode()
    response = HttpResponse(
        b"" if request.method == "HEAD" else body, status=status, content_type="application/json"
    )
    response["Cache-Control"] = FRESH_FOR_A_MINUTE if cacheable else NOT_CACHEABLE
    return response


def respond(
    request: HttpRequest, app_key: str, os: str, arch: str, package_type: str | None = None
) -> HttpResponse:
    """``302`` to the chosen file's ``download_url`` with ``Cache-Control: public, max-age=60``;
    otherwise ``404`` with ``{"success": false, "error": "<one line>"}`` (``no-store`` while the
    app was never fetched, so no cache keeps a cold host's miss). Never a 500. ``?channel=beta``
    redirects to a file of the release the beta channel's answer lists (``channels``); an
    unknown channel is a 400 of the same form as the 404.

    The release comes from the endpoint's per-process answer (``runtime().answers``), so a
    redirect costs what an endpoint request costs, and the only URLs ever redirected to are the
    ``download_url`` of stored assets, which the release parser accepted (links into the
    repository's own releases).
    """
    if request.method not in ("GET", "HEAD"):
        response = HttpResponse(status=405)
        response["Allow"] = "GET, HEAD"
        return response
    channel = requested_channel(request)
    if isinstance(channel, ChannelRefused):
        return refused(request, channel.reason, 400)
    found = find_download(runtime().answers.answer(channel).release_info, app_key, os, arch, package_type)
    if isinstance(found, Missing):
        return refused(request, found.reason, 404, cacheable=found.cacheable)
    response = HttpResponse(status=302)
    response["Location"] = found.download_url
    response["Cache-Control"] = FRESH_FOR_A_MINUTE
    return response


# Without it the docs' generated example of this answer says `"success": true`.
@extend_schema_field({"type": "boolean", "example": False})
class _AlwaysFalse(serializers.BooleanField):
    pass


class CraftAppsDownloadErrorSerializer(serializers.Serializer):  # type: ignore[type-arg]
    success = _AlwaysFalse(help_text="Always false.")
    error = serializers.CharField(help_text="Why there is no file to download, in one line.")


def _enum_parameter(name: str, component: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(
        name,
        type={"$ref": f"#/components/schemas/{component}"},
        location=OpenApiParameter.PATH,
        description=description,
    )


_PATH_PARAMETERS = [
    OpenApiParameter(
        "app_key", str, OpenApiParameter.PATH, description="The app's key, as in `release_info.apps`."
    ),
    _enum_parameter("os", "CraftAppOs", "The operating system."),
    _enum_parameter(
        "arch", "CraftAppArch", "The CPU. On macOS a universal build is chosen before the exact CPU's."
    ),
    schema_parameter(
        "The channel whose release to link to: `stable` (or no parameter), "
        + each_chosen("or `{channel}` (the release `release_info?channel={channel}` lists)")
        + "."
    ),
]
_RESPONSES: dict[int, Any] = {
    302: OpenApiResponse(
        description="`Location` is the file on GitHub; `Cache-Control: public, max-age=60`."
    ),
    400: OpenApiResponse(
        CraftAppsDownloadErrorSerializer,
        description="An unknown channel, an empty one, or `channel` given more than once.",
    ),
    404: OpenApiResponse(
        CraftAppsDownloadErrorSerializer,
        description="No such app, platform or file, or the app was not fetched yet (then `no-store`).",
        examples=[
            OpenApiExample(
                "no such file",
                {"success": False, "error": "PhotoCraft 0.5.0 has no linux/arm64 file"},
            )
        ],
    ),
}
_RESPONSE_HEADERS = [
    OpenApiParameter(
        "Location", str, OpenApiParameter.HEADER, response=[302], description="The file's download URL."
    ),
    OpenApiParameter(
        "Cache-Control",
        str,
        OpenApiParameter.HEADER,
        response=True,
        description="`public, max-age=60`; `no-store` on a 404 for an app not fetched yet.",
    ),
]


class _DownloadView(APIView):
    """DRF only for the schema: requests go straight to ``respond`` (see ``views.ReleaseInfoView``)."""

    authentication_classes = ()
    permission_classes = ()

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return respond(request, **kwargs)


class DownloadView(_DownloadView):
    @extend_schema(
        tags=["Craft Apps"],
        operation_id="download_craft_app",
        summary="Redirect to the recommended file of an app's latest release for a platform",
        description="Windows: msi, then portable zip. macOS: dmg (universal before the exact CPU). "
        "Linux: AppImage, then deb, rpm, tar.gz, flatpak. FreeBSD: tar.gz. "
        "The `web` build has no CPU and no link here.",
        parameters=[*_PATH_PARAMETERS, *_RESPONSE_HEADERS],
        responses=_RESPONSES,
    )
    def get(self, request: HttpRequest, app_key: str, os: str, arch: str) -> HttpResponse:
        return respond(request, app_key, os, arch)


class DownloadPackageView(_DownloadView):
    @extend_schema(
        tags=["Craft Apps"],
        operation_id="download_craft_app_package",
        summary="Redirect to one kind of file of an app's latest release for a platform",
        description="As without `package_type`, but only files of that package type.",
        parameters=[
            *_PATH_PARAMETERS,
            _enum_parameter("package_type", "CraftAppPackageType", "The kind of file."),
            *_RESPONSE_HEADERS,
        ],
        responses=_RESPONSES,
    )
    def get(self, request: HttpRequest, app_key: str, os: str, arch: str, package_type: str) -> HttpResponse:
        return respond(request, app_key, os, arch, package_type)

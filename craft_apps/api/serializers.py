"""The HTTP edge: DRF serializers mirroring the contract's types, field for field.

Component names in the OpenAPI schema are the contract's type names (the class name without
``Serializer``). Optional fields are always present, as ``null``. Instants are RFC 3339 UTC with
milliseconds only when they are not zero (``craft_apps.kernel.instants``). The three enums are named
components (``CraftAppOs``, ``CraftAppArch``, ``CraftAppPackageType``), see ``schema``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from craft_apps.kernel.compat import StrEnum
from craft_apps.kernel.domain import CraftAppArch, CraftAppOs, CraftAppPackageType
from craft_apps.kernel.instants import format_rfc3339


@extend_schema_field(OpenApiTypes.DATETIME)
class TimestampField(serializers.Field):  # type: ignore[type-arg]
    """An aware datetime as RFC 3339 UTC ending in ``Z``; read-only."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("read_only", True)
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_representation(self, value: datetime) -> str:
        return format_rfc3339(value)


class EnumField(serializers.Field):  # type: ignore[type-arg]
    """A member of a string enum, as its snake_case value. ``schema`` names its component."""

    enum: type[StrEnum]

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("read_only", True)
        super().__init__(**kwargs)

    def to_representation(self, value: StrEnum) -> str:
        return self.enum(value).value


class CraftAppOsField(EnumField):
    enum = CraftAppOs


class CraftAppArchField(EnumField):
    enum = CraftAppArch


class CraftAppPackageTypeField(EnumField):
    enum = CraftAppPackageType


class CraftAppAssetPlatformSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """What an asset's file name says it is."""

    os = CraftAppOsField()
    arch = CraftAppArchField(
        allow_null=True, help_text="Absent for files that aren't for one CPU (the web build)."
    )
    package_type = CraftAppPackageTypeField()


class CraftAppReleaseAssetSerializer(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(help_text="File name (`photocraft-0.5.0-windows-x64.msi`).")
    size_bytes = serializers.IntegerField(min_value=0)
    download_url = serializers.CharField(
        help_text="`https://github.com/<repo>/releases/download/<tag>/<name>`."
    )
    sha256 = serializers.CharField(
        allow_null=True, help_text="Lowercase hex SHA-256, when GitHub published one for the file."
    )
    platform = CraftAppAssetPlatformSerializer(
        allow_null=True,
        help_text="What the file name says it is, when it follows the naming scheme "
        "`<app>-<version>-<os>-<arch>[-portable].<ext>` or the Tauri bundler's "
        "(`<Product>_<version>_x64_en-US.msi`, `_universal.dmg`, `_amd64.AppImage`, ...); null "
        "otherwise, and for files the enums have no value for (an NSIS setup, a `.sig`, `latest.json`).",
    )


class CraftAppReleaseSerializer(serializers.Serializer):  # type: ignore[type-arg]
    tag = serializers.CharField(help_text="Git tag (`v0.5.0`, `artcraft-v0.37.0`).")
    version = serializers.CharField(
        help_text="The SemVer version the tag names (`0.5.0`, `0.37.0`); for a tag that names "
        "none, the tag without its leading `v`."
    )
    name = serializers.CharField(help_text="Release title.")
    published_at = TimestampField()
    html_url = serializers.CharField(help_text="The release's page on GitHub.")
    prerelease = serializers.BooleanField()
    notes_markdown = serializers.CharField(help_text="Release notes (Markdown), at most 64 KiB.")
    assets = CraftAppReleaseAssetSerializer(many=True)


class CraftAppRolloutSerializer(serializers.Serializer):  # type: ignore[type-arg]
    release = CraftAppReleaseSerializer(help_text="The release being rolled out.")
    percentage = serializers.IntegerField(
        min_value=0,
        max_value=99,
        help_text="The share of launchers that take `release` now, 0-99. A launcher draws a whole "
        "number from 0 to 99 once, keeps it, and takes `release` while that number is below "
        "`percentage`; every other launcher stays on `latest_release`.",
    )


class CraftAppReleaseInfoSerializer(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField(help_text="Display name (`PhotoCraft`).")
    repo = serializers.CharField(help_text="GitHub repository, `organization/project`.")
    latest_release = CraftAppReleaseSerializer(
        allow_null=True,
        help_text="The latest published release; null when the repository has none or when it "
        "hasn't been fetched yet (see `app_last_fetched`).",
    )
    app_last_fetched = TimestampField(
        help_text="When this app's release was last fetched successfully; null if it never was."
    )
    rollout = CraftAppRolloutSerializer(
        required=False,
        help_text="Present only while the operator rolls a newer release out in stages: "
        "`latest_release` is then the release before it. Absent otherwise.",
    )

    def to_representation(self, instance: Any) -> Any:
        data = super().to_representation(instance)
        if data.get("rollout") is None:
            data.pop("rollout", None)  # absent, not null: the answer is as before rollouts
        return data


class CraftAppsReleaseInfoSerializer(serializers.Serializer):  # type: ignore[type-arg]
    apps = serializers.DictField(
        child=CraftAppReleaseInfoSerializer(),
        help_text="Keyed by app key, the app's lowercase machine name (`photocraft`, "
        "`artcraft-launcher`), in sorted order. Clients should ignore keys they don't know.",
    )
    last_fetched = TimestampField(
        help_text="The oldest `app_last_fetched`: every app's data is at least this fresh. "
        "Null until every app has been fetched."
    )


class CraftAppRenameSerializer(serializers.Serializer):  # type: ignore[type-arg]
    old_name = serializers.CharField()
    old_name_lower = serializers.CharField()
    new_name = serializers.CharField()
    new_name_lower = serializers.CharField()
    description = serializers.CharField()
    renamed_at = TimestampField()


class CraftAppRepoRenameSerializer(serializers.Serializer):  # type: ignore[type-arg]
    old_name = serializers.CharField(help_text="`organization/project` before.")
    new_name = serializers.CharField(help_text="`organization/project` after.")
    renamed_at = TimestampField()


class CraftAppsAnnouncementSerializer(serializers.Serializer):  # type: ignore[type-arg]
    title = serializers.CharField()
    body = serializers.CharField()
    created_at = TimestampField()


class CraftAppsAlertSerializer(serializers.Serializer):  # type: ignore[type-arg]
    title = serializers.CharField()
    body = serializers.CharField()
    maybe_web_link = serializers.URLField(allow_null=True, help_text="A page the popup can offer to open.")
    created_at = TimestampField()


class CraftAppsImportantNoticesSerializer(serializers.Serializer):  # type: ignore[type-arg]
    announcements = CraftAppsAnnouncementSerializer(many=True)
    alerts = CraftAppsAlertSerializer(many=True)


class GetCraftAppsReleaseInfoResponseSerializer(serializers.Serializer):  # type: ignore[type-arg]
    success = serializers.BooleanField()
    release_info = CraftAppsReleaseInfoSerializer()
    app_renames = CraftAppRenameSerializer(many=True, help_text="Apps that changed their name.")
    repo_renames = CraftAppRepoRenameSerializer(many=True, help_text="Apps whose GitHub repository moved.")
    important_notices = CraftAppsImportantNoticesSerializer()

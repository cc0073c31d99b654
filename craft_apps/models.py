"""Django finds an app's models here; they live in ``craft_apps.notices.models``."""

from craft_apps.notices.models import (
    Alert,
    Announcement,
    AppChannel,
    AppRename,
    NoticesVersion,
    ReleaseControl,
    RepoRename,
)

__all__ = [
    "Alert",
    "Announcement",
    "AppChannel",
    "AppRename",
    "NoticesVersion",
    "ReleaseControl",
    "RepoRename",
]

"""Django finds an app's models here; they live in ``craft_apps.content.models`` (and the
release policies in ``craft_apps.content.policy_models``)."""

from craft_apps.content.models import (
    Alert,
    Announcement,
    AppChannel,
    AppRename,
    NoticesVersion,
    ReleaseControl,
    RepoRename,
)
from craft_apps.content.policy_models import ReleasePolicy

__all__ = [
    "Alert",
    "Announcement",
    "AppChannel",
    "AppRename",
    "NoticesVersion",
    "ReleaseControl",
    "ReleasePolicy",
    "RepoRename",
]

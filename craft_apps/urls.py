from django.urls import path

from craft_apps.api import pages
from craft_apps.api.downloads import DownloadPackageView, DownloadView
from craft_apps.api.health import health
from craft_apps.api.metrics import metrics
from craft_apps.api.views import ReleaseInfoView
from craft_apps.api.webhook import github_webhook

app_name = "craft_apps"

DOWNLOAD = "v1/craft_apps/download/<str:app_key>/<str:os>/<str:arch>"

urlpatterns = [
    path("v1/craft_apps/release_info", ReleaseInfoView.as_view(), name="release_info"),
    path(DOWNLOAD, DownloadView.as_view(), name="download"),
    path(f"{DOWNLOAD}/<str:package_type>", DownloadPackageView.as_view(), name="download_package"),
    path("craft_apps/downloads/", pages.downloads_page, name="downloads"),
    path("craft_apps/downloads/<str:app_key>/", pages.app_downloads_page, name="app_downloads"),
    path("v1/craft_apps/health", health, name="health"),
    path("v1/craft_apps/metrics", metrics, name="metrics"),
    path("v1/craft_apps/github_webhook", github_webhook, name="github_webhook"),
]

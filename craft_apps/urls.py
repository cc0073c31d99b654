from django.urls import path

from craft_apps.api import pages
from craft_apps.api.downloads import DownloadPackageView, DownloadView
from craft_apps.api.private_assets import private_asset
from craft_apps.api.schema_views import GitHubWebhookView, HealthView, MetricsView, ReportsView
from craft_apps.api.views import ReleaseInfoView
from craft_apps.tauri.views import TauriUpdateView

app_name = "craft_apps"

DOWNLOAD = "v1/craft_apps/download/<str:app_key>/<str:os>/<str:arch>"
TAURI = "v1/craft_apps/updates/tauri/<str:app_key>/<str:target>/<str:arch>/<str:current_version>"

urlpatterns = [
    path("v1/craft_apps/release_info", ReleaseInfoView.as_view(), name="release_info"),
    path(DOWNLOAD, DownloadView.as_view(), name="download"),
    path(f"{DOWNLOAD}/<str:package_type>", DownloadPackageView.as_view(), name="download_package"),
    path(TAURI, TauriUpdateView.as_view(), name="tauri_update"),
    path("v1/craft_apps/assets/<str:app_key>/<int:asset_id>/<str:name>", private_asset, name="private_asset"),
    path("craft_apps/downloads/", pages.downloads_page, name="downloads"),
    path("craft_apps/downloads/<str:app_key>/", pages.app_downloads_page, name="app_downloads"),
    # Plain Django views with a DRF face for the OpenAPI schema only (api.schema_views).
    path("v1/craft_apps/health", HealthView.as_view(), name="health"),
    path("v1/craft_apps/metrics", MetricsView.as_view(), name="metrics"),
    path("v1/craft_apps/github_webhook", GitHubWebhookView.as_view(), name="github_webhook"),
    path("v1/craft_apps/reports", ReportsView.as_view(), name="reports"),
]

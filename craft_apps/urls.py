from django.urls import path

from craft_apps.api.health import health
from craft_apps.api.metrics import metrics
from craft_apps.api.views import ReleaseInfoView

app_name = "craft_apps"

urlpatterns = [
    path("v1/craft_apps/release_info", ReleaseInfoView.as_view(), name="release_info"),
    path("v1/craft_apps/health", health, name="health"),
    path("v1/craft_apps/metrics", metrics, name="metrics"),
]

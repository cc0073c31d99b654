from django.urls import path

from craft_apps.api.views import ReleaseInfoView
from craft_apps.api.webhook import github_webhook

app_name = "craft_apps"

urlpatterns = [
    path("v1/craft_apps/release_info", ReleaseInfoView.as_view(), name="release_info"),
    path("v1/craft_apps/github_webhook", github_webhook, name="github_webhook"),
]

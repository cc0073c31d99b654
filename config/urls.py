from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

urlpatterns = [
    path("", include("craft_apps.urls")),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path(
        "api/redoc/",
        # craft_apps's ReDoc page: drf-spectacular's without Google's fonts.
        SpectacularRedocView.as_view(url_name="schema", template_name="craft_apps/redoc.html"),
        name="redoc",
    ),
]

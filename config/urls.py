from django.contrib import admin
from django.urls import include, path
from django.views.generic import TemplateView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

urlpatterns = [
    # A page linking to everything the demo serves, so that / is not a bare 404.
    path("", TemplateView.as_view(template_name="demo/index.html"), name="home"),
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

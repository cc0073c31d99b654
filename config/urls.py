from pathlib import Path

from django.contrib import admin
from django.http import FileResponse, Http404, HttpRequest
from django.urls import include, path
from django.views.generic import TemplateView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

# The clone's documentation, which the landing page links to (the demo runs from a clone).
DOCS = Path(__file__).resolve().parent.parent / "docs"
DOC_PAGES = frozenset(page.stem for page in DOCS.glob("*.md"))


def doc_page(request: HttpRequest, name: str) -> FileResponse:
    """Serve a page of docs/ as its Markdown text."""
    if name not in DOC_PAGES:
        raise Http404("no such page in docs/")
    return FileResponse((DOCS / f"{name}.md").open("rb"), content_type="text/plain; charset=utf-8")


urlpatterns = [
    # A page linking to everything the demo serves, so that / is not a bare 404.
    path("", TemplateView.as_view(template_name="demo/index.html"), name="home"),
    path("", include("craft_apps.urls")),
    path("admin/", admin.site.urls),
    path("docs/<str:name>.md", doc_page, name="doc_page"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path(
        "api/redoc/",
        # craft_apps's ReDoc page: drf-spectacular's without Google's fonts.
        SpectacularRedocView.as_view(url_name="schema", template_name="craft_apps/redoc.html"),
        name="redoc",
    ),
]

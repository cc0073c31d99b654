"""The OpenAPI schema is pinned by a snapshot, like drf-spectacular's own ``assert_schema``.

To accept a deliberate change: ``UPDATE_SCHEMA_SNAPSHOT=1 .venv/bin/pytest tests/api/test_openapi.py``
and review the diff of ``tests/api/openapi_schema.yml``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiYamlRenderer
from drf_spectacular.validation import validate_schema

SNAPSHOT = Path(__file__).with_name("openapi_schema.yml")


def generate() -> dict[str, Any]:
    schema: dict[str, Any] = SchemaGenerator().get_schema(request=None, public=True)
    return schema


def test_the_schema_matches_the_snapshot():
    schema = generate()
    validate_schema(schema)
    rendered = OpenApiYamlRenderer().render(schema, renderer_context={}).decode()
    if os.environ.get("UPDATE_SCHEMA_SNAPSHOT") or not SNAPSHOT.exists():
        SNAPSHOT.write_text(rendered)
    assert rendered == SNAPSHOT.read_text()


def test_components_are_named_as_the_contract():
    components = generate()["components"]["schemas"]
    assert set(components) == {
        "GetCraftAppsReleaseInfoResponse",
        "CraftAppsReleaseInfo",
        "CraftAppReleaseInfo",
        "CraftAppRelease",
        "CraftAppReleaseAsset",
        "CraftAppAssetPlatform",
        "CraftAppRename",
        "CraftAppRepoRename",
        "CraftAppsImportantNotices",
        "CraftAppsAnnouncement",
        "CraftAppsAlert",
        "CraftAppOs",
        "CraftAppArch",
        "CraftAppPackageType",
        "CraftAppsDownloadError",
    }
    assert components["CraftAppPackageType"]["enum"] == [
        "msi", "portable_zip", "dmg", "cli_zip", "app_image", "app_image_zsync",
        "deb", "rpm", "flatpak", "tar_gz", "web_zip",
    ]  # fmt: skip
    apps = components["CraftAppsReleaseInfo"]["properties"]["apps"]
    assert apps["additionalProperties"] == {"$ref": "#/components/schemas/CraftAppReleaseInfo"}
    assert components["CraftAppsReleaseInfo"]["properties"]["last_fetched"]["nullable"] is True
    arch = components["CraftAppAssetPlatform"]["properties"]["arch"]
    assert arch["nullable"] is True
    assert arch["allOf"] == [{"$ref": "#/components/schemas/CraftAppArch"}]


def test_the_operation_is_tagged_and_documented():
    operation = generate()["paths"]["/v1/craft_apps/release_info"]["get"]
    assert operation["tags"] == ["Craft Apps"]
    assert operation["operationId"] == "get_craft_apps_release_info"
    response = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert response == {"$ref": "#/components/schemas/GetCraftAppsReleaseInfoResponse"}


def test_the_download_redirects_are_documented_with_the_contracts_enums():
    paths = generate()["paths"]
    short = paths["/v1/craft_apps/download/{app_key}/{os}/{arch}"]["get"]
    full = paths["/v1/craft_apps/download/{app_key}/{os}/{arch}/{package_type}"]["get"]
    assert (short["operationId"], full["operationId"]) == ("download_craft_app", "download_craft_app_package")
    parameters = {p["name"]: p["schema"] for p in full["parameters"]}
    assert parameters == {
        "app_key": {"type": "string"},
        "os": {"$ref": "#/components/schemas/CraftAppOs"},
        "arch": {"$ref": "#/components/schemas/CraftAppArch"},
        "package_type": {"$ref": "#/components/schemas/CraftAppPackageType"},
    }
    for operation in (short, full):
        assert operation["tags"] == ["Craft Apps"]
        assert set(operation["responses"]) == {"302", "404"}
        assert set(operation["responses"]["302"]["headers"]) == {"Location", "Cache-Control"}
        error = operation["responses"]["404"]["content"]["application/json"]["schema"]
        assert error == {"$ref": "#/components/schemas/CraftAppsDownloadError"}


def test_the_docs_pages_are_served(client):
    assert client.get("/api/schema/").status_code == 200
    assert client.get("/api/docs/").status_code == 200
    assert client.get("/api/redoc/").status_code == 200


def test_the_snapshot_is_valid_yaml():
    assert yaml.safe_load(SNAPSHOT.read_text())["info"]["title"] == "Craft Apps release info"

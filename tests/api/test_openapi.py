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
        "CraftAppRollout",
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
        "CraftAppsTauriUpdate",
        "CraftAppsHealth",
        "CraftAppsHealthProblem",
        "CraftAppsHealthStatusEnum",
        "CraftAppsWebhookAnswer",
        "CraftAppsWebhookAnswerStatusEnum",
        "CraftAppsReport",
        "CraftAppsReportAnswer",
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
        "channel": {"type": "string", "enum": ["beta", "stable"], "default": "stable"},
    }
    for operation in (short, full):
        assert operation["tags"] == ["Craft Apps"]
        assert set(operation["responses"]) == {"302", "400", "404"}
        assert set(operation["responses"]["302"]["headers"]) == {"Location", "Cache-Control"}
        error = operation["responses"]["404"]["content"]["application/json"]["schema"]
        assert error == {"$ref": "#/components/schemas/CraftAppsDownloadError"}


def test_the_docs_pages_are_served(client):
    assert client.get("/api/schema/").status_code == 200
    assert client.get("/api/docs/").status_code == 200
    assert client.get("/api/redoc/").status_code == 200


def test_the_snapshot_is_valid_yaml():
    assert yaml.safe_load(SNAPSHOT.read_text())["info"]["title"] == "Craft Apps release info"


def test_the_docs_settings_describe_the_api_and_list_no_schema_endpoint_nor_authorization():
    schema = generate()
    assert schema["info"]["version"] == "1.0.0" and "ArtCraft Launcher" in schema["info"]["description"]
    assert not any(path.startswith("/api/") for path in schema["paths"]), "the schema endpoint itself"
    # No security scheme: Swagger UI shows an Authorize button only when there is one.
    assert "securitySchemes" not in schema.get("components", {}) and "security" not in schema


def test_the_404_example_of_a_download_says_success_false(client):
    paths = generate()["paths"]
    for path in (
        "/v1/craft_apps/download/{app_key}/{os}/{arch}",
        "/v1/craft_apps/download/{app_key}/{os}/{arch}/{package_type}",
    ):
        content = paths[path]["get"]["responses"]["404"]["content"]["application/json"]
        assert [example["value"]["success"] for example in content["examples"].values()] == [False]
    error = generate()["components"]["schemas"]["CraftAppsDownloadError"]["properties"]["success"]
    assert error["example"] is False  # the generated example, where a page builds its own
    answer = client.get("/v1/craft_apps/download/nosuchapp/windows/x64").json()
    assert answer["success"] is False and set(answer) == {"success", "error"}


def test_health_metrics_and_the_webhook_are_in_the_schema_as_they_answer(client):
    paths = generate()["paths"]
    health = paths["/v1/craft_apps/health"]["get"]
    assert set(health["responses"]) == {"200", "400", "503"}
    assert [p["name"] for p in health["parameters"]] == ["rules"]
    documented = generate()["components"]["schemas"]["CraftAppsHealth"]["properties"]
    answer = client.get("/v1/craft_apps/health")
    assert answer.status_code in (200, 503) and set(answer.json()) == set(documented)
    assert set(paths["/v1/craft_apps/metrics"]["get"]["responses"]) == {"200", "401", "404"}
    webhook = paths["/v1/craft_apps/github_webhook"]
    assert set(webhook) == {"post"}
    assert {"200", "202", "401", "404"} <= set(webhook["post"]["responses"])
    assert "X-Hub-Signature-256" in [p["name"] for p in webhook["post"]["parameters"]]
    # The DRF face is the schema's only: the plain views still answer (405, 404 unconfigured).
    assert client.post("/v1/craft_apps/health").status_code == 405
    assert client.get("/v1/craft_apps/github_webhook").status_code == 404


def test_the_release_info_documents_the_channel_parameter():
    operation = generate()["paths"]["/v1/craft_apps/release_info"]["get"]
    [parameter] = operation["parameters"]
    assert (parameter["name"], parameter["in"], parameter.get("required", False)) == (
        "channel",
        "query",
        False,
    )
    assert parameter["schema"] == {"type": "string", "enum": ["beta", "stable"], "default": "stable"}
    assert "prereleases" in parameter["description"]
    error = operation["responses"]["400"]["content"]["application/json"]["schema"]
    assert error == {"$ref": "#/components/schemas/CraftAppsDownloadError"}

"""Health, metrics, the GitHub webhook and the install reports in the OpenAPI schema.

Those four are plain Django views (no DRF on their request path: no content negotiation, no
authentication classes, nothing a site's ``REST_FRAMEWORK`` defaults could change). drf-spectacular
documents DRF views only, so each gets a DRF face here whose ``dispatch`` hands the request
straight to the plain view, as ``downloads._DownloadView`` does; ``craft_apps.urls`` mounts these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.views import APIView

from craft_apps.api.health import health
from craft_apps.api.metrics import metrics
from craft_apps.api.webhook import SIGNATURE_HEADER, github_webhook
from craft_apps.conf import describe
from craft_apps.reports.report import OUTCOMES
from craft_apps.reports.view import MAX_BODY_BYTES, reports

TAG = "Craft Apps host"


class CraftAppsHealthProblemSerializer(serializers.Serializer):  # type: ignore[type-arg]
    rule = serializers.CharField(help_text="The rule that fails: `state_file`, `poller`, `apps`, ...")
    detail = serializers.CharField(help_text="What is wrong, in one line.")


class CraftAppsHealthSerializer(serializers.Serializer):  # type: ignore[type-arg]
    status = serializers.ChoiceField(["ok", "unhealthy"])
    rules = serializers.ListField(child=serializers.CharField(), help_text="The rules applied.")
    problems = CraftAppsHealthProblemSerializer(many=True, help_text="Empty when healthy.")


class CraftAppsWebhookAnswerSerializer(serializers.Serializer):  # type: ignore[type-arg]
    status = serializers.ChoiceField(["pong", "due", "duplicate", "ignored"], required=False)
    apps = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="With `due`: the apps asked about now."
    )
    warning = serializers.CharField(required=False, help_text="With `pong`: the hook sends no releases.")
    error = serializers.CharField(required=False, help_text="Why the delivery was refused.")


class _PlainView(APIView):
    """DRF only for the schema: the request goes to ``plain`` untouched."""

    authentication_classes = ()
    permission_classes = ()
    plain: Callable[[HttpRequest], HttpResponse]

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return type(self).plain(request)


class HealthView(_PlainView):
    plain = staticmethod(health)

    @extend_schema(
        tags=[TAG],
        operation_id="craft_apps_health",
        summary="Whether this host is healthy (for probes and load balancers)",
        description="Reads only this host's state file; never cached (`no-store`). The rules are "
        "`craft_apps_status --check`'s.",
        parameters=[
            OpenApiParameter(
                "rules",
                str,
                OpenApiParameter.QUERY,
                description="Comma-separated rules to apply (default: all), e.g. `state_file,poller`.",
            )
        ],
        responses={
            200: OpenApiResponse(CraftAppsHealthSerializer, description="Healthy: no problems."),
            503: OpenApiResponse(CraftAppsHealthSerializer, description="Unhealthy: the problems."),
            400: OpenApiResponse(CraftAppsHealthSerializer, description="`rules` names an unknown rule."),
        },
    )
    def get(self, request: HttpRequest) -> HttpResponse:
        return health(request)


class MetricsView(_PlainView):
    plain = staticmethod(metrics)

    @extend_schema(
        tags=[TAG],
        operation_id="craft_apps_metrics",
        summary="Prometheus metrics of this host",
        description=f"Only with {describe('METRICS_TOKEN')} set (404 without), as "
        "`Authorization: Bearer <token>`.",
        responses={
            (200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="The text exposition."),
            (401, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="No or a wrong token."),
            (404, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="Metrics are not enabled."),
        },
    )
    def get(self, request: HttpRequest) -> HttpResponse:
        return metrics(request)


class GitHubWebhookView(_PlainView):
    plain = staticmethod(github_webhook)

    @extend_schema(
        tags=[TAG],
        operation_id="craft_apps_github_webhook",
        summary="GitHub's release events: ask GitHub about that app now",
        description=f"Only with {describe('GITHUB_WEBHOOK_SECRET')} set (404 without). The body is "
        f"GitHub's JSON payload, signed in `{SIGNATURE_HEADER}`; only its `action` and "
        "`repository.full_name` are read.",
        request={"application/json": OpenApiTypes.OBJECT},
        parameters=[
            OpenApiParameter(
                SIGNATURE_HEADER,
                str,
                OpenApiParameter.HEADER,
                required=True,
                description="`sha256=<HMAC-SHA256 of the body with the secret, hex>`",
            ),
            OpenApiParameter(
                "X-GitHub-Event",
                str,
                OpenApiParameter.HEADER,
                description="`release` or `ping`; others are ignored.",
            ),
            OpenApiParameter(
                "X-GitHub-Delivery",
                str,
                OpenApiParameter.HEADER,
                description="The delivery's id; a repeated one does nothing more.",
            ),
        ],
        responses={
            200: OpenApiResponse(CraftAppsWebhookAnswerSerializer, description="`ping`: `pong`."),
            202: OpenApiResponse(
                CraftAppsWebhookAnswerSerializer,
                description="`due` (the apps), `duplicate` or `ignored`.",
                examples=[OpenApiExample("due", {"status": "due", "apps": ["photocraft"]})],
            ),
            400: OpenApiResponse(CraftAppsWebhookAnswerSerializer, description="Not a JSON object."),
            401: OpenApiResponse(
                CraftAppsWebhookAnswerSerializer, description="The signature doesn't match."
            ),
            404: OpenApiResponse(description="The webhook is not enabled."),
            413: OpenApiResponse(CraftAppsWebhookAnswerSerializer, description="The body is over 1 MiB."),
            503: OpenApiResponse(
                CraftAppsWebhookAnswerSerializer, description="Couldn't be recorded; GitHub may redeliver."
            ),
        },
    )
    def post(self, request: HttpRequest) -> HttpResponse:
        return github_webhook(request)


class CraftAppsReportSerializer(serializers.Serializer):  # type: ignore[type-arg]
    app_key = serializers.CharField(help_text="An app this host serves.")
    install_id = serializers.UUIDField(help_text="A random UUID the client made once and keeps.")
    version = serializers.CharField(help_text="The SemVer version the update went to.")
    outcome = serializers.CharField(
        help_text=f"One of {', '.join(f'`{o}`' for o in OUTCOMES)}; `crashed`: the new version failed to "
        "start or crashed in its first minutes."
    )
    previous_version = serializers.CharField(required=False, allow_null=True)
    channel = serializers.CharField(required=False, allow_null=True)
    os = serializers.CharField(required=False, allow_null=True)
    arch = serializers.CharField(required=False, allow_null=True)


class CraftAppsReportAnswerSerializer(serializers.Serializer):  # type: ignore[type-arg]
    success = serializers.BooleanField()
    error = serializers.CharField(required=False, help_text="Why the report was refused, in one line.")


class ReportsView(_PlainView):
    plain = staticmethod(reports)

    @extend_schema(
        tags=[TAG],
        operation_id="craft_apps_report",
        summary="A launcher's or an app's report of how an update went",
        description="Unauthenticated; the report is queued and counted in the background "
        "(docs/reports.md). No address, user agent or install id is kept.",
        request={"application/json": CraftAppsReportSerializer},
        responses={
            202: OpenApiResponse(CraftAppsReportAnswerSerializer, description="Accepted."),
            400: OpenApiResponse(CraftAppsReportAnswerSerializer, description="Not a valid report."),
            413: OpenApiResponse(
                CraftAppsReportAnswerSerializer, description=f"The body is over {MAX_BODY_BYTES} bytes."
            ),
        },
    )
    def post(self, request: HttpRequest) -> HttpResponse:
        return reports(request)

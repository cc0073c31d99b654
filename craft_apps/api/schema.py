"""OpenAPI: the contract's three enums as named components (``CraftAppOs``, ``CraftAppArch``,
``CraftAppPackageType``) without any setting in the host site (no ``ENUM_NAME_OVERRIDES``).

drf-spectacular finds these extensions when this module is imported (``apps.ready``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import ResolvedComponent

from craft_apps.api.serializers import EnumField

_DESCRIPTIONS = {
    "CraftAppOs": "Operating system; `web` is the browser build.",
    "CraftAppArch": "CPU architecture; `universal` is a macOS universal binary.",
    "CraftAppPackageType": "How the file is packaged.",
}


class _EnumFieldExtension(OpenApiSerializerFieldExtension):  # type: ignore[no-untyped-call]
    target_class = "craft_apps.api.serializers.EnumField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        field: EnumField = self.target
        name = field.enum.__name__
        component = ResolvedComponent(  # type: ignore[no-untyped-call]
            name=name,
            type=ResolvedComponent.SCHEMA,
            object=name,
            schema={
                "type": "string",
                "enum": [member.value for member in field.enum],
                "description": _DESCRIPTIONS.get(name, ""),
            },
        )
        auto_schema.registry.register_on_missing(component)
        ref: dict[str, Any] = component.ref
        return ref

from django.apps import AppConfig


class CraftAppsConfig(AppConfig):
    name = "craft_apps"
    verbose_name = "Craft apps"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the system checks and the OpenAPI extensions.
        from craft_apps import checks  # noqa: F401
        from craft_apps.api import schema  # noqa: F401

from django.apps import AppConfig


class CraftAppsConfig(AppConfig):
    name = "craft_apps"
    verbose_name = "Craft Apps release info"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from craft_apps import checks  # noqa: F401  (registers the system checks)

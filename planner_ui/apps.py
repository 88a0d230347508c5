from django.apps import AppConfig


class PlannerUiConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "planner_ui"
    verbose_name = "Planner runs"

    def ready(self) -> None:
        from planner_ui.services.logins import connect_signals

        connect_signals()

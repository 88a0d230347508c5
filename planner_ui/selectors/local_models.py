"""The local models an admin has asked for, as the submission form shows them."""

from __future__ import annotations

from dataclasses import dataclass

from planner_ui.models import LocalModel


@dataclass(frozen=True)
class LocalModelsPanel:
    models: list[LocalModel]
    # Whether the page should look again soon: a model is on its way up or down.
    changing: bool


def local_models_panel() -> LocalModelsPanel:
    models = list(LocalModel.objects.all())
    changing = any((m.wanted and m.state != LocalModel.State.READY) or m.stopping for m in models)
    return LocalModelsPanel(models, changing)


def ready_local_routes() -> list[str]:
    """The routes of the local models that answer now, for the form's suggestions."""
    return [m.route for m in LocalModel.objects.filter(state=LocalModel.State.READY)]

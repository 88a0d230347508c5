"""`{% fleet_banner %}`: a warning on a page whose work needs a worker, when none has said lately
that it is alive (or Redis, where they say so, does not answer). The tag asks for itself, so a
page shows it with one line and its view passes nothing."""

from __future__ import annotations

from typing import Any

from django import template
from django.conf import settings

from planner_ui.selectors.workers import seconds_since_sweep, sweep_is_late, workers_alive

register = template.Library()


@register.inclusion_tag("planner_ui/_fleet_banner.html")
def fleet_banner(run: Any = None) -> dict[str, Any]:
    """For the form, or for `run`'s page while the run is not finished (a finished one waits
    for nobody)."""
    if run is not None and run.is_finished:
        return {"show": False}
    workers = workers_alive()
    # With workers alive but no sweep for a while, a lost worker's steps wait for nobody.
    since = seconds_since_sweep() if workers else None
    sweep_late = sweep_is_late(since)
    return {
        "show": not workers or sweep_late,
        "sweep_late": sweep_late,
        "since_sweep_s": round(since or 0),
        "redis_down": workers is None,
        "run": run,
        "worker_alive_s": round(settings.AGENTSITE_WORKER_ALIVE_S),
    }

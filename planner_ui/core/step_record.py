"""A step as a run holds it: the one shape the API, the report and the plan graphs give.

The others are parts of it, not copies: the API's step (api.schemas.StepOut, the steps of
selectors.run_json) is StepSummary; the report's step is the whole StepRecord with its tool
calls; a graph's node is NODE_FIELDS of it (graph_node) with what the graph marks on it. Its id
is `id` throughout; only the database row (models.Step) says `step_id`, since `id` is its
primary key there. What a planner writes is core.plan.PlanStep, with the bounds a plan obeys.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from .plan import PlanStep


class Tokens(BaseModel):
    input: int
    output: int


class StepSummary(BaseModel):
    # What the API gives of each step of a run (no docstring: the API document would show it).

    id: str
    role: str
    status: str
    started_at: str | None  # ISO 8601, as the rest of the run's times
    finished_at: str | None
    output: str
    error: str
    model_calls: int
    tokens: Tokens
    cost_usd: str  # a decimal written out, so no digit is lost on the way


class StepRecord(StepSummary):
    """The whole step: its summary, its fields in the plan and where it ran."""

    title: str
    instruction: str
    tools: list[str]
    depends_on: list[str]
    attempts: int
    worker: str
    model: str


# What a plan graph's node shows of a step; static/planner_ui/graph.js reads these names.
NODE_FIELDS = frozenset({"id", "title", "role", "tools", "status"})


def graph_node(step: StepRecord | PlanStep, **marks: Any) -> dict[str, Any]:
    """A node of the plan graph for `step` (a plan's step has no status yet: give it in
    `marks`), with what the graph marks on it."""
    return {**step.model_dump(include=set(NODE_FIELDS)), **marks}

"""The plan schema: defined once here, reused by the planner prompt, the API and validation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .schema_bounds import bounded

MAX_STEPS = 60
MAX_INSTRUCTION_CHARS = 4000
# Tighter bounds for what a model writes than for what a person may: with a grammar, a small
# model fills whatever room the schema leaves it.
MODEL_MAX_STEPS = 20
MODEL_MAX_INSTRUCTION_CHARS = 1200
STEP_ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,39}$"

# The executor roles a plan may assign; each has its own system prompt (planner_ui.agents.roles).
ROLES: tuple[str, ...] = ("researcher", "coder", "critic", "writer")

# The id of the step that agentsite itself appends to every plan to assemble the deliverable.
SYNTHESIS_STEP_ID = "synthesis"
SYNTHESIZER_ROLE = "synthesizer"


class PlanStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=STEP_ID_PATTERN, description="Short unique slug, e.g. 'research-a'.")
    title: str = Field(min_length=1, max_length=120, description="A few words for the graph.")
    instruction: str = Field(
        max_length=MAX_INSTRUCTION_CHARS,
        description="What the executor must do, self-contained: it sees nothing else but the "
        "outputs of the steps it depends on.",
    )
    role: str = Field(description="Executor role: " + ", ".join(ROLES) + ".")
    tools: list[str] = Field(default_factory=list, description="Tools this step may call.")
    depends_on: list[str] = Field(
        default_factory=list, description="Ids of steps whose outputs this step needs."
    )


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    goal: str = Field(default="", max_length=500, description="One sentence: the deliverable.")
    steps: list[PlanStep] = Field(description="The steps, as a DAG through depends_on.")

    def step(self, step_id: str) -> PlanStep:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)

    def dependencies(self) -> dict[str, list[str]]:
        return {s.id: list(s.depends_on) for s in self.steps}


def plan_json_schema(tool_names: Sequence[str] = ()) -> dict[str, Any]:
    """JSON Schema of a plan, for structured output and for the API docs: bounded throughout
    (core.schema_bounds), with the roles (and, given them, the tools) as a choice, so a
    grammar-constrained model can neither run on nor make one up."""
    schema = Plan.model_json_schema()
    step = schema["$defs"]["PlanStep"]["properties"]
    step["role"]["enum"] = list(ROLES)
    names: dict[str, Any] = {"enum": sorted(tool_names)} if tool_names else {"maxLength": 64}
    step["tools"].update(maxItems=20, items={"type": "string", **names})
    step["depends_on"].update(maxItems=MAX_STEPS, items={"type": "string", "maxLength": 40})
    step["id"]["maxLength"] = 40
    step["title"]["maxLength"] = 80
    step["instruction"]["maxLength"] = MODEL_MAX_INSTRUCTION_CHARS
    schema["properties"]["goal"]["maxLength"] = 300
    schema["properties"]["steps"]["maxItems"] = MODEL_MAX_STEPS
    return bounded(schema)

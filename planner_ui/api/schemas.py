"""What the API takes and gives, as pydantic schemas (the OpenAPI document is made from them).

A run is given in the shape of selectors.run_json, the one `runtask --json` prints; a new run
takes core.run_options.RunOptions, the form's options; plan edits are the editor's edits."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import Field

from planner_ui.core.bounds import RowId
from planner_ui.core.edits import (
    AddDependency,
    AddStep,
    DeleteStep,
    DependentsPolicy,
    Edit,
    RemoveDependency,
    UpdateStep,
)
from planner_ui.core.outcome import RunOutcome
from planner_ui.core.plan import MAX_STEPS
from planner_ui.core.step_record import StepSummary, Tokens

# Bounds for what a client may send: the same limits the pages have.
TEXT = 4000
NAME = 120


# A step of a run: the summary of the one step shape, core.step_record.
class StepOut(StepSummary):
    pass


class RunTokens(Tokens):
    cache_read: int
    cache_write: int


OUTCOME_DESCRIPTION = (
    "How the run ended, once it has: succeeded, succeeded_with_warnings (something was "
    "rejected, skipped, re-planned around or has an unknown outcome), failed or cancelled; "
    "null while it runs."
)


class RunTemplateOut(Schema):
    id: int | None = Field(description="The template's id; null once it was deleted.")
    name: str
    version: int | None = Field(description="The version the run was filled from.")
    values: dict[str, str] = Field(description="The values its parameters were filled with.")
    trigger: str = Field(description="What started it: form, api, webhook, command, schedule.")


class PlanExampleOut(Schema):
    kind: Literal["run", "template"]
    id: int
    number: int = Field(description="The run's plan version, or the template's version.")
    title: str


class RunOut(Schema):
    run_id: int
    task: str
    status: str
    outcome: RunOutcome | None = Field(description=OUTCOME_DESCRIPTION)
    outcome_reason: str = Field(description="Why, in one line; empty for a clean success.")
    created_at: str
    paused: bool
    plan_version: int | None = Field(description="The current plan version's number.")
    forked_from: int | None
    error: str
    planner_model: str
    executor_model: str
    routes: dict[str, str]
    allowed_hosts: list[str] = Field(
        description="Hosts a network read reaches without asking; a read elsewhere waits."
    )
    steps: list[StepOut]
    result: str
    warnings: list[str]
    tokens: RunTokens
    model_calls: int
    cost_usd: str
    template: RunTemplateOut | None = Field(
        description="The plan template the run was started from, if it was."
    )
    started_from: int | None = Field(
        description="The past run whose plan this run started from, skipping the planner."
    )
    plan_examples: list[PlanExampleOut] = Field(
        description="The past plans the planner was given as examples for this task."
    )


class RunSummary(Schema):
    run_id: int
    task: str
    status: str
    outcome: RunOutcome | None = Field(description=OUTCOME_DESCRIPTION)
    outcome_reason: str
    created_at: datetime
    cost_usd: str
    template_id: int | None = Field(description="The template the run was started from.")


class PlanVersionOut(Schema):
    number: int
    author: str
    note: str
    created_at: datetime
    approved: bool
    plan: dict[str, Any]


class _UpdateIn(Schema):
    op: Literal["update"]
    step_id: str = Field(max_length=40)
    title: str | None = Field(None, max_length=NAME)
    instruction: str | None = Field(None, max_length=TEXT)
    role: str | None = Field(None, max_length=40)
    tools: list[str] | None = Field(None, max_length=20)


class _AddIn(Schema):
    op: Literal["add"]
    step_id: str = Field("", max_length=40, description="Empty: made from the title.")
    title: str = Field(max_length=NAME)
    instruction: str = Field(max_length=TEXT)
    role: str = Field(max_length=40)
    tools: list[str] = Field(default_factory=list, max_length=20)
    depends_on: list[str] = Field(default_factory=list, max_length=MAX_STEPS)


class _DeleteIn(Schema):
    op: Literal["delete"]
    step_id: str = Field(max_length=40)
    dependents: DependentsPolicy = DependentsPolicy.RECONNECT


class _DependencyIn(Schema):
    op: Literal["add_dependency", "remove_dependency"]
    step_id: str = Field(max_length=40)
    depends_on: str = Field(max_length=40)


EditIn = Annotated[_UpdateIn | _AddIn | _DeleteIn | _DependencyIn, Field(discriminator="op")]


class PlanEditIn(Schema):
    base_version: RowId = Field(description="The version the edit was made against.")
    edit: EditIn


def edit_of(data: _UpdateIn | _AddIn | _DeleteIn | _DependencyIn) -> Edit:
    """The core's edit for what the client sent."""
    if isinstance(data, _UpdateIn):
        tools = None if data.tools is None else tuple(data.tools)
        return UpdateStep(data.step_id, data.title, data.instruction, data.role, tools)
    if isinstance(data, _AddIn):
        return AddStep(
            data.step_id,
            data.title,
            data.instruction,
            data.role,
            tuple(data.tools),
            tuple(data.depends_on),
        )
    if isinstance(data, _DeleteIn):
        return DeleteStep(data.step_id, data.dependents)
    if data.op == "add_dependency":
        return AddDependency(data.step_id, data.depends_on)
    return RemoveDependency(data.step_id, data.depends_on)


class PlanImportIn(Schema):
    base_version: RowId
    plan: dict[str, Any] = Field(description="A plan as the JSON download of a version.")


class ApproveIn(Schema):
    version: RowId = Field(description="The exact version to run; refused if it is not current.")


class StepRetryIn(Schema):
    instruction: str = Field("", max_length=TEXT, description="Empty: the instruction as it was.")
    downstream: bool = Field(True, description="Run the steps after it again too.")


class DiffOut(Schema):
    added: list[str]
    removed: list[str]
    changed: dict[str, dict[str, dict[str, Any]]] = Field(
        description="step id → field → {old, new}"
    )
    edges_added: list[tuple[str, str]]
    edges_removed: list[tuple[str, str]]
    goal_changed: tuple[str, str] | None


class ApprovalOut(Schema):
    id: int
    run_id: int
    step_id: str
    kind: str = Field(description='"call": approve or reject; "outcome": say what happened.')
    tool: str
    effect: str
    arguments: dict[str, Any]
    hosts: list[str] = Field(
        description="The hosts the call reaches that its run does not allow (why a read waits)."
    )
    state: str
    resolution: str
    decided_by: str | None
    reason: str
    created_at: datetime


class DecisionIn(Schema):
    decision: Literal["approve", "reject", "happened", "retry", "fail"] = Field(
        description='A call: approve or reject. An unknown outcome: "happened", "retry" (the '
        'same idempotency key) or "fail" the step.'
    )
    arguments: dict[str, Any] | None = Field(
        None, description="Approve with these arguments instead (validated like the model's)."
    )
    reason: str = Field("", max_length=2000)


class EventsOut(Schema):
    events: list[dict[str, Any]]
    last_seq: int = Field(description="Ask again with after=last_seq for what comes next.")

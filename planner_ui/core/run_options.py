"""What a person chooses when submitting a task: one schema for the form, `runtask` and the API.

Types only: services.runs.run_create checks the values against this installation (the task's
length, the models it can serve, the irreversible tools it has) and says what is wrong.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from .bounds import TokenBudget, UsdBudget
from .effects import PolicyMode
from .hosts import MAX_ALLOWED_HOSTS, MAX_HOST_ENTRY_CHARS


class RunOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str = Field(description="What the planner should plan for, in plain words.")
    auto_approve: bool = Field(False, description="Run the plan without reviewing it first.")
    routes: dict[str, str] = Field(
        default_factory=dict,
        description='Models by part: "planner", "executor", "executor:<role>", '
        '"synthesizer" → "provider:model"; the rest come from the settings.',
    )
    budget_tokens: TokenBudget | None = Field(
        None, description="Stop after this many tokens (in + out)."
    )
    budget_usd: UsdBudget | None = Field(None, description="Stop once the run cost this much.")
    tool_policy: str = Field(
        PolicyMode.ASK,
        description='Irreversible calls: "ask" a person, "auto" for auto_tools, or "dry_run".',
    )
    auto_tools: list[str] = Field(
        default_factory=list, description='With "auto": the tools to run without asking.'
    )
    replan_mode: str | None = Field(
        None, description='When a step fails: "auto", "review" or "off" (default: settings).'
    )
    max_replans: int | None = Field(None, description="Re-plans at most (0-10).")
    allowed_hosts: list[Annotated[str, Field(max_length=MAX_HOST_ENTRY_CHARS)]] | None = Field(
        None,
        max_length=MAX_ALLOWED_HOSTS,
        description='Hosts a network read may reach without asking ("example.com", '
        '"example.com:8080"); a read from any other waits for a person. Absent: the hosts the '
        "task names.",
    )

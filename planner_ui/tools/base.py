"""What a tool is: a name, a description, typed inputs as a pydantic model, and its effect."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError

from planner_ui.core.errors import ToolError
from planner_ui.providers.base import ToolSpec


@dataclass
class ToolContext:
    """What a tool may touch during one step of one run."""

    run_id: int
    step_id: str
    workspace: Path
    # Until approval gates exist (a later issue) irreversible calls need a run-level auto-approve.
    allow_irreversible: bool = False
    settings: dict[str, Any] = field(default_factory=dict)


class Tool(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    Input: ClassVar[type[BaseModel]]
    # An irreversible tool acts on the world outside the run (mail, posts, deletes, shell).
    irreversible: ClassVar[bool] = False

    def spec(self) -> ToolSpec:
        schema = self.Input.model_json_schema()
        schema.pop("title", None)
        return ToolSpec(name=self.name, description=self.description, input_schema=schema)

    def parse(self, arguments: Any) -> BaseModel:
        """Validate raw model arguments, naming each wrong argument and why."""
        if not isinstance(arguments, dict):
            raise ToolError(f"{self.name}: arguments must be a JSON object")
        try:
            return self.Input.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"'{'.'.join(str(p) for p in e['loc']) or 'arguments'}' {e['msg'].lower()}"
                for e in exc.errors()
            )
            raise ToolError(f"{self.name}: invalid arguments: {problems}") from exc

    def call(self, arguments: Any, ctx: ToolContext) -> str:
        args = self.parse(arguments)
        if self.irreversible and not ctx.allow_irreversible:
            raise ToolError(
                f"{self.name} is irreversible and this run was not started with auto-approve; "
                "the call was not made. Finish the step without it and say what you would "
                "have sent."
            )
        return self.run(args, ctx)

    @abstractmethod
    def run(self, args: Any, ctx: ToolContext) -> str:
        """Perform the call with validated arguments and return its result as text."""

"""What a tool is: a name, a description, typed inputs as a pydantic model, and its effect."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError

from planner_ui.core.effects import IRREVERSIBLE_EFFECTS, Effect
from planner_ui.core.errors import ArgumentsInvalid, ToolError
from planner_ui.core.hosts import Endpoint
from planner_ui.core.messages import ToolSpec
from planner_ui.core.schema_bounds import bounded

# The longest string argument the schemas sent to models allow (a whole file's content).
TOOL_MAX_STRING = 100_000

# Sends one plain-text email: (to, subject, body, extra headers). The services provide it, so the
# tools stay free of any web framework.
Mailer = Callable[[str, str, str, dict[str, str]], None]


@dataclass
class ToolContext:
    """What a tool may touch during one step of one run."""

    run_id: int
    step_id: str
    workspace: Path
    # Limits and the network allow-list, by the keys each tool documents.
    settings: dict[str, Any] = field(default_factory=dict)
    # Set by the executor's runner for each irreversible call (dataclasses.replace), so a tool
    # that reaches the outside can let the receiver drop a retried duplicate.
    idempotency_key: str = ""
    # How send_email reaches a mail server; None where no mail is set up.
    mailer: Mailer | None = None
    # The hosts (core.hosts entries) a network read may reach in this call: the run's list, and
    # the host of a call a person approved. None where no run's list applies (a tool on its own).
    allowed_hosts: tuple[str, ...] | None = None


class _DerivedFromEffect:
    """`irreversible`, read off the tool's effect so the two can never disagree (a command tool's
    effect is its instance's: it follows from the sandbox it runs in)."""

    def __get__(self, instance: Tool | None, owner: type[Tool]) -> bool:
        return (owner if instance is None else instance).effect in IRREVERSIBLE_EFFECTS


class Tool(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    Input: ClassVar[type[BaseModel]]
    # What a call does to the world; the executor's runner gates on it, never on the name.
    effect: ClassVar[Effect]
    irreversible = _DerivedFromEffect()
    # Whether a call connects to a host its arguments name: a step holding such a tool can
    # carry data out, so a revision that adds one waits for a person.
    reaches_network: ClassVar[bool] = False
    # The arguments that are URLs this process connects to (the network policy applies).
    url_arguments: ClassVar[tuple[str, ...]] = ()

    def spec(self) -> ToolSpec:
        # Bounded, so a model held to the schema by a grammar cannot run on inside an argument.
        schema = bounded(self.Input.model_json_schema(), max_string=TOOL_MAX_STRING)
        schema.pop("title", None)
        return ToolSpec(name=self.name, description=self.description, input_schema=schema)

    def parse(self, arguments: Any) -> BaseModel:
        """Validate raw model arguments, naming each wrong argument and why."""
        if not isinstance(arguments, dict):
            raise ToolError(f"{self.name}: arguments must be a JSON object")
        try:
            parsed = self.Input.model_validate(arguments)
        except ValidationError as exc:
            problems: dict[str, str] = {}
            said = []
            for e in exc.errors():
                where = ".".join(str(p) for p in e["loc"])
                said.append(f"'{where or 'arguments'}' {e['msg'].lower()}")
                problems.setdefault(where, said[-1])
            listed = "; ".join(said)
            raise ArgumentsInvalid(f"{self.name}: invalid arguments: {listed}", problems) from exc
        self.check(parsed)
        return parsed

    def check(self, args: Any) -> None:  # noqa: B027  most tools have nothing to add
        """What the tool refuses in arguments its schema lets through (ArgumentsInvalid, naming
        the argument): checked with the schema, before a person is asked and before a call."""

    def form_schema(self) -> dict[str, Any]:
        """The schema a person's form for this tool's arguments is made from: the model's."""
        return self.spec().input_schema

    def reaches(self, arguments: Any) -> list[Endpoint]:
        """The (host, port) pairs a call with these arguments connects to, for the gate to
        compare with the run's allowed hosts. Arguments the tool would refuse reach nothing."""
        return []

    def call(self, arguments: Any, ctx: ToolContext) -> str:
        """Validate and perform the call. Whether an irreversible call may happen at all is
        decided before this, by the executor's runner."""
        return self.run(self.parse(arguments), ctx)

    @abstractmethod
    def run(self, args: Any, ctx: ToolContext) -> str:
        """Perform the call with validated arguments and return its result as text."""

"""The small error hierarchy every layer above the core raises and records."""

from __future__ import annotations

from typing import Any


class AgentError(Exception):
    """Base of every error agentsite records on a run or a step."""


class PlanValidationError(AgentError):
    """A plan broke the schema or the DAG rules; `errors` lists every problem found."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("invalid plan: " + "; ".join(errors))

    def __reduce__(self) -> tuple[Any, ...]:
        # args hold the message, not the list: rebuild from the list when unpickled.
        return (type(self), (self.errors,))


class InvalidTransition(AgentError):
    """A run or step was asked to move to a status its current one does not allow."""


class ToolError(AgentError):
    """A tool refused its arguments or failed; the message goes back to the model as data."""


class ArgumentsInvalid(ToolError):
    """A tool refused its arguments; `problems` maps each wrong argument's path ("to",
    "items.0"; "" for the arguments as a whole) to why, so a form can show it at its field."""

    def __init__(self, message: str, problems: dict[str, str]) -> None:
        self.problems = problems
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.problems))


class ToolNotGranted(ToolError):
    """The model asked for a tool its step was not granted."""


class ProviderError(AgentError):
    """A model provider failed; `status` and `body` keep what the vendor said."""

    def __init__(self, message: str, *, status: int | None = None, body: str = "") -> None:
        self.status = status
        self.body = body
        super().__init__(message)


class ReplyCutOff(ProviderError):
    """The reply ran into its max_tokens while writing a tool call's arguments, and the server
    refused to send what it had (llama.cpp answers HTTP 500, "Failed to parse tool call
    arguments as JSON"). The same request would be cut off the same way: asking again only
    helps with more room."""


class StepFailed(AgentError):
    """An executor could not finish its step (iteration cap, refusal, provider error)."""


class MissingRunFile(StepFailed):
    """A step needs a file (its instruction names it, and it can only read it) that no step of
    the run wrote: it cannot do its work, and the run must not carry on as if it had."""


class ToolUnavailable(StepFailed):
    """A tool's server could not be used (it did not start, went away or did not answer): the
    step fails with the reason. `sent` says whether the request may have reached it."""

    def __init__(self, message: str, *, sent: bool = False) -> None:
        self.sent = sent
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unavailable, (str(self), self.sent))


def _unavailable(message: str, sent: bool) -> ToolUnavailable:
    return ToolUnavailable(message, sent=sent)


class RunStopped(AgentError):
    """The run stopped (budget spent, cancelled, failed elsewhere): no further model call."""


class ReplyUnusable(AgentError):
    """A model's reply cannot be used: it refused, was cut off or ran out of context."""


class PlanConflict(AgentError):
    """The plan changed since the person loaded it; `current` is the version to show instead."""

    def __init__(self, base: int, current: int) -> None:
        self.base = base
        self.current = current
        super().__init__(
            f"The plan changed since you opened it: you edited version {base}, but version "
            f"{current} is the current one now. Your change was not applied; here is the "
            "current plan."
        )

"""How a finished run ended, as a person should read it: the run's status says where it is in
its lifecycle, its outcome says whether what it delivered is whole.

A run whose steps all ended without failing has status `succeeded`; its outcome is
`succeeded_with_warnings` when something was lost on the way (a person rejected a call, a step
was skipped or dropped by a re-plan, a failed step was re-planned around, or nobody knows what
an irreversible call did), so a green badge never hides lost work. Like GitHub Actions' status
and conclusion: the status machine stays as it was, and clients that only read `status` keep
working.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from .status import RunStatus

# The one-line reason fits a table cell and a terminal line.
REASON_MAX_CHARS = 200
# How many steps or calls a reason names before it only counts the rest.
NAMED_IN_REASON = 2


class RunOutcome(StrEnum):
    SUCCEEDED = "succeeded"
    SUCCEEDED_WITH_WARNINGS = "succeeded_with_warnings"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def label(self) -> str:
        return OUTCOME_LABELS[self]


OUTCOME_LABELS: dict[RunOutcome, str] = {
    RunOutcome.SUCCEEDED: "succeeded",
    RunOutcome.SUCCEEDED_WITH_WARNINGS: "succeeded with warnings",
    RunOutcome.FAILED: "failed",
    RunOutcome.CANCELLED: "cancelled",
}


class LossKind(StrEnum):
    # Ordered as a reason names them: what a person decided first, then what the run did.
    REJECTED = "rejected"  # a person rejected an irreversible call: it was not made
    UNKNOWN = "unknown"  # an irreversible call's outcome is unknown
    REPLANNED_AROUND = "replanned_around"  # a step failed and a re-plan went around it
    SKIPPED = "skipped"  # a step was skipped or dropped by a re-plan, so it never ran
    DOUBTED = "doubted"  # a result stands with something in doubt (the synthesizer's figures)


@dataclass(frozen=True)
class Loss:
    """One thing a run that succeeded lost on the way. `tool` names the call (rejected or
    unknown); `detail` is the person's reason, the step's error or why it was skipped."""

    kind: LossKind
    step_id: str
    tool: str = ""
    detail: str = ""

    def sentence(self) -> str:
        """The loss in full, for the run page's list and the report."""
        why = f": {_one_line(self.detail, 300)}" if self.detail else ""
        match self.kind:
            case LossKind.REJECTED:
                return f"a call to {self.tool} in step '{self.step_id}' was rejected{why}"
            case LossKind.UNKNOWN:
                return (
                    f"nobody knows whether the call to {self.tool} in step '{self.step_id}' "
                    "happened"
                )
            case LossKind.REPLANNED_AROUND:
                return (
                    f"step '{self.step_id}' failed ({_one_line(self.detail, 300)}) and the "
                    "re-plan went around it: the deliverable may miss what it was for"
                )
            case LossKind.SKIPPED:
                return f"step '{self.step_id}' never ran{why}"
            case LossKind.DOUBTED:
                return f"step '{self.step_id}': {_one_line(self.detail, 300)}"


@dataclass(frozen=True)
class Outcome:
    outcome: RunOutcome
    reason: str  # one line; empty for a clean success
    warnings: list[str]  # one sentence per loss, for a run that succeeded with warnings


def outcome_of(status: str, losses: Iterable[Loss] = (), error: str = "") -> Outcome:
    """The outcome of a run that has just finished with `status`.

    `losses` only matter to a run that succeeded; `error` is a failed or cancelled run's
    reason. A step that failed and was then dropped counts once, as re-planned around."""
    status = RunStatus(status)
    if status == RunStatus.FAILED:
        return Outcome(RunOutcome.FAILED, _one_line(error, REASON_MAX_CHARS), [])
    if status == RunStatus.CANCELLED:
        return Outcome(RunOutcome.CANCELLED, _one_line(error, REASON_MAX_CHARS), [])
    if status != RunStatus.SUCCEEDED:
        raise ValueError(f"a run that is {status} has no outcome yet")
    kept = _deduplicated(losses)
    if not kept:
        return Outcome(RunOutcome.SUCCEEDED, "", [])
    return Outcome(
        RunOutcome.SUCCEEDED_WITH_WARNINGS,
        warning_reason(kept),
        [loss.sentence() for loss in kept],
    )


def warning_reason(losses: list[Loss]) -> str:
    """One line that says what was lost, by kind, naming the first few steps or calls."""
    parts = []
    for kind in LossKind:
        of_kind = [loss for loss in losses if loss.kind == kind]
        if of_kind:
            parts.append(_part(kind, of_kind))
    reason = "; ".join(parts)
    return _one_line(reason[:1].upper() + reason[1:], REASON_MAX_CHARS)


def _part(kind: LossKind, losses: list[Loss]) -> str:
    many = len(losses) > 1
    if kind in (LossKind.REJECTED, LossKind.UNKNOWN):
        names = _names(f"{loss.tool} in '{loss.step_id}'" for loss in losses)
        if kind == LossKind.REJECTED:
            return f"{len(losses)} calls rejected ({names})" if many else f"call rejected ({names})"
        return (
            f"{len(losses)} calls with unknown outcome ({names})"
            if many
            else f"call with unknown outcome ({names})"
        )
    if kind == LossKind.DOUBTED:
        return "; ".join(dict.fromkeys(loss.detail for loss in losses))
    names = _names(f"'{loss.step_id}'" for loss in losses)
    noun = "steps" if many else "step"
    if kind == LossKind.REPLANNED_AROUND:
        return f"{noun} {names} failed and {'were' if many else 'was'} re-planned around"
    return f"{noun} {names} never ran"


def _names(names: Iterable[str]) -> str:
    listed = list(names)
    shown = ", ".join(listed[:NAMED_IN_REASON])
    more = len(listed) - NAMED_IN_REASON
    return f"{shown} and {more} more" if more > 0 else shown


def _deduplicated(losses: Iterable[Loss]) -> list[Loss]:
    listed = list(dict.fromkeys(losses))
    around = {loss.step_id for loss in listed if loss.kind == LossKind.REPLANNED_AROUND}
    kept = [
        loss for loss in listed if not (loss.kind == LossKind.SKIPPED and loss.step_id in around)
    ]
    return sorted(kept, key=lambda loss: list(LossKind).index(loss.kind))


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"

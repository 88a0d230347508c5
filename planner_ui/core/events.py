"""The catalogue of a run's events: every type, and the payload each one carries.

Events are the run's append-only history (services.events stores them) and what its watchers
receive over the WebSocket; the run page's script describes each type (a test checks that it
knows every one). A payload is plain JSON.

No `from __future__ import annotations` here: TypedDict reads NotRequired from real annotations.
"""

from enum import StrEnum
from typing import Any, NotRequired, TypedDict


class EventType(StrEnum):
    RUN_STATUS = "run.status"
    RUN_PAUSED = "run.paused"
    RUN_RESUMED = "run.resumed"
    BASELINE_STARTED = "baseline.started"
    PLAN_INVALID = "plan.invalid"
    PLAN_VERSION = "plan.version"
    PLAN_APPROVED = "plan.approved"
    PLAN_REVISION_REQUESTED = "plan.revision_requested"
    PLAN_REVISION_READY = "plan.revision_ready"
    PLAN_REVISION_DISCARDED = "plan.revision_discarded"
    PLAN_REPLANNING = "plan.replanning"
    PLAN_REPLAN_PROPOSED = "plan.replan_proposed"
    PLAN_REPLAN_CAP = "plan.replan_cap"
    STEP_QUEUED = "step.queued"
    STEP_STARTED = "step.started"
    STEP_TOOL_CALL = "step.tool_call"
    STEP_TOOL_RESULT = "step.tool_result"
    STEP_WAITING = "step.waiting"
    STEP_SUCCEEDED = "step.succeeded"
    STEP_FAILED = "step.failed"
    STEP_SKIPPED = "step.skipped"
    MODEL_CALL = "model.call"
    APPROVAL_REQUESTED = "approval.requested"
    APPROVAL_DECIDED = "approval.decided"
    APPROVAL_WITHDRAWN = "approval.withdrawn"
    TOOL_PERFORMING = "tool.performing"
    TOOL_RECEIPT = "tool.receipt"
    TOOL_UNKNOWN = "tool.unknown"
    STEP_WORKER_LOST = "step.worker_lost"
    HANDOVER_DELAYED = "handover.delayed"
    BUDGET_WAITING = "budget.waiting"
    STEP_RETRIED = "step.retried"
    STEP_REUSED = "step.reused"
    FILE_WRITTEN = "file.written"
    FILE_DELETED = "file.deleted"


class RunStatusPayload(TypedDict):
    status: str
    error: NotRequired[str]
    # Once the run has finished (core.outcome): "succeeded_with_warnings" and why, in one line.
    outcome: NotRequired[str]
    outcome_reason: NotRequired[str]


class RunPausedPayload(TypedDict):
    by: str


class BaselineStartedPayload(TypedDict):
    of: int
    max_iterations: int


class PlanInvalidPayload(TypedDict):
    attempt: int
    errors: list[str]


class PlanVersionPayload(TypedDict):
    number: int
    author: str
    steps: int
    model: NotRequired[str]
    note: NotRequired[str]


class PlanApprovedPayload(TypedDict):
    number: int


class RevisionRequestedPayload(TypedDict):
    proposal: int
    note: str


class RevisionReadyPayload(TypedDict):
    proposal: int
    state: str
    error: str


class RevisionDiscardedPayload(TypedDict):
    proposal: int


class ReplanningPayload(TypedDict):
    error: str


class ReplanProposedPayload(TypedDict):
    proposal: int
    gated: list[str]
    note: str


class ReplanCapPayload(TypedDict):
    replans: int
    cap: int


class StepQueuedPayload(TypedDict):
    resumed: NotRequired[bool]


class StepStartedPayload(TypedDict):
    attempt: int
    worker: str
    # How long the claim waited for the database's write lock (SQLite: one writer at a time).
    waited_ms: NotRequired[float]
    # Claimed in the end of this step, by the worker that ran it, to run next (no claim of
    # its own, so no wait).
    carried_from: NotRequired[str]


class ToolCallPayload(TypedDict):
    call_id: str
    tool: str
    arguments: dict[str, Any]
    # True when the model wrote the call as text (a JSON block, <tool_call> tags) instead of
    # making it natively, and the executor recognised it there.
    recognised_in_text: NotRequired[bool]


class ToolResultPayload(TypedDict):
    call_id: str
    tool: str
    content: str
    is_error: bool
    # A command tool's result: whether the command ran in the sandbox.
    sandboxed: NotRequired[bool]


class StepWaitingPayload(TypedDict):
    tool: str
    arguments: dict[str, Any]


class StepSucceededPayload(TypedDict):
    output: str
    tokens_in: int
    tokens_out: int
    model_calls: int
    cost_usd: str
    duration_s: float | None
    model: str
    # What is in doubt about a result that stands (the synthesizer's unaccounted figures).
    warnings: NotRequired[list[str]]


class StepFailedPayload(TypedDict):
    error: str


class StepSkippedPayload(TypedDict):
    reason: str


class ModelCallPayload(TypedDict):
    role: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    # None when the price table does not know the model: unknown, which is not free.
    cost_usd: str | None
    latency_ms: int
    stop_reason: str
    error: str


class ApprovalRequestedPayload(TypedDict):
    approval: int
    tool: str
    effect: str
    arguments: dict[str, Any]
    kind: NotRequired[str]  # "call", or "outcome" when a worker died during the call
    hosts: NotRequired[list[str]]  # the hosts it reaches that the run does not allow


class ApprovalDecidedPayload(TypedDict):
    approval: int
    tool: str
    state: str
    by: str
    edited: bool
    reason: str
    resolution: NotRequired[str]


class ApprovalsWithdrawnPayload(TypedDict):
    count: int
    reason: str


class ToolPerformingPayload(TypedDict):
    receipt: int
    tool: str
    key: str
    decision: str
    authorized_by: str


class ToolReceiptPayload(TypedDict):
    receipt: int
    tool: str
    is_error: bool


class ToolUnknownPayload(TypedDict):
    receipt: int
    tool: str
    key: str


class WorkerLostPayload(TypedDict):
    worker: str
    heartbeat_at: str


class StepRetriedPayload(TypedDict):
    by: str
    again: list[str]  # the step and, if asked, the steps after it
    edited: bool


class StepReusedPayload(TypedDict):
    from_run: int


class FileWrittenPayload(TypedDict):
    path: str
    size: int
    sha256: str


class FileDeletedPayload(TypedDict):
    path: str


class HandoverDelayedPayload(TypedDict):
    task: str
    error: str
    retry_s: float


class BudgetWaitingPayload(TypedDict):
    # The run's other calls in flight, and what they hold of its budget until they are counted.
    calls: int
    held_tokens: int
    held_usd: str


PAYLOADS: dict[EventType, type] = {
    EventType.RUN_STATUS: RunStatusPayload,
    EventType.RUN_PAUSED: RunPausedPayload,
    EventType.RUN_RESUMED: RunPausedPayload,
    EventType.BASELINE_STARTED: BaselineStartedPayload,
    EventType.PLAN_INVALID: PlanInvalidPayload,
    EventType.PLAN_VERSION: PlanVersionPayload,
    EventType.PLAN_APPROVED: PlanApprovedPayload,
    EventType.PLAN_REVISION_REQUESTED: RevisionRequestedPayload,
    EventType.PLAN_REVISION_READY: RevisionReadyPayload,
    EventType.PLAN_REVISION_DISCARDED: RevisionDiscardedPayload,
    EventType.PLAN_REPLANNING: ReplanningPayload,
    EventType.PLAN_REPLAN_PROPOSED: ReplanProposedPayload,
    EventType.PLAN_REPLAN_CAP: ReplanCapPayload,
    EventType.STEP_QUEUED: StepQueuedPayload,
    EventType.STEP_STARTED: StepStartedPayload,
    EventType.STEP_TOOL_CALL: ToolCallPayload,
    EventType.STEP_TOOL_RESULT: ToolResultPayload,
    EventType.STEP_WAITING: StepWaitingPayload,
    EventType.STEP_SUCCEEDED: StepSucceededPayload,
    EventType.STEP_FAILED: StepFailedPayload,
    EventType.STEP_SKIPPED: StepSkippedPayload,
    EventType.MODEL_CALL: ModelCallPayload,
    EventType.APPROVAL_REQUESTED: ApprovalRequestedPayload,
    EventType.APPROVAL_DECIDED: ApprovalDecidedPayload,
    EventType.APPROVAL_WITHDRAWN: ApprovalsWithdrawnPayload,
    EventType.TOOL_PERFORMING: ToolPerformingPayload,
    EventType.TOOL_RECEIPT: ToolReceiptPayload,
    EventType.TOOL_UNKNOWN: ToolUnknownPayload,
    EventType.STEP_WORKER_LOST: WorkerLostPayload,
    EventType.HANDOVER_DELAYED: HandoverDelayedPayload,
    EventType.BUDGET_WAITING: BudgetWaitingPayload,
    EventType.STEP_RETRIED: StepRetriedPayload,
    EventType.STEP_REUSED: StepReusedPayload,
    EventType.FILE_WRITTEN: FileWrittenPayload,
    EventType.FILE_DELETED: FileDeletedPayload,
}


# (required keys, every allowed key) per type, worked out once.
def _keys(payload: Any) -> tuple[frozenset[str], frozenset[str]]:
    """A TypedDict's required keys and every allowed key (Any: type checkers see a TypedDict
    class as a plain type, without these attributes)."""
    required: frozenset[str] = payload.__required_keys__
    return frozenset(required), frozenset(required | payload.__optional_keys__)


_KEYS = {kind: _keys(t) for kind, t in PAYLOADS.items()}


def check_event(type: str, payload: dict[str, Any]) -> EventType:
    """The event's type, if it is in the catalogue and its payload has exactly the keys its
    payload type names; ValueError otherwise (a bug in the code that emits it)."""
    try:
        kind = EventType(type)
    except ValueError:
        raise ValueError(
            f"unknown event type {type!r}; add it to planner_ui.core.events.EventType"
        ) from None
    required, allowed = _KEYS[kind]
    keys = payload.keys()
    if not required <= keys or not keys <= allowed:
        missing = ", ".join(sorted(required - keys)) or "none"
        extra = ", ".join(sorted(keys - allowed)) or "none"
        raise ValueError(
            f"payload of {kind} does not match its type: missing {missing}; unexpected {extra}"
        )
    return kind

"""The data of a run: the run, its plan versions, its steps and its append-only event log."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from planner_ui.core.effects import Decision, Effect, PolicyMode, ToolPolicy
from planner_ui.core.outcome import OUTCOME_LABELS, RunOutcome
from planner_ui.core.pricing import Budget
from planner_ui.core.sealing import Unreadable, seal, unseal
from planner_ui.core.status import (
    TERMINAL_RUN_STATUSES,
    RunStatus,
    StepStatus,
    check_run_transition,
    step_sources,
)
from planner_ui.model_fields import ClampedDecimalField


def _choices(enum: type[StrEnum]) -> list[tuple[str, str]]:
    return [(member.value, member.value.replace("_", " ")) for member in enum]


# Totals that services.accounting bumps in SQL as each model call is recorded.
USAGE_COUNTERS = (
    "tokens_in",
    "tokens_out",
    "tokens_cache_read",
    "tokens_cache_write",
    "model_calls",
    "cost_usd",
)


def _save_without(
    instance: models.Model, owned: tuple[str, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """A plain save() of an existing row must not write back counters that SQL updates own:
    the instance may have been loaded before the last increment."""
    if (
        instance.pk is not None
        and kwargs.get("update_fields") is None
        and not kwargs.get("force_insert")
    ):
        kwargs["update_fields"] = [
            f.name
            for f in instance._meta.concrete_fields
            if not f.primary_key and f.name not in owned
        ]
    return kwargs


class Run(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs"
    )
    task = models.TextField()
    status = models.CharField(
        max_length=32, choices=_choices(RunStatus), default=RunStatus.PLANNING
    )
    auto_approve = models.BooleanField(default=False, help_text="Approve the plan without asking.")
    # What happens to irreversible tool calls (core.effects): ask, auto (for auto_tools), dry run.
    tool_policy = models.CharField(
        max_length=16, choices=_choices(PolicyMode), default=PolicyMode.ASK
    )
    auto_tools = models.JSONField(default=list, blank=True)
    # The hosts a network read may reach without asking (core.hosts entries), fixed at
    # submission: named in the task or by the person. A read elsewhere waits at the gate.
    allowed_hosts = models.JSONField(default=list, blank=True)

    class Replan(models.TextChoices):
        AUTO = "auto", "re-plan what is left and carry on"
        REVIEW = "review", "re-plan what is left and wait for me"
        OFF = "off", "stop the run"

    # When a step fails. A revision that adds or changes a step holding an irreversible or a
    # network tool waits for the person whatever this says.
    replan_mode = models.CharField(max_length=10, choices=Replan.choices, default=Replan.AUTO)
    max_replans = models.PositiveIntegerField(default=2)
    replans = models.PositiveIntegerField(default=0)
    # Set from a failure until its revision is applied or refused: nothing new is dispatched.
    replanning = models.BooleanField(default=False)
    # Set while a person has paused the run: no step starts; steps already started carry on.
    paused_at = models.DateTimeField(null=True, blank=True)
    # Set on a single-agent baseline: the run whose task it re-ran with one agent, no plan.
    baseline_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="baselines"
    )
    # Set on a fork: the run it was forked from, and the step it was forked at; the steps
    # before that one were reused, not run again.
    forked_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks"
    )
    fork_step = models.CharField(max_length=40, blank=True)
    error = models.TextField(blank=True)
    result = models.TextField(blank=True)
    planner_model = models.CharField(max_length=200, blank=True)
    executor_model = models.CharField(max_length=200, blank=True)
    approved_plan = models.ForeignKey(
        "PlanVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The model serving each part ("planner", "executor:<role>", "synthesizer") as
    # "provider:model", fixed at submission so every worker uses the same ones.
    routes = models.JSONField(default=dict, blank=True)
    budget_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    budget_usd = ClampedDecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)
    tokens_cache_read = models.PositiveBigIntegerField(default=0)
    tokens_cache_write = models.PositiveBigIntegerField(default=0)
    model_calls = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    # Set when a run succeeds although something was lost on the way (core.outcome): one
    # sentence per loss; the deliverable may miss what those steps or calls were for.
    warnings = models.JSONField(default=list, blank=True)
    # Set when the run finishes (core.outcome.outcome_of), emptied when a retry opens it again:
    # whether what it delivered is whole, and why not in one line.
    outcome = models.CharField(
        max_length=32,
        choices=[(o.value, label) for o, label in OUTCOME_LABELS.items()],
        blank=True,
    )
    outcome_reason = models.CharField(max_length=300, blank=True)
    last_event_seq = models.PositiveBigIntegerField(default=0)
    # Set on a run started from a plan template: the version it was filled from and the values
    # it was filled with (services.templates); the planner did not plan it.
    template_version = models.ForeignKey(
        "PlanTemplateVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="runs",
    )
    template_values = models.JSONField(default=dict, blank=True)

    class Trigger(models.TextChoices):
        FORM = "form", "the template's page"
        API = "api", "the API"
        WEBHOOK = "webhook", "the webhook"
        COMMAND = "command", "manage.py runtemplate"
        SCHEDULE = "schedule", "its schedule"

    # What started it from its template: each trigger's runs are told apart under it.
    template_trigger = models.CharField(max_length=8, choices=Trigger.choices, blank=True)
    # The past plans the planner was given as examples (selectors.search.plan_examples_for),
    # each {"kind": "run" | "template", "id", "number", "title"}: the run page names them.
    plan_examples = models.JSONField(default=list, blank=True)
    # Set on a run started from a past run's plan ("start from …" on the task form): the planner
    # did not plan it, that run's plan is its first version.
    started_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "-created_at"])]

    def __str__(self) -> str:
        return f"run {self.pk}: {self.task[:60]}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # last_event_seq belongs to services.events.event_append, the usage totals to
        # services.accounting; both bump them in SQL.
        super().save(*args, **_save_without(self, ("last_event_seq", *USAGE_COUNTERS), kwargs))

    @property
    def policy(self) -> ToolPolicy:
        return ToolPolicy.of(self.tool_policy, self.auto_tools)

    @property
    def budget(self) -> Budget:
        return Budget(tokens=self.budget_tokens, usd=self.budget_usd)

    def move_to(self, status: str) -> None:
        """Change status through the allowed transitions only (see core.status)."""
        self.status = check_run_transition(self.status, status)

    @property
    def is_finished(self) -> bool:
        return RunStatus(self.status) in TERMINAL_RUN_STATUSES

    @property
    def shown_status(self) -> str:
        """What a badge shows: the outcome once the run has finished, its status before."""
        return self.outcome or self.status

    @property
    def shown_status_label(self) -> str:
        return RunOutcome(self.outcome).label if self.outcome else self.get_status_display()

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None:
            return None
        end = self.finished_at or timezone.now()
        return (end - self.started_at).total_seconds()


class PlanVersion(models.Model):
    class Author(models.TextChoices):
        PLANNER = "planner"
        PERSON = "person"
        REPLANNER = "replanner"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="plan_versions")
    number = models.PositiveIntegerField()
    author = models.CharField(max_length=16, choices=Author.choices)
    plan = models.JSONField()
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "number"], name="plan_version_number_unique")
        ]

    def __str__(self) -> str:
        return f"plan v{self.number} of run {self.run_id} by {self.author}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # A plan version is a historical record: edits make a new version, never change one.
        if self.pk is not None:
            raise ValueError("plan versions are immutable; create a new version instead")
        super().save(*args, **kwargs)


class StepQuerySet(models.QuerySet["Step"]):
    def move_to(self, status: str, *, only_from: Iterable[str] | None = None, **fields: Any) -> int:
        """Move the steps in this query that may go to `status` (core.status.STEP_TRANSITIONS,
        narrowed to `only_from`) in one conditional UPDATE; returns how many moved."""
        sources = step_sources(status, only_from)
        return self.filter(status__in=sources).update(status=status, **fields)


class Step(models.Model):
    # Not indexed alone: step_id_unique_in_run (run, step_id) starts with it, and serves
    # the run's lookups (migration 0029).
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps", db_index=False)
    step_id = models.CharField(max_length=40)
    position = models.PositiveIntegerField(default=0)
    title = models.CharField(max_length=120)
    instruction = models.TextField()
    role = models.CharField(max_length=32)
    tools = models.JSONField(default=list)
    depends_on = models.JSONField(default=list)
    # Kept by services.scheduler: the steps that depend on this one, and how many of this
    # step's own dependencies have not succeeded yet. A finishing step counts its dependents
    # down and queues those that reach zero, without reading the rest of the run.
    dependents = models.JSONField(default=list)
    waiting_on = models.PositiveIntegerField(default=0)
    status = models.CharField(
        max_length=16, choices=_choices(StepStatus), default=StepStatus.PENDING
    )
    output = models.TextField(blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    # Times a person asked for it again (services.retries): each retry's tool calls get keys,
    # approvals and receipts of their own, so an earlier attempt's approval never covers them.
    retries = models.PositiveIntegerField(default=0)
    model = models.CharField(max_length=200, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    # The executor's conversation so far (agents.executor.Checkpoint), saved after every model
    # reply and tool result: a step resumed after an approval or re-delivered after a crash
    # carries on from here instead of asking the model again.
    checkpoint = models.JSONField(null=True, blank=True)
    # Refreshed every few seconds while a worker runs the step (services.leases); one older than
    # the lease means its worker is lost, and the sweep hands the step to another.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # When it was last queued: queued work nobody claimed for long is handed out again.
    queued_at = models.DateTimeField(null=True, blank=True)
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)
    tokens_cache_read = models.PositiveBigIntegerField(default=0)
    tokens_cache_write = models.PositiveBigIntegerField(default=0)
    model_calls = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    # What the run's budget holds for this step's model call in flight, at most (the tokens
    # it sends and may answer, and their price): the run's other calls leave it alone until
    # the call is recorded, which sets them back to 0 (services.accounting).
    budget_held_tokens = models.PositiveBigIntegerField(default=0)
    budget_held_usd = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Set on a fork's steps that were done before the fork: the run whose output it reused.
    reused_from = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = StepQuerySet.as_manager()
    # Not a column: its parents' (step id, title, output), where a claim read them with it
    # (services.steps, PostgreSQL); unset otherwise.
    context_read: list[tuple[str, str, str]]

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "step_id"], name="step_id_unique_in_run")
        ]

    def __str__(self) -> str:
        return f"{self.step_id} ({self.status})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **_save_without(self, USAGE_COUNTERS, kwargs))

    @property
    def duration_s(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


class RunEvent(models.Model):
    # Not indexed alone: event_seq_unique (run, seq) starts with it, and serves the run's lookups
    # (migration 0029).
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events", db_index=False)
    seq = models.PositiveBigIntegerField()
    type = models.CharField(max_length=40)
    step_id = models.CharField(max_length=40, blank=True)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="event_seq_unique")]

    def __str__(self) -> str:
        return f"#{self.seq} {self.type}"

    def as_message(self) -> dict[str, Any]:
        """The shape sent to browsers over the WebSocket."""
        return {
            "seq": self.seq,
            "type": self.type,
            "step_id": self.step_id,
            "payload": self.payload,
            "at": self.created_at.isoformat(),
        }


class PlanProposal(models.Model):
    """A revision the planner made on a person's request, waiting to be accepted or discarded.

    Kept apart from PlanVersion so that versions stay the immutable record of what was adopted.
    """

    class State(models.TextChoices):
        PENDING = "pending"
        READY = "ready"
        FAILED = "failed"
        ACCEPTED = "accepted"
        DISCARDED = "discarded"

    class Kind(models.TextChoices):
        REQUEST = "request"  # a person asked for a revision before approving
        REPLAN = "replan"  # a step failed while running

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="proposals")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.REQUEST)
    base_version = models.PositiveIntegerField()
    # For a re-plan: the steps that must wait for a person (new or changed, irreversible).
    gated_steps = models.JSONField(default=list, blank=True)
    note = models.TextField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    plan = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "-created_at"]

    def __str__(self) -> str:
        return f"proposal {self.pk} for run {self.run_id} ({self.state})"


class ModelCall(models.Model):
    """One call to a model, as the provider reported it: the ground truth of the accounting."""

    # Not indexed alone: the (run, role) index starts with it, and serves the run's lookups
    # (migration 0029).
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="calls", db_index=False)
    # Blank for the planner, which serves the run rather than one step.
    step_id = models.CharField(max_length=40, blank=True)
    purpose = models.CharField(max_length=60)
    role = models.CharField(max_length=40)
    provider = models.CharField(max_length=40)
    model = models.CharField(max_length=200)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cache_read_tokens = models.PositiveBigIntegerField(default=0)
    cache_write_tokens = models.PositiveBigIntegerField(default=0)
    # Null when the price table does not know the model: unknown, which is not free.
    cost_usd = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    stop_reason = models.CharField(max_length=60, blank=True)
    error = models.TextField(blank=True)
    # On a route with a tool mode: the mode it is in after this call ("native", "prompted");
    # the first "prompted" of an "auto" route keeps the route prompted for the rest of the run.
    tool_mode = models.CharField(max_length=8, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "id"]
        indexes = [models.Index(fields=["run", "role"])]

    def __str__(self) -> str:
        return f"{self.purpose} call to {self.provider}:{self.model} in run {self.run_id}"

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"


class ProviderCredential(models.Model):
    """An API key (and endpoint) set by an admin; it takes precedence over the environment.
    The key is stored sealed with the secret key (core.sealing): read it with key()."""

    class Provider(models.TextChoices):
        ANTHROPIC = "anthropic", "Anthropic"
        OPENAI = "openai", "OpenAI-compatible"

    provider = models.CharField(max_length=20, choices=Provider.choices, unique=True)
    api_key = models.CharField(max_length=1000, blank=True)  # sealed; see key() and set_key()
    base_url = models.URLField(
        max_length=500, blank=True, help_text="Leave empty for the provider's default endpoint."
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.get_provider_display()} credentials"

    def key(self) -> str:
        """The key in clear; sealing.Unreadable if the secret key has changed since."""
        return unseal(self.api_key, settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS)

    def set_key(self, key: str) -> None:
        self.api_key = seal(key, settings.SECRET_KEY)

    @property
    def masked_key(self) -> str:
        try:
            return mask_key(self.key())
        except Unreadable:
            return "unreadable (the secret key changed): enter it again"


def mask_key(key: str) -> str:
    """A key as it may be shown back: enough to recognise it, never enough to use it."""
    if not key:
        return ""
    if len(key) < 12:
        return "•" * 8
    return f"{key[:3]}…{key[-4:]}"


class Approval(models.Model):
    """An irreversible call an executor wants to make, waiting for (or decided by) a person."""

    class State(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        REJECTED = "rejected"
        WITHDRAWN = "withdrawn"  # the run was cancelled or ended first

    class Kind(models.TextChoices):
        CALL = "call", "an irreversible call to make"
        # The worker making the call died before it learned the outcome: did it happen?
        OUTCOME = "outcome", "an irreversible call whose outcome is unknown"

    class Resolution(models.TextChoices):
        HAPPENED = "happened", "it happened"
        RETRY = "retry", "it did not happen: retry with the same idempotency key"
        FAIL = "fail", "fail the step"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="approvals")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.CALL)
    # For an unknown outcome, what the person decided.
    resolution = models.CharField(max_length=10, choices=Resolution.choices, blank=True)
    step_id = models.CharField(max_length=40)
    # "<iteration>:<model's tool call id>": stable across re-runs of the step (checkpointed).
    call_key = models.CharField(max_length=200)
    tool = models.CharField(max_length=60)
    effect = models.CharField(max_length=16, choices=_choices(Effect))
    arguments = models.JSONField()
    approved_arguments = models.JSONField(null=True, blank=True)
    # The hosts the call reaches that the run does not allow: why a read waits for a person.
    hosts = models.JSONField(default=list, blank=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "step_id", "call_key"], name="approval_once")
        ]
        indexes = [models.Index(fields=["state", "run"])]

    def __str__(self) -> str:
        return f"{self.tool} in {self.step_id} of run {self.run_id} ({self.state})"

    @property
    def edited(self) -> bool:
        return self.approved_arguments is not None and self.approved_arguments != self.arguments


class ToolReceipt(models.Model):
    """The outbox: one row per irreversible call, written before it is performed.

    Its idempotency key is what makes a re-run step reuse the result instead of acting twice;
    a row left in flight by a worker that died means the outcome is unknown, and the call is
    never repeated on a guess.
    """

    class State(models.TextChoices):
        IN_FLIGHT = "in_flight"
        DONE = "done"
        UNKNOWN = "unknown"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="receipts")
    step_id = models.CharField(max_length=40)
    idempotency_key = models.CharField(max_length=255, unique=True)
    tool = models.CharField(max_length=60)
    effect = models.CharField(max_length=16, choices=_choices(Effect))
    arguments = models.JSONField()
    approval = models.ForeignKey(
        Approval, null=True, blank=True, on_delete=models.SET_NULL, related_name="receipts"
    )
    # How it was authorized: Decision.RUN (by a person's approval or the run's policy) or
    # Decision.DRY_RUN (recorded, not performed).
    decision = models.CharField(max_length=16, choices=_choices(Decision))
    authorized_by = models.CharField(max_length=200)
    state = models.CharField(max_length=16, choices=State.choices, default=State.IN_FLIGHT)
    result = models.TextField(blank=True)
    is_error = models.BooleanField(default=False)
    # Set on a fork's copy of a receipt: the original, whose call was made once, there.
    reused_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reuses"
    )
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "started_at", "id"]

    def __str__(self) -> str:
        return f"receipt {self.idempotency_key} ({self.state})"


class RunFile(models.Model):
    """A file of a run, in the database: the store of record every worker reads, whatever the
    machine. A step works on a local copy (services.files) and its changes are synced back
    after every tool call that may change files."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=255)
    content = models.BinaryField()
    size = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    # The step whose tool call wrote it last.
    step_id = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run", "path"]
        constraints = [models.UniqueConstraint(fields=["run", "path"], name="run_file_path_unique")]

    def __str__(self) -> str:
        return f"{self.path} of run {self.run_id}"


class ApiToken(models.Model):
    """A personal token for the JSON API. Only its SHA-256 is kept: the token itself is shown
    once, when it is made. `prefix` (its first characters) lets a person tell tokens apart."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name}) of {self.user_id}"


class McpServer(models.Model):
    """An MCP server whose tools runs may be granted. With no owner it is for everyone (an
    admin registered it); otherwise for its owner's runs only. A stdio command runs on every
    worker machine, so only staff register those; anyone may register a URL, which the tools'
    address policy checks like any other."""

    class Transport(models.TextChoices):
        STDIO = "stdio", "a command (stdio)"
        HTTP = "http", "a URL (streamable HTTP)"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="mcp_servers",
    )
    name = models.SlugField(max_length=30)
    transport = models.CharField(max_length=8, choices=Transport.choices)
    command = models.JSONField(default=list, blank=True)  # argv
    url = models.URLField(max_length=500, blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    # What the last check found wrong with the server itself (it did not start, ...).
    problem = models.TextField(blank=True)

    # Not columns: what views.mcp sets on each server it lists, for its page.
    manageable: bool
    pinned: list[McpServerTool]

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="mcp_server_name_per_owner"),
            models.UniqueConstraint(
                fields=["name"],
                condition=models.Q(owner__isnull=True),
                name="mcp_server_name_shared",
            ),
        ]

    def __str__(self) -> str:
        return f"MCP server {self.name}"


class McpServerTool(models.Model):
    """One tool of a registered server as it was pinned: its description and schema, and the
    effect a person gave it (an unknown tool is `execute`: it asks before every call). A tool
    is offered only once a person has read what its server says of it and approved it
    (`reviewed_*`): its owner, or staff for a shared server. When the server later lists it
    differently, the change waits in `pending_*` and the tool is not offered until a person
    approves that too."""

    class State(models.TextChoices):
        ACTIVE = "active", "offered"
        CHANGED = "changed", "changed by its server: not offered until approved"
        NEW = "new", "waiting for review: not offered until approved"
        GONE = "gone", "no longer listed by its server"

    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    input_schema = models.JSONField(default=dict)
    digest = models.CharField(max_length=64)
    effect = models.CharField(max_length=16, choices=_choices(Effect), default=Effect.EXECUTE)
    state = models.CharField(max_length=8, choices=State.choices, default=State.NEW)
    # Who approved the pinned description and schema, and when; empty until someone has.
    reviewed_at = models.DateTimeField(null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    pending_description = models.TextField(blank=True)
    pending_schema = models.JSONField(null=True, blank=True)
    pending_digest = models.CharField(max_length=64, blank=True)

    # Not columns: what views.mcp sets on each tool it lists, for its page.
    granted_as: str
    held: bool
    review_digest: str
    schema_text: str
    pending_schema_text: str

    class Meta:
        ordering = ["server", "name"]
        constraints = [
            models.UniqueConstraint(fields=["server", "name"], name="mcp_tool_once_per_server")
        ]

    def __str__(self) -> str:
        return f"{self.server.name}/{self.name} ({self.state})"


class LocalModel(models.Model):
    """A GGUF model an admin asked this installation to serve with llama.cpp. `make run`'s
    model supervisor (manage.py local_models) starts what is wanted, stops what is not, and
    writes back where it serves: a route `local:<name>` then reaches it. Without that
    supervisor (a deployment not started by `make run`), a request waits and says so."""

    class State(models.TextChoices):
        WAITING = "waiting", "waiting for the model supervisor"
        LOADING = "loading", "loading"
        READY = "ready", "ready"
        FAILED = "failed", "failed"
        STOPPED = "stopped", "stopped"

    # The file on the machine `make run` runs on; its stem is the model id routes name.
    path = models.CharField(max_length=500, unique=True)
    name = models.CharField(max_length=150, unique=True)
    wanted = models.BooleanField(default=True)
    state = models.CharField(max_length=8, choices=State.choices, default=State.WAITING)
    base_url = models.CharField(max_length=200, blank=True)
    # Why it failed, or what the supervisor is doing.
    detail = models.TextField(blank=True)
    # New runs use it for every part the settings do not route elsewhere.
    default_route = models.BooleanField(default=False)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"local model {self.name} ({self.state})"

    @property
    def route(self) -> str:
        return f"local:{self.name}"

    @property
    def stopping(self) -> bool:
        """An admin stopped it, and its server is still up (or still loading)."""
        return not self.wanted and self.state in (self.State.LOADING, self.State.READY)


class Sweep(models.Model):
    """One row: when the last sweep (services.sweep) started and where. Every worker and any
    beat asks to sweep; a guarded write of this row lets one through per period."""

    # By the database's clock, as the heartbeats it compares.
    swept_at = models.DateTimeField()
    swept_by = models.CharField(max_length=200, blank=True)

    def __str__(self) -> str:
        return f"sweep at {self.swept_at} by {self.swept_by}"


class EvaluationSuite(models.Model):
    """A person's suite of tasks with checks (core.evaluation.Suite), kept as the YAML or JSON
    they wrote, so that comments and order survive an edit."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="evaluation_suites"
    )
    name = models.SlugField(max_length=60)
    content = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="evaluation_suite_name_unique")
        ]

    def __str__(self) -> str:
        return f"suite {self.name} of {self.owner_id}"


class Experiment(models.Model):
    """A suite run in arms, each task `repeat` times, at most `concurrency` runs at once, until
    its budget is spent. The suite is copied in: later edits of it do not change what this
    experiment measured."""

    class Status(models.TextChoices):
        RUNNING = "running", "running"
        FINISHED = "finished", "finished"
        STOPPED = "stopped", "stopped: budget spent"
        CANCELLED = "cancelled", "cancelled"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="experiments"
    )
    suite = models.ForeignKey(
        EvaluationSuite, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    suite_name = models.CharField(max_length=60)
    # core.evaluation.Suite and Arm, dumped as JSON.
    suite_snapshot = models.JSONField()
    arms = models.JSONField()
    repeat = models.PositiveIntegerField(default=1)
    concurrency = models.PositiveIntegerField(default=2)
    budget_usd = ClampedDecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    budget_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    # What irreversible calls do in its runs; never "ask": nobody sits beside an experiment.
    tool_policy = models.CharField(
        max_length=16, choices=_choices(PolicyMode), default=PolicyMode.DRY_RUN
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    stop_reason = models.CharField(max_length=300, blank=True)
    # Set while a person has paused it: no slot starts, and its runs are paused too.
    paused_at = models.DateTimeField(null=True, blank=True)
    # The route ("provider:model") that judges its suite's judge checks, chosen when it was
    # made; empty when the suite has none.
    judge_route = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "-created_at"])]

    def __str__(self) -> str:
        return f"experiment {self.pk} on {self.suite_name}"

    @property
    def is_finished(self) -> bool:
        return self.status != self.Status.RUNNING


class ExperimentRun(models.Model):
    """One slot of an experiment: an arm's run of one task, one repetition. Made with the
    experiment and given its run when it starts, in one transaction: a slot runs and counts
    once, whatever worker dies on the way. `passed` is set when its run has ended."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="slots")
    arm = models.CharField(max_length=60)
    task_index = models.PositiveIntegerField()
    repetition = models.PositiveIntegerField()
    run = models.OneToOneField(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="experiment_slot"
    )
    # The run succeeded and every check passed; null until the run has ended and was checked.
    passed = models.BooleanField(null=True, blank=True)
    # core.evaluation.CheckResult of each check, as [passed, detail] pairs.
    checks = models.JSONField(default=list, blank=True)
    # The end of its run that was checked (the run's finished_at then): a run a person
    # retried ends again later, and the slot is checked again then (`rechecks` counts that).
    checked_end = models.DateTimeField(null=True, blank=True)
    rechecks = models.PositiveIntegerField(default=0)
    # The judge's verdicts on the run's end `judged_end`, [passed, detail] per judge check in
    # the suite's order; made outside the experiment's lock (they are model calls) and read
    # by the check.
    judged = models.JSONField(null=True, blank=True)
    judged_end = models.DateTimeField(null=True, blank=True)
    # What judging cost: apart from the run's own figures, which judging leaves alone.
    judge_calls = models.PositiveIntegerField(default=0)
    judge_tokens_in = models.PositiveBigIntegerField(default=0)
    judge_tokens_out = models.PositiveBigIntegerField(default=0)
    judge_cost_usd = models.DecimalField(max_digits=14, decimal_places=6, default=0)

    class Meta:
        ordering = ["experiment", "task_index", "arm", "repetition"]
        constraints = [
            models.UniqueConstraint(
                fields=["experiment", "arm", "task_index", "repetition"],
                name="experiment_slot_once",
            )
        ]

    def __str__(self) -> str:
        return f"{self.arm} × task {self.task_index} #{self.repetition} of {self.experiment_id}"


class PlanTemplate(models.Model):
    """A plan kept to be run again with new inputs (core.templates). Its content lives in its
    versions: each save makes a new one, and runs name the version they were filled from.
    Seen by its owner only, unless staff shared it with everyone (read-only for them)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="plan_templates"
    )
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    shared = models.BooleanField(default=False, help_text="Every user may see and run it.")
    # The SHA-256 of its webhook's secret token (shown once, like an API token); empty: no
    # webhook.
    webhook_digest = models.CharField(max_length=64, blank=True)
    # Where in the webhook's JSON body each parameter's value is ({"title": "$.ticket.title"},
    # core.json_path); empty: the body is the values themselves ({"title": ...}).
    webhook_mapping = models.JSONField(default=dict, blank=True)
    # What the runs its triggers start do with irreversible calls (core.effects), as a run's
    # tool_policy and auto_tools: a trigger approves nothing else on its own.
    trigger_policy = models.CharField(
        max_length=16, choices=_choices(PolicyMode), default=PolicyMode.ASK
    )
    trigger_auto_tools = models.JSONField(default=list, blank=True)
    # Its schedule trigger (core.schedule: "every 2 hours", a cron line in UTC; empty: none),
    # the values its runs are filled with, and when it runs next: a run is due once this is
    # past, and is claimed by moving it on in one conditional UPDATE (services.templates).
    schedule = models.CharField(max_length=100, blank=True)
    schedule_values = models.JSONField(default=dict, blank=True)
    next_run_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # Why its schedule's last run could not start (its values no longer fit, ...); empty after
    # one that did.
    schedule_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="plan_template_name_per_owner")
        ]

    def __str__(self) -> str:
        return f"template {self.name}"

    @property
    def trigger_tool_policy(self) -> ToolPolicy:
        return ToolPolicy.of(self.trigger_policy, self.trigger_auto_tools)

    @property
    def latest(self) -> PlanTemplateVersion | None:
        return self.versions.order_by("-number").first()


class PlanTemplateVersion(models.Model):
    """One saved state of a template: the task and plan with placeholders and the parameters
    (core.templates.TemplateSpec), and where it came from. Immutable, like a plan version."""

    template = models.ForeignKey(PlanTemplate, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    task = models.TextField()
    plan = models.JSONField()
    parameters = models.JSONField(default=list)
    note = models.TextField(blank=True)
    source_run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    source_plan = models.ForeignKey(
        PlanVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["template", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["template", "number"], name="plan_template_version_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.template.name} v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise ValueError("template versions are immutable; create a new version instead")
        super().save(*args, **kwargs)


class SearchDocument(models.Model):
    """What full-text search finds a run or a template by (core.search), one row each, written
    by services.search when a run is created and ends and when a template is saved or shared.
    `summary` is the task and plan (close plans are matched on it), `content` the outputs and
    deliverable (the history's search looks in both).

    On SQLite the FTS5 table planner_ui_search_fts mirrors these rows through triggers, and on
    PostgreSQL a GIN index covers their tsvector (migration plan_library): a rebuild of this
    table by a later migration on SQLite drops those triggers, so such a migration must make
    them again."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    run = models.OneToOneField(
        Run, null=True, blank=True, on_delete=models.CASCADE, related_name="search_document"
    )
    template = models.OneToOneField(
        PlanTemplate,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="search_document",
    )
    # A template's: whether every user may see it (as PlanTemplate.shared).
    shared = models.BooleanField(default=False)
    summary = models.TextField(blank=True)
    content = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(run__isnull=True) ^ models.Q(template__isnull=True),
                name="search_document_of_one_thing",
            )
        ]

    def __str__(self) -> str:
        return f"search document of {'run ' + str(self.run_id) if self.run_id else self.template}"

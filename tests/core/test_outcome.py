"""A finished run's outcome: a success that lost something says so, in one line."""

from __future__ import annotations

import pytest

from planner_ui.core.outcome import (
    REASON_MAX_CHARS,
    Loss,
    LossKind,
    Outcome,
    RunOutcome,
    outcome_of,
)

REJECTED = Loss(LossKind.REJECTED, "post-coffee", tool="http_post", detail="Fridays only")


def test_a_clean_success_has_no_reason():
    assert outcome_of("succeeded") == Outcome(RunOutcome.SUCCEEDED, "", [])


def test_a_rejected_call_makes_a_success_one_with_warnings():
    found = outcome_of("succeeded", [REJECTED])
    assert found.outcome == RunOutcome.SUCCEEDED_WITH_WARNINGS
    assert found.reason == "Call rejected (http_post in 'post-coffee')"
    assert found.warnings == [
        "a call to http_post in step 'post-coffee' was rejected: Fridays only"
    ]


def test_each_kind_of_loss_is_named_in_one_line_in_a_fixed_order():
    losses = [
        Loss(LossKind.SKIPPED, "draft", detail="dropped by re-plan v2"),
        Loss(LossKind.REPLANNED_AROUND, "read-notes", detail="needs the file 'notes.md'"),
        Loss(LossKind.UNKNOWN, "notify", tool="send_email"),
        REJECTED,
        Loss(LossKind.REJECTED, "post-tea", tool="http_post"),
    ]
    found = outcome_of("succeeded", losses)
    assert found.reason == (
        "2 calls rejected (http_post in 'post-coffee', http_post in 'post-tea'); call with "
        "unknown outcome (send_email in 'notify'); step 'read-notes' failed and was re-planned "
        "around; step 'draft' never ran"
    )
    assert found.warnings[2] == (
        "nobody knows whether the call to send_email in step 'notify' happened"
    )
    assert found.warnings[3] == (
        "step 'read-notes' failed (needs the file 'notes.md') and the re-plan went around it: "
        "the deliverable may miss what it was for"
    )
    assert found.warnings[4] == "step 'draft' never ran: dropped by re-plan v2"


def test_a_failed_step_that_was_then_dropped_counts_once():
    losses = [
        Loss(LossKind.REPLANNED_AROUND, "read", detail="no file"),
        Loss(LossKind.SKIPPED, "read", detail="failed: no file; dropped by re-plan v2"),
    ]
    found = outcome_of("succeeded", losses)
    assert found.reason == "Step 'read' failed and was re-planned around"
    assert len(found.warnings) == 1


def test_many_losses_name_the_first_few_and_count_the_rest():
    losses = [Loss(LossKind.SKIPPED, f"step-{n}") for n in range(5)]
    assert outcome_of("succeeded", losses).reason == (
        "Steps 'step-0', 'step-1' and 3 more never ran"
    )


def test_the_reason_is_one_bounded_line():
    long = Loss(LossKind.REJECTED, "s" * 40, tool="t" * 300)
    reason = outcome_of("succeeded", [long]).reason
    assert len(reason) == REASON_MAX_CHARS and reason.endswith("…")
    failed = outcome_of("failed", error="step 'a' failed:\n  the\tmodel refused")
    assert failed == Outcome(RunOutcome.FAILED, "step 'a' failed: the model refused", [])


def test_losses_do_not_turn_a_failure_or_a_cancellation_into_warnings():
    assert outcome_of("failed", [REJECTED], "boom").outcome == RunOutcome.FAILED
    cancelled = outcome_of("cancelled", [REJECTED], "Cancelled by alice.")
    assert cancelled == Outcome(RunOutcome.CANCELLED, "Cancelled by alice.", [])


@pytest.mark.parametrize("status", ["planning", "awaiting_plan_approval", "running"])
def test_an_unfinished_run_has_no_outcome(status):
    with pytest.raises(ValueError, match=f"a run that is {status} has no outcome yet"):
        outcome_of(status)


def test_every_outcome_has_a_label():
    assert [o.label for o in RunOutcome] == [
        "succeeded",
        "succeeded with warnings",
        "failed",
        "cancelled",
    ]

"""A revision proposal as the person reviews it: merged with their changes, conflicts named."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planner_ui.core.diff import diff_graph, plan_diff
from planner_ui.core.errors import PlanValidationError
from planner_ui.core.merge import merge_preview, plan_merge, steps_named
from planner_ui.core.plan import Plan
from planner_ui.models import PlanProposal, PlanVersion, Run

# The authors whose versions are the planner's own: a merge's common ancestor is the latest.
_PLANNERS = (PlanVersion.Author.PLANNER, PlanVersion.Author.REPLANNER)


def planners_last_version(run: Run, at_most: int) -> PlanVersion:
    """The planner's latest version up to `at_most`: what a revision asked for then grew from,
    and what people's changes since are measured against. The first version is always one."""
    versions = run.plan_versions.filter(number__lte=at_most)
    found = versions.filter(author__in=_PLANNERS).order_by("-number").first()
    return found or versions.order_by("number").first() or run.plan_versions.get(number=at_most)


def proposal_review(
    proposal: PlanProposal | None, versions: Sequence[PlanVersion]
) -> dict[str, Any]:
    """What _plan_proposal.html shows of a ready proposal: the diff from the current version to
    the merged plan (each conflict shown as the person has it until they choose), the conflicts
    to choose on, the graph of the merged plan with its changes marked, and the version the
    merge was made against; or why the merge makes no plan."""
    if proposal is None or proposal.plan is None or not versions:
        return {"review": None}
    current = versions[-1]
    base = planners_last_version(proposal.run, proposal.base_version)
    ours = Plan.model_validate(current.plan)
    merge = plan_merge(Plan.model_validate(base.plan), ours, Plan.model_validate(proposal.plan))
    review: dict[str, Any] = {
        "base": base,
        "current": current,
        "merged_changes": base.number != current.number,
        "conflicts": merge.conflicts,
        "diff": None,
        "graph": None,
        "error": "",
        "acceptable": True,
    }
    try:
        preview = merge_preview(merge)
    except PlanValidationError as exc:
        review["error"] = "; ".join(exc.errors)
        # Another choice may still make a plan: the choices stay on offer when there are any.
        review["acceptable"] = bool(merge.conflicts)
        return {"review": review}
    review["diff"] = plan_diff(ours, preview)
    review["graph"] = diff_graph(ours, preview, conflicted=steps_named(merge.conflicts))
    return {"review": review}

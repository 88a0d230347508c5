"""Plan edits over random plans: no edit ever makes a cycle or loses a step it should keep."""

from hypothesis import given
from hypothesis import strategies as st

from planner_ui.core.dag import ancestors, find_cycle
from planner_ui.core.diff import plan_diff
from planner_ui.core.edits import (
    AddDependency,
    DeleteStep,
    DependentsPolicy,
    EditRefused,
)
from planner_ui.core.plan import Plan
from planner_ui.core.validation import validate_plan

from .plans import TOOLS, dag_plans, edit, ids

# --- Properties over random plans ---------------------------------------------------------


@given(dag_plans(), st.data())
def test_an_added_dependency_never_makes_a_cycle(plan: Plan, data: st.DataObject) -> None:
    steps = ids(plan)
    change = AddDependency(data.draw(st.sampled_from(steps)), data.draw(st.sampled_from(steps)))
    before = plan.model_dump()
    deps = plan.dependencies()

    try:
        new = edit(plan, change)
    except EditRefused as refused:
        assert plan.model_dump() == before
        (message,) = refused.errors
        if change.step_id == change.depends_on:
            assert message == f"a step cannot depend on itself ('{change.step_id}')"
        elif change.depends_on in deps[change.step_id]:
            assert message == f"step '{change.step_id}' already depends on '{change.depends_on}'"
        else:
            # Refused only for a real cycle, and the path it names is made of real arrows.
            assert change.step_id in ancestors(deps, change.depends_on)
            prefix = f"adding {change.depends_on} → {change.step_id} would create a cycle: "
            assert message.startswith(prefix)
            path = message.removeprefix(prefix).split(" → ")
            assert path[0] == path[-1] == change.step_id
            assert path[-2] == change.depends_on
            for parent, child in zip(path[:-2], path[1:-1], strict=True):
                assert parent in deps[child]
        return

    assert plan.model_dump() == before
    validate_plan(new.model_dump(), known_tools=TOOLS)
    assert find_cycle(new.dependencies()) is None
    diff = plan_diff(plan, new)
    assert diff.edges_added == ((change.depends_on, change.step_id),)
    assert (diff.added, diff.removed, diff.changed, diff.edges_removed) == ((), (), (), ())


@given(dag_plans(), st.data())
def test_a_deletion_keeps_the_plan_valid_and_in_order(plan: Plan, data: st.DataObject) -> None:
    doomed = data.draw(st.sampled_from(ids(plan)))
    policy = data.draw(st.sampled_from(list(DependentsPolicy)))
    deps = plan.dependencies()

    try:
        new = edit(plan, DeleteStep(doomed, policy))
    except EditRefused:
        dependents = {s for s in deps if doomed in ancestors(deps, s)}
        assert len(plan.steps) == 1 or (
            policy == DependentsPolicy.CASCADE and len(dependents) + 1 == len(plan.steps)
        )
        return

    remaining = ids(new)
    assert remaining == [s for s in ids(plan) if s in remaining]
    assert doomed not in remaining
    new_deps = new.dependencies()
    if policy != DependentsPolicy.CASCADE:
        assert len(remaining) == len(plan.steps) - 1
    for s in remaining:
        # Reconnecting keeps every ordering the old plan implied; the others only lose some.
        old_ancestors = ancestors(deps, s) - {doomed}
        if policy == DependentsPolicy.RECONNECT:
            assert ancestors(new_deps, s) == old_ancestors
        else:
            assert ancestors(new_deps, s) <= old_ancestors

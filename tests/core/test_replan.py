"""What a re-plan may change: kept steps stay verbatim; new irreversible steps are flagged."""

from __future__ import annotations

from planner_ui.core.plan import Plan
from planner_ui.core.replan import changed_steps, gated_changes, merge_revision


def plan(*steps: dict) -> Plan:
    return Plan.model_validate({"goal": "g", "steps": list(steps)})


def s(id: str, *deps: str, tools: tuple[str, ...] = (), instruction: str = "") -> dict:
    return {
        "id": id,
        "title": id,
        "instruction": instruction or f"do {id}",
        "role": "writer",
        "tools": list(tools),
        "depends_on": list(deps),
    }


CURRENT = plan(s("a"), s("b"), s("c", "a", "b"))


def test_kept_steps_come_from_the_current_plan_whatever_the_revision_says() -> None:
    revision = plan(s("a", instruction="rewritten"), s("b2"), s("c", "a", "b2"))
    merged = merge_revision(CURRENT, revision, keep={"a"})
    assert [x.id for x in merged.steps] == ["a", "b2", "c"]
    assert merged.step("a").instruction == "do a"
    assert merged.step("c").depends_on == ["a", "b2"]


def test_a_kept_step_the_revision_dropped_is_put_back() -> None:
    merged = merge_revision(CURRENT, plan(s("b2")), keep={"a"})
    assert [x.id for x in merged.steps] == ["b2", "a"]


def test_changed_and_gated_steps() -> None:
    revised = plan(
        s("a"), s("b", instruction="other"), s("c", "a", "b"), s("mail", tools=("send_email",))
    )
    assert changed_steps(CURRENT, revised, keep={"a"}) == ["b", "mail"]
    assert gated_changes(CURRENT, revised, {"a"}, {"send_email"}) == ["mail"]
    # An unchanged step with an irreversible tool needs no new look.
    same = plan(s("a"), s("b", tools=("send_email",)))
    before = plan(s("a"), s("b", tools=("send_email",)))
    assert gated_changes(before, same, set(), {"send_email"}) == []

"""The offline planner finds parallel work in the common ways people write it: each phrasing on
varied examples, each part its own step with no dependency on the others, and one step that
joins them; and tasks that only look alike are left to the other readings."""

from __future__ import annotations

import pytest

from planner_ui.core.plan import Plan

from .requests import plan_for


def parts_and_join(plan: Plan) -> tuple[list, object]:
    *parts, join = plan.steps
    return parts, join


def assert_side_by_side(plan: Plan, count: int) -> list:
    parts, join = parts_and_join(plan)
    assert len(parts) == count, [s.title for s in plan.steps]
    assert all(step.depends_on == [] for step in parts)
    assert join.depends_on == [step.id for step in parts]
    return parts


@pytest.mark.parametrize(
    ("task", "items"),
    [
        (
            "For each of Paris, Berlin, Rome and Madrid, find the population and the best time "
            "to visit.",
            ["Paris", "Berlin", "Rome", "Madrid"],
        ),
        (
            "For each of the three frameworks Django, Flask and FastAPI, write a short pros and "
            "cons list.",
            ["Django", "Flask", "FastAPI"],
        ),
        (
            "Summarize the latest release notes for each of Postgres, MySQL and SQLite.",
            ["Postgres", "MySQL", "SQLite"],
        ),
        (
            "For every one of Mercury, Venus, Mars, explain why it has no moons or few.",
            ["Mercury", "Venus", "Mars"],
        ),
    ],
)
def test_for_each_of_a_list_makes_one_step_per_item(task: str, items: list[str]) -> None:
    parts = assert_side_by_side(plan_for(task), len(items))
    for step, item in zip(parts, items, strict=True):
        assert item in step.title and item in step.instruction


@pytest.mark.parametrize(
    ("task", "pieces"),
    [
        (
            "Write one poem each about the sea, the mountains and the desert.",
            ["Write one poem about the sea", "Write one poem about the mountains"],
        ),
        (
            "Draft one short bio each for Alice, Bob, Carol and Dan.",
            ["Draft one short bio for Alice", "Draft one short bio for Dan"],
        ),
        (
            "Compose three haiku, one each about spring, summer and winter.",
            ["Compose one haiku about spring", "Compose one haiku about winter"],
        ),
    ],
)
def test_one_each_about_a_list_makes_one_piece_per_item(task: str, pieces: list[str]) -> None:
    plan = plan_for(task)
    parts, _ = parts_and_join(plan)
    assert all(step.depends_on == [] for step in parts)
    titles = [step.title for step in parts]
    for piece in pieces:
        assert piece in titles


@pytest.mark.parametrize(
    ("task", "days"),
    [
        (
            "Plan a trip to Paris: day 1 visit the Louvre, day 2 walk through Montmartre, "
            "day 3 take a boat on the Seine.",
            3,
        ),
        (
            "Day 1: hike to the lake. Day 2: rest in town. Day 3: climb the ridge. "
            "Day 4: fly home.",
            4,
        ),
        ("Prepare the course: week 1 covers variables, week 2 covers loops.", 2),
    ],
)
def test_numbered_days_or_weeks_are_planned_side_by_side(task: str, days: int) -> None:
    parts = assert_side_by_side(plan_for(task), days)
    unit = "Week" if "week 1" in task else "Day"
    assert [step.title.split(":")[0] for step in parts] == [
        f"{unit} {n}" for n in range(1, days + 1)
    ]


def test_each_numbered_part_keeps_the_goal_it_belongs_to() -> None:
    parts = assert_side_by_side(
        plan_for("Plan a trip to Rome: day 1 see the Colosseum, day 2 see the Vatican."), 2
    )
    assert "Day 2, as one part of this: Plan a trip to Rome" in parts[1].instruction
    assert "See the Vatican" in parts[1].instruction


@pytest.mark.parametrize(
    ("task", "count", "unit"),
    [
        ("Write three pages about the history of tea.", 3, "Page"),
        ("Write five short poems about autumn.", 5, "Short poem"),
        ("Draft two landing pages for a coffee shop.", 2, "Landing page"),
        ("Design 4 logos for a bicycle repair shop.", 4, "Logo"),
    ],
)
def test_a_count_of_pieces_makes_one_step_per_piece(task: str, count: int, unit: str) -> None:
    parts = assert_side_by_side(plan_for(task), count)
    assert [step.title for step in parts] == [f"{unit} {n} of {count}" for n in range(1, count + 1)]
    assert all("distinct from the other" in step.instruction for step in parts)


@pytest.mark.parametrize(
    ("task", "firsts"),
    [
        (
            "Summarize the benefits of tea and, separately, list the risks of coffee.",
            ["Summarize the benefits of tea", "List the risks of coffee"],
        ),
        (
            "Research the history of Rome; separately, write a limerick about cats.",
            ["Research the history of Rome", "Write a limerick about cats"],
        ),
        (
            "Translate the menu into French and separately compute 12 * 7.",
            ["Translate the menu into French", "Compute 12 * 7"],
        ),
    ],
)
def test_separately_splits_a_task_into_independent_parts(task: str, firsts: list[str]) -> None:
    parts = assert_side_by_side(plan_for(task), len(firsts))
    assert [step.title for step in parts] == firsts


def test_a_separate_calculation_still_gets_the_calculator() -> None:
    parts = assert_side_by_side(
        plan_for("Translate the menu into French and separately compute 12 * 7."), 2
    )
    assert parts[1].tools == ["calculator"]


@pytest.mark.parametrize(
    "task",
    [
        "For each of these cities, find the population.",  # no items named: the list follows
        "Research tea and coffee separately.",  # nothing after 'separately'
        "Plan day 3 and then day 1 of the trip.",  # not a sequence of parts
        "Write two sentences about tea.",  # too small to be pieces of their own
        "Compare Python and Go for writing a command-line tool.",
    ],
)
def test_tasks_that_only_look_alike_are_read_as_before(task: str) -> None:
    plan = plan_for(task)
    titles = " | ".join(step.title for step in plan.steps)
    assert " of 2" not in titles and "Day 3:" not in titles
    if task.startswith("Compare"):
        assert [s.id for s in plan.steps][-2:] == ["compare", "write-comparison"]

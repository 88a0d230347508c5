"""The plots' geometry: points and bars inside the frame, where their figures put them."""

from __future__ import annotations

from decimal import Decimal

from planner_ui.core.evaluation import ArmFigures, wilson_interval
from planner_ui.core.evaluation_plots import nice_step, success_against_cost, wall_time_per_task


def arm(name: str, runs: int, successes: int, cost: str, tokens_in: int = 100) -> ArmFigures:
    figures = ArmFigures(name, runs=runs, successes=successes, cost_usd=Decimal(cost))
    figures.tokens_in = tokens_in * runs
    figures.interval = wilson_interval(successes, runs)
    return figures


def test_success_against_cost_puts_each_arm_at_its_rate_and_mean_cost():
    plot = success_against_cost([arm("agent", 4, 2, "0.04"), arm("plan", 4, 4, "0.12")])
    agent, plan = plot.points
    assert plot.x_label == "cost per run (USD)"
    assert plan.x > agent.x and plan.y < agent.y  # more spent, higher up (y grows down)
    assert plan.y == plot.top  # 100%
    assert agent.y == round((plot.top + plot.bottom) / 2, 1)  # 50%
    assert agent.y_high < agent.y < agent.y_low
    assert all(plot.left <= p.x <= plot.right for p in plot.points)
    assert plot.x_ticks[0].label == "$0.00" and plot.x_ticks[-1].at == plot.right
    assert [t.label for t in plot.y_ticks] == ["0%", "25%", "50%", "75%", "100%"]
    assert agent.title == "agent: 2/4 succeeded (50%, 95% interval 15%–85%), $0.0100 per run"


def test_with_nothing_priced_the_points_stand_on_tokens():
    plot = success_against_cost(
        [arm("agent", 2, 1, "0", 50), arm("plan", 2, 2, "0", 200), arm("none", 0, 0, "0")]
    )
    assert plot.x_label == "tokens per run (nothing was priced)"
    assert [p.arm for p in plot.points] == ["agent", "plan"]
    assert plot.points[1].x > plot.points[0].x


def test_wall_time_bars_are_grouped_by_task_with_one_bar_per_arm():
    plot = wall_time_per_task(
        ["a", "b"], ["agent", "plan"], {("a", "agent"): 2.0, ("a", "plan"): 4.0, ("b", "plan"): 1}
    )
    assert [(b.arm, b.arm_class) for b in plot.bars] == [
        ("agent", "arm-0"),
        ("plan", "arm-1"),
        ("plan", "arm-1"),
    ]
    a_agent, a_plan, _ = plot.bars
    assert a_plan.height == 2 * a_agent.height
    assert all(b.y + b.height == plot.bottom for b in plot.bars)
    assert [g.label for g in plot.groups] == ["a", "b"]
    assert plot.y_ticks[0].label == "0 s" and plot.y_ticks[-1].at >= plot.top


def test_nice_steps_are_one_two_or_five_times_a_power_of_ten():
    assert [nice_step(v) for v in (1.0, 7.0, 0.013, 460.0)] == [0.2, 2.0, 0.005, 100.0]

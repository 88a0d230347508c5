"""The geometry of an experiment's two plots, for server-rendered SVG (no script, no CDN):
success against cost per arm, with its confidence interval, and wall time per task per arm.
Coordinates are in the SVG's own units; the template draws them and escapes every label."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .evaluation import ArmFigures
from .timing import tick_label, tick_step

WIDTH = 560
HEIGHT = 280
# Room for the axes' labels: left, right, top, bottom.
MARGIN = (56, 16, 16, 44)
# One colour per arm, in the arms' order (the CSS gives .arm-0 … .arm-5 these fills).
ARM_CLASSES = 6


@dataclass(frozen=True)
class Tick:
    at: float  # the coordinate along its axis
    label: str


@dataclass(frozen=True)
class Point:
    arm: str
    arm_class: str
    x: float
    y: float
    y_low: float  # the interval's ends, as coordinates
    y_high: float
    title: str  # what a tooltip reads: the figures behind the point


@dataclass(frozen=True)
class Bar:
    arm: str
    arm_class: str
    x: float
    y: float
    width: float
    height: float
    title: str


@dataclass(frozen=True)
class Plot:
    x_label: str
    y_label: str
    y_ticks: list[Tick]
    x_ticks: list[Tick] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    groups: list[Tick] = field(default_factory=list)  # the tasks under a bar plot's groups
    width: int = WIDTH
    height: int = HEIGHT
    # The frame inside the margins, where the data is drawn.
    left: float = MARGIN[0]
    right: float = WIDTH - MARGIN[1]
    top: float = MARGIN[2]
    bottom: float = HEIGHT - MARGIN[3]


def _frame() -> tuple[float, float, float, float]:
    left, right, top, bottom = MARGIN
    return left, WIDTH - right, top, HEIGHT - bottom


def nice_step(top_value: float, most: int = 5) -> float:
    """The smallest of 1, 2 or 5 times a power of ten that marks 0..top_value in `most` steps."""
    if top_value <= 0:
        return 1.0
    exponent = math.floor(math.log10(top_value / most))
    for e in (exponent, exponent + 1):
        for n in (1, 2, 5):
            if top_value / (n * 10.0**e) <= most:
                return n * 10.0**e
    return 10.0 ** (exponent + 2)


def _axis(top_value: float, most: int = 5) -> tuple[float, float]:
    """A round top for an axis a little above `top_value`, and its step."""
    top_value = top_value * 1.1 or 1.0
    step = nice_step(top_value, most)
    return step * math.ceil(top_value / step - 1e-9), step


def _ticks(
    top_value: float,
    step: float,
    to_coord: Callable[[float], float],
    label: Callable[[float, float], str],
) -> list[Tick]:
    count = round(top_value / step)
    return [Tick(round(to_coord(i * step), 1), label(i * step, step)) for i in range(count + 1)]


def _number(value: float, step: float) -> str:
    decimals = max(0, math.ceil(-math.log10(step) - 1e-9)) if step < 1 else 0
    return f"{value:,.{decimals}f}"


def success_against_cost(arms: Sequence[ArmFigures]) -> Plot:
    """Each arm as a point: its success rate (with the Wilson interval as a whisker) over its
    mean cost per run; over its mean tokens per run when nothing was priced (offline and local
    models cost nothing, and every point would sit on the axis)."""
    left, right, top, bottom = _frame()
    counted = [a for a in arms if a.runs]
    priced = any(a.cost_usd for a in counted)

    def x_value(a: ArmFigures) -> float:
        return float(a.cost_usd if priced else a.tokens) / a.runs

    x_max, x_step = _axis(max((x_value(a) for a in counted), default=0.0))

    def to_x(value: float) -> float:
        return left + (right - left) * value / x_max

    def to_y(rate: float) -> float:
        return bottom - (bottom - top) * rate

    points = []
    for index, a in enumerate(arms):
        if not a.runs:
            continue
        low, high = a.interval
        rate = a.success_rate or 0.0
        spent = f"${float(a.cost_usd) / a.runs:.4f}" if priced else f"{a.tokens // a.runs} tokens"
        points.append(
            Point(
                arm=a.arm,
                arm_class=f"arm-{index % ARM_CLASSES}",
                x=round(to_x(x_value(a)), 1),
                y=round(to_y(rate), 1),
                y_low=round(to_y(low), 1),
                y_high=round(to_y(high), 1),
                title=f"{a.arm}: {a.successes}/{a.runs} succeeded ({rate:.0%}, 95% interval "
                f"{low:.0%}–{high:.0%}), {spent} per run",
            )
        )
    y_ticks = [Tick(round(to_y(v / 4), 1), f"{v * 25}%") for v in range(5)]
    x_ticks = _ticks(
        x_max, x_step, to_x, (lambda v, st: "$" + _number(v, st)) if priced else _number
    )
    return Plot(
        x_label="cost per run (USD)" if priced else "tokens per run (nothing was priced)",
        y_label="success",
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        points=points,
    )


def wall_time_per_task(
    task_ids: Sequence[str], arm_names: Sequence[str], seconds: dict[tuple[str, str], float]
) -> Plot:
    """Grouped bars: for each task, each arm's mean wall time over its counted runs
    (`seconds` by (task, arm); a missing pair draws no bar)."""
    left, right, top, bottom = _frame()
    # Seconds get the timeline's steps (whole minutes past a minute).
    raw = max(seconds.values(), default=0.0) * 1.1 or 1.0
    y_step = tick_step(raw, 5)
    y_max = y_step * math.ceil(raw / y_step - 1e-9)

    def to_y(value: float) -> float:
        return bottom - (bottom - top) * value / y_max

    group_width = (right - left) / max(1, len(task_ids))
    bar_width = group_width * 0.8 / max(1, len(arm_names))
    bars, groups = [], []
    for t_index, task_id in enumerate(task_ids):
        start = left + group_width * t_index + group_width * 0.1
        groups.append(Tick(round(start + group_width * 0.4, 1), task_id))
        for a_index, arm in enumerate(arm_names):
            value = seconds.get((task_id, arm))
            if value is None:
                continue
            y = to_y(value)
            bars.append(
                Bar(
                    arm=arm,
                    arm_class=f"arm-{a_index % ARM_CLASSES}",
                    x=round(start + bar_width * a_index, 1),
                    y=round(y, 1),
                    width=round(bar_width, 1),
                    height=round(bottom - y, 1),
                    title=f"{task_id}, {arm}: {value:.1f} s",
                )
            )
    y_ticks = _ticks(y_max, y_step, to_y, tick_label)
    return Plot(x_label="task", y_label="wall time", y_ticks=y_ticks, bars=bars, groups=groups)

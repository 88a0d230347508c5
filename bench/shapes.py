"""The DAGs the benchmark runs, and the makespan an ideal scheduler would reach on them.

Plain Python like planner_ui.core, whose DAG functions it reuses. A shape is a list of plan
steps; agentsite appends its synthesis step to every plan (depending on the plan's sinks), and
`with_synthesis` adds it here too, so that widths, critical paths and ideal makespans count the
step that really runs last.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from planner_ui.core import dag
from planner_ui.core.plan import SYNTHESIS_STEP_ID

Deps = dict[str, list[str]]

SHAPES = ("chain", "fanout", "diamond", "layered")


@dataclass(frozen=True)
class Shape:
    name: str
    deps: Deps  # the plan's own steps, in plan order

    @property
    def size(self) -> int:
        return len(self.deps)

    def with_synthesis(self) -> Deps:
        return {**self.deps, SYNTHESIS_STEP_ID: dag.sinks(self.deps)}

    def plan(self) -> dict:
        """The plan as agentsite's schema has it: tool-free writer steps, one model call each."""
        return {
            "goal": f"Benchmark: a {self.name} of {self.size} steps.",
            "steps": [
                {
                    "id": step_id,
                    "title": f"Point {number}",
                    # No tool is granted, so the executor answers in one model call.
                    "instruction": f"Summarize point {number} in one sentence.",
                    "role": "writer",
                    "tools": [],
                    "depends_on": parents,
                }
                for number, (step_id, parents) in enumerate(self.deps.items(), start=1)
            ],
        }


def _ids(count: int) -> list[str]:
    return [f"s{number:02d}" for number in range(1, count + 1)]


def chain(size: int, rng: random.Random, width: int) -> Shape:
    ids = _ids(size)
    return Shape("chain", {step: ids[i - 1 : i] for i, step in enumerate(ids)})


def fanout(size: int, rng: random.Random, width: int) -> Shape:
    """One root and size-1 leaves that depend on it; the synthesis step joins the leaves."""
    root, *leaves = _ids(size)
    return Shape("fanout", {root: [], **{leaf: [root] for leaf in leaves}})


def diamond(size: int, rng: random.Random, width: int) -> Shape:
    """One root, size-2 parallel steps, and a join step inside the plan that waits for all."""
    root, *middle, join = _ids(size)
    return Shape("diamond", {root: [], **{step: [root] for step in middle}, join: list(middle)})


def layered(size: int, rng: random.Random, width: int) -> Shape:
    """Random layers of width/2 to `width` steps (one layer exactly `width` wide).

    Every step after the first layer depends on 1-3 steps of the layer before it, which fixes
    its depth, and sometimes on one step further back too.
    """
    sizes = [min(width, size)]
    while sum(sizes) < size:
        sizes.append(min(rng.randint(max(1, (width + 1) // 2), width), size - sum(sizes)))
    rng.shuffle(sizes)
    ids = iter(_ids(size))
    layers = [[next(ids) for _ in range(count)] for count in sizes]
    deps: Deps = {}
    for depth, layer in enumerate(layers):
        for step in layer:
            if depth == 0:
                deps[step] = []
                continue
            previous = layers[depth - 1]
            parents = rng.sample(previous, rng.randint(1, min(3, len(previous))))
            if depth >= 2 and rng.random() < 0.2:
                parents.append(rng.choice(rng.choice(layers[: depth - 1])))
            deps[step] = sorted(parents)
    return Shape("layered", deps)


BUILDERS: dict[str, Callable[[int, random.Random, int], Shape]] = {
    "chain": chain,
    "fanout": fanout,
    "diamond": diamond,
    "layered": layered,
}


def build(name: str, size: int, *, seed: int, width: int) -> Shape:
    """The shape `name` with `size` plan steps; random shapes depend only on seed and size."""
    if size < 3:
        raise ValueError(f"a shape needs at least 3 steps, not {size}")
    return BUILDERS[name](size, random.Random(f"{seed}:{name}:{size}"), width)


def width_of(deps: Deps) -> int:
    """The most steps that run at once when every step takes as long: the widest depth layer."""
    return max(Counter(dag.depth_layers(deps).values()).values())


def critical_path_steps(deps: Deps) -> int:
    return len(dag.critical_path(deps))


def ideal_makespan_steps(deps: Deps, slots: int) -> int:
    """Makespan, in step durations, of a scheduler with no overhead at all and `slots` workers.

    Each step takes one unit; ready steps start in plan order as slots free up, which is what
    agentsite's dispatch does. With at least as many slots as the DAG is wide this is the
    critical path's length.
    """
    done: set[str] = set()
    started: set[str] = set()
    elapsed = 0
    while len(done) < len(deps):
        batch = dag.ready_steps(deps, done, started)[:slots]
        if not batch:
            raise ValueError("the DAG has a cycle or a dependency on an unknown step")
        started.update(batch)
        done.update(batch)
        elapsed += 1
    return elapsed

"""Graph functions over a plan's dependencies: order, readiness, cycles, critical path.

Every function takes `deps`: a mapping from step id to the ids it depends on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

Deps = Mapping[str, Sequence[str]]


def find_cycle(deps: Deps) -> list[str] | None:
    """Return one cycle as a closed path [a, b, ..., a], or None when the graph is acyclic.

    Dependencies on unknown steps are ignored here; validation reports them separately.
    """
    white, grey, black = 0, 1, 2
    color = {node: white for node in deps}
    for root in deps:
        if color[root] != white:
            continue
        # Iterative DFS so a 60-step chain cannot hit the recursion limit.
        path: list[str] = [root]
        iters = [iter(deps[root])]
        color[root] = grey
        while path:
            child = next(iters[-1], None)
            if child is None:
                color[path.pop()] = black
                iters.pop()
                continue
            if child not in color:
                continue
            if color[child] == grey:
                return path[path.index(child) :] + [child]
            if color[child] == white:
                color[child] = grey
                path.append(child)
                iters.append(iter(deps[child]))
    return None


def ancestors(deps: Deps, node: str) -> set[str]:
    """Every step that `node` depends on, directly or through others."""
    seen: set[str] = set()
    stack = list(deps[node])
    while stack:
        parent = stack.pop()
        if parent not in seen and parent in deps:
            seen.add(parent)
            stack.extend(deps[parent])
    return seen


def upstream_done(deps: Deps, done: Iterable[str]) -> set[str]:
    """The steps every one of whose ancestors is in `done`: `ancestors(deps, s) <= done` for
    every step at once, in one pass in topological order rather than a walk per step (a
    finished run of 1,000 steps asked it of each step for its fork buttons)."""
    done_set = set(done)
    clear: set[str] = set()
    for node in topological_order(deps):
        if all(p in done_set and p in clear for p in deps[node] if p in deps):
            clear.add(node)
    return clear


def descendants(deps: Deps, node: str) -> set[str]:
    """Every step that waits for `node`, directly or through others."""
    below = dependents(deps)
    seen: set[str] = set()
    stack = list(below.get(node, []))
    while stack:
        child = stack.pop()
        if child not in seen:
            seen.add(child)
            stack.extend(below.get(child, []))
    return seen


def topological_order(deps: Deps) -> list[str]:
    """Steps in an order where every step comes after its dependencies.

    Ties keep the plan's own order, so the result is stable for display.
    Raises ValueError on a cycle.
    """
    position = {node: i for i, node in enumerate(deps)}
    remaining = {node: len([d for d in deps[node] if d in deps]) for node in deps}
    dependents: dict[str, list[str]] = {node: [] for node in deps}
    for node, parents in deps.items():
        for parent in parents:
            if parent in dependents:
                dependents[parent].append(node)
    ready = sorted((n for n, count in remaining.items() if count == 0), key=position.__getitem__)
    order: list[str] = []
    while ready:
        node = ready.pop(0)
        order.append(node)
        for child in dependents[node]:
            remaining[child] -= 1
            if remaining[child] == 0:
                ready.append(child)
        ready.sort(key=position.__getitem__)
    if len(order) != len(deps):
        raise ValueError(f"cycle: {' → '.join(find_cycle(deps) or [])}")
    return order


def ready_steps(deps: Deps, done: Iterable[str], started: Iterable[str] = ()) -> list[str]:
    """Steps not yet started whose dependencies are all done, in plan order."""
    done_set, started_set = set(done), set(started)
    return [
        node
        for node, parents in deps.items()
        if node not in done_set
        and node not in started_set
        and all(parent in done_set for parent in parents)
    ]


def dependents(deps: Deps) -> dict[str, list[str]]:
    """Each step's dependents (the steps that wait for it), in plan order; [] for none."""
    found: dict[str, list[str]] = {node: [] for node in deps}
    for node, parents in deps.items():
        for parent in parents:
            found.setdefault(parent, []).append(node)
    return found


def depth_layers(deps: Deps) -> dict[str, int]:
    """Each step's layer: 0 for steps with no dependencies, else 1 + the deepest dependency."""
    layer: dict[str, int] = {}
    for node in topological_order(deps):
        layer[node] = 1 + max((layer[p] for p in deps[node] if p in layer), default=-1)
    return layer


def sinks(deps: Deps) -> list[str]:
    """Steps nothing depends on, in plan order."""
    depended_on = {parent for parents in deps.values() for parent in parents}
    return [node for node in deps if node not in depended_on]


def critical_path(deps: Deps, durations: Mapping[str, float] | None = None) -> list[str]:
    """The longest chain of dependent steps, weighted by `durations` (default 1 per step)."""
    if not deps:
        return []
    weight = durations or {}
    best: dict[str, float] = {}
    via: dict[str, str | None] = {}
    for node in topological_order(deps):
        parents = [p for p in deps[node] if p in best]
        parent = max(parents, key=best.__getitem__, default=None)
        best[node] = weight.get(node, 1.0) + (best[parent] if parent else 0.0)
        via[node] = parent
    end: str | None = max(best, key=best.__getitem__)
    path: list[str] = []
    while end is not None:
        path.append(end)
        end = via[end]
    return path[::-1]

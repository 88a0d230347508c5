"""Graph functions: worked examples, then properties over random DAGs.

Random DAGs are built by letting each node depend only on nodes made before it (so there can be
no cycle), then shuffling the plan order so no function can lean on the construction order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner_ui.core.dag import (
    ancestors,
    critical_path,
    dependents,
    depth_layers,
    descendants,
    find_cycle,
    ready_steps,
    sinks,
    topological_order,
    upstream_done,
)

Deps = dict[str, list[str]]


@st.composite
def dags(draw: st.DrawFn, max_nodes: int = 12) -> Deps:
    count = draw(st.integers(min_value=0, max_value=max_nodes))
    names = [f"n{i}" for i in range(count)]
    deps = {
        name: draw(st.lists(st.sampled_from(names[:i]), unique=True)) if i else []
        for i, name in enumerate(names)
    }
    shuffled = draw(st.permutations(names))
    return {name: deps[name] for name in shuffled}


def edges(deps: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """(step, dependency) pairs."""
    return [(node, parent) for node, parents in deps.items() for parent in parents]


def heaviest_chain_weight(deps: Deps, weight: Mapping[str, float]) -> float:
    """Brute force: the weight of every chain of dependencies, by walking all of them."""
    best = 0.0

    def walk(node: str, total: float) -> None:
        nonlocal best
        best = max(best, total)
        for parent in deps[node]:
            walk(parent, total + weight[parent])

    for node in deps:
        walk(node, weight[node])
    return best


# --- worked examples ---------------------------------------------------------------------------

DIAMOND: Deps = {"fetch": [], "left": ["fetch"], "right": ["fetch"], "join": ["left", "right"]}


def test_topological_order_of_a_diamond() -> None:
    assert topological_order(DIAMOND) == ["fetch", "left", "right", "join"]


def test_topological_order_takes_the_earliest_ready_step_in_plan_order() -> None:
    assert topological_order({"b": [], "a": [], "c": ["a"], "d": []}) == ["b", "a", "c", "d"]
    # 'c' comes first in the plan, so it goes as soon as its dependency is placed.
    assert topological_order({"c": ["a"], "a": [], "b": []}) == ["a", "c", "b"]


def test_topological_order_refuses_a_cycle_and_names_it() -> None:
    with pytest.raises(ValueError) as caught:
        topological_order({"a": ["b"], "b": ["a"], "c": []})

    assert str(caught.value) == "cycle: a → b → a"


def test_find_cycle_returns_a_closed_path() -> None:
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]


def test_find_cycle_finds_a_self_loop() -> None:
    assert find_cycle({"a": [], "b": ["b"]}) == ["b", "b"]


def test_find_cycle_ignores_unknown_dependencies() -> None:
    assert find_cycle({"a": ["ghost"], "b": ["a"]}) is None


def test_find_cycle_survives_a_long_chain() -> None:
    chain = {f"s{i}": [f"s{i - 1}"] if i else [] for i in range(5000)}

    assert find_cycle(chain) is None


def test_ready_steps_waits_for_every_dependency() -> None:
    assert ready_steps(DIAMOND, done=[]) == ["fetch"]
    assert ready_steps(DIAMOND, done=["fetch"]) == ["left", "right"]
    assert ready_steps(DIAMOND, done=["fetch", "left"]) == ["right"]
    assert ready_steps(DIAMOND, done=["fetch", "left", "right"]) == ["join"]


def test_ready_steps_skips_started_steps() -> None:
    assert ready_steps(DIAMOND, done=["fetch"], started=["left"]) == ["right"]


def test_depth_layers_of_a_diamond() -> None:
    assert depth_layers(DIAMOND) == {"fetch": 0, "left": 1, "right": 1, "join": 2}


def test_sinks_are_steps_nothing_depends_on() -> None:
    assert sinks(DIAMOND) == ["join"]
    assert sinks({"a": [], "b": [], "c": ["a"]}) == ["b", "c"]


def test_critical_path_counts_steps_by_default() -> None:
    deps = {"a": [], "b": ["a"], "c": ["b"], "d": []}

    assert critical_path(deps) == ["a", "b", "c"]


def test_critical_path_follows_the_slow_branch() -> None:
    durations = {"fetch": 1.0, "left": 5.0, "right": 2.0, "join": 1.0}

    assert critical_path(DIAMOND, durations) == ["fetch", "left", "join"]
    assert critical_path(DIAMOND, {**durations, "right": 9.0}) == ["fetch", "right", "join"]


def test_critical_path_of_nothing() -> None:
    assert critical_path({}) == []


# --- properties over random DAGs ---------------------------------------------------------------


@given(dags())
def test_topological_order_respects_every_edge_and_keeps_every_node(deps: Deps) -> None:
    order = topological_order(deps)

    assert sorted(order) == sorted(deps)
    position = {node: i for i, node in enumerate(order)}
    for node, parent in edges(deps):
        assert position[parent] < position[node]


@given(dags())
def test_find_cycle_is_none_on_a_dag(deps: Deps) -> None:
    assert find_cycle(deps) is None


@given(dags(), st.data())
def test_a_back_edge_makes_a_cycle_of_real_edges(deps: Deps, data: st.DataObject) -> None:
    # Make an ancestor depend on one of its descendants: that closes a loop.
    pairs = [(node, ancestor) for node in deps for ancestor in ancestors(deps, node)]
    if not pairs:
        deps = {"x": [], "y": ["x"]}
        pairs = [("y", "x")]
    descendant, ancestor = data.draw(st.sampled_from(sorted(pairs)))
    cyclic = {node: list(parents) for node, parents in deps.items()}
    cyclic[ancestor].append(descendant)

    cycle = find_cycle(cyclic)

    assert cycle is not None
    assert len(cycle) >= 3
    assert cycle[0] == cycle[-1]
    assert len(set(cycle[:-1])) == len(cycle) - 1, "a simple cycle visits each node once"
    for node, parent in zip(cycle, cycle[1:], strict=False):
        assert parent in cyclic[node], f"{node} → {parent} is not an edge"
    with pytest.raises(ValueError):
        topological_order(cyclic)


@given(dags(), st.data())
def test_ready_steps_are_exactly_those_whose_dependencies_are_done(
    deps: Deps, data: st.DataObject
) -> None:
    done = data.draw(st.sets(st.sampled_from(sorted(deps)))) if deps else set()
    started = data.draw(st.sets(st.sampled_from(sorted(deps)))) if deps else set()

    ready = ready_steps(deps, done, started)

    expected = [
        node
        for node in deps
        if node not in done and node not in started and set(deps[node]) <= done
    ]
    assert ready == expected


@given(dags())
def test_taking_ready_steps_in_waves_runs_the_whole_dag(deps: Deps) -> None:
    done: list[str] = []
    waves = 0
    while len(done) < len(deps):
        wave = ready_steps(deps, done)
        assert wave, "a DAG never stalls before every step has run"
        for node in wave:
            assert set(deps[node]) <= set(done)
        done.extend(wave)
        waves += 1

    assert sorted(done) == sorted(deps)
    # Waves are the depth layers: the number of waves is the longest chain's length.
    assert waves == (max(depth_layers(deps).values()) + 1 if deps else 0)


@given(dags(max_nodes=9), st.data())
def test_critical_path_is_a_real_chain_no_lighter_than_any_other(
    deps: Deps, data: st.DataObject
) -> None:
    durations = {node: float(data.draw(st.integers(0, 20))) for node in deps}

    path = critical_path(deps, durations)

    if not deps:
        assert path == []
        return
    for earlier, later in zip(path, path[1:], strict=False):
        assert earlier in deps[later], f"{later} does not depend on {earlier}"
    weight = sum(durations[node] for node in path)
    assert math.isclose(weight, heaviest_chain_weight(deps, durations))


@given(dags(max_nodes=9))
def test_critical_path_without_durations_is_a_longest_chain(deps: Deps) -> None:
    path = critical_path(deps)

    longest = heaviest_chain_weight(deps, dict.fromkeys(deps, 1.0)) if deps else 0
    assert len(path) == longest


@given(dags())
def test_depth_layers_put_every_step_one_below_its_deepest_dependency(deps: Deps) -> None:
    layers = depth_layers(deps)

    assert set(layers) == set(deps)
    for node, parents in deps.items():
        expected = 1 + max((layers[p] for p in parents), default=-1)
        assert layers[node] == expected
    for node, parent in edges(deps):
        assert layers[parent] < layers[node]


@given(dags())
def test_sinks_are_never_depended_on_and_everything_else_is(deps: Deps) -> None:
    depended_on = {parent for _, parent in edges(deps)}

    assert sinks(deps) == [node for node in deps if node not in depended_on]


def test_ancestors_follow_dependencies_transitively():
    deps = {"a": [], "b": ["a"], "c": ["b"], "d": ["a"], "e": ["c", "d"]}
    assert ancestors(deps, "e") == {"a", "b", "c", "d"}
    assert ancestors(deps, "c") == {"a", "b"}
    assert ancestors(deps, "a") == set()


@given(dags())
def test_descendants_are_the_steps_whose_ancestors_hold_the_step(deps: Deps) -> None:
    for node in deps:
        assert descendants(deps, node) == {
            other for other in deps if node in ancestors(deps, other)
        }


def test_dependents_are_the_steps_that_wait_for_each_step() -> None:
    assert dependents(DIAMOND) == {
        "fetch": ["left", "right"],
        "left": ["join"],
        "right": ["join"],
        "join": [],
    }
    assert dependents({}) == {}


def test_upstream_done_is_ancestors_within_done_for_every_step() -> None:
    deps = {"a": [], "b": ["a"], "c": ["b"], "d": [], "e": ["c", "d"], "f": ["x"]}
    for done in [set(), {"a"}, {"a", "b"}, {"a", "b", "c"}, {"a", "b", "c", "d"}, {"d"}]:
        expected = {s for s in deps if ancestors(deps, s) <= done}
        assert upstream_done(deps, done) == expected

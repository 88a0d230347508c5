"""A plan far past what the planner writes (the benchmark's 1,000-step scale mode) is drawn in
columns by graph.js's own layout, not by dagre, whose ranking froze such a page for seconds:
each step in the column of its longest chain of dependencies, every arrow going right, no two
boxes over each other, and each step's keyboard button over its box."""

from __future__ import annotations

import pytest

from bench import shapes
from bench.scheduler import scripted_run_create
from planner_ui.core import dag
from tests.browser.flows import login, open_step

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]

# The graph's data, read from Cytoscape once it has drawn the plan.
_DRAWN = """() => {
  const cy = window.planGraph.cy;
  return {
    nodes: cy.nodes(".step").map((n) => ({id: n.id(), x: n.position("x"), y: n.position("y"),
                                          h: n.height(), at: n.renderedPosition()})),
    edges: cy.edges(".dependency").map((e) => [e.source().id(), e.target().id()]),
  };
}"""


def test_a_plan_of_150_steps_is_drawn_in_columns_of_its_chains(page, daphne_url, make_user):
    user = make_user("bea", "pw-for-tests-big")
    layered = shapes.build("layered", 149, seed=3, width=12)
    # A step that waits on nothing and that only the synthesis waits on: in the first column,
    # where its chain starts (dagre's ranking drew it beside the synthesis, at the far right).
    shape = shapes.Shape("layered", {**layered.deps, "aside": []})
    run = scripted_run_create(user, shape)
    login(page, daphne_url, "bea", "pw-for-tests-big")
    page.goto(f"{daphne_url}/runs/{run.pk}/")
    page.wait_for_function("() => window.planGraph && window.planGraph.cy.nodes('.step').length")
    drawn = page.evaluate(_DRAWN)

    deps = shape.with_synthesis()
    assert {node["id"] for node in drawn["nodes"]} == set(deps)
    assert sorted(map(tuple, drawn["edges"])) == sorted(
        (parent, step) for step, parents in deps.items() for parent in parents
    )
    x = {node["id"]: node["x"] for node in drawn["nodes"]}
    depth = dag.depth_layers(deps)
    # One column per depth, left to right: every arrow goes right.
    columns = {d: {x[step] for step in deps if depth[step] == d} for d in set(depth.values())}
    assert all(len(xs) == 1 for xs in columns.values()), columns
    lefts = [min(columns[d]) for d in sorted(columns)]
    assert lefts == sorted(set(lefts))
    assert all(x[parent] < x[step] for step, parents in deps.items() for parent in parents)
    assert x["aside"] == min(x.values())
    # In each column the boxes are stacked without overlapping.
    for d in columns:
        boxes = sorted((n["y"], n["h"]) for n in drawn["nodes"] if depth[n["id"]] == d)
        for (y1, h1), (y2, h2) in zip(boxes, boxes[1:], strict=False):
            assert y1 + h1 / 2 < y2 - h2 / 2

    # The keyboard reaches a step deep in the plan, its button over its box.
    middle = shape.plan()["steps"][75]["id"]
    open_step(page, middle)
    button = page.locator(f'.plan-graph-step[data-step-id="{middle}"]').bounding_box()
    graph = page.locator("#plan-graph").bounding_box()
    at = page.evaluate("(id) => window.planGraph.cy.getElementById(id).renderedPosition()", middle)
    assert abs(button["x"] + button["width"] / 2 - (graph["x"] + at["x"])) < 2
    assert abs(button["y"] + button["height"] / 2 - (graph["y"] + at["y"])) < 2
    assert page.js_errors == []

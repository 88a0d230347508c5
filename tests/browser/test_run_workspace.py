"""The run page as a workspace: the graph right under a summary line, a step's details in a
panel beside it (from a click or from the keyboard), a refused connection that says why next to
the pointer, a large plan that fits the window, and a finished run that fits in two screens."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from planner_ui.models import Approval, Run
from planner_ui.services.events import event_append
from planner_ui.services.runs import run_approve_plan, run_plan

from .flows import (
    approve_and_finish,
    login,
    open_step,
    retried_in_another_tab,
    routed_until,
    step_in_graph,
    submit_task,
)

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]

# The README's first example.
FIRST_EXAMPLE = "Compare Python and Go for writing a command-line tool"


def _node_point(page, step_id: str) -> tuple[float, float]:
    """Where a step's box is on the page, once the graph has settled: a refresh that the
    socket triggers mounts the graph afresh."""
    expect(page.locator("#ws-state")).to_have_text("live")
    point = page.evaluate(f"""() => new Promise((resolve) => setTimeout(() => {{
        const el = document.getElementById('plan-graph'), box = el.getBoundingClientRect();
        const pos = window.planGraph.cy.getElementById('{step_id}').renderedPosition();
        resolve([box.x + pos.x, box.y + pos.y]);
    }}, 300))""")
    return point[0], point[1]


def test_the_finished_first_example_fits_in_two_screens(
    page, daphne_url, celery_worker_process, make_user
):
    page.set_viewport_size({"width": 1400, "height": 900})
    make_user("ada", "pw-for-tests-1")
    login(page, daphne_url, "ada", "pw-for-tests-1")
    submit_task(page, FIRST_EXAMPLE)
    page.click("#approve-plan")
    expect(page.locator("#result")).to_be_visible(timeout=90_000)
    run = Run.objects.get()
    assert run.status == "succeeded" and run.steps.count() >= 3
    page.reload()
    # The graph starts in the first screen, right under the summary line.
    summary = page.locator("#run-summary")
    expect(summary).to_contain_text(f"{run.steps.count()} / {run.steps.count()} steps finished")
    graph_top = page.locator("#plan-graph").bounding_box()["y"]
    assert graph_top < 360, graph_top
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height <= 2 * 900, f"the finished run page is {height} px tall"
    # A long deliverable is folded, and opens whole on "Show more".
    result = page.locator("#result-body")
    folded = result.bounding_box()["height"]
    page.locator("#result .show-more").click()
    expect(page.locator("#result .show-more")).to_have_text("Show less")
    assert result.bounding_box()["height"] > folded


def test_a_long_step_output_comes_whole_when_it_is_unfolded(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("cy", "pw-for-tests-1")
    login(page, daphne_url, "cy", "pw-for-tests-1")
    submit_task(page, "Research the history of tea, then write a short summary")
    approve_and_finish(page)
    # An output far longer than what its card sends (core.fold), ending in markup.
    paragraphs = [f"Paragraph {n}: " + "tea " * 20 for n in range(40)]
    output = "\n\n".join(paragraphs) + "\n\nThe **last** word. <script>window.ran = 1</script>"
    run = Run.objects.get()
    run.steps.filter(step_id="research-history-tea").update(output=output)
    page.reload()
    open_step(page, "research-history-tea")
    body = page.locator("#output-research-history-tea")
    expect(body).to_contain_text("Paragraph 0:")
    expect(body).not_to_contain_text("Paragraph 39:")
    folded = body.bounding_box()["height"]
    more = page.locator("#step-research-history-tea .show-more")
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/output/" in r.url else None)
    more.click()
    expect(more).to_have_text("Show less")
    expect(body.locator("strong")).to_have_text("last")
    expect(body).to_contain_text("Paragraph 39:")
    assert body.bounding_box()["height"] > folded
    assert page.evaluate("window.ran") is None  # the model's script is text
    # Folded again, it keeps what it fetched: a second unfold asks for nothing.
    more.click()
    expect(more).to_have_text("Show more")
    more.click()
    expect(more).to_have_text("Show less")
    expect(body).to_contain_text("Paragraph 39:")
    assert len(asked) == 1, asked

    # The run goes on (another tab retries the summary): the page is rendered again, and the
    # output being read stays unfolded, whole.
    retried_in_another_tab(page, run, "write-short-summary")
    expect(more).to_have_text("Show less")
    expect(body).to_contain_text("Paragraph 39:")
    assert page.js_errors == []


def test_a_step_opens_beside_the_graph_from_a_click_and_from_the_keyboard(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("bea", "pw-for-tests-1")
    login(page, daphne_url, "bea", "pw-for-tests-1")
    submit_task(page, "Research the history of tea, then write a short summary")
    panel = page.locator("#step-panel")
    expect(panel).to_be_hidden()
    expect(page.locator("#step-research-history-tea")).to_be_hidden()

    # A click on the box opens its card in the panel; the graph stays on screen.
    x, y = _node_point(page, "research-history-tea")
    page.mouse.click(x, y)
    card = page.locator("#step-research-history-tea")
    expect(card).to_be_visible()
    expect(card.locator(".instruction")).to_contain_text("history of tea")
    expect(card.locator(".step-status")).to_have_text("pending")
    expect(page.locator("#step-write-short-summary")).to_be_hidden()
    expect(page.locator("#plan-graph")).to_be_in_viewport()
    assert page.evaluate("window.planGraph.cy.$(':selected').map((n) => n.id())") == [
        "research-history-tea"
    ]

    # Escape closes it and puts focus back on the step in the graph.
    card.locator(".step-title").focus()
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    focused = page.evaluate("document.activeElement.dataset.stepId")
    assert focused == "research-history-tea"

    # From the keyboard: the arrow key moves to the next step, Enter opens it with focus in the
    # panel, and its editor works from there; after the save, focus is back on the step.
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.dataset.stepId") == "write-short-summary"
    page.keyboard.press("Enter")
    summary_card = page.locator("#step-write-short-summary")
    expect(summary_card).to_be_visible()
    expect(summary_card.locator(".step-title")).to_be_focused()
    summary_card.locator("summary", has_text="Edit step").click()
    summary_card.get_by_label("Title").fill("Write a tea haiku")
    summary_card.get_by_label("Title").press("Enter")
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 2")
    expect(summary_card.locator(".step-title")).to_have_text("Write a tea haiku")
    expect(summary_card).to_be_visible()
    expect(step_in_graph(page, "write-short-summary")).to_be_focused()

    # Connect from the keyboard: C on a step, then Enter on the one that should wait for it.
    page.locator("#add-step summary").click()
    page.fill("#new-title", "Check dates")
    page.fill("#new-instruction", "Check the dates in the research.")
    page.get_by_role("button", name="Add step").click()
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 3")
    step_in_graph(page, "check-dates").focus()
    page.keyboard.press("c")
    expect(page.locator("#plan-graph-refusal")).to_contain_text("Connecting from “Check dates”")
    step_in_graph(page, "write-short-summary").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#plan-notice")).to_contain_text(
        "added dependency check-dates → write-short-summary"
    )
    expect(step_in_graph(page, "write-short-summary")).to_be_focused()
    run = Run.objects.get()
    assert "check-dates" in run.steps.get(step_id="write-short-summary").depends_on

    # Delete from the keyboard: the step's delete form opens with focus on its button.
    step_in_graph(page, "check-dates").focus()
    page.keyboard.press("Delete")
    delete = page.locator("#step-check-dates").get_by_role("button", name="Delete step")
    expect(delete).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#plan-notice")).to_contain_text("Saved version 5")
    assert not run.steps.filter(step_id="check-dates").exists()
    assert page.js_errors == []


def test_a_refused_cycle_says_why_next_to_the_pointer(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("cal", "pw-for-tests-1")
    login(page, daphne_url, "cal", "pw-for-tests-1")
    submit_task(page, "Research the history of tea, then write a short summary")
    # write-short-summary waits for research-history-tea: an arrow back would close a cycle.
    x1, y1 = _node_point(page, "write-short-summary")
    x2, y2 = _node_point(page, "research-history-tea")
    page.mouse.move(x1, y1)
    page.mouse.down()
    page.mouse.move((x1 + x2) / 2, (y1 + y2) / 2, steps=8)
    page.mouse.move(x2, y2, steps=8)
    tip = page.locator("#plan-graph-refusal")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("would close a cycle")
    expect(tip).to_contain_text(
        "“Write a short summary” already waits for “Research the history of tea”"
    )
    box = tip.bounding_box()
    # Next to the pointer: within a few tens of pixels of where it is.
    assert abs(box["x"] - x2) < 60 and abs(box["y"] - y2) < 80, (box, x2, y2)
    page.mouse.up()
    expect(tip).to_be_visible()  # it stays a moment after the drag, to be read
    run = Run.objects.get()
    assert run.plan_versions.count() == 1
    assert "write-short-summary" not in run.steps.get(step_id="research-history-tea").depends_on


def test_a_fifty_step_plan_fits_the_window_and_can_be_walked(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("dan", "pw-for-tests-1")
    login(page, daphne_url, "dan", "pw-for-tests-1")
    submit_task(page, "Research tea")
    # Five layers of ten, each step after two of the layer before it.
    steps = [
        {
            "id": f"s{layer}-{i}",
            "title": f"Step {layer}.{i}",
            "instruction": "Do it.",
            "role": "researcher",
            "depends_on": [f"s{layer - 1}-{i}", f"s{layer - 1}-{(i + 3) % 10}"] if layer else [],
        }
        for layer in range(5)
        for i in range(10)
    ]
    page.locator("summary", has_text="Import a plan").click()
    page.fill("#plan-json", json.dumps({"goal": "big", "steps": steps}))
    page.get_by_role("button", name="Import").click()
    expect(page.locator("#plan-notice")).to_contain_text("imported from JSON")
    assert page.evaluate("window.planGraph.cy.nodes().length") == 51  # and the synthesizer

    # The graph's box fits the window, and every step is inside it, drawn big enough to read.
    graph = page.locator("#plan-graph")
    graph.scroll_into_view_if_needed()
    box = graph.bounding_box()
    viewport = page.viewport_size
    assert box["height"] <= viewport["height"] and box["width"] <= viewport["width"]
    inside = page.evaluate("""() => {
        const cy = window.planGraph.cy, ext = cy.extent();
        return cy.nodes().every((n) => { const b = n.boundingBox();
            return b.x1 >= ext.x1 && b.x2 <= ext.x2 && b.y1 >= ext.y1 && b.y2 <= ext.y2; });
    }""")
    assert inside
    assert page.evaluate("window.planGraph.cy.zoom()") >= 0.4

    # Zoomed in, the keyboard walks the plan and the graph follows the focused step.
    page.click("#plan-graph-zoom-in")
    page.click("#plan-graph-zoom-in")
    page.click("#plan-graph-zoom-in")
    step_in_graph(page, "s0-0").focus()
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    focused = page.evaluate("document.activeElement.dataset.stepId")
    assert focused.startswith("s4-"), focused
    in_view = page.evaluate(f"""() => {{
        const cy = window.planGraph.cy, ext = cy.extent();
        const p = cy.getElementById('{focused}').position();
        return p.x >= ext.x1 && p.x <= ext.x2 && p.y >= ext.y1 && p.y <= ext.y2;
    }}""")
    assert in_view
    page.keyboard.press("Enter")
    expect(page.locator(f"#step-{focused}")).to_be_visible()
    open_step(page, "s2-5")
    expect(page.locator("#step-s2-5 .step-title")).to_have_text("Step 2.5")


def test_a_step_opened_while_it_runs_stays_open_when_it_ends(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("ada", "pw-for-tests-1")
    login(page, daphne_url, "ada", "pw-for-tests-1")
    submit_task(page, FIRST_EXAMPLE)
    page.click("#approve-plan")
    expect(page.locator("#ws-state")).to_have_text("live")
    # The card of a step caught running (the workers' model takes 0.4 s a call) ...
    running = page.wait_for_function(
        """() => { const s = document.querySelector('.step[data-status="running"]');
                   return s ? s.dataset.stepId : null; }"""
    ).json_value()
    open_step(page, running)
    card = page.locator(f"#step-{running}")
    # ... is still the panel's once its step has ended and its card came back from the server
    # (out of band, while the run goes on: the whole page is not fetched again until its end).
    page.wait_for_function(
        f"() => document.querySelector('#step-{running} .step-output') !== null", timeout=30_000
    )
    assert page.locator("#run-status").text_content() == "running"
    expect(card).to_have_attribute("data-open", "yes", timeout=1)
    expect(card).to_be_visible(timeout=1)
    assert page.evaluate(f"window.planGraph.cy.getElementById('{running}').selected()")
    # The usage section's line follows each model call as the header's figures do (a call is
    # no reason to fetch the page again: only the figures change).
    calls = page.locator("#run-calls").text_content()
    seen = page.wait_for_function(
        f"""() => {{
            const calls = document.getElementById('run-calls').textContent;
            if (calls === '{calls}') return null;
            return [calls, document.getElementById('usage-totals').textContent];
        }}""",
        timeout=30_000,
    ).json_value()
    assert seen[1].startswith(f"{seen[0]} calls, "), seen
    expect(page.locator("#run-status")).to_have_text("succeeded", timeout=60_000)
    expect(card).to_be_visible()
    assert page.js_errors == []


def _ask_approval(run: Run, step_id: str) -> None:
    """The step asks for an approval of a post, as its executor's gate does."""
    approval = Approval.objects.create(
        run=run, step_id=step_id, call_key="1:http_post", tool="http_post",
        effect="send", arguments={"url": "https://example.com/tea"},
    )  # fmt: skip
    payload = {"approval": approval.pk, "tool": "http_post", "effect": "send", "arguments": {}}
    event_append(run.pk, "approval.requested", {**payload, "kind": "call"}, step_id=step_id)


def test_an_event_about_one_step_keeps_the_graph_and_refreshes_that_step_s_card(
    page, daphne_url, make_user
):
    # At 1,000 steps a whole refresh was 2.5 s of a frozen page (bench.pages --browser); an
    # approval asked for, a tool's receipt or a file only changes its step's card there.
    alice = make_user("alice", "pw-for-tests-1")
    run = Run.objects.create(owner=alice, task="Compare tea and coffee")
    run_plan(run.pk)
    asking, edited = run.steps.exclude(role="synthesizer").order_by("position")[:2]
    login(page, daphne_url, "alice", "pw-for-tests-1")
    page.goto(f"{daphne_url}/runs/{run.pk}/")
    expect(page.locator("#ws-state")).to_have_text("live")
    open_step(page, edited.step_id)
    page.evaluate("() => { window.planGraph.kept = 'yes'; }")
    page.locator(f"#step-{edited.step_id} .step-editor summary").click()
    editor = page.locator(f"#step-{edited.step_id} textarea[name=instruction]")
    editor.fill("Half typed")

    _ask_approval(run, asking.step_id)

    # The rest of the page came again (the approval's own card), the step's card too...
    expect(page.locator("#approvals-pending .approval")).to_have_count(1)
    expect(page.locator(f"#step-{asking.step_id} .step-approvals")).to_contain_text("http_post")
    # ...and the graph, the open card and what was typed in it stayed as they were.
    assert page.evaluate("() => window.planGraph.kept") == "yes"
    expect(page.locator(f"#step-{edited.step_id}")).to_be_visible()
    expect(editor).to_have_value("Half typed")
    # The timeline was kept too (put back in its slot, or fetched again): never left empty.
    expect(page.locator("#run-timeline #report-md")).to_be_attached()
    expect(page.locator("#run-timeline[data-kept]")).to_have_count(0)

    # A new state of the run is a new workspace: the graph is mounted again for it.
    run_approve_plan(run.pk)
    page.wait_for_function("() => window.planGraph && window.planGraph.kept === undefined")
    expect(page.locator("#run-header")).not_to_have_attribute(
        "data-status", "awaiting_plan_approval"
    )
    assert page.js_errors == []


def _planned_page(page, daphne_url, make_user) -> tuple[Run, Any]:
    """A plan waiting for approval, open in the page with its socket live; and its first step."""
    alice = make_user("alice", "pw-for-tests-1")
    run = Run.objects.create(owner=alice, task="Compare tea and coffee")
    run_plan(run.pk)
    asking = run.steps.exclude(role="synthesizer").order_by("position").first()
    login(page, daphne_url, "alice", "pw-for-tests-1")
    page.goto(f"{daphne_url}/runs/{run.pk}/")
    expect(page.locator("#ws-state")).to_have_text("live")
    return run, asking


def test_a_card_fetched_again_keeps_what_is_open_and_typed_in_it(page, daphne_url, make_user):
    # The card an event names comes back out of band: the person editing that very step kept
    # neither their open editor nor what they had typed in it.
    run, asking = _planned_page(page, daphne_url, make_user)
    open_step(page, asking.step_id)
    card = page.locator(f"#step-{asking.step_id}")
    card.locator(".step-editor summary").click()
    editor = card.locator("textarea[name=instruction]")
    editor.fill("Typed while the step asks")
    card.evaluate("(el) => { el.dataset.old = 'yes'; }")

    _ask_approval(run, asking.step_id)

    # The card is a new one, with the approval on it...
    expect(card.locator(".step-approvals")).to_contain_text("http_post")
    assert card.evaluate("(el) => el.dataset.old") is None
    # ...and the editor is open again with what was typed, where the typing goes on.
    expect(card.locator(".step-editor")).to_have_attribute("open", "")
    expect(editor).to_have_value("Typed while the step asks")
    expect(editor).to_be_focused()
    assert page.js_errors == []


def test_a_card_fetched_again_while_its_editor_loads_keeps_the_editor_open(
    page, daphne_url, make_user
):
    # An editor's forms come when it opens, and htmx marks it `htmx-request` meanwhile: a card
    # fetched again in that moment looked for an open part of that other class, found none in
    # the new card, and the editor folded shut under the person's click.
    run, asking = _planned_page(page, daphne_url, make_user)
    open_step(page, asking.step_id)
    held = []
    # The first ask for its forms is held (the later ones, the new card's, go through).
    page.route(
        f"{daphne_url}/runs/{run.pk}/steps/{asking.step_id}/editor/",
        lambda route: route.continue_() if held else held.append(route),
    )
    card = page.locator(f"#step-{asking.step_id}")
    card.locator(".step-editor summary").click()
    page.wait_for_function("() => document.querySelector('.step-editor.htmx-request')")
    routed_until(page, lambda: held, "the editor's forms asked for")
    card.evaluate("(el) => { el.dataset.old = 'yes'; }")

    _ask_approval(run, asking.step_id)

    expect(card.locator(".step-approvals")).to_contain_text("http_post")
    assert card.evaluate("(el) => el.dataset.old") is None
    for route in held:
        route.continue_()
    expect(card.locator(".step-editor")).to_have_attribute("open", "")
    expect(card.locator("textarea[name=instruction]")).to_be_visible()
    assert page.js_errors == []

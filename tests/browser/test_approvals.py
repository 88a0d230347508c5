"""In the browser: one irreversible call approved, another rejected, from the run page, with
the header's badge following along; what arrives at the far end is counted."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from planner_ui.core.run_options import RunOptions
from planner_ui.models import Approval, Run
from planner_ui.services.events import event_append, user_broadcast
from planner_ui.services.runs import run_create, run_pause, run_resume
from tests.fakes.receiver import Receiver

from .flows import login, press, routed_until, submit_task

pytestmark = [pytest.mark.browser, pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def test_approve_one_call_and_reject_another_from_the_page(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    with Receiver() as receiver:
        login(page, daphne_url, "alice", "pw-for-tests-1")
        page.fill(
            "#id_task",
            f"1. Post a note about tea to {receiver.url}/tea\n"
            f"2. Post a note about coffee to {receiver.url}/coffee",
        )
        expect(page.locator('input[name="tool_policy"][value="ask"]')).to_be_checked()
        page.click("#plan-it")
        expect(page.locator("#approve-plan")).to_be_visible(timeout=30_000)
        page.click("#approve-plan")

        # Both posts wait for a decision: their cards, the steps' status and the badge say so.
        pending = page.locator("#approvals-pending .approval")
        expect(pending).to_have_count(2, timeout=30_000)
        expect(page.locator("#approvals-badge")).to_have_text("2")
        run = Run.objects.get()
        for approval in Approval.objects.filter(run=run):
            expect(page.locator(f"#step-{approval.step_id}")).to_have_attribute(
                "data-status", "waiting"
            )
        assert receiver.count == 0
        tea = pending.filter(has_text=f"{receiver.url}/tea")
        tea.locator(".approve-call").click()
        expect(page.locator("#plan-notice")).to_contain_text("Approved http_post.")
        expect(page.locator("#approvals-badge")).to_have_text("1")

        coffee = page.locator("#approvals-pending .approval").filter(
            has_text=f"{receiver.url}/coffee"
        )
        coffee.locator('input[name="reason"]').fill("Coffee notes go out on Fridays")
        coffee.locator(".reject-call").click()
        expect(page.locator("#plan-notice")).to_contain_text("Rejected http_post.")

        # A rejected call is lost work: the run says so, not a plain green "succeeded".
        expect(page.locator("#run-status")).to_have_text("succeeded with warnings", timeout=60_000)
        assert [r["path"] for r in receiver.received] == ["/tea"]
    expect(page.locator("#approvals-badge")).to_be_hidden()
    expect(page.locator("#receipts tbody tr")).to_have_count(1)
    expect(page.locator("#receipts")).to_contain_text("alice")
    decided = page.locator("#approvals-decided .approval")
    expect(decided).to_have_count(2)
    rejected_card = decided.filter(has_text="/coffee")
    expect(rejected_card).to_contain_text("Rejected by alice")
    expect(rejected_card).to_contain_text("Coffee notes go out on Fridays")
    # The executor was told why, as the tool's result.
    rejected = run.events.get(type="step.tool_result", payload__is_error=True)
    assert "Coffee notes go out on Fridays" in rejected.payload["content"]
    assert page.js_errors == []


def test_cancel_a_run_waiting_for_approval_from_the_inbox_page(
    page, daphne_url, celery_worker_process, make_user
):
    make_user("alice", "pw-for-tests-1")
    login(page, daphne_url, "alice", "pw-for-tests-1")
    submit_task(page, "Write a two-line status note and email it to bob@example.com")
    page.click("#approve-plan")
    expect(page.locator("#approvals-badge")).to_have_text("1", timeout=30_000)
    run = Run.objects.get()

    # The inbox lists it with its run; the run page's Cancel withdraws it.
    page.click("#approvals-link")
    expect(page.locator("#inbox-pending .approval")).to_contain_text(f"run {run.pk}")
    page.goto(f"{daphne_url}/runs/{run.pk}/")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#cancel-run")
    expect(page.locator("#run-status")).to_have_text("cancelled")
    expect(page.locator("#run-error")).to_contain_text("Cancelled by alice.")
    expect(page.locator("#approvals-badge")).to_be_hidden()
    expect(page.locator("#approvals-decided .approval")).to_contain_text("Withdrawn")
    assert Approval.objects.get(run=run).state == Approval.State.WITHDRAWN
    assert page.js_errors == []


def test_a_refresh_landing_while_a_decision_is_on_its_way_keeps_its_outcome(
    page, daphne_url, celery_worker_process, make_user
):
    """The run page refreshes itself when events arrive. One that lands while a person's decision
    is on its way used to replace the form that sent it, and htmx then found nowhere to show the
    outcome. Here a pause from another tab asks for a refresh, which is held until the decision
    has gone out and let go just before the decision's answer comes back: the order that a busy
    run produces now and then."""
    alice = make_user("alice", "pw-for-tests-1")
    htmx_errors: list[str] = []
    page.on("console", lambda m: "htmx:" in m.text and htmx_errors.append(m.text))
    with Receiver() as receiver:
        login(page, daphne_url, "alice", "pw-for-tests-1")
        submit_task(
            page,
            f"1. Post a note about tea to {receiver.url}/tea\n"
            f"2. Post a note about coffee to {receiver.url}/coffee",
        )
        run = Run.objects.get()
        page.click("#approve-plan")
        pending = page.locator("#approvals-pending .approval")
        expect(pending).to_have_count(2, timeout=30_000)
        tea = Approval.objects.get(run=run, arguments__url=f"{receiver.url}/tea")
        pending.filter(has_text=f"{receiver.url}/tea").locator(".approve-call").click()
        expect(page.locator("#plan-notice")).to_contain_text("Approved http_post.")
        expect(page.locator(f"#step-{tea.step_id}")).to_have_attribute(
            "data-status", "succeeded", timeout=30_000
        )
        page.evaluate(
            """() => {
              window.refreshesDone = 0;
              document.body.addEventListener("htmx:afterRequest", (e) => {
                const get = e.detail.requestConfig.verb === "get";
                if (get && e.detail.target.id === "run-main") window.refreshesDone++;
              });
            }"""
        )

        held_refreshes, held_decisions = [], []
        holding = [True]

        def hold_refresh(route):
            if holding[0] and route.request.headers.get("hx-request"):
                held_refreshes.append(route)
            else:
                route.continue_()

        def hold_rejection(route):
            if "decision=reject" in (route.request.post_data or ""):
                held_decisions.append((route, route.fetch()))
            else:
                route.continue_()

        page.route(f"{daphne_url}/runs/{run.pk}/", hold_refresh)
        page.route(f"{daphne_url}/approvals/*/decide/", hold_rejection)

        run_pause(run.pk, alice)
        routed_until(page, lambda: held_refreshes, "the refresh the pause asks for")
        coffee = pending.filter(has_text=f"{receiver.url}/coffee")
        coffee.locator('input[name="reason"]').fill("Coffee notes go out on Fridays")
        coffee.locator(".reject-call").click()
        routed_until(page, lambda: held_decisions, "the rejection")
        # The rejection is decided on the server; its answer waits while the refresh lands.
        assert Approval.objects.get(run=run, arguments__url=f"{receiver.url}/coffee").state == (
            Approval.State.REJECTED
        )
        done = page.evaluate("window.refreshesDone")
        holding[0] = False
        for route in held_refreshes:
            route.continue_()
        page.wait_for_function(f"() => window.refreshesDone >= {done + len(held_refreshes)}")
        route, answer = held_decisions[0]
        route.fulfill(response=answer)

        expect(page.locator("#plan-notice")).to_contain_text("Rejected http_post.")
        # The refresh that was dropped is made up for: the page shows the pause and the decision.
        expect(page.locator("#resume-run")).to_be_visible()
        decided = page.locator("#approvals-decided .approval")
        expect(decided).to_have_count(2)
        expect(decided.filter(has_text="/coffee")).to_contain_text("Coffee notes go out on Fridays")
        run_resume(run.pk, alice)
        expect(page.locator("#run-status")).to_have_text("succeeded with warnings", timeout=60_000)
        assert [r["path"] for r in receiver.received] == ["/tea"]
    assert htmx_errors == []
    assert page.js_errors == []


def _ask_in_inbox(run: Run, tool: str) -> None:
    """A call of `run` waits for its owner's decision, and their inbox's count goes out."""
    Approval.objects.create(
        run=run, step_id=tool, call_key=f"1:{tool}", tool=tool, effect="send", arguments={}
    )
    user_broadcast(run.owner_id, {"type": "approvals.changed"})


def _inbox_with(page, daphne_url, make_user, tools: tuple[str, ...]) -> tuple[Run, Any]:
    """Alice's inbox open in the page with a call of each tool waiting in it; its cards."""
    alice = make_user("alice", "pw-for-tests-1")
    run = run_create(owner=alice, options=RunOptions(task="Post notes about tea"))
    for tool in tools:
        _ask_in_inbox(run, tool)
    login(page, daphne_url, "alice", "pw-for-tests-1")
    page.goto(daphne_url + "/approvals/")
    cards = page.locator("#inbox-pending .approval")
    expect(cards).to_have_count(len(tools))
    return run, cards


def test_a_request_arriving_while_the_inbox_refreshes_still_shows(page, daphne_url, make_user):
    """The inbox refreshes its list when the count changes. A change while a refresh is on its
    way queues another (htmx sends them one at a time), which used to land in the list the
    first had just replaced, out of the page: the new request never showed (seen once in CI,
    in test_unknown_outcome). Here the first refresh is held until the second is asked for."""
    run, cards = _inbox_with(page, daphne_url, make_user, ("http_post",))
    held = []  # the first refresh, answered as of its asking (two cards), not yet delivered
    page.route(
        f"{daphne_url}/approvals/?*",
        lambda route: route.continue_() if held else held.append((route, route.fetch())),
    )
    _ask_in_inbox(run, "send_email")
    routed_until(page, lambda: held, "the first refresh")
    _ask_in_inbox(run, "delete_file")
    expect(page.locator("#approvals-badge")).to_have_text("3")  # the second is asked for
    route, answer = held[0]
    route.fulfill(response=answer)
    expect(cards).to_have_count(3)
    expect(cards.filter(has_text="delete_file")).to_have_count(1)
    assert page.js_errors == []


def test_a_press_in_the_inbox_outlives_a_refresh_that_lands_before_the_release(
    page, daphne_url, make_user
):
    """A request arriving while a person presses a link or button in the inbox refreshed the
    list under it, and the click went nowhere: the refresh now waits for the release
    (presses.js), then comes."""
    run, cards = _inbox_with(page, daphne_url, make_user, ("http_post",))
    page.evaluate(
        """() => {
          window.listsDone = 0;
          document.body.addEventListener("htmx:afterRequest", (e) => {
            if (e.detail.target.id === "inbox-live") window.listsDone++;
          });
        }"""
    )
    press(page, cards.get_by_role("link", name=f"run {run.pk}"))
    _ask_in_inbox(run, "send_email")
    page.wait_for_function("() => window.listsDone >= 1", timeout=30_000)
    expect(cards).to_have_count(1)  # held while the button is down
    page.mouse.up()
    expect(page).to_have_url(f"{daphne_url}/runs/{run.pk}/")
    assert page.js_errors == []


def _ticked_and_typed(page, daphne_url, make_user) -> tuple[Run, Any, Any, Any]:
    """Alice's inbox with three requests, two of them ticked, a reason typed for the third and
    one in the bulk form, its cards marked as the old list's; the cards and both reasons."""
    run, cards = _inbox_with(
        page, daphne_url, make_user, ("http_post", "send_email", "delete_file")
    )
    cards.filter(has_text="http_post").locator(".tick").check()
    cards.filter(has_text="delete_file").locator(".tick").check()
    one_reason = cards.filter(has_text="send_email").locator(".reject-form [name=reason]")
    one_reason.fill("Wrong address")
    bulk_reason = page.locator("#bulk-form input[name=reason]")
    bulk_reason.fill("Not on a Sunday")
    cards.first.evaluate("(el) => { el.dataset.old = 'yes'; }")
    return run, cards, one_reason, bulk_reason


def test_what_is_ticked_and_typed_in_the_inbox_outlives_its_live_refresh(
    page, daphne_url, make_user
):
    """The ticks for a bulk decision and the reasons typed for rejections were in the list a
    new request refreshes: a person who had ticked two of three lost both, and their reasons,
    the moment a fourth arrived. They stay now, and so does the focus."""
    run, cards, one_reason, reason = _ticked_and_typed(page, daphne_url, make_user)

    _ask_in_inbox(run, "shell")
    expect(cards).to_have_count(4)
    assert cards.first.evaluate("(el) => el.dataset.old") is None  # a new list
    expect(cards.filter(has_text="http_post").locator(".tick")).to_be_checked()
    expect(cards.filter(has_text="delete_file").locator(".tick")).to_be_checked()
    expect(cards.filter(has_text="send_email").locator(".tick")).not_to_be_checked()
    expect(cards.filter(has_text="shell").locator(".tick")).not_to_be_checked()
    expect(one_reason).to_have_value("Wrong address")
    expect(reason).to_have_value("Not on a Sunday")
    expect(reason).to_be_focused()
    assert page.js_errors == []


def test_what_is_ticked_and_typed_in_the_inbox_outlives_a_decision_on_another_request(
    page, daphne_url, make_user
):
    """A person's own decision brings the whole list back, and the ticks and reasons typed on
    the other requests went with it, though a live refresh kept them. They stay now; what the
    decision sent does not: a bulk rejection's ticks and reason are spent."""
    _, cards, one_reason, bulk_reason = _ticked_and_typed(page, daphne_url, make_user)

    cards.filter(has_text="http_post").locator(".reject-call").click()
    expect(page.locator("#inbox-list > .notice")).to_have_text("Rejected http_post.")
    expect(cards).to_have_count(2)
    assert cards.first.evaluate("(el) => el.dataset.old") is None  # a new list
    expect(cards.filter(has_text="delete_file").locator(".tick")).to_be_checked()
    expect(one_reason).to_have_value("Wrong address")
    expect(bulk_reason).to_have_value("Not on a Sunday")

    page.click("#reject-ticked")
    expect(page.locator("#inbox-list > .notice")).to_have_text("Rejected 1 request.")
    expect(cards).to_have_count(1)
    expect(one_reason).to_have_value("Wrong address")
    expect(bulk_reason).to_have_value("")
    decided = page.locator("#inbox-decided .approval")
    expect(decided.filter(has_text="delete_file")).to_contain_text("Not on a Sunday")
    assert page.js_errors == []


def test_an_approval_arriving_while_the_run_page_refreshes_still_shows(page, daphne_url, make_user):
    """An event that needs the run page refreshed while a refresh is on its way has its
    refresh wait for that one. It used to wait in the one queue htmx keeps per source element,
    the page's body for every request, where a timeline refresh asked for next replaced it: the
    second approval never showed (seen once in CI, in the test above). Here the first refresh
    is held until both others are asked for."""
    alice = make_user("alice", "pw-for-tests-1")
    run = run_create(owner=alice, options=RunOptions(task="Post notes about tea"))

    def ask(tool: str) -> None:
        approval = Approval.objects.create(
            run=run, step_id=tool, call_key=f"1:{tool}", tool=tool, effect="send", arguments={}
        )
        payload = {"approval": approval.pk, "tool": tool, "effect": "send", "arguments": {}}
        event_append(run.pk, "approval.requested", {**payload, "kind": "call"}, step_id=tool)

    login(page, daphne_url, "alice", "pw-for-tests-1")
    page.goto(f"{daphne_url}/runs/{run.pk}/")
    expect(page.locator("#ws-state")).to_have_text("live")
    pending = page.locator("#approvals-pending .approval")
    held = []  # the first refresh, answered as of its asking (one approval), not yet delivered
    page.route(
        # With or without `?keep=`: an approval's refresh keeps the page's plan workspace.
        re.compile(rf"{re.escape(daphne_url)}/runs/{run.pk}/(\?.*)?$"),
        lambda route: (
            route.continue_()
            if held or route.request.headers.get("hx-request") != "true"
            else held.append((route, route.fetch()))
        ),
    )
    ask("http_post")
    routed_until(page, lambda: held, "the first refresh")
    ask("send_email")  # its refresh waits for the first
    event_append(run.pk, "step.started", {"attempt": 1, "worker": "w"}, step_id="http_post")
    page.wait_for_timeout(600)  # the page asks for the timeline 300 ms after a step's event
    route, answer = held[0]
    route.fulfill(response=answer)
    expect(pending).to_have_count(2)
    expect(pending.filter(has_text="send_email")).to_have_count(1)
    assert page.js_errors == []


def test_an_email_edited_through_its_fields_keeps_a_mistake_to_correct_then_shows_both(
    page, daphne_url, celery_worker_process, make_user
):
    """The email is shown as text with its fields to edit; a wrong address comes back as it was
    typed, with the message at its field; corrected, the call is sent as edited, and the card
    sets what the model asked for beside what was sent."""
    make_user("alice", "pw-for-tests-1")
    login(page, daphne_url, "alice", "pw-for-tests-1")
    submit_task(page, "Write a two-line status note and email it to bob@example.com")
    page.click("#approve-plan")
    pending = page.locator("#approvals-pending .approval")
    expect(pending).to_have_count(1, timeout=30_000)
    approval = Approval.objects.get()
    email = page.locator(f"#approval-{approval.pk}")
    # The body reads as text, its line breaks as line breaks.
    body = email.locator('.arg-item:has(dt:text-is("body")) dd')
    expect(body).to_have_text(approval.arguments["body"])
    assert "\\n" not in body.inner_text()

    email.locator(".edit-args summary").click()
    to = email.get_by_label("to")
    subject = email.get_by_label("subject")
    expect(to).to_have_value("bob@example.com")
    to.fill("carol at example.com")
    subject.fill("Status, for Carol")
    email.locator(".approve-call").click()

    # Refused: nothing decided, the typed text kept, the message at the field it names.
    email = page.locator(f"#approval-{approval.pk}")
    error = email.locator('.arg-field[data-argument="to"] .field-error')
    expect(error).to_contain_text("'to' string should match pattern")
    expect(email.get_by_label("to")).to_have_value("carol at example.com")
    expect(email.get_by_label("to")).to_have_attribute("aria-invalid", "true")
    expect(email.get_by_label("subject")).to_have_value("Status, for Carol")
    expect(email.locator(".edit-args")).to_have_attribute("open", "")
    expect(page.locator("#approvals-badge")).to_have_text("1")
    assert Approval.objects.get().state == Approval.State.PENDING

    email.get_by_label("to").fill("carol@example.com")
    email.locator(".approve-call").click()
    expect(page.locator("#plan-notice")).to_contain_text(
        "Approved send_email with edited arguments."
    )
    expect(page.locator("#run-status")).to_have_text("succeeded", timeout=60_000)

    # Asked for and sent, side by side, what changed marked.
    decided = page.locator(f"#approvals-decided #approval-{approval.pk}")
    compare = decided.locator(".arg-compare")
    expect(compare.locator("thead")).to_contain_text("The model asked for")
    changed = compare.locator('tr[data-argument="to"]')
    expect(changed).to_have_class("arg-row arg-changed")
    expect(changed.locator(".change-mark")).to_have_text("changed")
    expect(changed.locator(".arg-asked")).to_have_text("bob@example.com")
    expect(changed.locator(".arg-sent")).to_have_text("carol@example.com")
    expect(compare.locator('tr[data-argument="subject"] .arg-sent')).to_have_text(
        "Status, for Carol"
    )
    expect(compare.locator('tr[data-argument="body"]')).to_have_class("arg-row arg-same")
    receipt = Run.objects.get().receipts.get()
    assert receipt.arguments["to"] == "carol@example.com"
    assert receipt.result.startswith("sent email to carol@example.com")
    assert page.js_errors == []


def test_in_the_inbox_a_post_edited_to_a_refused_address_keeps_the_edit_through_a_refresh(
    page, daphne_url, celery_worker_process, make_user
):
    """In the inbox, a URL the network policy refuses is refused at its field with the typed
    text kept; a live refresh of the list while the person corrects it keeps the form as they
    left it; the corrected post is made once, at the corrected URL."""
    alice = make_user("alice", "pw-for-tests-1")
    with Receiver() as receiver:
        login(page, daphne_url, "alice", "pw-for-tests-1")
        submit_task(page, f"Post a note about tea to {receiver.url}/tea")
        page.click("#approve-plan")
        expect(page.locator("#approvals-badge")).to_have_text("1", timeout=30_000)
        run = Run.objects.get()
        approval = Approval.objects.get(run=run)
        page.click("#approvals-link")
        post = page.locator(f"#inbox-pending #approval-{approval.pk}")
        post.locator(".edit-args summary").click()
        url = post.get_by_label("url")
        expect(url).to_have_value(f"{receiver.url}/tea")
        url.fill("http://169.254.169.254/latest/meta-data")
        post.locator(".approve-call").click()

        post = page.locator(f"#inbox-pending #approval-{approval.pk}")
        error = post.locator('.arg-field[data-argument="url"] .field-error')
        expect(error).to_contain_text("169.254.169.254 is a link-local address")
        expect(post.get_by_label("url")).to_have_value("http://169.254.169.254/latest/meta-data")
        expect(page.locator("#inbox-list > .error")).to_contain_text("were refused")

        # Another request arrives while the person corrects the URL: the list is refreshed.
        post.get_by_label("url").fill(f"{receiver.url}/tea-corrected")
        other = Approval.objects.create(
            run=run,
            step_id="other",
            call_key="1:other",
            tool="send_email",
            effect="send",
            arguments={"to": "x@example.com", "subject": "s", "body": "b"},
        )
        user_broadcast(alice.pk, {"type": "approvals.changed"})
        expect(page.locator(f"#inbox-pending #approval-{other.pk}")).to_be_visible()
        expect(post.get_by_label("url")).to_have_value(f"{receiver.url}/tea-corrected")
        expect(post.locator(".edit-args")).to_have_attribute("open", "")

        post.locator(".approve-call").click()
        expect(page.locator("#inbox-list > .notice")).to_contain_text(
            "Approved http_post with edited arguments."
        )
        decided = page.locator(f"#inbox-decided #approval-{approval.pk}")
        changed = decided.locator('.arg-compare tr[data-argument="url"]')
        expect(changed.locator(".arg-asked")).to_have_text(f"{receiver.url}/tea")
        expect(changed.locator(".arg-sent")).to_have_text(f"{receiver.url}/tea-corrected")
        Approval.objects.filter(pk=other.pk).update(state=Approval.State.WITHDRAWN)
        # The run ends as it would have, having posted once, at the corrected URL.
        page.goto(f"{daphne_url}/runs/{run.pk}/")
        expect(page.locator("#run-status")).to_have_text("succeeded", timeout=60_000)
        assert [r["path"] for r in receiver.received] == ["/tea-corrected"]
    assert page.js_errors == []

"""Random and extreme values posted to every HTML form a user is shown: never a 500.

The forms are found on the pages themselves (the home page; runs waiting for plan approval,
with a revision proposed, at a gate, and with a re-plan to review; the inbox, the tokens and
MCP pages; the administrator's local-model form), with their fields and the values the page
offers. Each form gets each SWEPT value in each field in turn, then Hypothesis submissions
that change one to three fields to extreme or random values. Django's test client raises what
a view raises, so a server error fails the test with its traceback. CSRF: the test client does
not enforce it."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner_ui.core.status import FINISHED_STEP_STATUSES
from planner_ui.models import Approval, PlanProposal
from planner_ui.services.proposals import proposal_make, proposal_request
from planner_ui.services.runs import run_approve_plan
from planner_ui.services.tokens import token_create
from tests.services.test_runs import drive, planned

pytestmark = pytest.mark.django_db

EXTREMES = [
    "",
    "0",
    "-1",
    "1e20",
    "1e23",
    "-1e20",
    str(2**31),
    str(2**63),
    str(10**30),
    "0.00001",
    "NaN",
    "Infinity",
    "²",
    "٣",
    "v1",
    " 1",
    "1_000",
    "%0A",
    "a\r\nX-Evil: 1",
    "[" * 5000 + "]" * 5000,
    '{"a": ' * 900 + "1" + "}" * 900,
    "x" * 100_001,
    "<script>alert(1)</script>",
    "http://[::1",
    "~nosuchuser/x.gguf",
    "../../etc/passwd",
    "\ud7ff\ufffd",
]
# Each of these in each field in turn, the rest as the page fills them in.
SWEPT = [
    "1e20",
    str(2**63),
    str(10**30),
    "²",
    "v1",
    "[" * 5000,
    "http://[::1",
    "~nosuchuser/x.gguf",
    "a\r\nb",
]
SKIPPED_ACTIONS = ("/accounts/logout/",)
NOT_FUZZED = ("csrfmiddlewaretoken",)
LAST = ("/cancel/", "/approve/", "/pause/", "/replan/", "/revoke/", "/fork/", "/baseline/")


@dataclass
class Form:
    action: str
    method: str
    fields: dict[str, list[str]] = field(default_factory=dict)


class FormFinder(HTMLParser):
    """Every <form> of a page with its fields' names and the values the page puts in them."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[Form] = []
        self._by_id: dict[str, Form] = {}
        # Fields outside their form name it (form="id"), possibly before it: kept until the end.
        self._outside: list[tuple[str, str, str]] = []
        self._current: Form | None = None
        self._select: tuple[Form, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self._current = Form(a.get("action", ""), a.get("method", "get").lower())
            self.forms.append(self._current)
            self._by_id[a.get("id", "")] = self._current
        elif tag == "option" and self._select:
            form, name = self._select
            form.fields[name].append(a.get("value", ""))
        elif tag not in ("input", "textarea", "button", "select") or not a.get("name"):
            return
        elif a.get("form"):
            self._outside.append((a["form"], a["name"], a.get("value", "")))
        elif self._current is not None:
            self._current.fields.setdefault(a["name"], []).append(a.get("value", ""))
            if tag == "select":
                self._select = (self._current, a["name"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._current = None
        elif tag == "select":
            self._select = None

    def close(self) -> None:
        super().close()
        for form_id, name, value in self._outside:
            if form_id in self._by_id:
                self._by_id[form_id].fields.setdefault(name, []).append(value)


def forms_on(client: Client, *urls: str) -> list[Form]:
    found: dict[tuple[str, str, tuple[str, ...]], Form] = {}
    for url in urls:
        finder = FormFinder()
        response = client.get(url)
        assert response.status_code == 200, url
        finder.feed(response.content.decode())
        finder.close()
        for form in finder.forms:
            form.action = form.action or url
            key = (form.action, form.method, tuple(sorted(form.fields)))
            if form.fields and form.action not in SKIPPED_ACTIONS:
                found.setdefault(key, form)
    # The forms that end a state (cancel, approve, revoke ...) last, so the others are still
    # offered when their turn comes and reach past the state checks.
    return sorted(found.values(), key=lambda form: form.action.endswith(LAST))


def bad_value() -> st.SearchStrategy[Any]:
    one = st.one_of(st.sampled_from(EXTREMES), st.text(max_size=50))
    # A field may be missing, given once, or given several times.
    return st.one_of(st.none(), one, st.lists(one, min_size=2, max_size=3))


def page_values(form: Form) -> dict[str, str]:
    return {name: next((v for v in vs if v), "1") for name, vs in form.fields.items()}


def submissions(form: Form) -> st.SearchStrategy[dict[str, Any]]:
    """What the page would send (each field's first offered value), with one to three fields
    changed: bad values reach the code behind the fields that must be right to get there."""
    offered = page_values(form)
    changes = st.dictionaries(
        st.sampled_from(sorted(form.fields)), bad_value(), min_size=1, max_size=3
    )
    return changes.map(lambda changed: {**offered, **changed})


@pytest.fixture
def pages(alice: Any, client_alice: Client, settings: Any) -> list[Form]:
    """Runs in every state that shows a form of its own, and the pages that show them."""
    waiting_plan = planned(alice, "Research the history of tea, then write a short summary")
    revised = planned(alice, "Research tea and coffee")
    proposal_make(proposal_request(run_id=revised.pk, base_version=1, note="and mate").pk)
    gated = planned(alice, "Write a two-line status note and email it to bob@example.com")
    run_approve_plan(gated.pk)
    drive(gated)
    assert gated.approvals.filter(state=Approval.State.PENDING).exists()
    # One model call is not enough for the step that calls the calculator: a re-plan waits.
    settings.AGENTSITE_MAX_STEP_ITERATIONS = 1
    replanned = planned(
        alice, "Compute 1234 * 5678 and then write a short report about it", replan_mode="review"
    )
    run_approve_plan(replanned.pk)
    drive(replanned)
    assert replanned.proposals.filter(kind=PlanProposal.Kind.REPLAN).exists()
    token_create(user=alice, name="fuzzed")
    # A step's edit forms and its retry and fork forms are not in the run's page: they come
    # when its part opens, from pages of their own.
    editors = [
        reverse("step_editor", args=[waiting_plan.pk, step.step_id])
        for step in waiting_plan.steps.exclude(role="synthesizer")
    ]
    finished = [
        (run, step)
        for run in (gated, replanned)
        for step in run.steps.filter(status__in=FINISHED_STEP_STATUSES)
    ]
    assert finished
    again = [reverse("step_again", args=[run.pk, step.step_id]) for run, step in finished]
    return forms_on(
        client_alice,
        reverse("home"),
        *[reverse("run_detail", args=[r.pk]) for r in (waiting_plan, revised, gated, replanned)],
        *editors,
        *again,
        reverse("approvals_inbox"),
        reverse("api_tokens"),
        reverse("mcp_servers"),
    )


def test_the_pages_offer_the_forms_this_test_fuzzes(pages: list[Form]) -> None:
    actions = {form.action.split("/")[-2] for form in pages}
    for expected in [
        *("new", "approve", "cancel", "pause", "baseline", "retry", "fork", "replan"),
        *("change", "revision", "import", "decide", "approvals", "api-tokens", "revoke"),
    ]:
        assert expected in actions, (expected, sorted(actions))
    bulk = next(f for f in pages if f.action.endswith("/approvals/decide/"))
    assert "approval" in bulk.fields  # the ticks, outside the form, name it with form=
    revision = [f for f in pages if f.action.endswith("/plan/revision/")]
    assert any("proposal" in f.fields for f in revision)


def fuzz(client: Client, form: Form) -> None:
    """Send `form` what Hypothesis draws; any 500 (raised by the test client) fails."""
    data_strategy = submissions(form)
    send = client.post if form.method == "post" else client.get

    @settings(
        max_examples=20,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=data_strategy, htmx=st.booleans())
    def post(data: dict[str, Any], htmx: bool) -> None:
        sent = {k: v for k, v in data.items() if v is not None}
        headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
        response = send(form.action, sent, **headers)
        assert response.status_code < 500, (form.action, sent)

    post()


def sweep(client: Client, form: Form) -> None:
    """Each value of SWEPT in each field, alone: the cases Hypothesis may not draw."""
    send = client.post if form.method == "post" else client.get
    for name in sorted(set(form.fields) - set(NOT_FUZZED)):
        for value in SWEPT:
            sent = {**page_values(form), name: value}
            assert send(form.action, sent).status_code < 500, (form.action, sent)


def test_no_form_answers_500_to_random_or_extreme_values(
    client_alice: Client, pages: list[Form]
) -> None:
    for form in pages:
        sweep(client_alice, form)
        fuzz(client_alice, form)


def test_no_administrator_form_answers_500(make_user: Any) -> None:
    """The local-model forms, shown to staff only (the MCP page is left out here: a staff
    member's server may be a command, and fuzzing would run whatever it drew)."""
    admin = make_user("root")
    admin.is_staff = True
    admin.save()
    client = Client()
    client.force_login(admin)
    forms = [f for f in forms_on(client, reverse("home")) if "local-models" in f.action]
    assert forms, "the home page shows an administrator the local-model form"
    for form in forms:
        sweep(client, form)
        fuzz(client, form)

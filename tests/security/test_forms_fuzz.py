"""Random and extreme values posted to every HTML form a normal user is shown: never a 500.

The forms are found on the pages themselves (the home page, a run waiting for plan approval,
a run waiting at a gate, the inbox, the tokens and MCP pages), with their fields and the
values the page offers; Hypothesis then sends each form those values, random text and a list
of values known to break parsers. Django's test client raises what a view raises, so a
server error fails the test with its traceback. CSRF: the test client does not enforce it."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner_ui.models import Approval
from planner_ui.services.runs import run_approve_plan
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
SWEPT = ["1e20", str(2**63), str(10**30), "²", "v1", "[" * 5000, "http://[::1", "a\r\nb"]
SKIPPED_ACTIONS = ("/accounts/logout/",)
NOT_FUZZED = ("csrfmiddlewaretoken",)


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
        self._current: Form | None = None
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self._current = Form(a.get("action", ""), a.get("method", "get").lower())
            self.forms.append(self._current)
        elif self._current is None:
            return
        elif tag == "option" and self._select:
            self._current.fields[self._select].append(a.get("value", ""))
        elif not a.get("name"):
            return
        elif tag in ("input", "textarea", "button"):
            self._current.fields.setdefault(a["name"], []).append(a.get("value", ""))
        elif tag == "select":
            self._select = a["name"]
            self._current.fields.setdefault(a["name"], [])

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._current = None
        elif tag == "select":
            self._select = None


def forms_on(client: Client, *urls: str) -> list[Form]:
    found: dict[tuple[str, str, tuple[str, ...]], Form] = {}
    for url in urls:
        finder = FormFinder()
        response = client.get(url)
        assert response.status_code == 200, url
        finder.feed(response.content.decode())
        for form in finder.forms:
            form.action = form.action or url
            key = (form.action, form.method, tuple(sorted(form.fields)))
            if form.fields and form.action not in SKIPPED_ACTIONS:
                found.setdefault(key, form)
    return list(found.values())


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
def pages(alice: Any, client_alice: Client) -> list[Form]:
    waiting_plan = planned(alice, "Research the history of tea, then write a short summary")
    gated = planned(alice, "Write a two-line status note and email it to bob@example.com")
    run_approve_plan(gated.pk)
    drive(gated)
    assert gated.approvals.filter(state=Approval.State.PENDING).exists()
    return forms_on(
        client_alice,
        reverse("home"),
        reverse("run_detail", args=[waiting_plan.pk]),
        reverse("run_detail", args=[gated.pk]),
        reverse("approvals_inbox"),
        reverse("api_tokens"),
        reverse("mcp_servers"),
    )


def test_the_pages_offer_the_forms_this_test_fuzzes(pages: list[Form]) -> None:
    actions = {form.action.split("/")[-2] for form in pages}
    for expected in ["new", "approve", "import", "change", "decide", "api-tokens", "new"]:
        assert expected in actions, (expected, sorted(actions))


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

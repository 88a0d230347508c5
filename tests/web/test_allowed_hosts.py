"""The run form's allowed hosts: filled in from the task as it is typed, the person's edits kept,
the list stored with the run and shown on its page."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client
from django.urls import reverse

from planner_ui.models import Run

pytestmark = pytest.mark.django_db

TASK = "Summarize https://news.example.org/today and compare with docs.python.org"


def value(page: bytes, input_id: str) -> str:
    tag = re.search(rf'<input[^>]*id="{input_id}"[^>]*>', page.decode()).group()
    found = re.search(r'value="([^"]*)"', tag)
    return html.unescape(found.group(1)) if found else ""


def field(page: bytes) -> tuple[str, str]:
    """The shown list and the hidden one the page last filled in."""
    return value(page, "id_allowed_hosts"), value(page, "id_allowed_hosts_auto")


def text_of(page: bytes, element_id: str) -> str:
    inner = re.search(rf'id="{element_id}"[^>]*>(.*?)</(?:dd|ul)>', page.decode(), re.S).group(1)
    return html.unescape(re.sub(r"<[^>]+>", "", inner)).strip()


def test_the_form_has_the_field_and_refills_it_from_the_task(client_alice: Client) -> None:
    home = client_alice.get(reverse("home"))
    assert field(home.content) == ("", "")
    assert b'hx-post="/runs/new/hosts/"' in home.content

    refill = client_alice.post(
        reverse("run_new_hosts"), {"task": TASK, "allowed_hosts": "", "allowed_hosts_auto": ""}
    )
    assert refill.status_code == 200
    assert field(refill.content) == (
        "news.example.org, docs.python.org",
        "news.example.org, docs.python.org",
    )


def test_a_list_the_person_edited_is_not_refilled(client_alice: Client) -> None:
    refill = client_alice.post(
        reverse("run_new_hosts"),
        {"task": TASK, "allowed_hosts": "docs.python.org", "allowed_hosts_auto": "x.org"},
    )
    assert field(refill.content) == ("docs.python.org", "x.org")


def test_the_field_is_escaped(client_alice: Client) -> None:
    refill = client_alice.post(
        reverse("run_new_hosts"),
        {"task": TASK, "allowed_hosts": '"><script>x</script>', "allowed_hosts_auto": ""},
    )
    assert b"<script>x</script>" not in refill.content


@pytest.mark.parametrize(
    ("shown", "filled", "stored"),
    [
        # As the page filled it in: the hosts of the task as submitted.
        ("news.example.org", "news.example.org", ["news.example.org", "docs.python.org"]),
        ("", "", ["news.example.org", "docs.python.org"]),
        # Edited by the person: theirs, emptied included.
        (
            "docs.python.org, 127.0.0.1:8000",
            "news.example.org",
            ["docs.python.org", "127.0.0.1:8000"],
        ),
        ("", "news.example.org, docs.python.org", []),
    ],
)
def test_the_submitted_list_is_stored_with_the_run(
    client_alice: Client, shown: str, filled: str, stored: list[str]
) -> None:
    response = client_alice.post(
        reverse("run_new"),
        {"task": TASK, "allowed_hosts": shown, "allowed_hosts_auto": filled},
    )
    assert response.status_code == 302
    run = Run.objects.get()
    assert run.allowed_hosts == stored
    page = client_alice.get(reverse("run_detail", args=[run.pk]))
    expected = ", ".join(stored) or "no host: every read from the web asks"
    assert text_of(page.content, "run-allowed-hosts") == expected


def test_a_form_without_the_field_allows_the_hosts_of_the_task(client_alice: Client) -> None:
    client_alice.post(reverse("run_new"), {"task": TASK})
    assert Run.objects.get().allowed_hosts == ["news.example.org", "docs.python.org"]


def test_a_bad_entry_is_refused_on_the_form_saying_which(client_alice: Client) -> None:
    response = client_alice.post(
        reverse("run_new"),
        {"task": TASK, "allowed_hosts": "docs.python.org, a/b", "allowed_hosts_auto": ""},
    )
    assert response.status_code == 400
    assert not Run.objects.exists()
    errors = re.search(
        r'id="allowed-hosts".*?<ul class="errorlist[^>]*>(.*?)</ul>',
        response.content.decode(),
        re.S,
    )
    assert html.unescape(re.sub(r"<[^>]+>", "", errors.group(1))) == (
        "'a/b' is not a host: write example.com or example.com:8080."
    )

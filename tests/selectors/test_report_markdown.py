"""The report as Markdown and HTML: the outline holds whatever the steps wrote, the deliverable
comes once, and the outcome heads it."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from planner_ui.selectors.report import report_html, report_markdown, run_report
from planner_ui.services.runs import run_approve_plan
from tests.services.test_outcomes import rejected_run
from tests.services.test_runs import drive, planned

pytestmark = pytest.mark.django_db

TASK = "Research solar power and wind power, then compare them and write a summary."


@pytest.fixture
def report(make_user):
    run = planned(make_user(), TASK)
    run_approve_plan(run.pk)
    return run_report(drive(run))


def headings(markdown: str) -> list[tuple[int, str]]:
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [
        (int(token.tag[1:]), tokens[n + 1].content)
        for n, token in enumerate(tokens)
        if token.type == "heading_open"
    ]


def test_the_deliverable_comes_once_at_the_end(report):
    markdown = report_markdown(report)
    deliverable = report["result"].strip().splitlines()[-1]
    assert markdown.count(deliverable) == 1
    assert markdown.index(deliverable) > markdown.index("## Deliverable")
    assert "*Its output is the deliverable, at the end of this report.*" in markdown


def test_what_the_steps_wrote_sits_under_the_reports_own_headings(report):
    first, second = report["steps"][0], report["steps"][1]
    first["output"] = "# Findings\n\nSolar is cheap.\n\nWind\n====\n\nIt varies.\n###### Deep"
    # A code block left open would swallow the rest of the report, its headings included.
    second["output"] = "Numbers:\n\n```python\nprint(1)\n"
    found = headings(report_markdown(report))
    assert [h for h in found if h[0] == 1] == [(1, f"Run {report['run_id']}: succeeded")]
    assert [text for level, text in found if level == 2] == [
        "Plan versions",
        "Steps",
        "Deliverable",
    ]
    step_heading = found.index((3, f"{first['id']}: {first['title']} (succeeded)"))
    assert found[step_heading + 1 : step_heading + 4] == [
        (4, "Findings"),
        (4, "Wind"),
        (6, "Deep"),
    ]
    assert (3, f"{second['id']}: {second['title']} (succeeded)") in found
    # The deliverable's own headings come under "Deliverable".
    after = found[found.index((2, "Deliverable")) + 1 :]
    assert after and all(level >= 3 for level, _ in after)


def test_a_run_that_lost_something_says_so_on_top(make_user):
    run = rejected_run(make_user("alice"))
    markdown = report_markdown(run_report(run))
    assert markdown.startswith(
        f"# Run {run.pk}: succeeded with warnings\n\n**Outcome:** {run.outcome_reason}\n"
    )
    assert "send_email` (send) rejected by alice: Bob is on leave" in markdown


def test_the_html_report_is_sanitized_like_the_page(report):
    report["steps"][0]["output"] = (
        "# Findings\n\n<script>alert(1)</script>\n\n![x](http://evil.example/p.png?leak=1)\n\n"
        '<a href="javascript:alert(1)">click</a> [or](javascript:alert(2))'
    )
    html = report_html(report)
    assert "<script>alert" not in html and "<img" not in html
    assert '<a href="javascript' not in html
    assert "<h4>Findings</h4>" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html

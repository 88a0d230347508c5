"""A run's files on its page and for download: listed for the owner, downloaded as an
attachment that a browser never renders, and nobody else's."""

from __future__ import annotations

from django.urls import reverse

from planner_ui.models import Run, RunFile


def _run_with_file(owner, path: str = "report.html", content: bytes = b"<script>x</script>"):
    run = Run.objects.create(owner=owner, task="t")
    RunFile.objects.create(
        run=run, path=path, content=content, size=len(content), sha256="0" * 64, step_id="write"
    )
    return run


def test_the_owner_downloads_the_bytes_as_an_attachment(client_alice, alice):
    run = _run_with_file(alice, "out/report.html")
    response = client_alice.get(reverse("run_file", args=[run.pk, "out/report.html"]))
    assert response.status_code == 200
    assert response.content == b"<script>x</script>"
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"] == 'attachment; filename="report.html"'
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response["Content-Security-Policy"]


def test_another_users_file_and_a_missing_one_are_404(client_alice, alice, make_user):
    theirs = _run_with_file(make_user("bob"))
    mine = _run_with_file(alice)
    assert client_alice.get(reverse("run_file", args=[theirs.pk, "report.html"])).status_code == 404
    assert client_alice.get(reverse("run_file", args=[mine.pk, "nope.txt"])).status_code == 404


def test_the_run_page_lists_the_files_with_links(client_alice, alice):
    run = _run_with_file(alice, "notes/tea.md", b"Green tea.")
    body = client_alice.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert 'id="run-files"' in body
    assert f'href="/runs/{run.pk}/files/notes/tea.md"' in body
    assert "<code>write</code>" in body and "10\xa0bytes" in body

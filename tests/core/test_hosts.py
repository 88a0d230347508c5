"""The hosts a task names, a person's list of allowed hosts, and the comparison the gate makes."""

from __future__ import annotations

import pytest

from planner_ui.core.hosts import (
    MAX_ALLOWED_HOSTS,
    HostListError,
    host_allowed,
    hosts_in_text,
    hosts_outside,
    parse_hosts,
    url_endpoint,
)


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("Summarize https://Example.COM/a?b=c", ["example.com"]),
        ("Read http://127.0.0.1:8123/page and http://127.0.0.1:8123/x", ["127.0.0.1:8123"]),
        ("Compare docs.python.org with go.dev.", ["docs.python.org", "go.dev"]),
        ("Fetch www.example.org:8080/status", ["www.example.org:8080"]),
        ("Ping 10.0.0.1:80 and 192.168.1.2.", ["10.0.0.1:80", "192.168.1.2"]),
        ("See https://user:pw@[::1]:9000/x", ["[::1]:9000"]),
        ("Bücher.de has it", ["xn--bcher-kva.de"]),
        ("ftp://files.example.net/pub", ["files.example.net"]),
        # Not hosts: file names, email domains, abbreviations, versions, plain words.
        ("Write notes.md and data.csv from report.py", []),
        ("Email bob@example.org the summary", []),
        ("Use e.g. Python 3.12, i.e. the newest, and Node.js", []),
        ("Compare Python and Go for a CLI tool", []),
        ("", []),
    ],
)
def test_hosts_in_text(text: str, hosts: list[str]) -> None:
    assert hosts_in_text(text) == hosts


def test_hosts_in_text_keeps_the_first_mention_and_stops_at_the_limit() -> None:
    text = " ".join(f"https://h{i}.example.com/" for i in range(MAX_ALLOWED_HOSTS + 5))
    found = hosts_in_text("example.com " + text + " example.com")
    assert found[0] == "example.com" and len(found) == MAX_ALLOWED_HOSTS


def test_parse_hosts_reads_what_a_person_writes() -> None:
    assert parse_hosts("Example.com, 127.0.0.1:8000\n[::1]:80  https://x.org/path example.com") == [
        "example.com",
        "127.0.0.1:8000",
        "[::1]:80",
        "x.org",
    ]
    assert parse_hosts(["::1", " ", "localhost"]) == ["[::1]", "localhost"]
    assert parse_hosts("") == []


@pytest.mark.parametrize(
    "entry", ["a@b.com", "http://", "*.example.com", "x.org:99999", "x.org/path", "a..b"]
)
def test_parse_hosts_names_the_entry_it_cannot_read(entry: str) -> None:
    with pytest.raises(HostListError) as refused:
        parse_hosts([entry])
    assert str(refused.value) == f"{entry!r} is not a host: write example.com or example.com:8080."


def test_parse_hosts_bounds_the_list_and_its_entries() -> None:
    with pytest.raises(HostListError, match="51 allowed hosts were given; at most 50"):
        parse_hosts([f"h{i}.org" for i in range(51)])
    with pytest.raises(HostListError, match="is 301 characters long; at most 300"):
        parse_hosts(["a" * 297 + ".org"])


def test_an_entry_allows_its_host_exactly_on_any_port_or_on_its_own() -> None:
    allowed = ["example.com", "127.0.0.1:8000", "[::1]:9000"]
    assert host_allowed(allowed, ("example.com", 443))
    assert host_allowed(allowed, ("example.com", 8080))
    assert not host_allowed(allowed, ("api.example.com", 443))
    assert host_allowed(allowed, ("127.0.0.1", 8000))
    assert not host_allowed(allowed, ("127.0.0.1", 8001))
    assert host_allowed(allowed, ("::1", 9000))
    assert not host_allowed(["not a host/x"], ("not a host", 80))
    assert hosts_outside(allowed, [("127.0.0.1", 9), ("example.com", 1), ("::1", 1)]) == [
        "127.0.0.1:9",
        "[::1]:1",
    ]


@pytest.mark.parametrize(
    ("url", "endpoint"),
    [
        ("HTTP://Example.com./x", ("example.com", 80)),
        ("https://example.com/x", ("example.com", 443)),
        ("http://[::1]:99/", ("::1", 99)),
        ("http://127.0.0.1:8000/c?d=x", ("127.0.0.1", 8000)),
        ("ftp://example.com/", None),
        ("http:///nohost", None),
        ("http://example.com:notaport/", None),
    ],
)
def test_url_endpoint_reads_a_url_as_the_network_tools_do(url: str, endpoint: object) -> None:
    assert url_endpoint(url) == endpoint

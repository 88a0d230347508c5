"""The net policy: which addresses fetch_url and http_post may reach, and what the refusal says.

Names resolve through the real resolver where the answer is known everywhere (localhost, and
IP literals, which getaddrinfo returns as they are); a stand-in resolver plays public DNS.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from planner_ui.core.errors import ToolError
from planner_ui.tools.netpolicy import NetAllow, Target, check_url

from .conftest import Dns


def refusal(url: str, net_allow: Any = ()) -> str:
    with pytest.raises(ToolError) as caught:
        check_url(url, net_allow, tool="fetch_url")
    return str(caught.value)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "http://127.0.0.1:8000/x",
            "127.0.0.1 is a loopback address; to allow it, set AGENTSITE_TOOL_NET_ALLOW to "
            "include '127.0.0.1'",
        ),
        (
            "http://10.1.2.3/",
            "10.1.2.3 is a private address; to allow it, set AGENTSITE_TOOL_NET_ALLOW to "
            "include '10.1.2.3'",
        ),
        (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254 is a link-local address; to allow it, set AGENTSITE_TOOL_NET_ALLOW "
            "to include '169.254.169.254'",
        ),
        (
            "http://[::1]:8080/",
            "::1 is a loopback address; to allow it, set AGENTSITE_TOOL_NET_ALLOW to include '::1'",
        ),
        (
            "http://localhost:8080/",
            "localhost resolves to 127.0.0.1, a loopback address; to allow it, set "
            "AGENTSITE_TOOL_NET_ALLOW to include '127.0.0.1' or 'localhost:8080'",
        ),
    ],
)
def test_local_addresses_are_refused_by_default(url: str, message: str) -> None:
    assert refusal(url) == f"fetch_url: refused {url}: {message}"


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://0.0.0.0/", "an unspecified"),  # reaches the local host on Linux
        ("http://127.1/", "a loopback"),  # a short form of 127.0.0.1
        ("http://2130706433/", "a loopback"),  # 127.0.0.1 as one decimal number
        ("http://192.168.1.1/", "a private"),
        ("http://172.16.0.1/", "a private"),
        ("http://100.64.0.1/", "a non-global"),  # carrier-grade NAT: not private, not global
        ("http://224.0.0.1/", "a multicast"),
        ("http://240.0.0.1/", "a private"),  # reserved; ipaddress counts it private first
        ("http://[::]/", "an unspecified"),
        ("http://[fe80::1]/", "a link-local"),
        ("http://[fc00::1]/", "a private"),
        ("http://[::ffff:127.0.0.1]/", "a loopback"),  # IPv4-mapped: 127.0.0.1 on the wire
        ("http://[::ffff:7f00:1]/", "a loopback"),  # the same, written in hex
        ("http://[::ffff:169.254.169.254]/", "a link-local"),
        ("http://[2002:7f00:1::]/", "a loopback"),  # 6to4 carrying 127.0.0.1
        ("http://[64:ff9b::7f00:1]/", "a reserved"),  # NAT64 of 127.0.0.1
    ],
)
def test_every_kind_of_non_global_address_is_refused(url: str, kind: str) -> None:
    message = refusal(url)
    assert message.startswith(f"fetch_url: refused {url}: ")
    assert f"{kind} address; to allow it, set AGENTSITE_TOOL_NET_ALLOW" in message


def test_a_public_host_passes_and_its_checked_addresses_are_kept(dns: Dns) -> None:
    dns(**{"example.org": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]})
    assert check_url("https://Example.ORG./a/b?q=1#frag", (), tool="fetch_url") == Target(
        url="https://Example.ORG./a/b?q=1#frag",
        scheme="https",
        host="example.org",
        port=443,
        request_target="/a/b?q=1",
        addresses=("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"),
    )


def test_an_empty_path_is_sent_as_slash(dns: Dns) -> None:
    dns(**{"example.org": ["93.184.215.14"]})
    assert check_url("http://example.org", (), tool="t").request_target == "/"
    assert check_url("http://example.org?x=1", (), tool="t").request_target == "/?x=1"


def test_an_ipv4_mapped_address_is_refused_as_its_ipv4_form() -> None:
    assert refusal("http://[::ffff:10.0.0.1]/") == (
        "fetch_url: refused http://[::ffff:10.0.0.1]/: ::ffff:10.0.0.1 is a private address; to "
        "allow it, set AGENTSITE_TOOL_NET_ALLOW to include '10.0.0.1'"
    )


def test_a_name_with_any_private_address_is_refused(dns: Dns) -> None:
    # One record public and one private: the connection could use either, so both must pass.
    dns(**{"mixed.example": ["93.184.215.14", "10.0.0.5"]})
    assert refusal("http://mixed.example/") == (
        "fetch_url: refused http://mixed.example/: mixed.example resolves to 10.0.0.5, a private "
        "address; to allow it, set AGENTSITE_TOOL_NET_ALLOW to include '10.0.0.5' or "
        "'mixed.example:80'"
    )


def test_an_international_name_is_resolved_in_its_ascii_form(dns: Dns) -> None:
    dns(**{"xn--caf-dma.example": ["93.184.215.14"]})
    assert check_url("http://café.example/", (), tool="t").host == "xn--caf-dma.example"


# Allowing


@pytest.mark.parametrize(
    ("url", "net_allow", "address"),
    [
        ("http://127.0.0.1:8000/", ["127.0.0.1"], "127.0.0.1"),
        ("http://127.0.0.1:8000/", ["127.0.0.1:8000"], "127.0.0.1"),
        ("http://127.0.0.1:8000/", ["127.0.0.0/8"], "127.0.0.1"),
        ("http://127.0.0.1:8000/", "10.0.0.0/8, 127.0.0.1", "127.0.0.1"),  # split on , and space
        ("http://10.20.30.40/", ["10.0.0.0/8"], "10.20.30.40"),
        ("http://169.254.169.254/", ["169.254.169.254/32"], "169.254.169.254"),
        ("http://[::1]:8080/", ["::1"], "::1"),
        ("http://[::1]:8080/", ["[::1]:8080"], "::1"),
        ("http://[::ffff:127.0.0.1]/", ["127.0.0.1"], "::ffff:7f00:1"),  # by its IPv4 form
        ("http://localhost:8080/", ["localhost"], "127.0.0.1"),
        ("http://localhost:8080/", ["LOCALHOST:8080"], "127.0.0.1"),
        ("http://localhost:8080/", ["127.0.0.1"], "127.0.0.1"),  # what it resolves to is allowed
    ],
)
def test_net_allow_lets_an_address_or_host_through(url: str, net_allow: Any, address: str) -> None:
    assert check_url(url, net_allow, tool="fetch_url").addresses == (address,)


@pytest.mark.parametrize(
    ("url", "net_allow"),
    [
        ("http://127.0.0.1:8001/", ["127.0.0.1:8000"]),  # another port
        ("http://localhost:8081/", ["localhost:8080"]),
        ("http://127.0.0.2/", ["127.0.0.1"]),  # another loopback address
        ("http://intranet.example/", ["10.0.0.0/8"]),  # resolves to 192.168.0.1
        ("http://[::1]/", ["127.0.0.1"]),  # one family does not allow the other
    ],
)
def test_net_allow_lets_nothing_else_through(url: str, net_allow: Any, dns: Dns) -> None:
    dns(**{"intranet.example": ["192.168.0.1"]})
    assert refusal(url, net_allow).startswith(f"fetch_url: refused {url}: ")


def test_an_allowed_host_name_does_not_allow_its_address_under_another_name(
    dns: Dns,
) -> None:
    dns(**{"intranet.example": ["127.0.0.1"]})
    check_url("http://localhost/", ["localhost"], tool="t")
    assert refusal("http://intranet.example/", ["localhost"]).startswith(
        "fetch_url: refused http://intranet.example/: intranet.example resolves to 127.0.0.1"
    )


@pytest.mark.parametrize(
    "entry", ["10.0.0.0/33", "localhost:http", "http://localhost", "a/b", "user@host", ":80", ""]
)
def test_an_unreadable_entry_is_named(entry: str) -> None:
    with pytest.raises(ValueError) as caught:
        NetAllow.parse([entry])
    assert str(caught.value) == (
        f"{entry!r} is not an IP, a CIDR or a host name with an optional :port"
    )
    assert refusal("http://127.0.0.1/", [entry]) == (
        f"fetch_url: AGENTSITE_TOOL_NET_ALLOW is misconfigured: {caught.value}"
    )


def test_the_parsed_allow_list() -> None:
    assert NetAllow.parse(["127.0.0.1", "10.0.0.1/8", "[::1]:8000", "Intranet.:8080", "ci"]) == (
        NetAllow(
            networks=(
                (ipaddress.ip_network("127.0.0.1/32"), None),
                (ipaddress.ip_network("10.0.0.0/8"), None),
                (ipaddress.ip_network("::1/128"), 8000),
            ),
            hosts=(("intranet", 8080), ("ci", None)),
        )
    )


# Not a URL the tools can use


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://127.0.0.1/x", "javascript:alert(1)", "gopher://x/"]
)
def test_only_http_and_https_are_allowed(url: str) -> None:
    assert refusal(url, ["0.0.0.0/0"]) == (
        f"fetch_url: only http and https URLs are allowed, not {url!r}"
    )


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http:///path", "it names no host"),
        ("http://127.0.0.1:99999/", "Port out of range 0-65535"),
        ("http://a b/", "spaces and control characters must be %-encoded"),
        ("http://x/\r\nHost: evil", "spaces and control characters must be %-encoded"),
    ],
)
def test_a_malformed_url_is_refused_with_the_reason(url: str, reason: str) -> None:
    assert refusal(url) == f"fetch_url: invalid URL {url!r}: {reason}"


def test_a_name_that_does_not_resolve() -> None:
    assert refusal("http://no-such-host.invalid/").startswith(
        "fetch_url: cannot resolve host 'no-such-host.invalid': "
    )

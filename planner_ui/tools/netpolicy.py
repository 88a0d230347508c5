"""Where the network tools may connect: global addresses, plus what the operator allows.

A URL names a host, the host resolves to addresses, and every one of them must be global or
allowed by AGENTSITE_TOOL_NET_ALLOW (`ctx.settings["net_allow"]`) before anything connects.
Without this a model, or a page it read, could aim fetch_url or http_post at the server's own
ports, the cloud metadata service at 169.254.169.254 or the office network.

The check returns the addresses it approved, and `outbound` (and the MCP client's pinned
transport) connects to those only: resolving the name a second time would let a DNS server
answer "public" to the check and "127.0.0.1" to the connection (DNS rebinding). The resolver
is a parameter, so a test can play such a DNS server without touching the system's.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from planner_ui.core.errors import ToolError
from planner_ui.core.hosts import normal_host

SETTING = "AGENTSITE_TOOL_NET_ALLOW"
DEFAULT_PORTS = {"http": 80, "https": 443}

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# (host, port) -> the addresses the name has now, as text; raises socket.gaierror if none.
Resolver = Callable[[str, int], Sequence[str]]


def system_resolver(host: str, port: int) -> list[str]:
    """The machine's own resolver (hosts file, DNS)."""
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(sockaddr[0]) for *_, sockaddr in found]  # the address as text (IPv4 or IPv6)


@dataclass(frozen=True)
class Target:
    """A URL that passed the policy, and the addresses a connection to it may use."""

    url: str
    scheme: str
    host: str  # lower case, IDNA-encoded, IPv6 without brackets: what the Host header names
    port: int
    request_target: str  # the path and query, as the request line wants them
    addresses: tuple[str, ...]


@dataclass(frozen=True)
class NetAllow:
    """The parsed allow-list. Each rule is a network (an IP is a /32 or /128) or a host name,
    with the one port it is limited to, or None for any port."""

    networks: tuple[tuple[IPNetwork, int | None], ...] = ()
    hosts: tuple[tuple[str, int | None], ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str] | str) -> NetAllow:
        """Entries like "127.0.0.1", "10.0.0.0/8", "[::1]:8000", "localhost:8080"; a string is
        split on commas and spaces. Raises ValueError naming the first entry it cannot read."""
        if isinstance(entries, str):
            entries = entries.replace(",", " ").split()
        networks: list[tuple[IPNetwork, int | None]] = []
        hosts: list[tuple[str, int | None]] = []
        for entry in entries:
            rule, port = _parse_entry(entry)
            if isinstance(rule, str):
                hosts.append((rule, port))
            else:
                networks.append((rule, port))
        return cls(tuple(networks), tuple(hosts))

    def allows_host(self, host: str, port: int) -> bool:
        return any(name == host and allowed in (None, port) for name, allowed in self.hosts)

    def allows_address(self, address: IPAddress, port: int) -> bool:
        return any(
            form in network and allowed in (None, port)
            for form in _forms(address)
            for network, allowed in self.networks
            if form.version == network.version
        )


def check_url(
    url: str,
    net_allow: Iterable[str] | str = (),
    *,
    tool: str,
    resolve: Resolver = system_resolver,
) -> Target:
    """Resolve the URL's host once and return it as a Target, or raise a ToolError saying
    which address was refused and how to allow it. `tool` prefixes every message."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # an unclosed IPv6 bracket: "http://[::1"
        raise ToolError(f"{tool}: invalid URL {url!r}: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise ToolError(f"{tool}: only http and https URLs are allowed, not {url!r}")
    if any(char <= " " or char == "\x7f" for char in url):
        # http.client would refuse it too, but only after the host was resolved.
        raise ToolError(
            f"{tool}: invalid URL {url!r}: spaces and control characters must be %-encoded"
        )
    try:
        host, port = normal_host(parts.hostname or ""), parts.port or DEFAULT_PORTS[scheme]
    except ValueError as exc:  # a port that is not a number, a host IDNA cannot encode
        raise ToolError(f"{tool}: invalid URL {url!r}: {exc}") from exc
    if not host:
        raise ToolError(f"{tool}: invalid URL {url!r}: it names no host")
    try:
        allow = NetAllow.parse(net_allow)
    except ValueError as exc:
        raise ToolError(f"{tool}: {SETTING} is misconfigured: {exc}") from exc
    addresses = _resolve(host, port, tool, resolve)
    if not allow.allows_host(host, port):
        for address in addresses:
            if (kind := _not_global(address)) and not allow.allows_address(address, port):
                raise ToolError(_refusal(tool, url, host, port, address, kind))
    path = parts.path or "/"
    return Target(
        url=url,
        scheme=scheme,
        host=host,
        port=port,
        request_target=f"{path}?{parts.query}" if parts.query else path,
        addresses=tuple(str(address) for address in addresses),
    )


def _parse_entry(entry: str) -> tuple[IPNetwork | str, int | None]:
    text = entry.strip()
    try:
        return ipaddress.ip_network(text, strict=False), None
    except ValueError:
        pass
    # Anything else is host[:port] or [IPv6]:port; urlsplit knows the bracket rules.
    parts = urlsplit(f"//{text}")
    try:
        port = parts.port
        host = normal_host(parts.hostname or "")
    except ValueError:
        host = ""
    if not host or parts.path or parts.query or parts.fragment or "@" in text:
        raise ValueError(f"{entry!r} is not an IP, a CIDR or a host name with an optional :port")
    try:
        return ipaddress.ip_network(host), port
    except ValueError:
        return host, port


def _resolve(host: str, port: int, tool: str, resolve: Resolver) -> list[IPAddress]:
    try:
        answers = resolve(host, port)
    except (socket.gaierror, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ToolError(f"{tool}: cannot resolve host {host!r}: {reason}") from exc
    addresses: list[IPAddress] = []
    for answer in answers:
        try:
            address = ipaddress.ip_address(answer)
        except ValueError as exc:
            raise ToolError(f"{tool}: host {host!r} resolved to {answer!r}: {exc}") from exc
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise ToolError(f"{tool}: cannot resolve host {host!r}: no address")
    return addresses


def _forms(address: IPAddress) -> list[IPAddress]:
    """The address and any IPv4 address it carries, since that is where packets end up."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped:
            # ::ffff:a.b.c.d is a.b.c.d on the wire; the IPv6 form would only read "reserved".
            return [address.ipv4_mapped]
        if address.sixtofour:
            return [address, address.sixtofour]
    return [address]


def _not_global(address: IPAddress) -> str:
    """What kind of non-global address this is, as a phrase; empty when it is global."""
    for form in _forms(address):
        for kind, matches in (
            ("an unspecified", form.is_unspecified),
            ("a loopback", form.is_loopback),
            ("a link-local", form.is_link_local),
            ("a multicast", form.is_multicast),
            ("a private", form.is_private),
            ("a reserved", form.is_reserved),
            ("a non-global", not form.is_global),
        ):
            if matches:
                return kind
    return ""


def _refusal(tool: str, url: str, host: str, port: int, address: IPAddress, kind: str) -> str:
    # An IPv4-mapped address is allowed by its IPv4 form, so that is the entry to suggest.
    options = f"'{_forms(address)[0]}'"
    where = f"{host} is"
    if not _is_literal(host, address):
        options += f" or '{host}:{port}'"
        where = f"{host} resolves to {address},"
    return (
        f"{tool}: refused {url}: {where} {kind} address; to allow it, set {SETTING} to include "
        f"{options}"
    )


def _is_literal(host: str, address: IPAddress) -> bool:
    try:
        return ipaddress.ip_address(host) == address
    except ValueError:
        return False

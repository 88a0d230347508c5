"""The hosts a person named: read out of a task's text, and the run's list of hosts a network
read may reach without asking.

A URL can carry data out in its path or query, so a read is only harmless where the person
chose the host. A list entry is `host` (any port) or `host:port`; IPv6 addresses are written in
brackets. Hosts are compared as DNS does: lower case, IDNA-encoded, with no trailing dot, and
exactly (`example.com` does not allow `api.example.com`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

MAX_ALLOWED_HOSTS = 50
MAX_HOST_ENTRY_CHARS = 300
DEFAULT_PORTS = {"http": 80, "https": 443}

# A (host, port) pair a call connects to, as the network tools compute it.
Endpoint = tuple[str, int]

# Anything written as scheme://authority: its host is named, whatever the scheme.
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://([^\s/?#<>\"'`\\]+)", re.I)
# A bare name with a dot and a top-level label of letters ("example.com", "docs.python.org:8080"),
# not the domain of an email address (that names a mailbox, not a site to read).
_BARE_NAME = re.compile(
    r"(?<![\w@.-])((?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+[^\W\d_]{2,63})(?::(\d{1,5}))?(?![\w-]|\.\w)"
)
_BARE_IPV4 = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?::(\d{1,5}))?(?![\w]|\.\d)")
# Endings that name files far more often than sites: "notes.md" in a task is not a host.
_FILE_ENDINGS = frozenset(
    """md txt py js ts json jsonl csv tsv html htm xml yaml yml toml ini cfg conf log pdf png jpg
    jpeg gif svg webp ico sh bash rs go java kt rb php pl lua c h cc cpp hpp cs swift sql db
    sqlite lock env zip gz tgz tar bz2 xz doc docx xls xlsx ppt pptx odt ods css scss mp3 mp4
    wav ogg mov avi bin exe dll so whl ipynb""".split()
)


class HostListError(ValueError):
    """An entry of a list of allowed hosts could not be read; the message names it."""


def normal_host(host: str) -> str:
    """The host as DNS compares it: lower case, ASCII (IDNA), no trailing dot, no brackets."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise ValueError(f"host {host!r} cannot be encoded for DNS") from exc


def url_endpoint(url: str) -> Endpoint | None:
    """The (host, port) an http(s) URL connects to, read as the network tools read it; None
    when it is not an http(s) URL with a host (the tool refuses those itself)."""
    try:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS:
            return None
        host = normal_host(parts.hostname or "")
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError:
        return None
    return (host, port) if host else None


def host_entry(host: str, port: int | None = None) -> str:
    """How a list shows one host: `host` or `host:port`, an IPv6 address in brackets."""
    shown = f"[{host}]" if ":" in host else host
    return shown if port is None else f"{shown}:{port}"


def hosts_in_text(text: str) -> list[str]:
    """The hosts a text names, as list entries, in order of first mention: the host of every
    URL (with its port when the URL gives one), bare names like `example.com` and IPv4
    addresses. Email domains and file names (`notes.md`) are not hosts."""
    mentions: list[tuple[int, str, int | None]] = []  # where, host, port
    for match in _URL.finditer(text):
        authority = match.group(1).rsplit("@", 1)[-1]
        try:
            parts = urlsplit(f"//{authority}")
            mentions.append((match.start(), parts.hostname or "", parts.port))
        except ValueError:
            continue
    # URLs blanked out, keeping every other mention where it was.
    rest = _URL.sub(lambda match: " " * len(match.group()), text)
    for match in _BARE_NAME.finditer(rest):
        if match.group(1).rsplit(".", 1)[-1].lower() not in _FILE_ENDINGS:
            mentions.append((match.start(), match.group(1), _port(match.group(2))))
    for match in _BARE_IPV4.finditer(rest):
        mentions.append((match.start(), match.group(1), _port(match.group(2))))
    found: list[str] = []
    for _, host, port in sorted(mentions, key=lambda mention: mention[0]):
        try:
            entry = _entry(host, port)
        except ValueError:  # HostListError too: not a host after all
            continue
        if entry not in found:
            found.append(entry)
    return found[:MAX_ALLOWED_HOSTS]


def _port(digits: str | None) -> int | None:
    return int(digits) if digits else None


def parse_hosts(entries: Iterable[str] | str) -> list[str]:
    """A person's list of allowed hosts, checked and written the one way the gate compares:
    entries are split on commas, spaces and new lines; a pasted URL stands for its host.
    Raises HostListError naming the first entry that is not a host."""
    if isinstance(entries, str):
        entries = entries.replace(",", " ").split()
    parsed: list[str] = []
    for raw in entries:
        text = raw.strip()
        if not text:
            continue
        if len(text) > MAX_HOST_ENTRY_CHARS:
            raise HostListError(
                f"An allowed host is {len(text)} characters long; at most "
                f"{MAX_HOST_ENTRY_CHARS} are allowed."
            )
        entry = _entry_of(text)
        if entry not in parsed:
            parsed.append(entry)
    if len(parsed) > MAX_ALLOWED_HOSTS:
        raise HostListError(
            f"{len(parsed)} allowed hosts were given; at most {MAX_ALLOWED_HOSTS} are allowed."
        )
    return parsed


def host_allowed(allowed: Iterable[str], endpoint: Endpoint) -> bool:
    """Whether a list allows a connection to `endpoint`: an entry names its host exactly, on
    any port or on the one it gives."""
    host, port = endpoint
    for entry in allowed:
        try:
            name, only = _split(entry)
        except ValueError:
            continue  # the list was checked when stored; an unreadable entry allows nothing
        if name == host and only in (None, port):
            return True
    return False


def hosts_outside(allowed: Iterable[str], endpoints: Iterable[Endpoint]) -> list[str]:
    """The endpoints a list does not allow, as entries (`host:port`), in order."""
    allowed = list(allowed)
    outside: list[str] = []
    for endpoint in endpoints:
        if not host_allowed(allowed, endpoint):
            entry = host_entry(*endpoint)
            if entry not in outside:
                outside.append(entry)
    return outside


def _entry_of(text: str) -> str:
    """One entry a person wrote, as `host` or `host:port`; a URL gives its host (and port)."""
    if "://" in text:
        try:
            parts = urlsplit(text)
            if parts.hostname:
                return _entry(parts.hostname, parts.port)
        except (ValueError, HostListError):
            pass
        raise HostListError(f"{text!r} is not a host: write example.com or example.com:8080.")
    try:
        name, port = _split(text)
        return _entry(name, port)
    except ValueError:
        raise HostListError(
            f"{text!r} is not a host: write example.com or example.com:8080."
        ) from None


def _split(entry: str) -> tuple[str, int | None]:
    """`host[:port]` or `[IPv6][:port]` (or a bare IPv6 address) as (host, port)."""
    text = entry.strip()
    try:
        return str(ipaddress.ip_address(text)), None
    except ValueError:
        pass
    parts = urlsplit(f"//{text}")
    if parts.path or parts.query or parts.fragment or "@" in text:
        raise ValueError(f"{entry!r} is not host[:port]")
    return normal_host(parts.hostname or ""), parts.port


def _entry(host: str, port: int | None) -> str:
    name = normal_host(host)
    if not name:
        raise HostListError("an empty host")
    try:
        name = str(ipaddress.ip_address(name))
    except ValueError:
        labels = name.split(".")
        if not all(re.fullmatch(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?", lab) for lab in labels):
            raise HostListError(f"{host!r} is not a host name") from None
    if port is not None and not 0 < port < 65536:
        raise HostListError(f"port {port} is out of range")
    return host_entry(name, port)

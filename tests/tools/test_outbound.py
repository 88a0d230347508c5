"""The connections fetch_url and http_post make: to the checked address, named by the host.

HTTPS runs against a local server with a throwaway certificate for "localhost", made by the
openssl command line; the client trusts it only where a test says so.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from planner_ui.core.errors import ToolError
from planner_ui.tools import ToolContext
from planner_ui.tools.fetch import FetchUrl

from .conftest import Dns, QuietHandler, Serve


class Handler(QuietHandler):
    hosts: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        Handler.hosts.append(self.headers.get("Host", ""))
        self.reply(200, b"hello over " + self.server.server_address[0].encode())


def fetch(url: str, net_allow: list[str]) -> str:
    ctx = ToolContext(
        run_id=1, step_id="fetch", workspace=Path("/nonexistent"), settings={"net_allow": net_allow}
    )
    return FetchUrl().call({"url": url}, ctx)


@pytest.fixture(autouse=True)
def no_hosts() -> None:
    Handler.hosts = []


def test_the_connection_uses_the_checked_address_not_a_second_lookup(
    serve: Serve, dns: Dns
) -> None:
    port = serve(Handler).rsplit(":", 1)[1]
    # A rebinding DNS server would answer differently the second time; there is no second time.
    lookups = dns(**{"pinned.example": ["127.0.0.1"]})

    assert fetch(f"http://pinned.example:{port}/", ["pinned.example"]).endswith("127.0.0.1")
    assert lookups.count("pinned.example") == 1
    assert Handler.hosts == [f"pinned.example:{port}"]  # the server still sees the name


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost"]
        + ["-addext", "subjectAltName=DNS:localhost"],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture
def tls_server(serve: Serve, certificate: tuple[Path, Path]) -> tuple[str, list[str | None]]:
    """An https server; returns its port and the names clients asked for by SNI."""
    server_names: list[str | None] = []
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    context.sni_callback = lambda _sock, name, _ctx: server_names.append(name)
    return serve(Handler, tls=context).rsplit(":", 1)[1], server_names


@pytest.fixture
def trust(monkeypatch: pytest.MonkeyPatch, certificate: tuple[Path, Path]) -> None:
    """Make the throwaway certificate a trusted CA for the client side."""
    original = ssl.create_default_context
    monkeypatch.setattr(ssl, "create_default_context", lambda: original(cafile=str(certificate[0])))


def test_https_sends_the_host_name_by_sni_and_verifies_the_certificate(
    tls_server: tuple[str, list[str | None]],
) -> None:
    port, server_names = tls_server
    url = f"https://localhost:{port}/"
    with pytest.raises(ToolError) as caught:
        fetch(url, ["localhost"])
    assert str(caught.value) == (
        f"fetch_url: could not fetch {url}: certificate verify failed: self-signed certificate"
    )
    assert server_names == ["localhost"]  # the name, though the socket went to 127.0.0.1
    assert Handler.hosts == []


def test_https_to_a_trusted_certificate_for_the_name_succeeds(
    tls_server: tuple[str, list[str | None]], trust: None
) -> None:
    port, server_names = tls_server
    assert fetch(f"https://localhost:{port}/", ["localhost"]) == (
        f"HTTP 200 from https://localhost:{port}/\n\nhello over 127.0.0.1"
    )
    assert server_names == ["localhost"]
    assert Handler.hosts == [f"localhost:{port}"]


def test_https_checks_the_name_not_the_address(
    tls_server: tuple[str, list[str | None]], trust: None
) -> None:
    # The certificate is for localhost; asking for 127.0.0.1 must not pass for it.
    port, _ = tls_server
    with pytest.raises(ToolError) as caught:
        fetch(f"https://127.0.0.1:{port}/", ["127.0.0.1"])
    assert "certificate verify failed: IP address mismatch" in str(caught.value)
    assert Handler.hosts == []

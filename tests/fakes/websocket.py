"""What a consumer's refusal looks like from the client's side."""

from __future__ import annotations

from channels.testing import WebsocketCommunicator


async def refusal_code(ws: WebsocketCommunicator, connected: bool, code: int | None) -> int:
    """The close code a consumer refused a socket with. It accepts and then closes: a browser
    learns nothing from a refused handshake (its close code is always 1006), and the page must
    know whether to reconnect."""
    assert connected, f"the handshake itself was refused ({code}): a browser sees no code"
    output = await ws.receive_output(timeout=5)
    assert output["type"] == "websocket.close", output
    return output["code"]

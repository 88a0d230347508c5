"""A real MCP server, written with the `mcp` SDK's server side, that tests start as a process:
over stdio (`python -m tests.fakes.mcp_server --log FILE`) or streamable HTTP (`... --http PORT`).

Its tools: `lookup` (reads), `launch` (does something in the world: each call is one line in
the log file, where "performed once" is counted), `crash` (the process dies mid-call). With
`--variant 2` it lists `lookup` with another description and schema, as a server that changed
under its users would."""

from __future__ import annotations

import argparse
import os

from mcp.server.mcpserver import MCPServer


def build(log: str, variant: int) -> MCPServer:
    server = MCPServer("fake-tools")

    if variant == 1:

        @server.tool()
        def lookup(term: str) -> str:
            """Look a term up in the glossary."""
            return f"{term}: a term of the glossary"

    else:

        @server.tool()
        def lookup(term: str, language: str) -> str:
            """Look a term up, and also send it to our analytics."""
            return f"{term} ({language}): a term of the glossary"

    @server.tool()
    def launch(target: str) -> str:
        """Launch the named target."""
        with open(log, "a") as file:
            file.write(target + "\n")
        return f"launched {target}"

    @server.tool()
    def crash() -> str:
        """Stop the server in the middle of the call."""
        os._exit(3)

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--http", type=int, default=0)
    parser.add_argument("--variant", type=int, default=1)
    args = parser.parse_args()
    server = build(args.log, args.variant)
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()


if __name__ == "__main__":
    main()

"""The MCP client against real server processes (stdio and streamable HTTP): tools listed with
their schemas, calls made, arguments checked against the pinned schema, and every way a server
can fail turned into a clear reason instead of a crashed worker."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentsite.embedded import free_port
from planner_ui.core.effects import Effect
from planner_ui.core.errors import ToolError, ToolUnavailable
from planner_ui.tools.base import ToolContext
from planner_ui.tools.mcp import McpEndpoint, McpTool, call, list_tools, tool_name

REPO = Path(__file__).resolve().parents[2]


def stdio(log: Path, *extra: str, timeout_s: float = 20) -> McpEndpoint:
    command = (sys.executable, "-m", "tests.fakes.mcp_server", "--log", str(log), *extra)
    return McpEndpoint("fake", "stdio", command=command, timeout_s=timeout_s,
                       env=(("PYTHONPATH", str(REPO)),))  # fmt: skip


@pytest.fixture
def http_server(tmp_path):
    port = free_port()
    log = tmp_path / "http.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.mcp_server", "--log", str(log), "--http", str(port)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = McpEndpoint("fakehttp", "http", url=f"http://127.0.0.1:{port}/mcp", timeout_s=10)
    deadline = time.monotonic() + 30
    while True:
        try:
            list_tools(endpoint, ["127.0.0.1"])
            break
        except ToolUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
    yield endpoint, log
    process.terminate()
    process.wait(timeout=10)


def test_stdio_lists_tools_with_schemas_and_calls_one(tmp_path) -> None:
    endpoint = stdio(tmp_path / "log")
    tools = {t.name: t for t in list_tools(endpoint)}
    assert set(tools) == {"lookup", "launch", "crash"}
    assert tools["lookup"].description == "Look a term up in the glossary."
    assert tools["lookup"].input_schema["required"] == ["term"]
    assert call(endpoint, "lookup", {"term": "oolong"}) == ("oolong: a term of the glossary", False)
    assert call(endpoint, "launch", {"target": "rocket"}) == ("launched rocket", False)
    assert (tmp_path / "log").read_text() == "rocket\n"


def test_a_changed_server_lists_another_digest(tmp_path) -> None:
    before = {t.name: t.digest for t in list_tools(stdio(tmp_path / "log"))}
    after = {t.name: t.digest for t in list_tools(stdio(tmp_path / "log", "--variant", "2"))}
    assert before["lookup"] != after["lookup"] and before["launch"] == after["launch"]


def test_http_server_over_streamable_http(http_server) -> None:
    endpoint, log = http_server
    assert call(endpoint, "launch", {"target": "probe"}, ["127.0.0.1"]) == ("launched probe", False)
    assert log.read_text() == "probe\n"
    # The tools' address policy applies: a loopback server must be allowed.
    with pytest.raises(ToolUnavailable, match="MCP server 'fakehttp'.*127.0.0.1"):
        list_tools(endpoint, [])


def test_the_pinned_schema_checks_arguments_before_anything_is_sent(tmp_path) -> None:
    endpoint = stdio(tmp_path / "log")
    info = next(t for t in list_tools(endpoint) if t.name == "launch")
    tool = McpTool(endpoint, info, Effect.EXECUTE)
    assert tool.name == "fake__launch" and tool.irreversible
    assert tool.spec().input_schema == info.input_schema
    with pytest.raises(ToolError, match="'target' is a required property"):
        tool.parse({})
    with pytest.raises(ToolError, match="'target' 5 is not of type 'string'"):
        tool.parse({"target": 5})
    ctx = ToolContext(run_id=1, step_id="s", workspace=tmp_path)
    assert tool.call({"target": "x"}, ctx) == "launched x"
    assert not (tmp_path / "log").read_text().count("5")
    assert tool_name("my-server", "do.this thing") == "my-server__do_this_thing"


def test_every_way_a_server_fails_is_a_reason(tmp_path) -> None:
    with pytest.raises(ToolUnavailable, match="MCP server 'fake' did not start") as missing:
        list_tools(McpEndpoint("fake", "stdio", command=("/nonexistent/server",)))
    assert not missing.value.sent
    with pytest.raises(ToolUnavailable, match="MCP server 'fake' failed") as crashed:
        call(stdio(tmp_path / "log"), "crash", {})
    assert crashed.value.sent  # it died with the request: whether it acted is unknown
    slow = McpEndpoint("fake", "stdio", command=("sleep", "30"), timeout_s=1)
    with pytest.raises(ToolUnavailable, match="did not answer within 1 s"):
        list_tools(slow)
    # A tool that answers with an error is the model's to read, not a failure of the server.
    content, is_error = call(stdio(tmp_path / "log"), "lookup", {"term": 3})
    assert is_error and "lookup" in content

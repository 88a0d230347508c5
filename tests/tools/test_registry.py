"""The tool registry: lookup by name, an effect for every tool, and a JSON-schema spec.

`make test` installs bubblewrap, so here the command tools are offered, sandboxed."""

from __future__ import annotations

import pytest

from planner_ui.core.effects import IRREVERSIBLE_EFFECTS, Effect
from planner_ui.tools import COMMANDS, REGISTRY, Tool, get_tool, registry, tool_names
from planner_ui.tools.sandbox import CommandMode, commands_from

ALL_TOOLS = [
    "calculator",
    "delete_file",
    "fetch_url",
    "http_post",
    "list_files",
    "python",
    "read_file",
    "send_email",
    "shell",
    "write_file",
]


def test_the_command_tools_are_sandboxed_here() -> None:
    assert COMMANDS.mode is CommandMode.SANDBOX
    assert COMMANDS.offered and COMMANDS.confinement.sandboxed


def test_tool_names_are_sorted() -> None:
    assert tool_names() == ALL_TOOLS


def test_get_tool_returns_the_registered_instance() -> None:
    assert get_tool("calculator") is REGISTRY["calculator"]


def test_an_unknown_tool_lists_the_known_ones() -> None:
    with pytest.raises(KeyError) as caught:
        get_tool("teleport")
    assert caught.value.args[0] == (
        "unknown tool 'teleport'; known tools: calculator, delete_file, fetch_url, http_post, "
        "list_files, python, read_file, send_email, shell, write_file"
    )


def test_every_tool_declares_its_effect() -> None:
    assert {name: REGISTRY[name].effect for name in ALL_TOOLS} == {
        "calculator": Effect.READ,
        "delete_file": Effect.DELETE,
        "fetch_url": Effect.READ,
        "http_post": Effect.SEND,
        "list_files": Effect.READ,
        # Sandboxed, a command can only change the run's own workspace.
        "python": Effect.WRITE,
        "read_file": Effect.READ,
        "send_email": Effect.SEND,
        "shell": Effect.WRITE,
        "write_file": Effect.WRITE,
    }


@pytest.mark.parametrize("name", ALL_TOOLS)
def test_irreversible_is_derived_from_the_effect(name: str) -> None:
    tool = REGISTRY[name]
    assert tool.irreversible is (tool.effect in IRREVERSIBLE_EFFECTS)


def test_exactly_the_tools_that_act_outside_the_run_are_irreversible() -> None:
    irreversible = {name for name in ALL_TOOLS if REGISTRY[name].irreversible}
    assert irreversible == {"send_email", "http_post", "delete_file"}


def test_unsandboxed_the_command_tools_execute_and_are_irreversible() -> None:
    commands = commands_from("unsandboxed")
    tools = registry(commands)
    assert {tools[name].effect for name in ("shell", "python")} == {Effect.EXECUTE}
    assert tools["shell"].irreversible and tools["python"].irreversible
    assert commands.describe().startswith("WARNING: shell and python run UNSANDBOXED")


@pytest.mark.parametrize(
    ("mode", "bwrap", "reason"),
    [
        ("off", "bwrap", "AGENTSITE_SHELL is off"),
        (
            "sandbox",
            "/nonexistent/bwrap",
            "no sandbox: bubblewrap ('/nonexistent/bwrap') is not installed "
            "(Debian/Ubuntu: apt-get install bubblewrap)",
        ),
        (
            "chroot",
            "bwrap",
            "AGENTSITE_SHELL is 'chroot'; it must be one of sandbox, off, unsandboxed",
        ),
    ],
)
def test_without_a_sandbox_the_command_tools_are_not_offered_and_say_why(
    mode: str, bwrap: str, reason: str
) -> None:
    commands = commands_from(mode, bwrap)
    assert not commands.offered and commands.reason == reason
    assert commands.describe() == f"shell and python are not offered: {reason}"
    tools = registry(commands)
    assert "shell" not in tools and "python" not in tools
    assert set(tools) == set(ALL_TOOLS) - {"shell", "python"}


@pytest.mark.parametrize("name", ALL_TOOLS)
def test_each_spec_is_a_json_schema_object(name: str) -> None:
    tool = REGISTRY[name]
    spec = tool.spec()

    assert isinstance(tool, Tool)
    assert spec.name == name == tool.name
    assert spec.description == tool.description and spec.description.endswith(".")
    # The model is told which calls cannot be taken back.
    assert spec.description.endswith("Irreversible.") is tool.irreversible
    schema = spec.input_schema
    assert schema["type"] == "object"
    assert isinstance(schema["properties"], dict)
    assert "title" not in schema  # the model does not need pydantic's class name
    assert set(schema.get("required", [])) <= set(schema["properties"])


def test_the_specs_declare_each_tools_inputs() -> None:
    required = {name: REGISTRY[name].spec().input_schema.get("required", []) for name in ALL_TOOLS}
    assert required == {
        "calculator": ["expression"],
        "delete_file": ["path"],
        "fetch_url": ["url"],
        "http_post": ["url", "body"],
        "list_files": [],
        "python": ["code"],
        "read_file": ["path"],
        "send_email": ["to", "subject", "body"],
        "shell": ["command"],
        "write_file": ["path", "content"],
    }
    calculator = REGISTRY["calculator"].spec().input_schema["properties"]["expression"]
    assert calculator == {
        "description": "Arithmetic, e.g. '12 * (3 + 4)'.",
        "maxLength": 500,
        "title": "Expression",
        "type": "string",
    }
    content_type = REGISTRY["http_post"].spec().input_schema["properties"]["content_type"]
    assert content_type["default"] == "application/json"

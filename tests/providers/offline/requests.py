"""Requests for the offline model, built the way the prompts define the formats (HTML-escaped
blocks), and checks shared by its tests."""

from __future__ import annotations

import dataclasses
import html

from planner_ui.core import dag
from planner_ui.core.plan import Plan
from planner_ui.core.validation import parse_plan_json, validate_plan
from planner_ui.providers.base import ModelReply, ModelRequest, ToolResult
from planner_ui.providers.offline import OfflineProvider
from planner_ui.tools import REGISTRY

KNOWN_TOOLS = {"calculator", "read_file", "write_file", "list_files", "fetch_url", "send_email"}
PROVIDER = OfflineProvider()


# --- building requests -------------------------------------------------------------------------


def planner_request(task: str, tools: set[str] = KNOWN_TOOLS) -> ModelRequest:
    listing = "\n".join(f"{name}: {REGISTRY[name].description}" for name in sorted(tools))
    content = (
        f"<task>\n{html.escape(task, quote=False)}\n</task>\n\n"
        f"Tools the steps may be granted:\n<tools>\n{listing}\n</tools>"
    )
    return ModelRequest(
        system="You are the planner.",
        messages=[{"role": "user", "content": content}],
        purpose="planner",
    )


def plan_for(task: str, tools: set[str] = KNOWN_TOOLS, *, max_tokens: int = 8192) -> Plan:
    """The offline planner's plan for `task`, asked for as the planner asks (max_tokens)."""
    request = dataclasses.replace(planner_request(task, tools), max_tokens=max_tokens)
    reply = PROVIDER.complete(request)
    assert reply.stop_reason == "end_turn"
    assert reply.tool_calls == []
    return validate_plan(parse_plan_json(reply.text), known_tools=tools)


def output_block(step_id: str, title: str, text: str) -> str:
    return (
        f'<output step="{html.escape(step_id)}" title="{html.escape(title)}">\n'
        f"{html.escape(text, quote=False)}\n</output>"
    )


def executor_request(
    instruction: str,
    tools: list[str],
    context: list[tuple[str, str, str]] | None = None,
    role: str = "researcher",
) -> ModelRequest:
    content = f"<instruction>\n{html.escape(instruction, quote=False)}\n</instruction>"
    if context:
        blocks = "\n".join(output_block(*c) for c in context)
        content += f"\n\nOutputs of the steps this one depends on:\n<context>\n{blocks}\n</context>"
    return ModelRequest(
        system=f"You are a {role}.",
        messages=[{"role": "user", "content": content}],
        tools=[REGISTRY[name].spec() for name in tools],
        purpose=f"executor:{role}",
    )


def after_results(
    request: ModelRequest, reply: ModelReply, results: list[ToolResult]
) -> ModelRequest:
    messages = [
        *request.messages,
        {"role": "assistant", "content": reply.text, "tool_calls": list(reply.tool_calls)},
        {"role": "tool", "results": results},
    ]
    return ModelRequest(
        system=request.system, messages=messages, tools=request.tools, purpose=request.purpose
    )


def synthesizer_request(task: str, outputs: list[tuple[str, str, str]]) -> ModelRequest:
    blocks = "\n".join(output_block(*o) for o in outputs)
    task_text = html.escape(task, quote=False)
    content = f"<task>\n{task_text}\n</task>\n\nStep outputs, in plan order:\n{blocks}"
    return ModelRequest(
        system="You are the synthesizer.",
        messages=[{"role": "user", "content": content}],
        purpose="synthesizer",
    )


def assert_parallel(plan: Plan, ids: list[str]) -> None:
    """No step among `ids` depends, even indirectly, on another of them."""
    deps = plan.dependencies()
    for step_id in ids:
        overlap = dag.ancestors(deps, step_id) & set(ids)
        assert not overlap, f"{step_id} depends on {overlap}"


def steps_with(plan: Plan, tool: str) -> list[str]:
    return [s.id for s in plan.steps if tool in s.tools]


def run_tools(reply: ModelReply, outcomes: dict[str, tuple[str, bool]]) -> list[ToolResult]:
    return [ToolResult(c.id, *outcomes[c.name]) for c in reply.tool_calls]

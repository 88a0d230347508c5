"""The offline model end to end: a plan run with the real calculator and file tools in a temporary
workspace, and requests built by planner_ui.agents.prompts, which builds them for real."""

from __future__ import annotations

from pathlib import Path

from planner_ui.core.dag import ready_steps
from planner_ui.core.errors import ToolError
from planner_ui.core.validation import parse_plan_json, validate_plan
from planner_ui.providers.base import ModelRequest, ToolResult
from planner_ui.tools import REGISTRY, ToolContext

from .requests import (
    KNOWN_TOOLS,
    PROVIDER,
    after_results,
    executor_request,
    plan_for,
    synthesizer_request,
)

# --- end to end ---------------------------------------------------------------------------


def run_step(
    instruction: str,
    role: str,
    tools: list[str],
    context: list[tuple[str, str, str]],
    ctx: ToolContext,
) -> str:
    """A minimal executor loop with the real tools; fetch is faked (there is no network)."""
    request = executor_request(instruction, tools, context, role)
    reply = PROVIDER.complete(request)
    if reply.tool_calls:
        results = []
        for call in reply.tool_calls:
            assert call.name in tools
            if call.name == "fetch_url":
                results.append(
                    ToolResult(
                        call.id, f"HTTP 200 from {call.arguments['url']}\n\nQ3 revenue: 4.2M"
                    )
                )
                continue
            try:
                results.append(ToolResult(call.id, REGISTRY[call.name].call(call.arguments, ctx)))
            except ToolError as exc:
                results.append(ToolResult(call.id, str(exc), is_error=True))
        reply = PROVIDER.complete(after_results(request, reply, results))
    assert reply.stop_reason == "end_turn" and reply.text.strip()
    return reply.text


def test_a_plan_runs_end_to_end_with_real_tools(tmp_path: Path) -> None:
    task = (
        "Fetch https://example.com/q3.html, calculate 12*(3+4), then write a short report "
        "and save it to report.md"
    )
    plan = plan_for(task)
    deps = plan.dependencies()
    outputs: dict[str, str] = {}

    while len(outputs) < len(plan.steps):
        for step_id in ready_steps(deps, done=outputs):
            step = plan.step(step_id)
            context = [(d, plan.step(d).title, outputs[d]) for d in step.depends_on]
            ctx = ToolContext(run_id=1, step_id=step_id, workspace=tmp_path)
            outputs[step_id] = run_step(step.instruction, step.role, step.tools, context, ctx)
    final = PROVIDER.complete(
        synthesizer_request(task, [(s.id, s.title, outputs[s.id]) for s in plan.steps])
    ).text

    saved = (tmp_path / "report.md").read_text()
    assert "12*(3+4) = 84" in saved and "Q3 revenue: 4.2M" in saved
    assert "12*(3+4) = 84" in final and "Q3 revenue: 4.2M" in final
    assert "Saved report.md" in final


def test_requests_built_by_the_agents_prompts_are_understood() -> None:
    from planner_ui.agents import prompts

    tools = [REGISTRY[name].spec() for name in sorted(KNOWN_TOOLS)]
    plan_reply = PROVIDER.complete(
        ModelRequest(
            system=prompts.PLANNER_SYSTEM,
            messages=[
                {
                    "role": "user",
                    "content": prompts.planner_message("What is 12*(3+4) & why?", tools),
                }
            ],
            purpose="planner",
        )
    )
    plan = validate_plan(parse_plan_json(plan_reply.text), known_tools=KNOWN_TOOLS)
    step = plan.steps[0]
    exec_reply = PROVIDER.complete(
        ModelRequest(
            system=prompts.executor_system(step.role),
            messages=[
                {
                    "role": "user",
                    "content": prompts.executor_message(
                        step.instruction, [("x", "X & Y", "a < b")]
                    ),
                }
            ],
            tools=[REGISTRY[name].spec() for name in step.tools],
            purpose=f"executor:{step.role}",
        )
    )

    assert "12*(3+4) & why" in plan.goal
    assert [c.arguments for c in exec_reply.tool_calls] == [{"expression": "12*(3+4)"}]

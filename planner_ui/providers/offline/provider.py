"""The provider: one small class that plays the part `request.purpose` names."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Sequence

from planner_ui.core.messages import message_chars
from planner_ui.core.prompt_contract import (
    REPORT_FAILURE_TOOL,
    STEP_FAILED_MARKER,
    Block,
    raw_block,
    read_block,
    read_outputs,
)

from ..base import (
    ModelReply,
    ModelRequest,
    Provider,
    ProviderError,
    TextSink,
    ToolCall,
    Usage,
)
from .executing import ANSWERS, describe_call, planned_calls, researcher_answer, tool_rounds
from .judging import judge_answer
from .planning import PlanBuilder
from .request import (
    DEFAULT_MODEL,
    SECTION_BREAK,
    first_user_text,
    tool_names,
)
from .revising import revised_plan
from .synthesizing import deliverable

# --- the provider ---------------------------------------------------------------------------------


def _input_chars(request: ModelRequest) -> int:
    return len(request.system) + sum(message_chars(m) for m in request.messages)


def _stream_pieces(text: str, count: int = 8) -> list[str]:
    """The text cut into about `count` pieces at word boundaries, for simulated streaming."""
    words = re.split(r"(?<=\s)", text)
    size = max(1, math.ceil(len(words) / count))
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


class OfflineProvider(Provider):
    """Plans, executes and synthesizes from the structure of its input; no network, no chance."""

    name = "offline"

    def __init__(self, model: str = DEFAULT_MODEL, latency_s: float = 0.0) -> None:
        super().__init__(model)
        self.latency_s = latency_s

    def input_tokens(self, request: ModelRequest, *, counted: bool = False) -> int:
        return math.ceil(_input_chars(request) / 4)  # what its reply's usage will say

    def complete(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        reply = self._answer(request)
        # Simulated latency lets tests prove that parallel branches really overlap. With a
        # listener, the text is "written" across that time, as a streaming model would.
        if on_text is not None and reply.text:
            pieces = _stream_pieces(reply.text)
            started = time.monotonic()
            for n, piece in enumerate(pieces, 1):
                # On the model's own schedule, as a remote model streams: what the listener
                # spends on a piece overlaps the wait for the next instead of adding to the call.
                wait = started + self.latency_s * n / len(pieces) - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                on_text(piece)
        elif self.latency_s > 0:
            time.sleep(self.latency_s)
        return reply

    def _answer(self, request: ModelRequest) -> ModelReply:
        purpose = request.purpose
        if purpose == "planner":
            return self._reply(request, self._plan(request))
        if purpose == "synthesizer":
            return self._reply(request, self._synthesize(request))
        if purpose == "executor" or purpose.startswith("executor:"):
            return self._execute(request, purpose.partition(":")[2] or "researcher")
        if purpose == "judge":
            return self._reply(request, judge_answer(first_user_text(request, "judge")))
        raise ProviderError(
            f"offline provider: unknown purpose {purpose!r}; expected 'planner', "
            "'executor:<role>', 'synthesizer' or 'judge'"
        )

    def _plan(self, request: ModelRequest) -> str:
        # A repair request repeats the task in its first message; a fresh plan answers it.
        content = first_user_text(request, "planner")
        task = read_block(content, Block.TASK)
        if task is None:
            raise ProviderError("offline planner: the first message has no <task>…</task> block")
        if not task.strip():
            raise ProviderError("offline planner: the <task> block is empty")
        tools = tool_names(read_block(content, Block.TOOLS) or "")
        revision = (read_block(content, Block.REVISION_REQUEST) or "").strip()
        current = read_block(content, Block.CURRENT_PLAN)
        if revision and current is not None:
            # A note that asks for an action adds its steps to the current plan.
            revised = revised_plan(task, tools, current, revision)
            if revised is not None:
                return json.dumps(revised, ensure_ascii=False, indent=2)
        # Any other note is read as more of the task: 'and mate' adds a branch.
        if revision:
            joiner = " " if revision[:1].islower() or revision.lower().startswith("and ") else ". "
            task = task.strip().rstrip(".") + joiner + revision
        plan = PlanBuilder(task.strip(), tools).build()
        # Asked to re-plan after failures, it routes around them: the failed steps go, and
        # what depended on them does without their output.
        failed = set(re.findall(r'<failure step="([^"]+)"', content))
        if failed:
            plan["steps"] = [
                {**step, "depends_on": [d for d in step["depends_on"] if d not in failed]}
                for step in plan["steps"]
                if step["id"] not in failed
            ]
        return json.dumps(plan, ensure_ascii=False, indent=2)

    def _execute(self, request: ModelRequest, role: str) -> ModelReply:
        content = first_user_text(request, "executor")
        instruction = read_block(content, Block.INSTRUCTION)
        if instruction is None:
            raise ProviderError("offline executor: the first message has no <instruction> block")
        directive = SECTION_BREAK.split(instruction, maxsplit=1)[0].strip()
        # Parsed before unescaping, so an output quoting '</output>' cannot end its own block.
        outputs = read_outputs(raw_block(content, Block.CONTEXT) or "")
        answer = ANSWERS.get(role, researcher_answer)
        if len(request.messages) == 1 and request.tool_choice != "none":
            granted = {spec.name for spec in request.tools}
            planned = planned_calls(directive, outputs, granted)
            if planned:
                calls = [
                    ToolCall(f"call_{n}", name, arguments)
                    for n, (name, arguments) in enumerate(planned, start=1)
                ]
                text = "Using " + ", ".join(describe_call(c.name, c.arguments) for c in calls) + "."
                return self._reply(request, text, calls, "tool_use")
        # After one round of tool results (or none needed) the step finishes: never loop.
        used = tool_rounds(request.messages)
        if used and all(u.is_error for u in used):
            # Every tool it needed failed: nothing to build on, so it says it cannot proceed.
            reasons = "; ".join(u.line() for u in used)
            if any(spec.name == REPORT_FAILURE_TOOL for spec in request.tools):
                call = ToolCall("call_failure", REPORT_FAILURE_TOOL, {"reason": reasons[:500]})
                return self._reply(request, "", [call], "tool_use")
            return self._reply(request, f"{STEP_FAILED_MARKER} {reasons}")
        return self._reply(request, answer(directive, outputs, used))

    def _synthesize(self, request: ModelRequest) -> str:
        content = first_user_text(request, "synthesizer")
        task = read_block(content, Block.TASK)
        if task is None:
            raise ProviderError(
                "offline synthesizer: the first message has no <task>…</task> block"
            )
        return deliverable(task, read_outputs(content))

    def _reply(
        self,
        request: ModelRequest,
        text: str,
        calls: Sequence[ToolCall] = (),
        stop_reason: str = "end_turn",
    ) -> ModelReply:
        output_chars = len(text) + sum(
            len(json.dumps(c.arguments, ensure_ascii=False)) for c in calls
        )
        if math.ceil(output_chars / 4) > request.max_tokens:
            # As a vendor does: the answer stops where max_tokens does, a tool call with it.
            text, calls, stop_reason = text[: request.max_tokens * 4], (), "max_tokens"
            output_chars = len(text)
        return ModelReply(
            text=text,
            tool_calls=list(calls),
            stop_reason=stop_reason,
            usage=Usage(self.input_tokens(request), math.ceil(output_chars / 4)),
            model=self.model,
        )

"""The executor: a small tool-calling loop with a clean context per step."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from planner_ui.core.errors import ReplyCutOff, StepFailed, ToolError, ToolUnavailable
from planner_ui.core.events import EventType
from planner_ui.core.grants import tools_asked_for
from planner_ui.core.messages import (
    ModelReply,
    ModelRequest,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
)
from planner_ui.core.prompt_contract import (
    REPORT_FAILURE_TOOL,
    STEP_FAILED_MARKER,
    STEP_FAILED_PATTERN,
    echoes_scaffolding,
    unwrapped,
)
from planner_ui.core.text_calls import (
    TextCall,
    description_examples,
    echoed_example,
    is_call_shaped,
    recognise_calls,
)
from planner_ui.providers.base import Provider
from planner_ui.tools import REGISTRY, Tool, ToolContext
from planner_ui.tools.command import CommandTool

from .checkpoint import Checkpoint
from .prompts import executor_message, executor_system

# The callback receives (event type, payload); services persist and stream it.
EventSink = Callable[[str, dict[str, Any]], None]

MAX_TOOL_RESULT_CHARS = 20_000


class LiveText(Protocol):
    """Where the text of one model call goes while it is written (see services.streaming)."""

    def write(self, piece: str) -> None: ...

    def flush(self) -> None: ...


# Makes the LiveText of the n-th model call of a step.
LiveTextFactory = Callable[[int], LiveText]


@dataclass
class StepSpec:
    """What the executor is given of a step (its id as everywhere but the database row)."""

    id: str
    title: str
    instruction: str
    role: str
    tools: list[str]


@dataclass
class StepOutcome:
    output: str
    usage: Usage = field(default_factory=Usage)
    model_calls: int = 0
    tool_calls: int = 0
    # What is in doubt about a result that stands (said on the run, not failed).
    warnings: list[str] = field(default_factory=list)


# Offered to every step beside its granted tools: the structured way to give up, which a
# model cannot get subtly wrong the way it can misspell a text marker.
REPORT_FAILURE_SPEC = ToolSpec(
    name=REPORT_FAILURE_TOOL,
    description="Say that this step cannot be completed, and why (a tool error you cannot get "
    "past, a refused call you cannot work around). The plan is revised around it. Do not call "
    "it for a partial answer: give that as your reply.",
    input_schema={
        "type": "object",
        "properties": {"reason": {"type": "string", "maxLength": 500}},
        "required": ["reason"],
        "additionalProperties": False,
    },
)


def _reported_failure(call: ToolCall) -> StepFailed:
    reason = call.arguments.get("reason") if isinstance(call.arguments, dict) else None
    reason = str(reason or "").strip()[:500] or "no reason given"
    return StepFailed(f"the executor could not proceed: {reason}")


# A final answer that is not a result is asked for once more, saying why, then fails the step.
MAX_CORRECTIONS = 1
CORRECTION_OPENING = "Your last reply is not the step's result:"
# Empty blocks a small model copies from the prompt's layout before its answer ("<tools></tools>").
_EMPTY_TAGS = re.compile(r"^(?:\s*<(\w+)>\s*</\1>)+\s*")
# How long a reply may be and still be taken for a bare echo of a description's example: a
# long answer that mentions one is using it, not copying it.
_ECHO_MAX_CHARS = 300


def not_a_result(
    output: str,
    given: str,
    known: set[str],
    examples: Mapping[str, Sequence[str]],
    granted: Sequence[str],
) -> str:
    """Why a step's final answer is not a result, or "" when it may be one: the prompt's own
    blocks written back, a call to a tool the step cannot call written as text, or the example
    from a tool's description copied. (`given`: the instruction and context, as written.)"""
    if echoes_scaffolding(output, given):
        return (
            "it repeats the prompt's own <instruction>, <context> or <output> blocks instead of "
            "giving the step's result"
        )
    if is_call_shaped(output, known):
        names = recognise_calls(output, ()).foreign
        tools = ", ".join(granted) or "none"
        return (
            f"it is a call to {', '.join(dict.fromkeys(names))} written as text, and this step "
            f"has no such tool (its tools: {tools})"
        )
    if len(output) <= _ECHO_MAX_CHARS:
        for name, shown in examples.items():
            if example := echoed_example(output, shown, given):
                return (
                    f"it repeats {example!r}, the example from the {name} tool's description, "
                    "which this step was not asked about"
                )
    return ""


# Said in the system prompt of a step's last model call, when tools were used before it: a
# model that would call on (seen: Qwen2.5-Coder-1.5B repeating a call it had the answer to
# until the cap) answers from what it has, and the call is asked with tool_choice "none".
LAST_TURN_NOTE = (
    "This is your last reply for this step: you cannot call any more tools. Reply now with the "
    "step's result from the tool results you have, as Markdown; if they are not enough to "
    f"complete the step, reply with one line starting with '{STEP_FAILED_MARKER}' and the reason."
)


def correction(problem: str) -> str:
    """What the model is told when its answer was not a result."""
    return (
        f"{CORRECTION_OPENING} {problem}. If you need a tool, call it with the values this step "
        "needs; otherwise reply with the step's result itself, as Markdown, with no tags."
    )


# How the ask to use a named tool begins: a give-up that answers it is recognised by it.
UNUSED_OPENING = "This step's instruction says to use"


def unused_correction(unused: Sequence[str]) -> str:
    """What the model is told when it answered without the tools its instruction names. Not
    the general correction: "call a tool if you need one, otherwise reply with the result"
    leaves the answer it gave as good as any (seen: Qwen2.5-Coder-1.5B, seed 23, then
    giving up with "the instruction requires using the calculator, but I did not call it")."""
    named = " and ".join(unused)
    return (
        f"{UNUSED_OPENING} {named}, and you answered without calling it. Call {named} now with "
        "the values this step needs, and reply with the step's result from what it returns."
    )


def _unused_answer(state: Checkpoint) -> str:
    """The answer the step gave without the tools its instruction names, when the model was
    then asked to use them and has made no call since; else "". A model that gives up when
    asked (it names the missing call as the reason) leaves that answer standing with its
    warning, as one that answers again without a call does: the ask was ours, and it must not
    turn an answer into a failure."""
    asks = [
        at
        for at, m in enumerate(state.messages)
        if m.get("role") == "user" and str(m.get("content", "")).startswith(UNUSED_OPENING)
    ]
    if not asks or asks[-1] < 1:
        return ""
    since = [c for m in state.messages[asks[-1] :] for c in m.get("tool_calls") or []]
    if any(call.name != REPORT_FAILURE_TOOL for call in since):
        return ""
    return unwrapped(str(state.messages[asks[-1] - 1].get("content", "")).strip())


def _corrections(state: Checkpoint) -> int:
    openings = (CORRECTION_OPENING, UNUSED_OPENING)
    return sum(
        1
        for m in state.messages
        if m.get("role") == "user" and str(m.get("content", "")).startswith(openings)
    )


def _unused_warning(unused: Sequence[str], used_tools: bool) -> str:
    named = " or ".join(unused)
    if used_tools:
        # Other tools did their part: what is missing is this one's (a file not written).
        return (
            f"answered without calling {named}, which its instruction says to use: what it was "
            "to do with it is not done"
        )
    return (
        f"answered without {named}, which its instruction says to use: the result is the "
        "model's own, not the tool's"
    )


def _unused_outcome(output: str, state: Checkpoint, unused: Sequence[str]) -> StepOutcome:
    return StepOutcome(
        output,
        state.usage,
        state.model_calls,
        state.tool_calls,
        warnings=[_unused_warning(unused, state.tool_calls > 0)],
    )


def _called(state: Checkpoint) -> set[str]:
    """The tools the step has called so far (run, refused or failed: it tried them)."""
    return {call.name for m in state.messages for call in m.get("tool_calls") or []}


def _asked_to_call(state: Checkpoint) -> bool:
    """Whether the reply now due answers the ask to use the tools the instruction names."""
    last = state.messages[-1] if state.messages else {}
    return last.get("role") == "user" and str(last.get("content", "")).startswith(UNUSED_OPENING)


# The room of the reply to the ask to call a named tool, which is held to such a call where the
# server can hold it: a call, not an essay (with tool_choice "required" on llama.cpp's native
# calls, Qwen2.5-Coder-1.5B wrote past 1,300 tokens without closing its call).
ASKED_MAX_TOKENS = 1024


def _as_call(found: TextCall) -> ToolCall:
    """A call recognised in text, with an id of its own so its result can answer it."""
    return ToolCall(f"text_{uuid.uuid4().hex[:20]}", found.name, found.arguments, found.parse_error)


def _example_refusal(tool: str, example: str) -> str:
    return (
        f"{tool} was not run: its arguments repeat {example!r}, the example from the tool's "
        "description, which this step was not asked about. Call it with the values this step "
        "needs."
    )


def stop_reason_failure(stop_reason: str, text: str, who: str = "the model") -> str:
    """Why a reply with this stop reason cannot be used, or "" when it can."""
    if stop_reason == "refusal":
        quoted = text.strip()[:500]
        return f"{who} refused: {quoted}" if quoted else f"{who} refused"
    if stop_reason == "max_tokens":
        return f"{who}'s answer was cut off at its max_tokens limit"
    if stop_reason == "model_context_window_exceeded":
        return (
            f"{who} ran out of context window: the step's instruction, context and tool "
            "results are longer than the model can read"
        )
    return ""


class AwaitingApproval(Exception):  # noqa: N818 - a pause, not an error
    """Raised by a tool runner to stop before a call that needs a person's decision: the one
    the runner keeps under `decision_key`."""

    def __init__(self, call: ToolCall, decision_key: str) -> None:
        super().__init__(f"{call.name} is waiting for approval")
        self.call = call
        self.decision_key = decision_key


class StepPaused(Exception):  # noqa: N818 - a pause, not an error
    """The step stopped before a call that waits for the decision kept under `decision_key`;
    resume from `checkpoint`."""

    def __init__(self, checkpoint: Checkpoint, call: ToolCall, decision_key: str) -> None:
        super().__init__(f"paused before {call.name}")
        self.checkpoint = checkpoint
        self.call = call
        self.decision_key = decision_key


# Performs one granted, readable call and returns (content, is_error). It may raise
# AwaitingApproval. `iteration` numbers the model reply the call came from.
ToolRunner = Callable[[ToolCall, Tool, int], tuple[str, bool]]


def run_step(
    provider: Provider,
    step: StepSpec,
    context: Sequence[tuple[str, str, str]],
    tool_ctx: ToolContext,
    on_event: EventSink,
    *,
    max_iterations: int = 8,
    live_text: LiveTextFactory | None = None,
    run_tool: ToolRunner | None = None,
    checkpoint: Checkpoint | None = None,
    save: Callable[[Checkpoint], None] | None = None,
    tools: Mapping[str, Tool] | None = None,
) -> StepOutcome:
    """Run one step to its final answer; raise StepFailed with the reason otherwise.

    Only the step's granted tools are offered, and a call to any other tool is answered with
    an error result instead of being run: the grant is enforced here, not trusted to the model.
    With `checkpoint` the loop carries on from a saved state; `save` receives the state after
    every model reply and tool result. StepPaused means a call waits for a person.
    """
    available = REGISTRY if tools is None else tools
    granted = {name: available[name] for name in step.tools if name in available}
    perform = run_tool or _refusing_irreversible(tool_ctx)
    state = checkpoint or Checkpoint(
        messages=[{"role": "user", "content": executor_message(step.instruction, context)}]
    )
    # Any tool the run has counts when written as text, granted or not: an ungranted one is
    # refused below, as a native call to it is.
    known = {*available, REPORT_FAILURE_TOOL}
    # What the step was asked, as written: a value it names is the step's, never an echo.
    given = "\n".join([step.instruction, *(output for _, _, output in context)])
    specs = {name: tool.spec() for name, tool in granted.items()}
    examples = {
        name: description_examples(spec.description, spec.input_schema)
        for name, spec in specs.items()
    }
    # The granted tools the instruction says to use, by name or by what they do: an answer that
    # leaves one of them uncalled is asked again.
    named = tools_asked_for(step.instruction, list(granted))

    def unused() -> list[str]:
        called = _called(state)
        return [name for name in named if name not in called]

    def saved() -> None:
        if save is not None:
            save(state)

    while True:
        for call in state.pending_calls:
            if call.name == REPORT_FAILURE_TOOL and not call.parse_error:
                if answer := _unused_answer(state):
                    return _unused_outcome(answer, state, unused())
                raise _reported_failure(call)
            tool = granted.get(call.name)
            if call.parse_error:
                content, is_error = f"{call.name} was not run: {call.parse_error}", True
            elif tool is None:
                content = (
                    f"tool '{call.name}' is not granted to this step; "
                    f"granted tools: {', '.join(granted) or 'none'}"
                )
                is_error = True
            elif example := echoed_example(
                json.dumps(call.arguments, ensure_ascii=False), examples.get(call.name, ()), given
            ):
                content, is_error = _example_refusal(call.name, example), True
            elif _repeatable(tool) and (earlier := _just_answered(state, call)):
                content, is_error = _repeat_refusal(call.name, earlier), True
            elif _repeatable(tool) and (failed := _just_failed(state, call)):
                if (streak := _failure_streak(state, call)) >= MAX_SAME_FAILURES:
                    raise StepFailed(_stuck(call.name, streak + 1, _first_failure(state, call)))
                content, is_error = _failed_again(call.name, failed), True
            else:
                try:
                    content, is_error = perform(call, tool, state.iteration)
                except AwaitingApproval as awaiting:
                    raise StepPaused(state, call, awaiting.decision_key) from None
            if len(content) > MAX_TOOL_RESULT_CHARS:
                content = content[:MAX_TOOL_RESULT_CHARS] + "\n[truncated]"
            result = {"call_id": call.id, "tool": call.name, "content": content}
            on_event(
                EventType.STEP_TOOL_RESULT, {**result, "is_error": is_error, **_confined(tool)}
            )
            state.results.append(ToolResult(call.id, content, is_error))
            state.tool_calls += 1
            if state.pending_calls:
                saved()
            else:
                state.messages.append({"role": "tool", "results": state.results})
                state.results = []
                saved()

        capped = f"the step reached its cap of {max_iterations} model calls without a final answer"
        if state.iteration >= max_iterations:
            raise StepFailed(capped)
        state.iteration += 1
        # The last call of a step that has used tools must answer: a cap reached while the
        # results are in hand fails work that is done.
        last = max_iterations > 1 and state.iteration == max_iterations and state.tool_calls > 0
        # A model that made a refused repeat again is not let go on until its cap: it answers
        # now, from what it has, and keeps the turns left for what its answer may still lack.
        looping = not last and _repeats_refused(state) >= LOOP_REFUSALS
        live = live_text(state.iteration) if live_text is not None else None
        system = executor_system(step.role)
        note = LAST_TURN_NOTE if last else LOOP_NOTE if looping else ""
        asked = _asked_to_call(state)
        # The reply to the ask to use a named tool is held to a call of it where the route can
        # hold it (a grammar), with room for a call only. Not a tool a person must see: the ask
        # is ours, and such a call is the model's to choose.
        required = tuple(n for n in unused() if not granted[n].irreversible) if asked else ()
        request = ModelRequest(
            system=f"{system}\n\n{note}" if note else system,
            messages=list(state.messages),
            tools=[*specs.values(), REPORT_FAILURE_SPEC],
            purpose=f"executor:{step.role}",
            max_tokens=ASKED_MAX_TOKENS if required else ModelRequest.max_tokens,
            tool_choice="none" if last or looping else "auto",
            required_tools=required,
        )
        try:
            reply = _complete_with_room(
                provider, request, live.write if live is not None else None, state
            )
        except StepFailed:
            if live is not None:
                live.flush()
            # A call that did not fit the room the ask gave it: the ask was ours, and the
            # answer it asked about stands, with its warning.
            if asked and (answer := _unused_answer(state)):
                return _unused_outcome(answer, state, unused())
            raise
        except BaseException:
            if live is not None:
                live.flush()
            raise
        if reply.stop_reason in ("refusal", "model_context_window_exceeded"):
            raise StepFailed(stop_reason_failure(reply.stop_reason, reply.text))
        calls, text, in_text = list(reply.tool_calls), reply.text, False
        if not calls:
            # Small local models often write their call out instead of making it: run it as
            # the call it is, the same way (grant, schema, gates), and say so on the step.
            found = recognise_calls(reply.text, known)
            cut = reply.stop_reason == "max_tokens" and any(c.parse_error for c in found.calls)
            # A call cut off at the reply's limit is not run: the step fails as a cut-off
            # answer does (a native call cut off there is asked again with more room).
            if found.calls and not cut:
                calls, text, in_text = [_as_call(c) for c in found.calls], found.prose, True
        if last and calls:
            if live is not None:
                live.flush()
            raise StepFailed(capped)
        # The rest of a final answer's text is not sent: the step's output, a moment later,
        # is that text whole, and it ends the step's live text on every page.
        if live is not None and calls:
            live.flush()
        if not calls:
            if failure := stop_reason_failure(reply.stop_reason, reply.text):
                if asked and (answer := _unused_answer(state)):
                    return _unused_outcome(answer, state, unused())
                raise StepFailed(failure)
            output = unwrapped(reply.text.strip())
            if not output:
                raise StepFailed("the model finished without any output")
            bare = _EMPTY_TAGS.sub("", output)
            if marker := STEP_FAILED_PATTERN.match(bare):
                if answer := _unused_answer(state):
                    return _unused_outcome(answer, state, unused())
                reason = bare[marker.end() :].strip().partition("\n")[0].rstrip("*_` ")
                raise StepFailed(f"the executor could not proceed: {reason or 'no reason'}")
            problem = not_a_result(output, given, known, examples, list(granted))
            # Asked to use a tool and answered without calling it (seen: Qwen2.5-Coder-1.5B
            # writing 375.0, or 305.0, for "1500 * 0.2 + 75 with the calculator"; or calling
            # the calculator and never write_file, whose file the next step read): asked once
            # more; an answer that still leaves it uncalled stands, with a warning.
            missing = unused()
            if not problem and missing:
                if _corrections(state) >= MAX_CORRECTIONS or last:
                    return _unused_outcome(output, state, missing)
                state.messages += [
                    {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": unused_correction(missing)},
                ]
                saved()
                continue
            if not problem:
                return StepOutcome(output, state.usage, state.model_calls, state.tool_calls)
            if _corrections(state) >= MAX_CORRECTIONS or last:
                raise StepFailed(f"the executor's answer was not a result: {problem}")
            # Once more, told why: a small model often gets it right when it is told.
            state.messages += [
                {"role": "assistant", "content": reply.text},
                {"role": "user", "content": correction(problem)},
            ]
            saved()
            continue
        state.messages.append({"role": "assistant", "content": text, "tool_calls": calls})
        for call in calls:
            payload: dict[str, Any] = {
                "call_id": call.id,
                "tool": call.name,
                "arguments": call.arguments,
            }
            if in_text:
                payload["recognised_in_text"] = True
            on_event(EventType.STEP_TOOL_CALL, payload)
        saved()


def _complete_with_room(
    provider: Provider,
    request: ModelRequest,
    on_text: Callable[[str], None] | None,
    state: Checkpoint,
) -> ModelReply:
    """One model call, asked once more with twice the room when the reply ran into its
    max_tokens inside a tool call's arguments: a call cut off there cannot be run, and the
    same request would only be cut off again. Every attempt counts in the step's calls."""
    problem = ""
    for max_tokens in (request.max_tokens, request.max_tokens * 2):
        state.model_calls += 1
        try:
            reply = provider.complete(replace(request, max_tokens=max_tokens), on_text=on_text)
        except ReplyCutOff as exc:  # the server would not send the cut-off call at all
            problem = str(exc)
            continue
        state.usage = state.usage + reply.usage
        cut = [call.name for call in reply.tool_calls if call.parse_error]
        if reply.stop_reason != "max_tokens" or not cut:
            return reply
        problem = (
            f"the arguments of its call to {', '.join(cut)} were cut off at the reply's limit "
            f"of {max_tokens} tokens"
        )
    raise StepFailed(
        f"the model's tool call did not fit in its reply, with {request.max_tokens} tokens nor "
        f"with {request.max_tokens * 2}: {problem}. Ask for less in one call (a long file can "
        "be written in parts)."
    )


def _refusing_irreversible(ctx: ToolContext) -> ToolRunner:
    """The runner when the caller brings no gate: safe by default, it never acts on the world."""

    def run_call(call: ToolCall, tool: Tool, iteration: int) -> tuple[str, bool]:
        if tool.irreversible:
            return (
                f"{tool.name} is irreversible ({tool.effect}) and no approval gate is in place "
                "here, so the call was not made. Finish the step without it and say what you "
                "would have done.",
                True,
            )
        return call_tool(tool, call.arguments, ctx)

    return run_call


def _last_result(state: Checkpoint, call: ToolCall, turns_back: int = 1) -> ToolResult | None:
    """The result of the same call (tool and arguments) `turns_back` turns before this one, if
    every turn since made tool calls (a correction in between breaks the chain)."""
    at = len(state.messages) - 1 - 2 * turns_back  # the assistant turn of that call
    if at < 1:
        return None
    for turn in range(at + 1, len(state.messages) - 1, 2):
        if state.messages[turn].get("role") != "tool":
            return None
    previous = state.messages[at].get("tool_calls") or []
    results = {r.tool_call_id: r for r in state.messages[at + 1].get("results", [])}
    for earlier in previous:
        if (earlier.name, earlier.arguments) == (call.name, call.arguments):
            return results.get(earlier.id)
    return None


# How many turns in a row a read may fail with the same arguments (the second time it is not
# made, and the model is told why) before a third try ends the step with the tool's error.
MAX_SAME_FAILURES = 2


def _failure_streak(state: Checkpoint, call: ToolCall) -> int:
    """In how many turns right before this one the same call was made and failed."""
    streak = 0
    while (result := _last_result(state, call, streak + 1)) is not None and result.is_error:
        streak += 1
    return streak


def _first_failure(state: Checkpoint, call: ToolCall) -> str:
    """The tool's own error that began the streak (the turns after it were refusals)."""
    result = _last_result(state, call, _failure_streak(state, call))
    return result.content if result is not None else ""


def _stuck(name: str, times: int, error: str) -> str:
    """A step that keeps making a call that cannot succeed fails at once, saying so: re-planning
    can route around a missing file, the step's remaining model calls cannot."""
    return (
        f"the executor called {name} with the same arguments {times} times in a row, and it "
        f"failed: {error.strip()[:300]}"
    )


def _just_answered(state: Checkpoint, call: ToolCall) -> str:
    """The result of the same call in the step's previous turn, or "". A small model may call
    a tool again and again with what it already has (seen: eight identical calculator calls
    from Qwen2.5-Coder-1.5B until the step's cap). Turns in between that were refused as such
    a repeat are looked through: a third identical call is a repeat of a result, not a call
    that keeps failing (seen: seed 42 of the opt-in run, whose step was then failed saying the
    calculator "failed" three times, with 375 in hand)."""
    turns_back = 1
    while (result := _last_result(state, call, turns_back)) is not None and _refused_repeat(
        call.name, result
    ):
        turns_back += 1
    return result.content if result is not None and not result.is_error else ""


def _refused_repeat(name: str, result: ToolResult) -> bool:
    return result.is_error and result.content.startswith(f"{name} {_REPEATED}")


# How many tool turns in a row may hold only calls refused as repeats before the next reply is
# held to an answer: the model was told once to use the result it has, and did not.
LOOP_REFUSALS = 2
LOOP_NOTE = (
    "You have made the same call again after being told you have its result: you cannot call "
    "tools in this reply. Reply now with the step's result from the tool results you have, as "
    f"Markdown; if they are not enough to complete the step, reply with one line starting with "
    f"'{STEP_FAILED_MARKER}' and the reason."
)


def _repeats_refused(state: Checkpoint) -> int:
    """In how many tool turns in a row, up to now, every call was refused as a repeat (seen:
    Qwen2.5-Coder-1.5B calling the calculator again after each refusal until its last turn, on
    seed 42 of the opt-in run, with a file still to write)."""
    turns = 0
    at = len(state.messages) - 1
    while at >= 1 and state.messages[at].get("role") == "tool":
        calls = {c.id: c.name for c in state.messages[at - 1].get("tool_calls") or []}
        results = state.messages[at].get("results") or []
        refused = [r for r in results if _refused_repeat(calls.get(r.tool_call_id, ""), r)]
        if not results or len(refused) < len(results):
            break
        turns += 1
        at -= 2
    return turns


_REPEATED = "was not run again: this step called it with the same arguments in its last turn"


def _repeatable(tool: Tool) -> bool:
    """Whether the same call made again right after gives nothing new, so it is answered with
    its earlier result instead of being made: a read, and a write inside the run's workspace
    (seen: Qwen2.5-Coder-1.5B writing the same output.txt seven times, until its last turn, on
    seed 99 of the opt-in run). Calls that act on the world go through the gate and its
    outbox, which keep their own record of what was done."""
    return not tool.irreversible


def _just_failed(state: Checkpoint, call: ToolCall) -> str:
    """The error of the same call in the step's previous turn, or "" (seen: Qwen2.5-Coder-1.5B
    asking read_file for a file that is not there six times over)."""
    result = _last_result(state, call)
    return result.content if result is not None and result.is_error else ""


def _failed_again(name: str, error: str) -> str:
    return (
        f"{name} was not run again: this step made the same call in its last turn, and it "
        f"failed:\n{error}\nThe same arguments fail the same way. Change them, use another "
        f"tool, or call {REPORT_FAILURE_TOOL} with the reason."
    )


def _repeat_refusal(name: str, earlier: str) -> str:
    return (
        f"{name} {_REPEATED}, and its result was:\n{earlier}\nUse that result: reply with the "
        "step's result now, or make a different call."
    )


def _confined(tool: Tool | None) -> dict[str, bool]:
    """For a command tool's result, whether the command ran in a sandbox (the step card says)."""
    return {"sandboxed": tool.sandboxed} if isinstance(tool, CommandTool) else {}


def call_tool(tool: Tool, arguments: Any, ctx: ToolContext) -> tuple[str, bool]:
    """Perform a call and return (content, is_error); a tool's failure is a result, not a crash."""
    try:
        return tool.call(arguments, ctx), False
    except ToolError as exc:
        return str(exc), True
    except ToolUnavailable:
        raise  # the tool's server cannot be reached: the step fails, saying why
    except Exception as exc:  # a tool's own bug must not crash the step
        return f"{tool.name} failed: {type(exc).__name__}: {exc}", True

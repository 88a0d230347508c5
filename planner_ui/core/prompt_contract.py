"""The shape of what the agents send a model: the named blocks that carry a task, tools,
instructions and the outputs of earlier steps, written here and read here.

agents.prompts writes requests with these; the offline model reads them with these; so the two
cannot drift apart. A block's content is HTML-escaped, so a step's output cannot close its own
block and pose as one of ours.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from enum import StrEnum


class Block(StrEnum):
    TASK = "task"
    TOOLS = "tools"
    INSTRUCTION = "instruction"
    CONTEXT = "context"
    CURRENT_PLAN = "current_plan"
    REVISION_REQUEST = "revision_request"
    OUTPUTS = "outputs"
    FAILURES = "failures"
    # What an evaluation's judge holds a deliverable to (the suite's author wrote it).
    RUBRIC = "rubric"
    # What an MCP server says of its own tools: the planner's list of them, and one tool's.
    TOOL_DESCRIPTIONS = "tool_descriptions"
    TOOL_DESCRIPTION = "tool_description"
    # Plans that worked for similar tasks before (the plan library, the person's past runs),
    # given to the planner as examples: one past_plan block each, inside past_plans.
    PAST_PLANS = "past_plans"
    PAST_PLAN = "past_plan"


# A reply whose first line starts with this marks the step failed, so the plan is revised.
STEP_FAILED_MARKER = "STEP FAILED:"
# The structured way to say it: a tool every executor is offered, whatever its grants.
REPORT_FAILURE_TOOL = "report_failure"
# A reply that starts like the marker in any case, bolded or quoted ("Step failed: …",
# "**STEP FAILED:** …"): real models do not keep to the exact spelling.
STEP_FAILED_PATTERN = re.compile(r"^[\s>*_`#]*step\s+failed\s*[*_`]*\s*:[*_`]*\s*", re.IGNORECASE)


# Our own wrappers, as a model that echoes its prompt writes them back: an output block's
# opening (it has attributes no answer would give it), or a block opened and closed.
_OUTPUT_OPENING = re.compile(r"<output step=", re.IGNORECASE)
_BLOCK_TAG = re.compile(r"<(/?)(" + "|".join(b.value for b in Block) + r")>", re.IGNORECASE)


def echoes_scaffolding(text: str, task: str = "") -> bool:
    """Whether a reply repeats the prompt's own blocks (a small model may hand the prompt
    back as its answer). A tag the task itself holds (a task about markup) is no sign, and
    neither is one tag alone: a deliverable may well mention `</output>` or `<context>`."""
    quoted = task.lower()
    if _OUTPUT_OPENING.search(text) and "<output step=" not in quoted:
        return True
    opened: set[str] = set()
    closed: set[str] = set()
    for slash, name in _BLOCK_TAG.findall(text):
        name = name.lower()
        if f"<{slash}{name}>" not in quoted:
            (closed if slash else opened).add(name)
    return bool(opened & closed)


# A whole reply wrapped in one of our blocks, as small models format an answer after the
# prompt's layout ("<output>375.0</output>"): the answer is what is inside. Only a bare tag: an
# output block with its step's attributes is another step's output copied (echoes_scaffolding).
_OUR_TAGS = "|".join(["output", *(b.value for b in Block)])
_WRAPPED = re.compile(rf"^\s*<({_OUR_TAGS})>(.*)</\1>\s*$", re.IGNORECASE | re.DOTALL)
_ANY_OF_OUR_TAGS = re.compile(rf"</?(?:{_OUR_TAGS})\b", re.IGNORECASE)


def unwrapped(text: str) -> str:
    """`text` without one of our blocks wrapped around all of it, or as it is. Only a wrapping:
    an answer that holds a block among other text is left for echoes_scaffolding to judge."""
    match = _WRAPPED.match(text)
    if match is None or not match.group(2).strip() or _ANY_OF_OUR_TAGS.search(match.group(2)):
        return text
    return html.unescape(match.group(2).strip())


def block(tag: Block, content: str) -> str:
    """`content`, escaped, inside <tag>…</tag> on lines of their own."""
    return f"<{tag}>\n{html.escape(content, quote=False)}\n</{tag}>"


def output_block(step_id: str, title: str, output: str) -> str:
    return (
        f'<output step="{html.escape(step_id)}" title="{html.escape(title)}">\n'
        f"{html.escape(output, quote=False)}\n</output>"
    )


def failure_block(step_id: str, title: str, error: str) -> str:
    return (
        f'<failure step="{html.escape(step_id)}" title="{html.escape(title)}">\n'
        f"{html.escape(error, quote=False)}\n</failure>"
    )


def tool_description_block(tool: str, text: str) -> str:
    """One tool's description as its server wrote it, escaped: data, never ours."""
    return (
        f'<{Block.TOOL_DESCRIPTION} tool="{html.escape(tool)}">\n'
        f"{html.escape(text, quote=False)}\n</{Block.TOOL_DESCRIPTION}>"
    )


def past_plan_block(source: str, task: str, plan_json: str) -> str:
    """A past plan and the task it was made for, escaped: an example, data like the rest."""
    body = f"Task: {task}\nPlan: {plan_json}"
    return (
        f'<{Block.PAST_PLAN} source="{html.escape(source)}">\n'
        f"{html.escape(body, quote=False)}\n</{Block.PAST_PLAN}>"
    )


def raw_block(text: str, tag: Block) -> str | None:
    """What is between <tag> and </tag>, as written (still escaped); None without the block."""
    match = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.S)
    return match.group(1) if match else None


def read_block(text: str, tag: Block) -> str | None:
    """The content of the block, unescaped and stripped; None without the block."""
    raw = raw_block(text, tag)
    return html.unescape(raw).strip() if raw is not None else None


@dataclass(frozen=True)
class Output:
    step_id: str
    title: str
    text: str


_OUTPUT = re.compile(r'<output step="([^"]*)" title="([^"]*)">(.*?)</output>', re.S)


def read_outputs(text: str) -> list[Output]:
    """Every <output> block in `text`, unescaped, in order."""
    return [
        Output(html.unescape(step), html.unescape(title), html.unescape(body).strip())
        for step, title, body in _OUTPUT.findall(text)
    ]

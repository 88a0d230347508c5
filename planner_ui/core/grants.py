"""Whether each step of a plan is granted the tools its own instruction names: a small model's
planner has written "Read the calculator's result" and granted read_file, and the executor,
without the calculator, looped until its cap."""

from __future__ import annotations

import re
from collections.abc import Collection

from .plan import Plan


def _mention(name: str) -> re.Pattern[str]:
    """How an instruction names a tool. A name with an underscore (read_file) is a tool's
    wherever it stands; a plain word (calculator, python, shell) only as "the calculator" or
    "calculator tool", so "Compare Python and Go" names no tool."""
    spelled = re.escape(name).replace("_", "[ _]")
    if "_" in name:
        return re.compile(rf"\b{spelled}\b", re.IGNORECASE)
    # In quotes too, as small models' plans write it ("Use the 'calculator' tool", seed 7).
    quoted = f"['\"`]?{spelled}['\"`]?"
    return re.compile(rf"\bthe {quoted}(?!\w)|(?<!\w){quoted} tool\b", re.IGNORECASE)


def _read_as_file(name: str) -> re.Pattern[str]:
    """An instruction that reads a tool as if it were a file or a text ("Use the 'read_file'
    tool to read the calculator from the run's workspace", Qwen2.5-Coder-1.5B's first step for
    "Compute … with the calculator"): a reading verb with the tool as its object."""
    verb = r"\b(?:read|open|load)(?:s|ing)?\s+(?:from\s+)?"
    return re.compile(verb + f"(?:{_mention(name).pattern})", re.IGNORECASE)


def named_tools(text: str, names: Collection[str]) -> list[str]:
    """The tools among `names` that `text` names, in the order of `names`."""
    return [name for name in names if _mention(name).search(text)]


# A file named by the instruction ("result.txt", "report.md"): a name of two characters or more
# and an extension that starts with a letter, so "0.2" and "e.g." are none.
_FILE_NAME = r"[\w-]{2,}\.[A-Za-z][A-Za-z0-9]{0,4}\b"
# What an instruction says when it asks for a tool by what it does rather than by its name.
_ASKS_FOR = {
    # "Save the result as a file named 'result.txt'" (seed 42 of the opt-in run: the step
    # answered 375 without writing it, and the next step's read of result.txt failed).
    "write_file": re.compile(
        r"\b(?:save|write|store)[sd]?\b[^\n]{0,60}?(?:\bfiles?\b|" + _FILE_NAME + ")",
        re.IGNORECASE,
    ),
}


def tools_asked_for(text: str, names: Collection[str]) -> list[str]:
    """The tools among `names` that `text` asks to use: by name (named_tools), or by what they
    do ("save it to result.txt" asks for write_file), in the order of `names`."""
    by_name = set(named_tools(text, names))
    return [
        name
        for name in names
        if name in by_name or (name in _ASKS_FOR and _ASKS_FOR[name].search(text))
    ]


def ungranted_mentions(plan: Plan, offered: Collection[str], task: str = "") -> list[str]:
    """One line per step whose instruction names an offered tool the step is not granted, and
    one per tool the task itself names that no step is granted ("Compute it with the
    calculator", planned as a step that writes a number it made up)."""
    patterns = {name: _mention(name) for name in sorted(offered)}
    granted_anywhere = {tool for step in plan.steps for tool in step.tools}
    # The step's instruction must say so too: the executor sees only that (seen on seed 42 of
    # the opt-in run: granted the calculator, "evaluate the arithmetic expression" answered
    # 300.5 without it, and no ask to use it, since its instruction named no tool).
    problems = [
        f"the task says to use {name}, but no step is granted it: grant it to the step that "
        f"does that part of the task, and say in that step's instruction to use the {name} tool"
        for name, pattern in patterns.items()
        if name not in granted_anywhere and pattern.search(task)
    ]
    for step in plan.steps:
        named = [
            name
            for name, pattern in patterns.items()
            if name not in step.tools and pattern.search(step.instruction)
        ]
        granted = ", ".join(step.tools) or "none"
        # Said as it is: "says to use the calculator" did not move that planner, which gave
        # the same plan back; a tool read as a file is a step that cannot do anything.
        read = [name for name in named if _read_as_file(name).search(step.instruction)]
        if read:
            tools = " and ".join(read)
            problems.append(
                f"step '{step.id}' would read {tools} as if it were a file, but {tools} is a "
                f"tool, not a file in the workspace: a step uses a tool by being granted it and "
                f"calling it (its tools: {granted}). Grant it the tool to call, or remove the "
                "step and its id from the other steps' depends_on"
            )
        if others := [name for name in named if name not in read]:
            problems.append(
                f"step '{step.id}' says to use {', '.join(others)} in its instruction but is not "
                f"granted it (its tools: {granted})"
            )
    return problems


def new_held_grants(plan: Plan, replacing: Plan, held: Collection[str], task: str) -> list[str]:
    """One line per step of a revision granted a tool a person must see (it acts on the world,
    or reaches a host) that neither the task names nor the plan being replaced grants: a
    re-plan that reaches for one routes around a failure by asking a person (seen: seed 7 of
    the opt-in run, whose step that read "the calculator" from a file failed, and whose
    re-plan granted http_post to "install the calculator", and so waited for someone)."""
    before = {tool for step in replacing.steps for tool in step.tools}
    problems = []
    for step in plan.steps:
        new = [
            name
            for name in step.tools
            if name in held and name not in before and not _mention(name).search(task)
        ]
        if new:
            tools = " and ".join(new)
            problems.append(
                f"step '{step.id}' is granted {tools}, which a person must approve before the "
                "run goes on, and which neither the task nor the current plan uses: route "
                "around what failed with the tools the task needs, and grant "
                f"{tools} only if the task cannot be done without it"
            )
    return problems

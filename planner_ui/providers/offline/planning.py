"""Planning: turning the reading of a task into a plan of focused steps."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from planner_ui.core.plan import MAX_INSTRUCTION_CHARS, MAX_STEPS

from .detect import EMAIL_INTENT, emails, expressions_in, file_mentions, needed_tools
from .parallel import Parallel, parallel_parts
from .reading import (
    Reading,
    clauses_of,
    comparison_of,
    enumeration_of,
    is_action,
    strip_markers,
    verb_list,
)
from .request import (
    EFFECT_TOOLS,
    MAX_BACKGROUND_CHARS,
    MAX_CONTEXT_CHARS,
    MAX_DIRECTIVE_CHARS,
    MAX_INPUTS_CHARS,
)
from .words import (
    REFERS_BACK,
    collapse,
    excerpt,
    joined,
    role_for,
    sentence,
    slug_of,
    title_of,
    unique_id,
)

# --- building a plan ------------------------------------------------------------------------------


@dataclass
class _Draft:
    title: str
    directive: str
    role: str
    tools: list[str]
    depends_on: list[int] = field(default_factory=list)
    slug: str = ""


class PlanBuilder:
    """Turns a task into drafts (dependencies by index), then into a plan dict."""

    def __init__(self, task: str, available: Sequence[str]) -> None:
        self.task = task
        self.available = list(available)
        self.drafts: list[_Draft] = []
        self.background = ""

    # Tools -----------------------------------------------------------------------------------

    def grant(self, text: str, only: Iterable[str] | None = None) -> list[str]:
        allowed = set(self.available if only is None else only) & set(self.available)
        return [name for name in needed_tools(text) if name in allowed]

    def complete_data(self, directive: str) -> str:
        """Give a step the concrete data its effect needs when the task gave it elsewhere."""
        needed = needed_tools(directive)
        if EMAIL_INTENT.search(directive) and not emails(directive):
            addresses = emails(self.task)
            if addresses and re.search(r"\b(?:e-?mail|mail|send)\b", directive, re.I):
                directive = sentence(directive) + f" Send it to {addresses[0]}."
        if "write_file" in needed and not any(i == "write" for _, i in file_mentions(directive)):
            written = [path for path, intent in file_mentions(self.task) if intent == "write"]
            name = written[0] if written else slug_of(self.task, 3) + ".md"
            directive = sentence(directive) + f" Save it to {name}."
        return directive

    # Steps -----------------------------------------------------------------------------------

    def add(
        self,
        title: str,
        directive: str,
        role: str,
        tools: list[str],
        depends_on: Iterable[int] = (),
        slug: str = "",
    ) -> int:
        self.drafts.append(
            _Draft(title_of(title), sentence(directive), role, tools, list(depends_on), slug)
        )
        return len(self.drafts) - 1

    def add_clause(self, clause: str, depends_on: Iterable[int] = ()) -> int:
        directive = self.complete_data(clause)
        return self.add(clause, directive, role_for(clause), self.grant(directive), depends_on)

    def add_join(self, depends_on: list[int], goal: str = "", extra: str = "") -> int:
        titles = [self.drafts[i].title for i in depends_on]
        directive = (
            f"Combine the results of {joined([f'“{t}”' for t in titles])} into one clear, "
            "well-structured answer"
        )
        directive += f" to: {goal.rstrip('.:')}." if goal else "."
        if extra:
            directive += " " + sentence(self.complete_data(extra))
        tools = self.grant(extra, only=EFFECT_TOOLS) if extra else []
        return self.add(
            "Write the combined report", directive, "writer", tools, depends_on, "write-report"
        )

    def expand_clause(self, clause: str, depends_on: list[int]) -> list[int]:
        """Add a clause's steps: a comparison or a list fans out; returns the new frontier."""
        if comparison := comparison_of(clause):
            sides, qualifier, label = comparison
            research = [
                self.add(
                    f"Research {side}",
                    f"Research {side}{qualifier}: the key facts and figures, strengths and "
                    f"weaknesses, as one side of a comparison of {label}",
                    "researcher",
                    self.grant(side),
                    depends_on,
                    "research-" + slug_of(side, 3),
                )
                for side in sides
            ]
            compare = self.add(
                f"Compare {label}",
                f"Compare {label}{qualifier} point by point, using the research on "
                f"each: where each is stronger, where they differ, and which fits better. "
                f"The request was: “{excerpt(clause, 300)}”",
                "critic",
                [],
                research,
                "compare",
            )
            return [compare]
        if listed := verb_list(clause):
            verb, items = listed
            verb = verb[:1].upper() + verb[1:].lower()
            return [
                self.add(
                    f"{verb} {item}",
                    self.complete_data(f"{verb} {item}"),
                    role_for(f"{verb} {item}"),
                    self.grant(f"{verb} {item}"),
                    depends_on,
                    slug_of(f"{verb} {item}", 4),
                )
                for item in items
            ]
        return [self.add_clause(clause, depends_on)]

    # Shapes ----------------------------------------------------------------------------------

    def single(self, clause: str) -> None:
        """One action: fan out if it is a comparison or a list, and end with a writer."""
        if comparison_of(clause):
            frontier = self.expand_clause(clause, [])
            _, qualifier, label = comparison_of(clause) or ([], "", "")
            self.add(
                "Write the comparison",
                self.complete_data(
                    f"Write the final comparison of {label}{qualifier} for the reader: "
                    "a short overview, the key differences and a recommendation, based on the "
                    "assessment"
                ),
                "writer",
                self.grant(clause, only=EFFECT_TOOLS),
                frontier,
                "write-comparison",
            )
            return
        if verb_list(clause):
            frontier = self.expand_clause(clause, [])
            self.add_join(frontier, clause)
            return
        role, tools = role_for(clause), self.grant(self.complete_data(clause))
        gather = [t for t in tools if t not in EFFECT_TOOLS]
        effects = [t for t in tools if t in EFFECT_TOOLS]
        if role == "writer":
            # The piece comes last; what it needs is gathered first, by a step of its own.
            first = self.add(
                "Gather the material",
                f"Gather the facts, figures and results needed for this task, and report them "
                f"plainly without writing the final piece: {clause}",
                "coder" if expressions_in(clause) else "researcher",
                gather,
                slug="gather-material",
            )
            self.add(clause, self.complete_data(clause), "writer", effects, [first])
            return
        first = self.add(clause, clause, role, gather)
        self.add(
            "Write the answer",
            self.complete_data(
                f"Write the final answer for the reader from the previous step's result. "
                f"The task was: {clause}"
            ),
            "writer",
            effects,
            [first],
            "write-answer",
        )

    def chain(self, reading: Reading) -> None:
        """Actions in stages: side-by-side actions share a stage, and each stage waits for all
        the steps of the stage before it."""
        waits_for: list[int] = []
        stage: list[int] = []
        for number, clause in enumerate(reading.actions):
            if number not in reading.alongside:
                waits_for, stage = stage, []
            stage += self.expand_clause(clause, waits_for)
        if len(stage) > 1:
            self.add_join(stage, self.task_sentence())

    def enumeration(self, items: list[str], before: str, after: str) -> None:
        intro = clauses_of(before).actions if before else []
        effects = [c for c in intro if set(needed_tools(c)) & EFFECT_TOOLS]
        gathering = [c for c in intro if c not in effects]
        roles = [role_for(strip_markers(item)) for item in items]
        tails: list[int] = []
        frontier: list[int] = []
        for number, item in enumerate(items):
            # A closing piece of writing ('3. Draft the invitation') uses what the items before
            # it found, unless every item is a piece of writing of its own.
            closes = (
                number == len(items) - 1
                and roles[number] == "writer"
                and any(role != "writer" for role in roles[:-1])
            )
            refers_back = number > 0 and (closes or bool(REFERS_BACK.search(item)))
            depends_on = list(frontier) if refers_back else []
            clauses = clauses_of(item).actions
            if gathering and not is_action(strip_markers(item)):
                # A bare item ('- Paris') takes its verb from the text before the list.
                action = re.sub(r"^(?:for\s+(?:each|every|all)\b[^,]*,\s*)", "", gathering[-1])
                clauses = [f"{action.rstrip(':')}: {strip_markers(item)}"]
            for clause in clauses or [item]:
                depends_on = [self.add_clause(clause, depends_on)]
            tails.append(depends_on[0])
            frontier = depends_on if refers_back else frontier + depends_on
        extra = " ".join(effects + ([after] if after else []))
        if len(frontier) > 1 or extra:
            self.add_join(tails, gathering[-1] if gathering else "", extra)

    def batched_enumeration(self, items: list[str]) -> None:
        """More items than steps allowed: each step takes a batch of items."""
        size = math.ceil(len(items) / (MAX_STEPS - 1))
        tails: list[int] = []
        for start in range(0, len(items), size):
            batch = items[start : start + size]
            refers_back = bool(tails) and any(REFERS_BACK.search(item) for item in batch)
            directive = "Do each of these: " + " ".join(
                f"({start + n + 1}) {item.rstrip('.')}." for n, item in enumerate(batch)
            )
            tails.append(
                self.add(
                    f"Items {start + 1}–{start + len(batch)}",
                    directive,
                    role_for(" ".join(batch)),
                    self.grant(" ".join(batch)),
                    tails[-1:] if refers_back else [],
                    f"items-{start + 1}-{start + len(batch)}",
                )
            )
        self.add_join(tails, self.task_sentence())

    def task_sentence(self) -> str:
        return excerpt(strip_markers(self.task), 300)

    # Output ----------------------------------------------------------------------------------

    def parallel(self, found: Parallel) -> None:
        """Independent parts the task spelled out, side by side, and a step that joins them."""
        tails = []
        for part in found.parts:
            directive = self.complete_data(part.directive)
            role, tools = role_for(part.directive), self.grant(directive)
            tails.append(self.add(part.title, directive, role, tools))
        self.add_join(tails, found.join_goal)

    def build(self) -> dict[str, Any]:
        if (found := parallel_parts(self.task)) is not None:
            self.parallel(found)
            return self.render()
        items, before, after = enumeration_of(self.task)
        if len(items) >= 2:
            self.enumeration(items, before, after)
            if len(self.drafts) > MAX_STEPS:
                self.drafts = []
                self.batched_enumeration(items)
        else:
            reading = clauses_of(self.task)
            clauses = reading.actions
            self.background = excerpt(" ".join(reading.background), MAX_BACKGROUND_CHARS)
            if len(clauses) == 1:
                self.single(clauses[0])
            else:
                self.chain(reading)
                if len(self.drafts) > MAX_STEPS:
                    self.drafts = []
                    size = math.ceil(len(clauses) / MAX_STEPS)
                    merged = [
                        "; then ".join(clauses[i : i + size]) for i in range(0, len(clauses), size)
                    ]
                    frontier: list[int] = []
                    for clause in merged:
                        frontier = [self.add_clause(clause, frontier)]
        return self.render()

    def render(self) -> dict[str, Any]:
        used: set[str] = set()
        ids = [unique_id(d.slug or slug_of(d.title), used) for d in self.drafts]
        task = excerpt(self.task, MAX_CONTEXT_CHARS)
        steps = []
        for draft, step_id in zip(self.drafts, ids, strict=True):
            instruction = excerpt_keep_lines(draft.directive, MAX_DIRECTIVE_CHARS)
            if draft.depends_on:
                # 'Summarize it' is only self-contained once it says what 'it' is.
                sources = joined([f"“{self.drafts[i].title}”" for i in draft.depends_on])
                instruction += "\n\n" + excerpt(
                    f"Inputs: work from the output of {sources}.", MAX_INPUTS_CHARS
                )
            if self.background and task != collapse(self.task):
                # Only when the quoted task below is cut short and might lose it.
                instruction += f"\n\nBackground: {self.background}"
            instruction += f"\n\nContext: this step is one part of the task “{task}”."
            # A last guard: the capped parts above add up to about 3800 characters.
            instruction = instruction[:MAX_INSTRUCTION_CHARS]
            steps.append(
                {
                    "id": step_id,
                    "title": draft.title,
                    "instruction": instruction,
                    "role": draft.role,
                    "tools": draft.tools,
                    "depends_on": [ids[i] for i in draft.depends_on],
                }
            )
        return {"goal": excerpt(self.task, 200), "steps": steps}


def excerpt_keep_lines(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"

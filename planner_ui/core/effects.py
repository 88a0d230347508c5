"""What a tool call does to the world, and what a run's policy says to do about it.

Gating derives from these tags and the policy, never from a list of tool names: a new tool that
sends, deletes, executes or spends is gated the day it is added. So is a call that reaches a
host the run's person did not name: a URL carries data out in its path and query, so a read
from such a host is gated like a send.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from enum import StrEnum


class Effect(StrEnum):
    READ = "read"  # looks, changes nothing
    WRITE = "write"  # changes files inside the run's own workspace
    SEND = "send"  # reaches someone or something outside: mail, a POST
    DELETE = "delete"
    EXECUTE = "execute"  # runs a program
    SPEND = "spend"  # costs money


IRREVERSIBLE_EFFECTS = frozenset({Effect.SEND, Effect.DELETE, Effect.EXECUTE, Effect.SPEND})


class PolicyMode(StrEnum):
    ASK = "ask"  # every irreversible call waits for a person (the default)
    AUTO = "auto"  # the listed tools run without asking; other irreversible calls still ask
    DRY_RUN = "dry_run"  # irreversible calls are recorded, not performed


class Decision(StrEnum):
    RUN = "run"
    ASK = "ask"
    DRY_RUN = "dry_run"


def gated(effect: Effect, outside: Collection[str] = ()) -> bool:
    """Whether a call goes through the gate (a person, the policy, the outbox's receipt)."""
    return effect in IRREVERSIBLE_EFFECTS or bool(outside)


@dataclass(frozen=True)
class ToolPolicy:
    mode: PolicyMode = PolicyMode.ASK
    auto_tools: frozenset[str] = frozenset()

    @classmethod
    def of(cls, mode: str, auto_tools: Iterable[str] = ()) -> ToolPolicy:
        return cls(PolicyMode(mode), frozenset(auto_tools))

    def decide(self, tool: str, effect: Effect, outside: Collection[str] = ()) -> Decision:
        """What to do with one call of `tool`, whose effect is `effect`; `outside` holds the
        hosts it reaches that the run does not allow, which make any call count as irreversible."""
        if not gated(effect, outside):
            return Decision.RUN
        if self.mode is PolicyMode.DRY_RUN:
            return Decision.DRY_RUN
        if self.mode is PolicyMode.AUTO and tool in self.auto_tools:
            return Decision.RUN
        return Decision.ASK

    def describe(self) -> str:
        if self.mode is PolicyMode.DRY_RUN:
            return "dry run: irreversible calls are recorded, not performed"
        if self.mode is PolicyMode.AUTO and self.auto_tools:
            tools = ", ".join(sorted(self.auto_tools))
            return f"runs {tools} without asking; asks for the rest"
        return "asks before every irreversible call"

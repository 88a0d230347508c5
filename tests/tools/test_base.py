"""Tool and ToolContext: irreversibility follows the effect, and call() performs the call."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel

from planner_ui.core.effects import Effect
from planner_ui.tools import Tool, ToolContext


class EchoInput(BaseModel):
    text: str


class Echo(Tool):
    name = "echo"
    description = "Say the text back."
    Input = EchoInput
    effect = Effect.READ
    calls: ClassVar[list[tuple[str, str]]] = []

    def run(self, args: EchoInput, ctx: ToolContext) -> str:
        Echo.calls.append((args.text, ctx.idempotency_key))
        return args.text


class Spend(Echo):
    name = "spend"
    effect = Effect.SPEND


def test_irreversible_follows_the_effect_on_classes_and_instances() -> None:
    assert Echo.irreversible is False and Echo().irreversible is False
    assert Spend.irreversible is True and Spend().irreversible is True


def test_call_performs_even_an_irreversible_call_the_gate_is_elsewhere() -> None:
    Echo.calls = []
    ctx = ToolContext(run_id=1, step_id="s", workspace=Path("/nonexistent"))
    keyed = dataclasses.replace(ctx, idempotency_key="run-1-s-call-1")

    assert Spend().call({"text": "paid"}, keyed) == "paid"
    assert Echo.calls == [("paid", "run-1-s-call-1")]
    assert ctx.idempotency_key == ""  # replace() left the step's context alone


def test_the_context_fields() -> None:
    assert [f.name for f in dataclasses.fields(ToolContext)] == [
        "run_id",
        "step_id",
        "workspace",
        "settings",
        "idempotency_key",
        "mailer",
        "allowed_hosts",
    ]
    ctx = ToolContext(run_id=1, step_id="s", workspace=Path("/w"))
    assert ctx.settings == {} and ctx.idempotency_key == "" and ctx.mailer is None
    assert ctx.allowed_hosts is None  # a tool on its own: no run's list applies

"""The run's policy per call: irreversible effects, and reads that reach a host not allowed."""

from __future__ import annotations

import pytest

from planner_ui.core.effects import Decision, Effect, ToolPolicy, gated

OUTSIDE = ["127.0.0.1:9000"]


@pytest.mark.parametrize(
    ("policy", "effect", "outside", "decision"),
    [
        (ToolPolicy.of("ask"), Effect.READ, [], Decision.RUN),
        (ToolPolicy.of("ask"), Effect.READ, OUTSIDE, Decision.ASK),
        (ToolPolicy.of("ask"), Effect.SEND, [], Decision.ASK),
        (ToolPolicy.of("dry_run"), Effect.READ, [], Decision.RUN),
        (ToolPolicy.of("dry_run"), Effect.READ, OUTSIDE, Decision.DRY_RUN),
        # "auto" lists irreversible tools only, so a read elsewhere still asks.
        (ToolPolicy.of("auto", ["http_post"]), Effect.READ, OUTSIDE, Decision.ASK),
        (ToolPolicy.of("auto", ["http_post"]), Effect.SEND, [], Decision.RUN),
    ],
)
def test_decide(policy: ToolPolicy, effect: Effect, outside: list[str], decision: Decision) -> None:
    tool = "http_post" if effect is Effect.SEND else "fetch_url"
    assert policy.decide(tool, effect, outside) is decision


def test_a_call_is_gated_by_its_effect_or_by_a_host_outside_the_list() -> None:
    assert not gated(Effect.READ) and not gated(Effect.WRITE)
    assert gated(Effect.READ, OUTSIDE) and gated(Effect.DELETE)

"""The offline model as synthesizer."""

from __future__ import annotations

import pytest

from planner_ui.providers.base import ModelRequest, ProviderError

from .requests import PROVIDER, synthesizer_request

# --- the synthesizer ---------------------------------------------------------------------------


def test_the_deliverable_has_a_heading_every_output_in_order_and_a_conclusion() -> None:
    outputs = [
        ("calc", "Calculate the budget", "## Result\n\n- 25 * 40 + 300 = 1300\n\n**Answer: 1300**"),
        ("venues", "Find venues", "# Venues\n\n- Hub Lisboa seats 30 & has a garden"),
        ("invite", "Draft the invitation", "Join us in Lisbon on 3 May. </output> is just text."),
    ]

    reply = PROVIDER.complete(
        synthesizer_request("Please plan our team offsite in Lisbon.", outputs)
    )

    text = reply.text
    assert reply.stop_reason == "end_turn"
    assert text.startswith("# Plan our team offsite in Lisbon\n")
    positions = [text.index(f"## {title}") for _, title, _ in outputs]
    assert positions == sorted(positions)
    assert "25 * 40 + 300 = 1300" in text
    assert "Hub Lisboa seats 30 & has a garden" in text
    assert "Join us in Lisbon on 3 May. </output> is just text." in text
    assert "\n## Conclusion\n" in text
    assert "# Venues" not in text  # the step's own heading gives way to the section heading


def test_the_synthesizer_needs_a_task() -> None:
    request = ModelRequest(
        system="", messages=[{"role": "user", "content": "x"}], purpose="synthesizer"
    )

    with pytest.raises(ProviderError, match="synthesizer: the first message has no <task>"):
        PROVIDER.complete(request)

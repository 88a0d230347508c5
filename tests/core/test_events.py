"""core.events: every event's type is in the catalogue and its payload has the keys its type
names; the services refuse any other before storing it (docs/write-protocol.md)."""

from __future__ import annotations

import pytest

from planner_ui.core.events import EventType, check_event


def test_a_catalogued_event_with_its_keys_is_its_type() -> None:
    assert check_event("step.skipped", {"reason": "r"}) is EventType.STEP_SKIPPED


def test_an_unknown_type_is_refused_with_where_to_add_it() -> None:
    with pytest.raises(ValueError) as refused:
        check_event("step.vanished", {})
    assert str(refused.value) == (
        "unknown event type 'step.vanished'; add it to planner_ui.core.events.EventType"
    )


def test_a_payload_with_a_key_missing_or_too_many_is_refused_naming_them() -> None:
    with pytest.raises(ValueError) as refused:
        check_event("step.skipped", {"why": "r"})
    assert str(refused.value) == (
        "payload of step.skipped does not match its type: missing reason; unexpected why"
    )

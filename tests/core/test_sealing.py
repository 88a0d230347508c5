"""Sealing an admin's API key with the installation's secret key."""

from __future__ import annotations

import pytest

from planner_ui.core.sealing import PREFIX, Unreadable, seal, unseal

KEY = "sk-ant-api03-SECRETSECRETSECRET-tail"


def test_a_sealed_key_opens_with_its_secret_and_shows_nothing_of_itself() -> None:
    sealed = seal(KEY, "secret-one")
    assert sealed.startswith(PREFIX) and "SECRET" not in sealed and "tail" not in sealed
    assert unseal(sealed, "secret-one") == KEY
    assert seal(KEY, "secret-one") != sealed  # a fresh nonce every time


def test_nothing_stays_nothing_and_a_value_from_before_sealing_reads_as_it_is() -> None:
    assert seal("", "secret-one") == "" and unseal("", "secret-one") == ""
    assert unseal(KEY, "secret-one") == KEY


@pytest.mark.parametrize("tamper", [False, True])
def test_another_secret_or_a_changed_value_cannot_open_it(tamper: bool) -> None:
    sealed = seal(KEY, "secret-one")
    if tamper:
        sealed = sealed[:-6] + ("A" if sealed[-6] != "A" else "B") + sealed[-5:]
    with pytest.raises(Unreadable, match=r"DJANGO_SECRET_KEY changed\): enter it again in"):
        unseal(sealed, "secret-one" if tamper else "secret-two")


def test_an_earlier_secret_listed_as_a_fallback_still_opens_it() -> None:
    sealed = seal(KEY, "old-secret")
    assert unseal(sealed, "new-secret", ["another", "old-secret"]) == KEY
    with pytest.raises(Unreadable, match="or list the old one in DJANGO_SECRET_KEY_FALLBACKS"):
        unseal(sealed, "new-secret", ["another"])

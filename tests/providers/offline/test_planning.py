"""The offline model as planner: the shapes it finds in a task, the tools it grants, its limits."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner_ui.core.dag import topological_order
from planner_ui.core.plan import MAX_STEPS, SYNTHESIS_STEP_ID
from planner_ui.core.validation import parse_plan_json, validate_plan
from planner_ui.providers.base import ModelRequest, ProviderError

from .requests import KNOWN_TOOLS, PROVIDER, assert_parallel, plan_for, planner_request, steps_with

# --- the planner: shapes ------------------------------------------------------------------


def test_an_enumeration_becomes_parallel_steps_joined_by_a_writer() -> None:
    plan = plan_for(
        "Prepare our team offsite:\n"
        "1. Research the history of Lisbon\n"
        "2. Find three venues in Lisbon for 25 people\n"
        "3. Calculate the catering budget: 25 * 40 + 300\n"
    )

    *items, join = plan.steps
    assert len(items) == 3
    assert_parallel(plan, [s.id for s in items])
    assert join.role == "writer"
    assert set(join.depends_on) == {s.id for s in items}
    assert "Lisbon" in items[0].instruction and "history" in items[0].instruction
    assert items[2].role == "coder"
    assert items[2].tools == ["calculator"]
    assert "25 * 40 + 300" in items[2].instruction


def test_enumeration_items_that_say_then_wait_for_the_items_before() -> None:
    plan = plan_for(
        "- Research solar power\n- Research wind power\n- Then compare them\n"
        "- Write a one-page report"
    )

    solar, wind, compare, report = plan.steps
    assert_parallel(plan, [solar.id, wind.id])
    assert set(compare.depends_on) == {solar.id, wind.id}
    assert compare.role == "critic"
    assert report.depends_on == [compare.id]
    assert report.role == "writer"


def test_a_closing_writing_item_is_the_join() -> None:
    plan = plan_for(
        "1. Find three venues in Lisbon\n2. Estimate the catering cost: 25 * 40\n"
        "3. Draft an invitation email"
    )

    venues, catering, invitation = plan.steps
    assert_parallel(plan, [venues.id, catering.id])
    assert invitation.role == "writer"
    assert set(invitation.depends_on) == {venues.id, catering.id}


def test_bare_items_take_their_verb_and_effect_from_the_line_before() -> None:
    plan = plan_for(
        "For each of these cities, find the population and email the list to bob@example.com:\n"
        "- Paris\n- Berlin\n- Rome"
    )

    *cities, join = plan.steps
    assert [
        ("population" in s.instruction, city in s.instruction)
        for s, city in zip(cities, ["Paris", "Berlin", "Rome"], strict=True)
    ] == [(True, True)] * 3
    assert all(s.tools == [] for s in cities)
    assert set(join.depends_on) == {s.id for s in cities}
    assert join.tools == ["send_email"]
    assert "bob@example.com" in join.instruction


@pytest.mark.parametrize(
    "task",
    [
        "Fetch https://example.com/q3.html, then summarize it, then email the summary to "
        "bob@example.com",
        "First fetch https://example.com/q3.html; then summarize it. Finally email the summary "
        "to bob@example.com.",
        "Fetch https://example.com/q3.html and then summarize it and email the summary to "
        "bob@example.com",
        "Fetch https://example.com/q3.html, summarize it, then email the summary to "
        "bob@example.com",
    ],
)
def test_a_sequence_becomes_a_chain(task: str) -> None:
    plan = plan_for(task)

    fetch, summarize, email = plan.steps
    assert fetch.depends_on == []
    assert summarize.depends_on == [fetch.id]
    assert email.depends_on == [summarize.id]
    assert (fetch.tools, summarize.tools, email.tools) == (["fetch_url"], [], ["send_email"])
    assert "https://example.com/q3.html" in fetch.instruction
    assert "bob@example.com" in email.instruction
    assert summarize.role == "writer"


def test_side_by_side_actions_run_in_parallel_and_then_waits_for_them_all() -> None:
    plan = plan_for(
        "Fetch https://example.com/q3.html, calculate 12*(3+4), then write a short report "
        "and save it to report.md"
    )

    fetch, calculate, write, save = plan.steps
    assert_parallel(plan, [fetch.id, calculate.id])
    assert (fetch.tools, calculate.tools) == (["fetch_url"], ["calculator"])
    assert set(write.depends_on) == {fetch.id, calculate.id}
    assert save.depends_on == [write.id]
    assert save.tools == ["write_file"]


def test_a_leading_phrase_is_not_split_off_its_action() -> None:
    plan = plan_for("In Lisbon, find three venues for 25 people")

    assert "In Lisbon, find three venues" in plan.steps[0].instruction


@pytest.mark.parametrize(
    ("task", "sides", "qualifier"),
    [
        (
            "Compare PostgreSQL and MySQL for a small web app",
            ["PostgreSQL", "MySQL"],
            "small web app",
        ),
        ("compare Django with Flask", ["Django", "Flask"], ""),
        ("Python vs. Go: which is better for CLI tools?", ["Python", "Go"], "CLI tools"),
        ("Rust versus C++ for embedded work", ["Rust", "C++"], "embedded work"),
        ("Should I use React or Vue for a dashboard?", ["React", "Vue"], "dashboard"),
    ],
)
def test_a_comparison_researches_each_side_then_compares_then_writes(
    task: str, sides: list[str], qualifier: str
) -> None:
    plan = plan_for(task)

    *research, compare, write = plan.steps
    assert [s.role for s in research] == ["researcher"] * len(sides)
    assert [s.title for s in research] == [f"Research {side}" for side in sides]
    assert_parallel(plan, [s.id for s in research])
    assert compare.role == "critic"
    assert set(compare.depends_on) == {s.id for s in research}
    assert write.role == "writer"
    assert write.depends_on == [compare.id]
    for step, side in zip(research, sides, strict=True):
        assert side in step.instruction and qualifier in step.instruction


@pytest.mark.parametrize(
    ("task", "items"),
    [
        ("Research Python, Go and Rust", ["Python", "Go", "Rust"]),
        ("research Python, Go, and Rust for web development", ["Python", "Go", "Rust"]),
        (
            "Summarize the French and the German election results",
            ["the French election results", "the German election results"],
        ),
        (
            "Find the population of Paris, Berlin and Rome",
            ["population of Paris", "population of Berlin", "population of Rome"],
        ),
    ],
)
def test_a_list_under_a_verb_fans_out_and_joins(task: str, items: list[str]) -> None:
    plan = plan_for(task)

    *branches, join = plan.steps
    assert len(branches) == len(items)
    assert_parallel(plan, [s.id for s in branches])
    for step, item in zip(branches, items, strict=True):
        assert item in step.instruction
    assert join.role == "writer"
    assert set(join.depends_on) == {s.id for s in branches}


def test_shared_words_of_a_list_reach_every_item() -> None:
    plan = plan_for("research Python, Go and Rust for web development")

    assert all("for web development" in s.instruction for s in plan.steps[:3])


def test_an_idiom_is_not_split_into_a_list() -> None:
    plan = plan_for("Summarize the pros and cons of remote work")

    assert len(plan.steps) == 2
    assert "pros and cons of remote work" in plan.steps[-1].instruction


def test_a_list_followed_by_an_effect_saves_after_the_join() -> None:
    plan = plan_for("Find the population of Paris, Berlin and Rome and save it to cities.md")

    *cities, save = plan.steps
    assert len(cities) == 3
    assert set(save.depends_on) == {s.id for s in cities}
    assert save.tools == ["write_file"]
    assert "cities.md" in save.instruction


def test_a_calculation_goes_to_a_coder_with_the_expression() -> None:
    plan = plan_for("What is 12*(3+4)?")

    compute, write = plan.steps
    assert compute.role == "coder"
    assert compute.tools == ["calculator"]
    assert "12*(3+4)" in compute.instruction
    assert write.role == "writer"
    assert write.depends_on == [compute.id]
    assert write.tools == []


def test_a_percentage_is_a_calculation() -> None:
    plan = plan_for("How much is 15% of 240?")

    assert plan.steps[0].tools == ["calculator"]


def test_a_url_is_fetched_by_the_step_that_gathers_not_by_the_writer() -> None:
    plan = plan_for("Summarize https://example.com/post.html")

    gather, write = plan.steps
    assert gather.tools == ["fetch_url"]
    assert "https://example.com/post.html" in gather.instruction
    assert write.role == "writer"
    assert write.tools == []
    assert write.depends_on == [gather.id]


def test_an_email_is_sent_after_the_draft_it_sends() -> None:
    plan = plan_for("Draft a short project update and email it to alice@example.com")

    draft, email = plan.steps
    assert draft.role == "writer" and draft.tools == []
    assert email.depends_on == [draft.id]
    assert email.tools == ["send_email"]
    assert "alice@example.com" in email.instruction


def test_an_address_alone_does_not_grant_sending_mail() -> None:
    plan = plan_for("Find out which company runs the address info@example.org")

    assert steps_with(plan, "send_email") == []


def test_the_address_given_elsewhere_in_the_task_reaches_the_email_step() -> None:
    plan = plan_for("My address is carol@example.com. Research Lisbon, then email it to me.")

    (email,) = [s for s in plan.steps if "send_email" in s.tools]
    assert "carol@example.com" in email.instruction.split("\n\n")[0]


def test_saving_without_a_file_name_gets_a_concrete_one() -> None:
    plan = plan_for("Research the Lisbon metro, then save the notes to a file")

    (save,) = [s for s in plan.steps if "write_file" in s.tools]
    directive = save.instruction.split("\n\n")[0]
    assert directive.endswith(".md.")


def test_reading_a_file_grants_read_file() -> None:
    plan = plan_for("Read notes.txt and summarize it")

    read, summarize = plan.steps
    assert read.tools == ["read_file"] and "notes.txt" in read.instruction
    assert summarize.depends_on == [read.id]


def test_only_tools_offered_in_the_request_are_granted() -> None:
    plan = plan_for(
        "Fetch https://example.com, then calculate 2^10, then email it to bob@example.com",
        tools={"calculator"},
    )

    assert [s.tools for s in plan.steps] == [[], ["calculator"], []]
    assert "https://example.com" in plan.steps[0].instruction


def test_a_repair_request_gets_a_fresh_valid_plan() -> None:
    first = planner_request("Research Python, Go and Rust")
    repair = ModelRequest(
        system=first.system,
        messages=[
            *first.messages,
            {"role": "assistant", "content": '{"steps": []}'},
            {"role": "user", "content": "That plan is invalid:\n- the plan has no steps"},
        ],
        purpose="planner",
    )

    reply = PROVIDER.complete(repair)

    assert validate_plan(parse_plan_json(reply.text), known_tools=KNOWN_TOOLS).steps
    assert reply.text == PROVIDER.complete(first).text


def test_a_huge_enumeration_stays_within_the_step_limit() -> None:
    task = "\n".join(f"{n}. Research city number {n}" for n in range(1, 151))

    # Its plan (about 12,500 tokens) is longer than a planner's answer may be: this is about
    # the step limit, not about where the model would be cut off.
    plan = plan_for(task, max_tokens=20_000)

    assert len(plan.steps) <= MAX_STEPS
    assert "city number 150" in " ".join(s.instruction for s in plan.steps)


def test_a_join_over_many_long_items_keeps_its_instruction_within_the_limit() -> None:
    long_item = "Research the full history, present state and future outlook of the harbour of city"
    task = "\n".join(f"- {long_item} {n}, with figures" for n in range(1, MAX_STEPS))

    plan = plan_for(task, max_tokens=20_000)  # about 16,700 tokens: as above

    assert len(plan.steps) == MAX_STEPS
    assert set(plan.steps[-1].depends_on) == {s.id for s in plan.steps[:-1]}


REALISTIC_TASKS = [
    "Plan an offsite:\n1. Find three venues in Lisbon\n2. Calculate 25 * 40\n3. Draft an invite",
    "Fetch https://example.com, then summarize it, then email the summary to bob@example.com",
    "Compare PostgreSQL and MySQL for a small web app",
    "Research Python, Go and Rust",
    "What is 12*(3+4)?",
    "Summarize https://example.com/post.html",
    "Draft a short project update and email it to alice@example.com",
    "I'm visiting Tokyo next week. What will the weather be like?",
    "Write a Python script that prints the first 10 Fibonacci numbers and save it to fib.py",
    "Write a haiku about autumn",
    "Research the synthesis of aspirin",
    "List the files in the workspace and read report.md",
]


@pytest.mark.parametrize("task", REALISTIC_TASKS)
def test_ids_are_short_unique_slugs_and_never_the_reserved_one(task: str) -> None:
    plan = plan_for(task)

    ids = [s.id for s in plan.steps]
    assert len(set(ids)) == len(ids)
    assert SYNTHESIS_STEP_ID not in ids
    assert all(len(s.title) <= 120 for s in plan.steps)
    assert plan.goal


@pytest.mark.parametrize("task", REALISTIC_TASKS)
def test_every_instruction_says_which_task_it_belongs_to(task: str) -> None:
    plan = plan_for(task)

    assert all("Context: this step is one part of the task" in s.instruction for s in plan.steps)


WORDS = st.sampled_from(
    [
        "research", "compare", "and", "then", ",", "vs", "Python", "Go", "12*(3+4)", "save",
        "report.md", "email", "bob@example.com", "https://example.com/a", "\n1.", "\n-", "first",
        "finally", ";", "of", "the", "for", "?", ".", "summarize", "write", "calculate", "or",
        "which is better", "them", "synthesis", "files", "read", "notes.txt", "15%", "between",
    ]
)  # fmt: skip


# Any text a task can hold: what st.text() draws (no lone surrogates: a request is UTF-8) but a
# NUL, which core.bounds refuses at every entry.
TASK_TEXT = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=12
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(WORDS | TASK_TEXT, min_size=1, max_size=30))
def test_any_task_gets_a_valid_plan(words: list[str]) -> None:
    task = " ".join(words)
    if not task.strip():
        return

    plan = plan_for(task)

    assert 1 <= len(plan.steps) <= MAX_STEPS
    topological_order(plan.dependencies())  # acyclic


def test_a_request_without_a_task_is_refused_clearly() -> None:
    request = ModelRequest(
        system="", messages=[{"role": "user", "content": "plan this"}], purpose="planner"
    )

    with pytest.raises(ProviderError) as caught:
        PROVIDER.complete(request)

    assert str(caught.value) == "offline planner: the first message has no <task>…</task> block"


def test_an_unknown_purpose_is_refused_clearly() -> None:
    request = ModelRequest(system="", messages=[{"role": "user", "content": "hi"}], purpose="chat")

    with pytest.raises(ProviderError) as caught:
        PROVIDER.complete(request)

    assert str(caught.value) == (
        "offline provider: unknown purpose 'chat'; expected 'planner', 'executor:<role>', "
        "'synthesizer' or 'judge'"
    )

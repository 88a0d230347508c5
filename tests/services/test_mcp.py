"""MCP tools in runs, against real server processes started by the test: registered, pinned
and held until a person approves them, gated by the effect a person gave them, performed once
after approval (counted at the server), held back when their server changes them, and a
crashed server fails the step with its reason."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from planner_ui.core.errors import PlanValidationError
from planner_ui.core.run_options import RunOptions
from planner_ui.core.status import RunStatus, StepStatus
from planner_ui.models import Approval, McpServerTool
from planner_ui.providers.scripted import script
from planner_ui.selectors.tools import tools_for_user
from planner_ui.services.approvals import ApprovalRefused, approval_decide
from planner_ui.services.mcp import (
    McpRefused,
    mcp_server_check,
    mcp_server_register,
    mcp_tool_approve,
    mcp_tool_set_effect,
    review_digest,
)
from planner_ui.services.plans import plan_import
from planner_ui.services.runs import run_approve_plan, run_create, run_plan
from tests.services.test_runs import drive

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def admin(make_user):
    user = make_user("admin")
    user.is_staff = True
    user.save()
    return user


def command(log: Path, *extra: str) -> str:
    return f"{sys.executable} -m tests.fakes.mcp_server --log {log} {' '.join(extra)}"


@pytest.fixture
def server(admin, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # the fake server is a module of this repository
    log = tmp_path / "calls.log"
    log.touch()
    registered = mcp_server_register(
        user=admin, name="fake", transport="stdio", command=command(log), shared=True
    )
    for tool in registered.tools.all():  # staff read them and let them be offered
        mcp_tool_approve(tool, reviewer=admin, digest=review_digest(tool))
    return registered, log


def a_run(user, tools_step: list[str], *replies) -> object:
    planner = script("mcp-planner").plan(
        {
            "goal": "Use the tool",
            "steps": [
                {
                    "id": "use",
                    "title": "Use it",
                    "instruction": "Use the tool.",
                    "role": "coder",
                    "tools": tools_step,
                    "depends_on": [],
                }
            ],
        }
    )
    executor = script("mcp-executor")
    for reply in replies:
        reply(executor)
    run = run_create(
        owner=user,
        options=RunOptions(
            task="Use the MCP tool",
            routes={"planner": "scripted:mcp-planner", "executor": "scripted:mcp-executor"},
            replan_mode="off",
        ),
    )
    run_plan(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.AWAITING_PLAN_APPROVAL, run.error
    run_approve_plan(run.pk)
    run = drive(run)
    run.planner_request = planner.requests[0]
    return run


def test_registration_holds_each_tool_until_staff_approve_it(admin, make_user, tmp_path):
    registered = mcp_server_register(
        user=admin, name="fake", transport="stdio", command=command(tmp_path / "log"), shared=True
    )
    assert {t.state for t in registered.tools.all()} == {McpServerTool.State.NEW}
    assert "fake__lookup" not in tools_for_user(make_user("alice"))
    lookup = registered.tools.get(name="lookup")
    with pytest.raises(McpRefused, match="'lookup' changed since the page showed it"):
        mcp_tool_approve(lookup, reviewer=admin, digest="")
    mcp_tool_approve(lookup, reviewer=admin, digest=lookup.digest)
    assert "fake__lookup" in tools_for_user(make_user("bob"))
    with pytest.raises(McpRefused, match="'lookup' is offered already"):
        mcp_tool_approve(lookup, reviewer=admin, digest=lookup.digest)


def test_registration_pins_each_tool_as_irreversible_until_a_person_says_otherwise(server):
    registered, _ = server
    pinned = {t.name: t for t in registered.tools.all()}
    assert set(pinned) == {"lookup", "launch", "crash"}
    assert {t.effect for t in pinned.values()} == {"execute"}
    assert pinned["lookup"].input_schema["required"] == ["term"]


def test_only_staff_register_commands_and_bad_servers_are_refused(make_user, admin, tmp_path):
    alice = make_user("alice")
    with pytest.raises(McpRefused, match="Only an administrator can register a command"):
        mcp_server_register(user=alice, name="x", transport="stdio", command="anything")
    with pytest.raises(McpRefused, match="Could not list its tools: MCP server 'broken' did not"):
        mcp_server_register(user=admin, name="broken", transport="stdio", command="/no/such")
    with pytest.raises(McpRefused, match="Only an administrator can register a server for"):
        mcp_server_register(user=alice, name="y", transport="http", url="http://x/mcp", shared=True)
    # A URL nobody allowed is refused by the tools' address policy.
    with pytest.raises(McpRefused, match="127.0.0.1"):
        mcp_server_register(user=alice, name="z", transport="http", url="http://127.0.0.1:9/mcp")


def test_a_name_taken_by_a_shared_server_or_a_persons_own_is_refused(server, make_user, admin):
    alice = make_user("alice")
    # "fake" is shared (the fixture): alice's own "fake" would lose to it in her runs.
    with pytest.raises(McpRefused, match="A server for everyone is named 'fake' already"):
        mcp_server_register(user=alice, name="Fake", transport="http", url="http://x/mcp")
    registered, log = server
    registered.owner = alice  # as if alice had registered "fake" first
    registered.save()
    with pytest.raises(McpRefused, match="Someone's own server is named 'fake'"):
        mcp_server_register(
            user=admin, name="fake", transport="stdio", command=command(log), shared=True
        )


def test_a_read_tool_runs_without_asking_and_shows_up_for_planners(server, make_user):
    registered, log = server
    mcp_tool_set_effect(registered.tools.get(name="lookup"), "read")
    alice = make_user("alice")
    assert "fake__lookup" in tools_for_user(alice)
    run = a_run(
        alice,
        ["fake__lookup"],
        lambda s: s.tool_call("fake__lookup", {"term": "oolong"}),
        lambda s: s.text("Found it."),
        lambda s: s.text("# Done"),
    )
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert not run.approvals.exists()
    result = run.events.get(type="step.tool_result")
    assert result.payload["content"] == "oolong: a term of the glossary"
    # The planner was offered the tool, with its description.
    offered = str([run.planner_request.system, run.planner_request.messages])
    assert "fake__lookup" in offered and "Look a term up in the glossary" in offered


def test_an_unknown_effect_tool_waits_at_the_gate_and_is_performed_once(server, make_user):
    _, log = server
    alice = make_user("alice")
    run = a_run(
        alice,
        ["fake__launch"],
        lambda s: s.tool_call("fake__launch", {"target": "rocket"}),
        lambda s: s.text("Launched."),
        lambda s: s.text("# Done"),
    )
    waiting = run.approvals.get()
    assert waiting.state == Approval.State.PENDING and waiting.effect == "execute"
    assert run.steps.get(step_id="use").status == StepStatus.WAITING
    assert log.read_text() == ""
    approval_decide(user=alice, approval=waiting, approve=True)
    run = drive(run)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert log.read_text() == "rocket\n"
    receipt = run.receipts.get()
    assert receipt.tool == "fake__launch" and receipt.result == "launched rocket"


def test_a_changed_tool_is_held_back_until_a_person_approves_it(server, make_user, admin, tmp_path):
    registered, log = server
    alice = make_user("alice")
    registered.command = command(log, "--variant", "2").split()
    registered.save()
    mcp_server_check(registered)
    lookup = registered.tools.get(name="lookup")
    assert lookup.state == McpServerTool.State.CHANGED
    assert "analytics" in lookup.pending_description and "language" in str(lookup.pending_schema)
    assert lookup.description == "Look a term up in the glossary."  # the pinned one stays
    assert "fake__lookup" not in tools_for_user(alice) and "fake__launch" in tools_for_user(alice)
    mcp_tool_approve(lookup, reviewer=admin, digest=lookup.pending_digest)
    lookup.refresh_from_db()
    assert lookup.state == McpServerTool.State.ACTIVE and "analytics" in lookup.description
    assert "fake__lookup" in tools_for_user(alice)


def test_a_plan_cannot_grant_a_held_back_tool(server, make_user):
    registered, log = server
    alice = make_user("alice")
    registered.tools.filter(name="launch").update(state=McpServerTool.State.CHANGED)
    run = run_create(owner=alice, options=RunOptions(task="Research tea"))
    run_plan(run.pk)
    plan = run.plan_versions.get().plan
    plan["steps"][0]["tools"] = ["fake__launch"]
    with pytest.raises(PlanValidationError, match="fake__launch"):
        plan_import(run_id=run.pk, base_version=1, text=json.dumps(plan))


def test_a_crashed_server_fails_the_step_with_its_reason(server, make_user):
    registered, _ = server
    mcp_tool_set_effect(registered.tools.get(name="crash"), "read")
    run = a_run(
        make_user("alice"),
        ["fake__crash"],
        lambda s: s.tool_call("fake__crash", {}),
    )
    step = run.steps.get(step_id="use")
    assert step.status == StepStatus.FAILED
    assert "MCP server 'fake' failed" in step.error
    assert run.status == RunStatus.FAILED


def test_edited_arguments_of_a_held_tool_are_checked_against_its_pinned_schema(server, make_user):
    """A tool held for review after its call waited for a person used to make an edited
    approval fail with a KeyError (a 500 on the pages): the tool was looked up among the
    offered ones only."""
    registered, log = server
    alice = make_user("alice")
    run = a_run(
        alice,
        ["fake__launch"],
        lambda s: s.tool_call("fake__launch", {"target": "rocket"}),
        lambda s: s.text("Could not launch."),
        lambda s: s.text("# Done"),
    )
    waiting = run.approvals.get()
    registered.tools.filter(name="launch").update(state=McpServerTool.State.CHANGED)
    with pytest.raises(ApprovalRefused, match="'target' 5 is not of type 'string'"):
        approval_decide(user=alice, approval=waiting, approve=True, arguments_json='{"target": 5}')
    decided = approval_decide(
        user=alice, approval=waiting, approve=True, arguments_json='{"target": "moon"}'
    )
    assert decided.state == Approval.State.APPROVED
    assert decided.approved_arguments == {"target": "moon"}
    run = drive(run)
    assert log.read_text() == ""  # held: not called, approved or not

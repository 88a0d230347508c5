"""The run WebSocket through the real ASGI stack, session auth and the Redis channel layer."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from agentsite.asgi import application
from planner_ui.consumers import GAP_WAIT_S
from planner_ui.core.frames import FRAME_CHARS
from planner_ui.models import Run, RunEvent
from planner_ui.services.broadcast import group_publish
from planner_ui.services.events import event_append, run_group
from tests.fakes.websocket import refusal_code

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


def session_cookie(user) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


@database_sync_to_async
def _setup(make_user, owner_name: str = "alice"):
    owner = make_user(owner_name)
    run = Run.objects.create(owner=owner, task="Research tea")
    return owner, run, session_cookie(owner)


async def _connect(
    run_id: int, cookie: bytes | None, after: int | None = None, batch=False, text=None
):
    query = ([f"after={after}"] if after is not None else []) + (["batch=1"] if batch else [])
    query += [f"text={text}"] if text is not None else []
    path = f"/ws/runs/{run_id}/" + (f"?{'&'.join(query)}" if query else "")
    headers = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
    if cookie:
        headers.append((b"cookie", cookie))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect(timeout=5)
    return communicator, connected, code


async def _receive_events_until_replay_done(communicator) -> list[dict]:
    events = []
    while True:
        message = json.loads(await communicator.receive_from(timeout=5))
        if message["type"] == "replay.done":
            return events
        assert message["type"] == "event"
        events.append(message["event"])


append = database_sync_to_async(event_append)


async def test_replay_then_live_then_reconnect_loses_nothing(make_user):
    _, run, cookie = await _setup(make_user)
    for i in range(3):
        await append(run.pk, "plan.invalid", {"attempt": i, "errors": []}, step_id="a")

    ws, connected, _ = await _connect(run.pk, cookie)
    assert connected
    replayed = await _receive_events_until_replay_done(ws)
    assert [e["seq"] for e in replayed] == [1, 2, 3]
    assert [e["payload"]["attempt"] for e in replayed] == [0, 1, 2]

    await append(run.pk, "plan.invalid", {"attempt": 3, "errors": []}, step_id="a")
    live = json.loads(await ws.receive_from(timeout=5))
    assert live["type"] == "event" and live["event"]["seq"] == 4
    await ws.disconnect()

    # While nobody listens, two more events happen; the reconnect gets exactly those.
    await append(run.pk, "plan.invalid", {"attempt": 4, "errors": []}, step_id="a")
    await append(run.pk, "step.failed", {"error": "boom"}, step_id="a")
    ws, connected, _ = await _connect(run.pk, cookie, after=4)
    assert connected
    missed = await _receive_events_until_replay_done(ws)
    assert [(e["seq"], e["type"]) for e in missed] == [(5, "plan.invalid"), (6, "step.failed")]
    await ws.disconnect()


@database_sync_to_async
def _logged_unpublished(run: Run, *seqs: int) -> dict[int, dict]:
    """Events in the log that no watcher has been sent yet, as a worker's transaction leaves
    them between its commit and its publish."""
    return {
        seq: RunEvent.objects.create(
            run=run, seq=seq, type="plan.invalid", payload={"attempt": seq, "errors": []}
        ).as_message()
        for seq in seqs
    }


def _publish(run: Run, *events: dict) -> None:
    """Publish events together, in one Redis round trip, as a transaction's commit does."""
    group_publish(
        [
            (
                run_group(run.pk),
                {
                    "type": "run.event",
                    "seq": event["seq"],
                    "json": json.dumps({"type": "event", "event": event}),
                },
            )
            for event in events
        ]
    )


def _seqs(frame: dict) -> list[int]:
    """The sequence numbers of a frame's events: a batch's, or its own."""
    messages = frame["messages"] if frame["type"] == "batch" else [frame]
    assert all(m["type"] == "event" for m in messages)
    return [m["event"]["seq"] for m in messages]


async def _watching_two_unpublished_events(make_user) -> tuple[Run, object, dict[int, dict]]:
    """A page watching a run, caught up, and then two events logged but not yet published."""
    _, run, cookie = await _setup(make_user)
    ws, connected, _ = await _connect(run.pk, cookie)
    assert connected
    assert await _receive_events_until_replay_done(ws) == []
    return run, ws, await _logged_unpublished(run, 1, 2)


async def test_events_published_out_of_order_reach_the_page_in_order_without_a_replay(make_user):
    run, ws, events = await _watching_two_unpublished_events(make_user)

    # Two steps finished together; the second one's publish overtook the first's.
    _publish(run, events[2])
    _publish(run, events[1])

    received = [json.loads(await ws.receive_from(timeout=5)) for _ in range(2)]
    assert [m["event"]["seq"] for m in received] == [1, 2]
    # Nothing else: the gap closed over pub/sub, so the log was not asked (no replay.done).
    assert await ws.receive_nothing(timeout=0.5)
    await ws.disconnect()


async def test_a_gap_that_closed_does_not_shorten_the_wait_for_the_next(make_user):
    _, run, cookie = await _setup(make_user)
    ws, connected, _ = await _connect(run.pk, cookie)
    assert connected
    assert await _receive_events_until_replay_done(ws) == []
    events = await _logged_unpublished(run, 1, 2, 3, 4)

    _publish(run, events[2])
    _publish(run, events[1])  # the first gap closes at once
    await asyncio.sleep(GAP_WAIT_S * 0.8)
    _publish(run, events[4])  # a second gap opens, near the end of the first one's wait
    await asyncio.sleep(GAP_WAIT_S * 0.6)
    _publish(run, events[3])  # and closes within its own

    received = [json.loads(await ws.receive_from(timeout=5)) for _ in range(4)]
    assert [m["event"]["seq"] for m in received] == [1, 2, 3, 4]
    # Both closed over pub/sub: the log was not asked (no replay.done).
    assert await ws.receive_nothing(timeout=GAP_WAIT_S * 2)
    await ws.disconnect()


async def _batched_and_plain(make_user) -> tuple[Run, object, object]:
    """A run watched by a client that asked for batches and one that did not, both replayed."""
    _, run, cookie = await _setup(make_user)
    batched, connected, _ = await _connect(run.pk, cookie, batch=True)
    assert connected
    plain, connected, _ = await _connect(run.pk, cookie)
    assert connected
    for ws in (batched, plain):
        assert await _receive_events_until_replay_done(ws) == []
    return run, batched, plain


async def test_a_batch_client_gets_the_events_published_together_in_one_frame_in_order(
    make_user,
):
    run, batched, plain = await _batched_and_plain(make_user)
    events = await _logged_unpublished(run, 1, 2, 3, 4)

    # One transaction's events (published in one round trip, one of them out of order), then
    # another's alone.
    _publish(run, events[2], events[1], events[3])
    frame = json.loads(await batched.receive_from(timeout=5))
    assert frame["type"] == "batch" and _seqs(frame) == [1, 2, 3]
    _publish(run, events[4])
    alone = json.loads(await batched.receive_from(timeout=5))
    assert alone == {"type": "event", "event": events[4]}
    assert await batched.receive_nothing(timeout=0.5)

    # A client that did not ask for batches gets a frame per event, as before.
    frames = [json.loads(await plain.receive_from(timeout=5)) for _ in range(4)]
    assert [f["type"] for f in frames] == ["event"] * 4
    assert [f["event"]["seq"] for f in frames] == [1, 2, 3, 4]
    for ws in (batched, plain):
        await ws.disconnect()


async def test_a_batch_client_gets_events_published_apart_within_the_window_in_one_frame(
    make_user, settings
):
    # Two finishes of one layer publish a few milliseconds apart, each in its own round trip.
    settings.AGENTSITE_WS_BATCH_MS = 400
    run, batched, plain = await _batched_and_plain(make_user)
    events = await _logged_unpublished(run, 1, 2, 3)

    _publish(run, events[1])
    # A client that did not ask for batches is not kept waiting.
    assert json.loads(await plain.receive_from(timeout=0.3))["event"]["seq"] == 1
    _publish(run, events[2])
    assert await batched.receive_nothing(timeout=0.1)
    frame = json.loads(await batched.receive_from(timeout=5))
    assert frame["type"] == "batch" and _seqs(frame) == [1, 2]
    # The window starts again with the next message, and one alone still goes out.
    _publish(run, events[3])
    assert json.loads(await batched.receive_from(timeout=5)) == {
        "type": "event",
        "event": events[3],
    }
    assert await batched.receive_nothing(timeout=0.5)
    assert [json.loads(await plain.receive_from(timeout=5))["event"]["seq"] for _ in (2, 3)] == [
        2,
        3,
    ]
    for ws in (batched, plain):
        await ws.disconnect()


@pytest.mark.parametrize("batch", [False, True], ids=["a frame per event", "batches"])
async def test_a_gap_that_pub_sub_does_not_fill_is_filled_from_the_log(make_user, batch):
    _, run, cookie = await _setup(make_user)
    ws, connected, _ = await _connect(run.pk, cookie, batch=batch)
    assert connected
    assert await _receive_events_until_replay_done(ws) == []
    events = await _logged_unpublished(run, 1, 2)

    _publish(run, events[2])  # the publish of event 1 never comes

    assert [e["seq"] for e in await _receive_events_until_replay_done(ws)] == [1, 2]
    assert await ws.receive_nothing(timeout=0.5)  # event 2 is not sent twice
    await ws.disconnect()


async def test_malformed_messages_get_an_error_and_the_socket_stays_open(make_user):
    _, run, cookie = await _setup(make_user)
    ws, connected, _ = await _connect(run.pk, cookie)
    assert connected
    await _receive_events_until_replay_done(ws)
    cases = [
        ("not json", "message is not valid JSON"),
        (
            json.dumps({"type": "delete everything"}),
            "unknown message type; expected 'ping', 'replay' or 'text.follow'",
        ),
        (
            json.dumps({"type": "text.follow", "steps": "s1"}),
            "'steps' must be a list of at most 20 step ids",
        ),
        (
            json.dumps({"type": "text.follow", "steps": [f"s{i}" for i in range(21)]}),
            "'steps' must be a list of at most 20 step ids",
        ),
        (
            json.dumps({"type": "text.follow", "steps": [1]}),
            "'steps' must be a list of at most 20 step ids",
        ),
        (
            json.dumps({"type": "text.follow", "steps": ["Not a step id"]}),
            "'steps' must be a list of at most 20 step ids",
        ),
        (json.dumps({"type": "replay", "after": "x"}), "'after' must be a non-negative integer"),
        ("x" * 2000, "messages must be JSON text of at most 1000 characters"),
    ]
    for text, error in cases:
        await ws.send_to(text_data=text)
        assert json.loads(await ws.receive_from(timeout=5)) == {"type": "error", "error": error}
    await ws.send_to(text_data=json.dumps({"type": "ping"}))
    assert json.loads(await ws.receive_from(timeout=5)) == {"type": "pong", "seq": 0}
    await ws.disconnect()


async def test_another_user_is_refused(make_user):
    _, run, _ = await _setup(make_user, "alice")
    _, _, bob_cookie = await _setup(make_user, "bob")
    ws, connected, code = await _connect(run.pk, bob_cookie)
    assert await refusal_code(ws, connected, code) == 4404
    await append(run.pk, "step.failed", {"error": "a secret"})
    assert await ws.receive_nothing(timeout=0.3)


async def test_anonymous_is_refused(make_user):
    _, run, _ = await _setup(make_user)
    ws, connected, code = await _connect(run.pk, None)
    assert await refusal_code(ws, connected, code) == 4401


async def test_a_missing_run_is_refused_like_another_users(make_user):
    _, _, cookie = await _setup(make_user)
    ws, connected, code = await _connect(999_999, cookie)
    assert await refusal_code(ws, connected, code) == 4404


async def test_live_text_reaches_the_owner_coalesced_and_unlogged(make_user):
    from planner_ui.services.streaming import text_broadcaster

    _, run, cookie = await _setup(make_user)
    ws, connected, _ = await _connect(run.pk, cookie)
    assert connected
    assert await _receive_events_until_replay_done(ws) == []

    def write() -> None:
        live = text_broadcaster(run.pk, "draft")(2)
        for piece in ["Tea ", "has ", "less ", "caffeine."]:
            live.write(piece)
        live.flush()

    await database_sync_to_async(write)()
    received = ""
    while received != "Tea has less caffeine.":
        message = json.loads(await ws.receive_from(timeout=5))
        assert (message["type"], message["step_id"], message["iteration"]) == ("text", "draft", 2)
        assert message["offset"] == len(received)
        received += message["text"]
    # Live text is for watching only: the run's event log has none of it.
    count = await database_sync_to_async(lambda: run.events.count())()
    assert count == 0
    await ws.disconnect()


async def test_a_watcher_joining_mid_step_gets_the_text_so_far_then_the_rest(make_user):
    from planner_ui.services.streaming import live_text_clear, text_broadcaster

    _, run, cookie = await _setup(make_user)
    live = text_broadcaster(run.pk, "draft")(1)
    await database_sync_to_async(lambda: (live.write("Tea has "), live.flush()))()

    ws, connected, _ = await _connect(run.pk, cookie)
    assert connected
    await _receive_events_until_replay_done(ws)
    snapshot = json.loads(await ws.receive_from(timeout=5))
    assert snapshot == {
        "type": "text",
        "step_id": "draft",
        "iteration": 1,
        "offset": 0,
        "text": "Tea has ",
    }
    await database_sync_to_async(lambda: (live.write("less caffeine."), live.flush()))()
    rest = json.loads(await ws.receive_from(timeout=5))
    assert (rest["offset"], rest["text"]) == (8, "less caffeine.")
    await ws.disconnect()

    # Once the step is over, a new watcher gets no text in flight.
    await database_sync_to_async(live_text_clear)(run.pk, "draft")
    ws, connected, _ = await _connect(run.pk, cookie)
    await _receive_events_until_replay_done(ws)
    assert await ws.receive_nothing(timeout=0.3)
    await ws.disconnect()


async def test_a_watcher_gets_only_the_live_text_of_the_steps_it_follows(make_user):
    from planner_ui.services.streaming import text_broadcaster

    _, run, cookie = await _setup(make_user)
    draft = text_broadcaster(run.pk, "draft")(1)
    notes = text_broadcaster(run.pk, "notes")(1)

    def write(live, piece: str) -> None:
        live.write(piece)
        live.flush()

    await database_sync_to_async(write)(draft, "Tea has ")
    # As the run page connects: its panel closed, no step's text.
    ws, connected, _ = await _connect(run.pk, cookie, text="")
    assert connected
    await _receive_events_until_replay_done(ws)
    await database_sync_to_async(write)(notes, "Coffee ")
    assert await ws.receive_nothing(timeout=0.3)

    # It opens "draft": the text so far, then what follows, and nothing of "notes".
    await ws.send_to(text_data=json.dumps({"type": "text.follow", "steps": ["draft"]}))
    snapshot = json.loads(await ws.receive_from(timeout=5))
    assert (snapshot["step_id"], snapshot["offset"], snapshot["text"]) == ("draft", 0, "Tea has ")
    await database_sync_to_async(write)(notes, "has more.")
    await database_sync_to_async(write)(draft, "less.")
    rest = json.loads(await ws.receive_from(timeout=5))
    assert (rest["step_id"], rest["offset"], rest["text"]) == ("draft", 8, "less.")
    assert await ws.receive_nothing(timeout=0.3)

    # It closes the panel: no text at all.
    await ws.send_to(text_data=json.dumps({"type": "text.follow", "steps": []}))
    await ws.send_to(text_data=json.dumps({"type": "ping"}))  # messages are taken in order
    assert json.loads(await ws.receive_from(timeout=5))["type"] == "pong"
    await database_sync_to_async(write)(draft, " Really.")
    assert await ws.receive_nothing(timeout=0.3)
    # Events still come.
    await append(run.pk, "step.failed", {"error": "boom"}, step_id="draft")
    assert json.loads(await ws.receive_from(timeout=5))["event"]["type"] == "step.failed"
    await ws.disconnect()


async def test_the_inbox_socket_pushes_the_pending_count_to_its_user_only(make_user):
    from planner_ui.services.events import user_broadcast

    owner, run, cookie = await _setup(make_user)
    communicator = WebsocketCommunicator(
        application,
        "/ws/inbox/",
        headers=[(b"origin", b"http://localhost"), (b"host", b"localhost"), (b"cookie", cookie)],
    )
    connected, _ = await communicator.connect(timeout=5)
    assert connected
    assert json.loads(await communicator.receive_from(timeout=5)) == {
        "type": "approvals",
        "pending": 0,
    }

    @database_sync_to_async
    def request_one() -> None:
        from planner_ui.models import Approval

        Approval.objects.create(
            run=run, step_id="mail", call_key="1:c", tool="send_email", effect="send", arguments={}
        )
        user_broadcast(owner.pk, {"type": "approvals.changed"})

    await request_one()
    assert json.loads(await communicator.receive_from(timeout=5)) == {
        "type": "approvals",
        "pending": 1,
    }
    await communicator.disconnect()

    anonymous = WebsocketCommunicator(
        application,
        "/ws/inbox/",
        headers=[(b"origin", b"http://localhost"), (b"host", b"localhost")],
    )
    connected, code = await anonymous.connect(timeout=5)
    assert await refusal_code(anonymous, connected, code) == 4401


@database_sync_to_async
def _logged_long(run: Run, seq: int) -> dict:
    """A step's end whose output alone is longer than a frame may be (a 1,000-step run's
    deliverable was 1.4 MB, and Daphne refuses to send a message over 1 MiB)."""
    return RunEvent.objects.create(
        run=run,
        seq=seq,
        type="step.succeeded",
        step_id="synthesis",
        payload={"output": "deliverable " * 150_000, "tokens_in": 1, "tokens_out": 2},
    ).as_message()


def _fitted_events(frame_text: str) -> list[dict]:
    assert len(frame_text) <= FRAME_CHARS
    frame = json.loads(frame_text)
    return [m["event"] for m in (frame["messages"] if frame["type"] == "batch" else [frame])]


async def test_an_event_too_long_for_a_frame_comes_cut_and_what_follows_still_comes(make_user):
    run, batched, plain = await _batched_and_plain(make_user)
    long = await _logged_long(run, 1)
    after = (await _logged_unpublished(run, 2))[2]
    _publish(run, long, after)  # one transaction's: the synthesis's end, then the run's
    for ws in (batched, plain):
        received = []
        while len(received) < 2:
            received += _fitted_events(await ws.receive_from(timeout=5))
        assert [e["seq"] for e in received] == [1, 2]
        assert received[0]["cut"] is True
        assert received[0]["payload"]["output"].startswith("deliverable deliverable")
        assert received[1] == after
        await ws.disconnect()

    # Replayed from the log, to a page that connects after it: the same.
    cookie = await database_sync_to_async(lambda: session_cookie(run.owner))()
    ws, connected, _ = await _connect(run.pk, cookie, batch=True)
    assert connected
    replayed = []
    while True:
        text = await ws.receive_from(timeout=5)
        if json.loads(text)["type"] == "replay.done":
            break
        replayed += _fitted_events(text)
    assert [e["seq"] for e in replayed] == [1, 2] and replayed[0]["cut"] is True
    await ws.disconnect()

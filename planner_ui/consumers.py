"""One WebSocket per run page: authorize, subscribe, replay what was missed, then forward.

Events reach a consumer already serialized (services.events publishes them once for every
watcher), so forwarding one to fifty watchers costs fifty sends, not fifty encodings."""

from __future__ import annotations

import asyncio
import json
import re
from functools import cached_property
from typing import Any
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from planner_ui.core.frames import event_fitted, frames, text_fitted
from planner_ui.core.plan import STEP_ID_PATTERN
from planner_ui.fanout import fanout
from planner_ui.selectors.approvals import pending_count
from planner_ui.selectors.runs import events_after, run_user_can_watch
from planner_ui.services.events import run_group, user_group
from planner_ui.services.logins import logins_group
from planner_ui.services.streaming import live_text_snapshot
from planner_ui.services.tokens import token_group, token_is_live

# Close codes in the 4000 range are ours; the page shows why it stopped listening.
CLOSE_NOT_LOGGED_IN = 4401
CLOSE_NOT_FOUND = 4404
# The login that opened the socket changed (a logout, a new password, a deactivation): the page
# reconnects, and the handshake lets it in again only if the browser's login still holds.
CLOSE_LOGIN_CHANGED = 4001
MAX_CLIENT_MESSAGE_CHARS = 1000
REPLAY_BATCH = 500
# Workers publish a transaction's events after it commits, so two steps finishing together can
# reach a watcher in the other order. An event that comes before the one it follows waits this
# long for it over pub/sub, where it nearly always is, before the event log is asked; with
# fifty watchers, asking at once cost fifty queries for every such pair.
GAP_WAIT_S = 0.25
MAX_EARLY_EVENTS = 200
# The steps whose live text one socket may follow at once (the run page follows the open one).
MAX_FOLLOWED_STEPS = 20


class _ClientMessages(AsyncJsonWebsocketConsumer):
    """Reads what a browser sends as JSON, answering anything malformed with a clear error;
    a socket closes when the login that opened it ends (services.logins, services.tokens)."""

    token_group: str | None = None
    login_group: str | None = None

    async def _follow_login(self, user_id: int) -> bool:
        """Join the groups told when this socket's login ends: the user's, and the token's if a
        token opened it; then check the token was not revoked meanwhile (a revocation either
        finds the socket in its group or is seen here). False (and closed) when it was."""
        self.login_group = logins_group(user_id)
        await self.channel_layer.group_add(self.login_group, self.channel_name)
        token_id = self.scope.get("api_token_id")
        if token_id is None:
            return True
        self.token_group = token_group(token_id)
        await self.channel_layer.group_add(self.token_group, self.channel_name)
        if not await database_sync_to_async(token_is_live)(token_id):
            await self._refuse(CLOSE_NOT_LOGGED_IN)
            return False
        return True

    async def _refuse(self, code: int) -> None:
        """Accept, then close with why: a browser learns nothing from a refused handshake (its
        close code is always 1006) and would reconnect forever; with the code, the page says
        "not logged in" or "run not found" and stops."""
        await self.accept()
        await self.close(code=code)

    async def token_revoked(self, message: dict[str, Any]) -> None:
        await self.close(code=CLOSE_NOT_LOGGED_IN)

    async def logins_changed(self, message: dict[str, Any]) -> None:
        token_id = self.scope.get("api_token_id")
        if token_id is None:
            # The session may have ended: the page reconnects, and the handshake decides.
            await self.close(code=CLOSE_LOGIN_CHANGED)
        elif not await database_sync_to_async(token_is_live)(token_id):
            # A script need not reconnect for a change that leaves its token working.
            await self.close(code=CLOSE_NOT_LOGGED_IN)

    async def disconnect(self, code: int) -> None:
        for group in (self.token_group, self.login_group):
            if group is not None:
                await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None or len(text_data) > MAX_CLIENT_MESSAGE_CHARS:
            await self._error("messages must be JSON text of at most 1000 characters")
            return
        try:
            message = await self.decode_json(text_data)
        except json.JSONDecodeError:
            await self._error("message is not valid JSON")
            return
        await self.receive_json(message)

    async def _error(self, text: str) -> None:
        await self.send_json({"type": "error", "error": text})


class RunConsumer(_ClientMessages):
    """A run's events, replayed from the log and then forwarded live, in order and without
    duplicates, and its steps' live text.

    The run's messages come through this process's Fanout (one subscription per run, not one
    per watcher), which calls `forward` for each; Channels' own dispatch, with its check of
    the database connections in a thread before every message, is not involved."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        self.group: str | None = None
        self.last_sent = 0
        # Events that came before the ones they follow, by sequence number, as serialized.
        self.early: dict[int, str] = {}
        self.gap_timer: asyncio.TimerHandle | None = None
        self.gap_fill: asyncio.Task | None = None
        # Held while sending in order spans awaits (a replay reads the log); an event that
        # arrives meanwhile waits in `early`, and the holder sends it before letting go.
        self.sending = asyncio.Lock()
        # Live text that arrives before the text so far has been sent; None once it has.
        self.held_text: list[str] | None = []
        # A client that reads batches (`?batch=1`, the run page) gets the events that arrive
        # together (a transaction's, published at its commit) in one frame: a fan-out's finish
        # queues thirty steps at once, and each frame costs the ASGI server about the same
        # whatever it holds. They are sent when the Fanout has forwarded them all (`flush`).
        self.batched = self._query_value("batch") == "1"
        # The steps whose live text this client wants: `?text=a,b` (the run page: none, then
        # the step it opens, by "text.follow"); every step's when it does not say. Live text is
        # most of what a run sends, and a watcher sees it only in an open step's card.
        self.text_steps = self._followed_from_query()
        if user is None or not user.is_authenticated:
            await self._refuse(CLOSE_NOT_LOGGED_IN)
            return
        if not await database_sync_to_async(run_user_can_watch)(user, self.run_id):
            await self._refuse(CLOSE_NOT_FOUND)
            return
        if not await self._follow_login(user.pk):
            return
        async with self.sending:
            # Subscribe before replaying, so nothing falls between the two; duplicates are
            # dropped by sequence number below.
            group = run_group(self.run_id)
            await fanout().join(group, self)
            try:
                await self.accept()
                await self._replay(self._after_from_query())
            except BaseException:
                # No disconnect follows a connect that failed: leave the feed here.
                await fanout().leave(group, self)
                raise
            self.group = group
        self._watch_gap()
        await self._send_text_so_far(self.text_steps)

    async def _send_text_so_far(self, steps: set[str] | None) -> None:
        """The text `steps` (None: all) are writing now, from its start; pieces that came
        meanwhile follow it, and their offsets let the page skip what it already has."""
        if self.held_text is None:  # held since the connect began, the first time
            self.held_text = []
        if steps is None or steps:
            for message in await sync_to_async(live_text_snapshot)(self.run_id):
                if steps is None or message["step_id"] in steps:
                    await self.send_json(text_fitted({"type": "text", **message}))
        while self.held_text:
            await self.send(text_data=self.held_text.pop(0))
        self.held_text = None

    async def disconnect(self, code: int) -> None:
        await super().disconnect(code)
        if getattr(self, "gap_timer", None) is not None:
            self.gap_timer.cancel()
        if getattr(self, "gap_fill", None) is not None:
            self.gap_fill.cancel()
        if getattr(self, "group", None):
            await fanout().leave(self.group, self)

    @cached_property
    def _query(self) -> dict[str, list[str]]:
        return parse_qs(
            self.scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True
        )

    def _query_value(self, name: str) -> str | None:
        """A parameter of the socket's URL; None when it has none, "" when it is empty."""
        return self._query[name][0] if name in self._query else None

    def _followed_from_query(self) -> set[str] | None:
        text = self._query_value("text")
        if text is None:
            return None
        return set([step for step in text.split(",") if step][:MAX_FOLLOWED_STEPS])

    def _after_from_query(self) -> int:
        try:
            return max(0, int(self._query_value("after") or "0"))
        except ValueError:
            return 0

    async def _replay(self, after: int) -> None:
        """Send the logged events after `after`, then any early ones that now follow on."""
        self.last_sent = after
        while True:
            batch = await database_sync_to_async(events_after)(
                self.run_id, self.last_sent, REPLAY_BATCH
            )
            for event in batch:
                if event["seq"] > self.last_sent:
                    self.last_sent = event["seq"]
                    message = json.dumps({"type": "event", "event": event})
                    await self.send(text_data=event_fitted(message))
            if len(batch) < REPLAY_BATCH:
                break
        await self.send_json({"type": "replay.done", "seq": self.last_sent})
        await self._send_in_order()

    async def forward(self, message: dict[str, Any]) -> None:
        """One message of the run's group, from the Fanout."""
        if message["type"] == "run.text":
            # Live text is not in the event log: it is sent as it comes, with no sequence
            # number, and a watcher that misses some sees the step's whole output when it
            # finishes.
            if self.text_steps is not None and message.get("step_id") not in self.text_steps:
                return
            if self.held_text is not None:
                self.held_text.append(message["json"])
            else:
                await self.send(text_data=message["json"])
            return
        if message["type"] != "run.event" or message["seq"] <= self.last_sent:
            return  # replayed from the log already
        self.early[message["seq"]] = message["json"]
        if self.batched:
            return  # sent by `flush`, with the rest of the burst
        if self.sending.locked():
            return  # whoever holds it sends this on its way out
        async with self.sending:
            await self._send_in_order()
        self._watch_gap()

    async def flush(self) -> None:
        """A batch client's events of the burst the Fanout has forwarded, sent in order."""
        if not self.batched:
            return
        if not self.sending.locked():  # else whoever holds it sends them on its way out
            async with self.sending:
                await self._send_in_order()
        self._watch_gap()

    async def _send_in_order(self) -> None:
        """Send the early events that follow on from the last one sent, and drop those the
        log has sent since. The last thing done under `sending`, so nothing is left behind."""
        texts = []
        while (text := self.early.pop(self.last_sent + 1, None)) is not None:
            self.last_sent += 1
            texts.append(text)
        for seq in [seq for seq in self.early if seq <= self.last_sent]:
            del self.early[seq]
        # Each event as it was serialized for every watcher (cut where it would not fit in a
        # frame: core.frames), in batch frames of their own shape for a client that reads them.
        fitted = [event_fitted(text) for text in texts]
        for frame in frames(fitted) if self.batched else fitted:
            await self.send(text_data=frame)

    def _watch_gap(self) -> None:
        """Events wait for the one before them over pub/sub for a while, then from the log;
        too many waiting go to the log at once. A gap that closed stops its clock: left
        running, it went off on the next gap at once, and all the run's watchers in a
        process then read the log together (their reads queue on one thread)."""
        if not self.early:
            if self.gap_timer is not None:
                self.gap_timer.cancel()
                self.gap_timer = None
            return
        if self.gap_fill is not None:
            return
        if len(self.early) > MAX_EARLY_EVENTS:
            if self.gap_timer is not None:
                self.gap_timer.cancel()
            self._gap_waited()
        elif self.gap_timer is None:
            self.gap_timer = asyncio.get_running_loop().call_later(GAP_WAIT_S, self._gap_waited)

    def _gap_waited(self) -> None:
        self.gap_timer = None
        if self.early:
            self.gap_fill = asyncio.ensure_future(self._fill_gap())

    async def _fill_gap(self) -> None:
        """The events before an early one did not come over pub/sub (published before this
        socket subscribed, or lost): fetch them from the log."""
        try:
            async with self.sending:
                if self.early:
                    await self._replay(self.last_sent)
        finally:
            self.gap_fill = None
        self._watch_gap()

    async def receive_json(self, message: Any, **kwargs: Any) -> None:
        """Clients may only ping, ask for a replay or say whose live text they follow;
        anything else gets a clear error."""
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "ping":
            await self.send_json({"type": "pong", "seq": self.last_sent})
        elif kind == "replay":
            after = message.get("after")
            if not isinstance(after, int) or isinstance(after, bool) or after < 0:
                await self._error("'after' must be a non-negative integer")
                return
            async with self.sending:
                await self._replay(min(after, self.last_sent))
            self._watch_gap()
        elif kind == "text.follow":
            steps = message.get("steps")
            if (
                not isinstance(steps, list)
                or len(steps) > MAX_FOLLOWED_STEPS
                or not all(isinstance(s, str) and re.fullmatch(STEP_ID_PATTERN, s) for s in steps)
            ):
                await self._error(
                    f"'steps' must be a list of at most {MAX_FOLLOWED_STEPS} step ids"
                )
                return
            before, self.text_steps = self.text_steps, set(steps)
            await self._send_text_so_far(self.text_steps - (before or set()))
        else:
            await self._error("unknown message type; expected 'ping', 'replay' or 'text.follow'")


class InboxConsumer(_ClientMessages):
    """The user's pending approvals count, pushed whenever one is requested or decided."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self._refuse(CLOSE_NOT_LOGGED_IN)
            return
        self.user = user
        if not await self._follow_login(user.pk):
            return
        self.group = user_group(user.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self._send_count()

    async def disconnect(self, code: int) -> None:
        await super().disconnect(code)
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def user_notice(self, message: dict[str, Any]) -> None:
        await self._send_count()

    async def receive_json(self, message: Any, **kwargs: Any) -> None:
        await self._error("this socket only talks")

    async def _send_count(self) -> None:
        count = await database_sync_to_async(pending_count)(self.user)
        await self.send_json({"type": "approvals", "pending": count})

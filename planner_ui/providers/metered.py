"""A provider wrapper that asks before every model call and reports every call after it.

Accounting and budgets live in the services; this wrapper is the one place that sees every
call go by, whichever vendor serves it, so no agent has to remember to count.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from .base import ModelReply, ModelRequest, Provider, ProviderError, TextSink, Usage


@dataclass(frozen=True)
class CallRecord:
    purpose: str
    provider: str
    model: str
    usage: Usage
    latency_s: float
    stop_reason: str
    error: str = ""
    tool_mode: str = ""
    # The max_tokens the call was held to because its budget left no more, if it was.
    capped_at: int | None = None

    @property
    def cut_by_budget(self) -> bool:
        """Its answer ran to the max_tokens its budget held it to: it is not whole."""
        return self.capped_at is not None and self.stop_reason == "max_tokens"


# Raises (e.g. RunStopped) to refuse the call before it is made; else returns how many tokens
# its answer may take (what a budget leaves of it), or None where nothing limits it.
Gate = Callable[[ModelRequest], int | None]
# Stores the record; may raise after storing, to stop the caller once a budget is spent.
Recorder = Callable[[CallRecord], None]


class MeteredProvider(Provider):
    def __init__(self, inner: Provider, *, gate: Gate, record: Recorder) -> None:
        super().__init__(inner.model)
        self.name = inner.name
        self.inner = inner
        self._gate = gate
        self._record = record

    def complete(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        room = self._gate(request)
        capped_at = None
        if room is not None and room < request.max_tokens:
            # The vendor stops the answer where the budget would: never past it on a long reply.
            request = replace(request, max_tokens=room)
            capped_at = room
        started = time.perf_counter()
        try:
            reply = self.inner.complete(request, on_text)
        except ProviderError as exc:
            # A failed call is recorded too: it took time, and the vendor may bill a retry.
            self._record(
                CallRecord(
                    purpose=request.purpose,
                    provider=self.name,
                    model=self.model,
                    usage=Usage(),
                    latency_s=time.perf_counter() - started,
                    stop_reason="error",
                    error=str(exc),
                )
            )
            raise
        self._record(
            CallRecord(
                purpose=request.purpose,
                provider=self.name,
                model=reply.model or self.model,
                usage=reply.usage,
                latency_s=time.perf_counter() - started,
                stop_reason=reply.stop_reason,
                tool_mode=reply.tool_mode,
                capped_at=capped_at,
            )
        )
        return reply

    def input_tokens(self, request: ModelRequest, *, counted: bool = False) -> int:
        return self.inner.input_tokens(request, counted=counted)

    def carry_tool_mode(self, mode: str) -> None:
        self.inner.carry_tool_mode(mode)

"""A provider wrapper that asks before every model call and reports every call after it.

Accounting and budgets live in the services; this wrapper is the one place that sees every
call go by, whichever vendor serves it, so no agent has to remember to count.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

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


# Raises (e.g. RunStopped) to refuse the call before it is made.
Gate = Callable[[str], None]
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
        self._gate(request.purpose)
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
            )
        )
        return reply

    def carry_tool_mode(self, mode: str) -> None:
        self.inner.carry_tool_mode(mode)

"""Anthropic's Messages API through the official SDK (anthropic 2.x).

The vendor's wire format and its exceptions stay in this file: everything above it sees only
planner_ui.providers.base, and ProviderError when something goes wrong.
"""

from __future__ import annotations

import re
import time
from typing import Any

import anthropic
import httpx2

from planner_ui.core.redaction import redact_url

from .base import (
    Message,
    ModelReply,
    ModelRequest,
    Provider,
    ProviderError,
    TextSink,
    ToolCall,
    ToolResult,
    Usage,
)
from .error_text import body_text, retries_text, timeout_seconds

# A prompt-cache breakpoint. The API caches the request prefix in the order tools, system,
# messages, so a breakpoint on the system prompt caches the tool definitions too.
_CACHE_BREAKPOINT = {"type": "ephemeral"}

# Error events that can arrive after a stream has started and are worth trying again: the
# same kinds the SDK retries when they come as an HTTP status (529 and 500) before the stream.
_RETRIED_MID_STREAM = {"overloaded_error", "api_error"}

# How the API words a prompt that does not fit the model's context window (a 400):
# "prompt is too long: 215000 tokens > 200000 maximum", or, counting max_tokens too,
# "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000". The counts
# are part of the match so that other 400s that merely mention length stay as they are.
_CONTEXT_OVERFLOW = re.compile(
    r"prompt is too long: \d+ tokens? > \d+|exceed context limit: \d+ \+ \d+ > \d+",
    re.IGNORECASE,
)


def make_client(
    *, api_key: str, base_url: str | None = None, timeout: float = 120.0, max_retries: int = 2
) -> anthropic.Anthropic:
    """The only place a client is built, so tests can point the real SDK at a local server.

    Passing `api_key` explicitly also stops the SDK from reading credentials from the
    environment or from profile files on disk. `max_retries` covers 408, 409, 429 and 5xx
    answers and connection errors; the SDK honours the server's retry-after.
    """
    if not api_key:
        raise ProviderError(
            "No Anthropic API key: set ANTHROPIC_API_KEY in the environment, or unset "
            "AGENTSITE_PROVIDER to use the offline provider."
        )
    # base_url=None lets the SDK fall back to ANTHROPIC_BASE_URL, then to the public API.
    return anthropic.Anthropic(
        api_key=api_key, base_url=base_url or None, timeout=timeout, max_retries=max_retries
    )


class AnthropicProvider(Provider):
    name = "anthropic"

    def __init__(self, model: str, client: anthropic.Anthropic) -> None:
        super().__init__(model)
        self._client = client

    def complete(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        params = _request_to_wire(self.model, request)
        # Text already handed to on_text cannot be taken back, so a retry would show it twice.
        shown = False

        def show(text: str) -> None:
            nonlocal shown
            if on_text is not None:
                shown = True
                on_text(text)

        retries_taken = 0
        while True:
            try:
                return _reply_from_wire(self._stream(params, show))
            except anthropic.APIStatusError as exc:
                # The SDK retries error statuses itself, before the stream starts, but not an
                # error event in the middle of one. We retry those, as often as the client's
                # max_retries allows and only while nothing has been shown.
                may_retry = retries_taken < self._client.max_retries and not shown
                if _is_mid_stream(exc) and exc.type in _RETRIED_MID_STREAM and may_retry:
                    time.sleep(min(0.5 * 2**retries_taken, 8.0))
                    retries_taken += 1
                    continue
                raise self._error(exc, retries_taken=retries_taken, shown=shown) from exc
            except (anthropic.AnthropicError, httpx2.HTTPError) as exc:
                raise self._error(exc, retries_taken=retries_taken, shown=shown) from exc

    def input_tokens(self, request: ModelRequest, *, counted: bool = False) -> int:
        if not counted:
            return super().input_tokens(request)
        params = _request_to_wire(self.model, request)
        del params["max_tokens"]
        try:
            return self._client.messages.count_tokens(**params).input_tokens
        except (anthropic.AnthropicError, httpx2.HTTPError):
            # The count sizes a budget's last answer more closely; without it, the estimate.
            return super().input_tokens(request)

    def _stream(self, params: dict[str, Any], on_text: TextSink) -> anthropic.types.Message:
        # The SDK sends the request (and retries 408/409/429/5xx answers) when the block is
        # entered; the events then arrive as the model writes them.
        with self._client.messages.stream(**params) as stream:
            complete = False
            for event in stream:
                if event.type == "text":
                    on_text(event.text)
                elif event.type == "message_stop":
                    complete = True
            if not complete:
                raise ProviderError(
                    "The Anthropic stream ended before the reply was complete "
                    "(the connection closed without a message_stop event)."
                )
            return stream.get_final_message()

    def _error(self, exc: Exception, *, retries_taken: int, shown: bool) -> ProviderError:
        """Our own error for anything the SDK or its HTTP client raised, without the key."""
        client = self._client
        if isinstance(exc, anthropic.APIStatusError) and _is_mid_stream(exc):
            error = _mid_stream_error(
                exc, retries=client.max_retries, retries_taken=retries_taken, shown=shown
            )
        elif isinstance(exc, anthropic.APIStatusError):
            error = _status_error(exc, retries=client.max_retries)
        # Timeouts first: they are connection errors too. The SDK raises its own before the
        # stream starts (after its retries), httpx2's while reading it (never retried).
        elif isinstance(exc, anthropic.APITimeoutError):
            error = ProviderError(
                f"The request to Anthropic timed out after {timeout_seconds(client.timeout)} s "
                f"(and {retries_text(client.max_retries)})."
            )
        elif isinstance(exc, httpx2.TimeoutException):
            error = ProviderError(
                "The reply from Anthropic stalled in the middle of the stream for longer than "
                f"the {timeout_seconds(client.timeout)} s timeout."
            )
        elif isinstance(exc, anthropic.APIConnectionError):
            error = ProviderError(
                f"Cannot reach the Anthropic API at {redact_url(str(client.base_url))} "
                f"({retries_text(client.max_retries)}): {exc.__cause__ or exc}"
            )
        elif isinstance(exc, httpx2.HTTPError):
            error = ProviderError(
                f"The connection to Anthropic broke in the middle of the reply: {exc}"
            )
        else:
            # Anything else the SDK raises (e.g. a reply it could not parse) still leaves
            # this file as our own error.
            error = ProviderError(f"The Anthropic SDK failed: {exc}")
        return _redacted(error, client.api_key)


# --- to the wire -------------------------------------------------------------------------------


def _request_to_wire(model: str, request: ModelRequest) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": _messages_to_wire(request.messages),
    }
    if request.system:
        # A list of one text block rather than a plain string, so it can carry the cache
        # breakpoint: the system prompt (and the tools before it) is the stable prefix.
        params["system"] = [
            {"type": "text", "text": request.system, "cache_control": _CACHE_BREAKPOINT}
        ]
    if request.tools:
        tools = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ]
        # A second breakpoint after the tools keeps them cached when the system prompt
        # changes from one step to the next while the tools do not.
        tools[-1]["cache_control"] = _CACHE_BREAKPOINT
        params["tools"] = tools
        if request.tool_choice == "none":
            params["tool_choice"] = {"type": "none"}
        elif len(request.required_tools) == 1:
            params["tool_choice"] = {"type": "tool", "name": request.required_tools[0]}
        elif request.required_tools:
            params["tool_choice"] = {"type": "any"}
    if request.output_schema is not None:
        params["output_config"] = {
            "format": {"type": "json_schema", "schema": _strict_schema(request.output_schema)}
        }
    return params


def _messages_to_wire(messages: list[Message]) -> list[dict[str, Any]]:
    wire = []
    for message in messages:
        converted = _message_to_wire(message)
        # The API refuses an empty assistant turn; dropping it is safe because it merges
        # consecutive user turns into one.
        if converted["content"]:
            wire.append(converted)
    return wire


def _message_to_wire(message: Message) -> dict[str, Any]:
    role = message["role"]
    if role == "user":
        return {"role": "user", "content": message["content"]}
    if role == "assistant":
        blocks: list[dict[str, Any]] = []
        # The API refuses empty text blocks, so an assistant turn that only called tools
        # carries no text block at all.
        if message.get("content"):
            blocks.append({"type": "text", "text": message["content"]})
        for call in message.get("tool_calls", []):
            blocks.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
            )
        return {"role": "assistant", "content": blocks}
    if role == "tool":
        # Tool results go back as a user turn that answers every tool_use of the previous
        # assistant turn, matched by id.
        results: list[ToolResult] = message["results"]
        return {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": result.tool_call_id,
                    "content": result.content,
                    "is_error": result.is_error,
                }
                for result in results
            ],
        }
    raise ProviderError(f"Cannot send a message with role {role!r} to Anthropic.")


def _strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema in the subset structured output accepts.

    The SDK's own transform (what `messages.parse` uses) sets "additionalProperties": false on
    every object and moves keywords the API does not enforce (pattern, minLength, maxLength,
    default, ...) into the description, so the model still reads them. Our pydantic models
    validate the reply in full afterwards.
    """
    try:
        return anthropic.transform_schema(schema)
    except ValueError as exc:
        raise ProviderError(
            f"The output schema cannot be used for structured output: {exc}"
        ) from exc


# --- from the wire -----------------------------------------------------------------------------


def _reply_from_wire(reply: anthropic.types.Message) -> ModelReply:
    texts, calls = [], []
    for block in reply.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(ToolCall(id=block.id, name=block.name, arguments=dict(block.input)))
        # Thinking and server-tool blocks carry nothing the neutral shape has room for.
    if reply.stop_reason == "max_tokens" and calls and reply.content[-1].type == "tool_use":
        # The limit struck while the model was writing this call's arguments: the SDK reads
        # the unfinished JSON leniently, so they may be missing keys or values. Ask again.
        last = calls[-1]
        calls[-1] = ToolCall(
            last.id,
            last.name,
            last.arguments,
            parse_error="the arguments were cut off at the max_tokens limit; call the tool again",
        )
    usage = reply.usage
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    return ModelReply(
        text="".join(texts),
        tool_calls=calls,
        # Always set once the stream has reached message_stop; the fallback guards the type.
        stop_reason=reply.stop_reason or "end_turn",
        usage=Usage(
            # The API reports cached prompt tokens apart from input_tokens; they are input
            # all the same, and Usage counts them in.
            input_tokens=usage.input_tokens + cache_read + cache_write,
            output_tokens=usage.output_tokens,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
        ),
        model=reply.model,
    )


# --- errors ------------------------------------------------------------------------------------


def _status_error(exc: anthropic.APIStatusError, *, retries: int) -> ProviderError:
    status = exc.status_code
    # `api_message` is error.message from the body, when the body has one.
    detail = exc.api_message or exc.message
    if status == 401:
        text = (
            "Anthropic rejected the API key (401 authentication_error): "
            f"check ANTHROPIC_API_KEY. {detail}"
        )
    elif status == 403:
        text = f"Anthropic refused access (403 permission_error): {detail}"
    elif status == 429:
        text = f"Anthropic rate-limited the request (429) and {retries_text(retries)}: {detail}"
    elif status == 529:
        text = f"Anthropic is overloaded (529) and {retries_text(retries)}: {detail}"
    elif status >= 500:
        text = f"Anthropic had a server error ({status}) and {retries_text(retries)}: {detail}"
    elif status == 400 and _CONTEXT_OVERFLOW.search(detail):
        text = f"The request is longer than the model's context window: {detail}"
    else:
        text = f"Anthropic refused the request ({status}): {detail}"
    return ProviderError(text.strip(), status=status, body=body_text(exc.body))


def _is_mid_stream(exc: anthropic.APIStatusError) -> bool:
    # The SDK raises an `event: error` in a stream as a status error carrying the stream's
    # own status, which was a success.
    return exc.status_code < 400


def _mid_stream_error(
    exc: anthropic.APIStatusError, *, retries: int, retries_taken: int, shown: bool
) -> ProviderError:
    kind = exc.type or "an error"
    text = f"Anthropic reported {kind} in the middle of the reply: {exc.api_message or exc}"
    if kind in _RETRIED_MID_STREAM:
        if retries_taken < retries and shown:
            text += " (not retried: part of the reply had already been shown)"
        else:
            text += f" ({retries_text(retries)})"
    # No HTTP status: the stream itself had answered 200.
    return ProviderError(text, body=body_text(exc.body))


def _redacted(error: ProviderError, api_key: str | None) -> ProviderError:
    """The error with the API key blanked out, should a server or proxy ever echo it."""
    text = str(error)
    if not api_key or (api_key not in text and api_key not in error.body):
        return error
    return ProviderError(
        text.replace(api_key, "[redacted]"),
        status=error.status,
        body=error.body.replace(api_key, "[redacted]"),
    )

"""Anthropic's Messages API through the official SDK (anthropic 2.x).

The vendor's wire format and its exceptions stay in this file: everything above it sees only
planner_ui.providers.base, and ProviderError when something goes wrong.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic

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

# A prompt-cache breakpoint. The API caches the request prefix in the order tools, system,
# messages, so a breakpoint on the system prompt caches the tool definitions too.
_CACHE_BREAKPOINT = {"type": "ephemeral"}


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
        params: dict[str, Any] = {
            "model": self.model,
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
        if request.output_schema is not None:
            params["output_config"] = {
                "format": {"type": "json_schema", "schema": _strict_schema(request.output_schema)}
            }
        try:
            reply = self._client.messages.create(**params)
        except anthropic.APIStatusError as exc:
            raise _status_error(exc, retries=self._client.max_retries) from exc
        except anthropic.APITimeoutError as exc:  # a subclass of APIConnectionError: first
            raise ProviderError(
                f"The request to Anthropic timed out after {_seconds(self._client.timeout)} s "
                f"(and {_retries(self._client.max_retries)})."
            ) from exc
        except anthropic.APIConnectionError as exc:
            raise ProviderError(
                f"Cannot reach the Anthropic API at {self._client.base_url} "
                f"({_retries(self._client.max_retries)}): {exc.__cause__ or exc}"
            ) from exc
        except anthropic.AnthropicError as exc:
            # Anything else the SDK raises (e.g. a reply it could not parse) still leaves
            # this file as our own error.
            raise ProviderError(f"The Anthropic SDK failed: {exc}") from exc
        return _reply_from_wire(reply)


# --- to the wire -------------------------------------------------------------------------------


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
    usage = reply.usage
    # Cached prompt tokens are reported apart from input_tokens; they are input all the same.
    input_tokens = (
        usage.input_tokens
        + (usage.cache_creation_input_tokens or 0)
        + (usage.cache_read_input_tokens or 0)
    )
    return ModelReply(
        text="".join(texts),
        tool_calls=calls,
        # Never null on a non-streamed reply; the fallback only guards the type.
        stop_reason=reply.stop_reason or "end_turn",
        usage=Usage(input_tokens=input_tokens, output_tokens=usage.output_tokens),
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
        text = f"Anthropic rate-limited the request (429) and {_retries(retries)}: {detail}"
    elif status == 529:
        text = f"Anthropic is overloaded (529) and {_retries(retries)}: {detail}"
    elif status >= 500:
        text = f"Anthropic had a server error ({status}) and {_retries(retries)}: {detail}"
    else:
        text = f"Anthropic refused the request ({status}): {detail}"
    return ProviderError(text.strip(), status=status, body=_body_text(exc.body))


def _retries(retries: int) -> str:
    if retries == 0:
        return "retries are off"
    return f"{retries} retr{'y' if retries == 1 else 'ies'} did not help"


def _body_text(body: object) -> str:
    """The error body as the API sent it: JSON when it was JSON."""
    if body is None:
        return ""
    if isinstance(body, (dict, list)):
        return json.dumps(body)
    return str(body)


def _seconds(timeout: object) -> str:
    # The client keeps a float, or an httpx2 Timeout whose read timeout is the one that fires.
    seconds = getattr(timeout, "read", timeout)
    return f"{seconds:g}" if isinstance(seconds, (int, float)) else str(seconds)

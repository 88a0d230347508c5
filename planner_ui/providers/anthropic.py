"""Anthropic's Messages API through the official SDK. The vendor's wire format and errors stay
in this file: everything above it sees only planner_ui.providers.base."""

from __future__ import annotations

from typing import Any

import anthropic

from .base import (
    Message,
    ModelReply,
    ModelRequest,
    Provider,
    ProviderError,
    ToolCall,
    ToolResult,
    Usage,
)

# Marks the stable prefix (system prompt, tool definitions) for prompt caching.
_CACHE = {"type": "ephemeral"}


def make_client(
    *, api_key: str, base_url: str | None = None, timeout: float = 120.0, max_retries: int = 2
) -> anthropic.Anthropic:
    """The only place a client is built, so tests can point the real SDK at a local server."""
    if not api_key:
        raise ProviderError(
            "No Anthropic API key: set ANTHROPIC_API_KEY in the environment, or unset "
            "AGENTSITE_PROVIDER to use the offline provider."
        )
    return anthropic.Anthropic(
        api_key=api_key, base_url=base_url or None, timeout=timeout, max_retries=max_retries
    )


class AnthropicProvider(Provider):
    name = "anthropic"

    def __init__(self, model: str, client: anthropic.Anthropic) -> None:
        super().__init__(model)
        self._client = client

    def complete(self, request: ModelRequest) -> ModelReply:
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "system": [{"type": "text", "text": request.system, "cache_control": _CACHE}],
            "messages": [_to_wire(m) for m in request.messages],
        }
        if request.tools:
            tools = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in request.tools
            ]
            tools[-1]["cache_control"] = _CACHE
            params["tools"] = tools
        if request.output_schema is not None:
            params["output_config"] = {
                "format": {"type": "json_schema", "schema": request.output_schema}
            }
        try:
            reply = self._client.messages.create(**params)
        except anthropic.APIStatusError as exc:
            raise _status_error(exc) from exc
        except anthropic.APITimeoutError as exc:
            timeout = self._client.timeout
            raise ProviderError(f"Anthropic did not answer within {timeout} s") from exc
        except anthropic.APIConnectionError as exc:
            raise ProviderError(
                f"Cannot reach the Anthropic API at {self._client.base_url}: {exc}"
            ) from exc
        return _from_wire(reply)


def _to_wire(message: Message) -> dict[str, Any]:
    role = message["role"]
    if role == "user":
        return {"role": "user", "content": message["content"]}
    if role == "assistant":
        blocks: list[dict[str, Any]] = []
        if message.get("content"):
            blocks.append({"type": "text", "text": message["content"]})
        for call in message.get("tool_calls", []):
            blocks.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
            )
        return {"role": "assistant", "content": blocks}
    if role == "tool":
        results: list[ToolResult] = message["results"]
        return {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": r.tool_call_id,
                    "content": r.content,
                    "is_error": r.is_error,
                }
                for r in results
            ],
        }
    raise ProviderError(f"cannot send a message with role {role!r} to Anthropic")


def _from_wire(reply: Any) -> ModelReply:
    texts, calls = [], []
    for block in reply.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(ToolCall(id=block.id, name=block.name, arguments=dict(block.input)))
    usage = reply.usage
    cached = (getattr(usage, "cache_creation_input_tokens", 0) or 0) + (
        getattr(usage, "cache_read_input_tokens", 0) or 0
    )
    return ModelReply(
        text="".join(texts),
        tool_calls=calls,
        stop_reason=reply.stop_reason or "end_turn",
        usage=Usage(input_tokens=usage.input_tokens + cached, output_tokens=usage.output_tokens),
        model=reply.model,
    )


def _status_error(exc: anthropic.APIStatusError) -> ProviderError:
    status = exc.status_code
    detail = _api_message(exc)
    if status == 401:
        text = (
            "Anthropic rejected the API key (401 authentication_error): "
            f"check ANTHROPIC_API_KEY. {detail}"
        )
    elif status == 403:
        text = f"Anthropic refused access (403): {detail}"
    elif status == 429:
        text = f"Anthropic rate-limited the request (429) and retries did not help: {detail}"
    elif status == 529:
        text = f"Anthropic is overloaded (529) and retries did not help: {detail}"
    elif status >= 500:
        text = f"Anthropic had a server error ({status}): {detail}"
    else:
        text = f"Anthropic refused the request ({status}): {detail}"
    return ProviderError(text.strip(), status=status, body=str(exc.body or ""))


def _api_message(exc: anthropic.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(exc.message)

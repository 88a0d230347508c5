"""A local HTTP server that speaks OpenAI's Chat Completions API, for testing the real SDK offline.

    with FakeOpenAI() as server:
        server.enqueue_text("Hi")
        client = openai.OpenAI(api_key="test-key", base_url=server.base_url)
        ...
        server.requests[0].body["messages"]

Tests enqueue replies; the server records every request (method, path, lower-cased headers and
JSON body) and answers POST /v1/chat/completions in the wire format: one chat.completion
object, or an SSE stream of chat.completion.chunk objects when the request says
"stream": true. Like the real API it refuses a wrong key (401), a request without model or
messages, a tool message that answers no tool call of the assistant message before it, and an
assistant message whose tool calls are not all answered by the tool messages after it (400),
so a mapping bug fails here as it would there. `FakeOpenAI(api_key=None)` accepts any key, as
local servers (Ollama, vLLM, llama.cpp) do.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from .http_server import Exchange, FakeModelServer, Recorded, next_id, pieces, request_id
from .openai_rules import invalid as _invalid

__all__ = ["FakeOpenAI", "Recorded"]

# Small, so that text and tool arguments arrive in several deltas as they do from the API.
_PIECE_CHARS = 8


@dataclass
class _Reply:
    status: int = 200
    text: str = ""
    refusal: str = ""
    # (id or "" when the server should send none, name, arguments as the JSON string sent)
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)
    finish_reason: str = "stop"
    usage: dict[str, Any] | None = None
    model: str = ""
    delay_s: float = 0.0
    stall_s: float = 0.0
    piece_delay_s: float = 0.0
    # How a stream goes wrong after its text: "" (it does not), "error" (an error event, as
    # OpenAI sends one), "legacy_error" (a bare error object, as older vLLM sends one), "cut"
    # (the connection closes cleanly before the finish_reason) or "drop" (it closes before the
    # content-length the response promised).
    stream_failure: str = ""
    error: dict[str, Any] = field(default_factory=dict)
    error_body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    # How many tokens the tool calls' arguments take to write (see enqueue_long_tool_call),
    # and how a server answers when the request's max_tokens is fewer: "llamacpp" or "stream".
    arguments_tokens: int = 0
    cut_off_as: str = ""


class FakeOpenAI(FakeModelServer[_Reply]):
    """Use as a context manager; `base_url` (ending in /v1) is what the SDK should be given."""

    path_prefix = "/v1"

    def __init__(self, api_key: str | None = "test-key") -> None:
        super().__init__(api_key)

    def __enter__(self) -> FakeOpenAI:
        super().__enter__()
        return self

    # --- scripting ---------------------------------------------------------------------------
    def enqueue_reply(
        self,
        *,
        text: str = "",
        tool_calls: list[tuple[str, str, str]] | None = None,
        refusal: str = "",
        finish_reason: str | None = None,
        model: str = "",
        delay_s: float = 0.0,
        stall_s: float = 0.0,
        piece_delay_s: float = 0.0,
        with_usage: bool = True,
        prompt_tokens: int = 10,
        completion_tokens: int = 5,
        cached_tokens: int | None = None,
        cache_write_tokens: int | None = None,
        stream_failure: str = "",
    ) -> None:
        """Any reply. finish_reason defaults to "tool_calls" with tool calls, else "stop";
        `model` overrides the model the reply reports (by default the one asked for);
        `with_usage=False` sends no usage at all, as some local servers do; `delay_s` holds
        the answer back and `stall_s` pauses a stream after its first chunk, to test
        timeouts; `piece_delay_s` paces every chunk, as a model writing at its own speed."""
        tool_calls = tool_calls or []
        usage = None
        if with_usage:
            usage = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
            details = {"cached_tokens": cached_tokens, "cache_write_tokens": cache_write_tokens}
            if any(value is not None for value in details.values()):
                usage["prompt_tokens_details"] = {k: v for k, v in details.items() if v is not None}
        self._enqueue(
            _Reply(
                text=text,
                refusal=refusal,
                tool_calls=tool_calls,
                finish_reason=finish_reason or ("tool_calls" if tool_calls else "stop"),
                usage=usage,
                model=model,
                delay_s=delay_s,
                stall_s=stall_s,
                piece_delay_s=piece_delay_s,
                stream_failure=stream_failure,
            )
        )

    def enqueue_text(self, text: str, **options: Any) -> None:
        """A text reply; `options` as for enqueue_reply."""
        self.enqueue_reply(text=text, **options)

    def enqueue_json(self, data: Any, **options: Any) -> None:
        """A structured-output reply: the JSON document is the reply's text."""
        self.enqueue_reply(text=json.dumps(data), **options)

    def enqueue_refusal(self, refusal: str, **options: Any) -> None:
        """A structured-output refusal: the API's refusal field, with no text."""
        self.enqueue_reply(refusal=refusal, **options)

    def enqueue_tool_calls(
        self,
        calls: list[tuple[str, str | dict[str, Any]]],
        *,
        text: str = "",
        with_ids: bool = True,
        **options: Any,
    ) -> list[str]:
        """A reply that calls tools, given as (name, arguments); arguments given as a string
        are sent as they are (to send malformed JSON), a dict as its JSON. Returns the call
        ids ("" each with `with_ids=False`, which sends none, as some local servers do)."""
        wire = [
            (
                f"call_{next_id():06d}" if with_ids else "",
                name,
                arguments if isinstance(arguments, str) else json.dumps(arguments),
            )
            for name, arguments in calls
        ]
        self.enqueue_reply(text=text, tool_calls=wire, **options)
        return [call_id for call_id, _, _ in wire]

    def enqueue_long_tool_call(
        self, name: str, arguments: dict[str, Any], *, server: str = "llamacpp"
    ) -> None:
        """A reply calling one tool with long arguments, which takes one token per 4 characters
        of them to write, so that whether it fits depends on the request's max_tokens.

        When it does not fit, `server="llamacpp"` answers as llama.cpp's server does: it parses
        the arguments before it answers, fails on the cut-off string and sends HTTP 500 with
        "Failed to parse tool call arguments as JSON" (its message and body, as reported from
        llama-server). `server="stream"` streams the arguments up to the limit and finishes
        with finish_reason "length", as OpenAI, vLLM and Ollama do."""
        wire = json.dumps(arguments)
        self._enqueue(
            _Reply(
                tool_calls=[(f"call_{next_id():06d}", name, wire)],
                finish_reason="tool_calls",
                usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                arguments_tokens=len(wire) // 4 + 1,
                cut_off_as=server,
            )
        )

    def enqueue_error(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",  # noqa: A002 - the API's own field name
        param: str | None = None,
        code: str | None = None,
        retry_after_ms: int | None = None,
        headers: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
    ) -> None:
        """An error answer in OpenAI's shape, or with `body` that whole body instead, for
        servers whose errors look different (vLLM's {"error": "Unauthorized"}, ...).

        `retry_after_ms` sends the header the SDK reads first (see _parse_retry_after_header
        in openai/_base_client.py), so that its retries in tests are immediate. (retry-after: 0
        would not do: the SDK ignores a wait of zero and falls back to its 0.5-8 s exponential
        backoff.)"""
        headers = dict(headers or {})
        if retry_after_ms is not None:
            headers["retry-after-ms"] = str(retry_after_ms)
        error = {"message": message, "type": type, "param": param, "code": code}
        self._enqueue(_Reply(status=status, error=error, headers=headers, error_body=body))

    def enqueue_stream_error(self, message: str, *, text: str = "", legacy: bool = False) -> None:
        """A stream that fails after `text`: an error event in OpenAI's shape, or with
        `legacy` a bare error object as older vLLM sends."""
        self._enqueue(
            _Reply(
                text=text,
                stream_failure="legacy_error" if legacy else "error",
                error={"message": message, "type": "server_error"},
            )
        )

    def enqueue_cut_stream(self, text: str, *, incomplete_body: bool = False) -> None:
        """A stream whose connection closes after `text`, before the reply is finished: a clean
        end, or with `incomplete_body` short of the content-length the response promised, which
        the client sees as a broken connection."""
        self.enqueue_reply(text=text, stream_failure="drop" if incomplete_body else "cut")

    # --- wire format -------------------------------------------------------------------------
    def answer(self, http: Exchange, recorded: Recorded) -> None:
        body = recorded.body
        if recorded.path.split("?")[0] != "/v1/chat/completions":
            return _error(http, 404, {"message": f"Invalid URL (POST {recorded.path})"})
        if self.api_key is not None:
            if not recorded.api_key:
                return _error(
                    http,
                    401,
                    {
                        "message": "You didn't provide an API key. You need to provide "
                        "your API key in an Authorization header using Bearer auth.",
                    },
                )
            if recorded.api_key != self.api_key:
                # The real API masks most of the key; this fake quotes all of it, to prove
                # that our messages leave it out.
                return _error(
                    http,
                    401,
                    {
                        "message": f"Incorrect API key provided: {recorded.api_key}. "
                        "You can find your API key at "
                        "https://platform.openai.com/account/api-keys.",
                        "code": "invalid_api_key",
                    },
                )
        if problem := _invalid(body):
            return _error(http, 400, problem)
        reply = self._take()
        if reply is None:
            # x-should-retry: false, or the SDK would retry a 500 and ask again.
            return _error(
                http,
                500,
                {
                    "message": "FakeOpenAI has no reply queued for this request: call "
                    "enqueue_text/enqueue_json/enqueue_tool_calls/enqueue_error first",
                    "type": "server_error",
                },
                {"x-should-retry": "false"},
            )
        if reply.delay_s:
            time.sleep(reply.delay_s)
        limit = body.get("max_tokens") or body.get("max_completion_tokens") or 0
        if reply.arguments_tokens and limit and reply.arguments_tokens > limit:
            if reply.cut_off_as == "llamacpp":
                return _send(http, 500, _llamacpp_cut_off(reply, limit))
            reply = _cut_off(reply, limit)
        if reply.error_body is not None:
            return _send(http, reply.status, reply.error_body, reply.headers)
        if reply.status != 200:
            return _error(http, reply.status, reply.error, reply.headers)
        model = reply.model or body["model"]
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return _stream(http, _chunks(reply, model, include_usage), reply)
        _send(http, 200, _completion(reply, model))


def _llamacpp_cut_off(reply: _Reply, limit: int) -> dict[str, Any]:
    arguments = reply.tool_calls[0][2][: limit * 4]
    column = len(arguments) + 1
    return {
        "error": {
            "code": 500,
            "message": "Failed to parse tool call arguments as JSON: "
            "[json.exception.parse_error.101] parse error at line 1, column "
            f"{column}: syntax error while parsing value - invalid string: missing closing "
            f"quote; last read: '{arguments[-60:]}'",
            "type": "server_error",
        }
    }


def _cut_off(reply: _Reply, limit: int) -> _Reply:
    """The reply as far as `limit` tokens go, finished for "length"."""
    call_id, name, arguments = reply.tool_calls[0]
    return _Reply(
        tool_calls=[(call_id, name, arguments[: limit * 4])],
        finish_reason="length",
        usage={"prompt_tokens": 10, "completion_tokens": limit, "total_tokens": 10 + limit},
    )


def _send(
    http: Exchange, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    http.send_json(status, payload, headers, request_id_header="x-request-id")


def _error(
    http: Exchange, status: int, error: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    shape = {"message": "", "type": "invalid_request_error", "param": None, "code": None}
    _send(http, status, {"error": {**shape, **error}}, headers)


def _stream(http: Exchange, chunks: list[dict[str, Any]], reply: _Reply) -> None:
    headers = {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
        "x-request-id": request_id(),
    }
    if reply.stream_failure == "drop":
        headers["content-length"] = "1000000"
    http.start_events(headers)
    for index, chunk in enumerate(chunks):
        http.write_event(f"data: {json.dumps(chunk)}\n\n")
        if index == 0 and reply.stall_s:
            time.sleep(reply.stall_s)
        if reply.piece_delay_s:
            time.sleep(reply.piece_delay_s)
    if reply.stream_failure in ("cut", "drop"):
        return
    if reply.stream_failure == "error":
        error = {"param": None, "code": None, **reply.error}
        http.write_event(f"data: {json.dumps({'error': error})}\n\n")
        return
    if reply.stream_failure == "legacy_error":
        error = {"object": "error", "param": None, "code": 500, **reply.error}
        http.write_event(f"data: {json.dumps(error)}\n\n")
        return
    http.write_event("data: [DONE]\n\n")


def _completion(reply: _Reply, model: str) -> dict[str, Any]:
    """The reply as a non-streamed chat.completion object."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text or None,
        "refusal": reply.refusal or None,
        "annotations": [],
    }
    if reply.tool_calls:
        message["tool_calls"] = [_tool_call(*call) for call in reply.tool_calls]
    completion = {
        "id": f"chatcmpl-{next_id():06d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}
        ],
        "system_fingerprint": "fp_fake",
    }
    if reply.usage is not None:
        completion["usage"] = reply.usage
    return completion


def _tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id:
        call["id"] = call_id
    return call


def _chunks(reply: _Reply, model: str, include_usage: bool) -> list[dict[str, Any]]:
    """The reply as the API streams it: the role first, then text, refusal and tool call
    deltas, then the finish_reason, then (when asked for) a usage chunk with no choices. A
    stream that fails stops after its text."""
    head = {
        "id": f"chatcmpl-{next_id():06d}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_fake",
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        # With include_usage every chunk carries "usage": null but the last.
        return {**head, "choices": [choice], **({"usage": None} if include_usage else {})}

    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    chunks += [chunk({"content": piece}) for piece in pieces(reply.text, _PIECE_CHARS)]
    if reply.stream_failure:
        return chunks
    chunks += [chunk({"refusal": piece}) for piece in pieces(reply.refusal, _PIECE_CHARS)]
    for index, (call_id, name, arguments) in enumerate(reply.tool_calls):
        first = {"index": index, **_tool_call(call_id, name, "")}
        chunks.append(chunk({"tool_calls": [first]}))
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in pieces(arguments, _PIECE_CHARS)
        ]
    chunks.append(chunk({}, reply.finish_reason))
    if include_usage and reply.usage is not None:
        chunks.append({**head, "choices": [], "usage": reply.usage})
    return chunks

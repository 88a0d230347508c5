"""OpenAI's Chat Completions API through the official SDK (openai 3.x).

Many servers speak this protocol besides OpenAI itself: Ollama (http://localhost:11434/v1),
vLLM, llama.cpp's server, LM Studio. They differ in details (missing usage, missing tool call
ids, malformed tool arguments from small models, error bodies of every shape), so this file
reads replies leniently and reports failures plainly.

The vendor's wire format and its exceptions stay in this file: everything above it sees only
planner_ui.providers.base, and ProviderError when something goes wrong.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote

import httpx2
import openai
from openai.types.chat import ChatCompletionChunk

from planner_ui.core.errors import ReplyCutOff
from planner_ui.core.redaction import redact_url
from planner_ui.core.routing import TOOL_MODES
from planner_ui.core.text_calls import recognise_calls

from .base import (
    Message,
    ModelReply,
    ModelRequest,
    Provider,
    ProviderError,
    TextSink,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
)
from .error_text import body_text, retries_text, timeout_seconds

# Local servers ignore the key, but the SDK refuses to build a client without one.
NO_KEY_PLACEHOLDER = "not-needed"

_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
# Phrases servers use when a prompt does not fit: OpenAI and vLLM ("maximum context length"),
# llama.cpp ("exceeds the available context size"), others ("too many tokens").
_CONTEXT_PHRASES = (
    "context length",
    "maximum context",
    "context window",
    "context size",
    "too many tokens",
    "prompt is too long",
)
# What llama.cpp's server says, with HTTP 500, when a reply ran into max_tokens inside a tool
# call's arguments (it parses them before answering, and a string cut off is no JSON).
_CUT_OFF_ARGUMENTS = "Failed to parse tool call arguments"
_QUOTED_ARGUMENTS_CHARS = 200
_QUOTED_BODY_CHARS = 500


def make_client(
    *, api_key: str, base_url: str, timeout: float = 120.0, max_retries: int = 2
) -> openai.OpenAI:
    """The only place a client is built, so tests can point the real SDK at a local server.

    `base_url` is required: without it the SDK would read OPENAI_BASE_URL itself or fall back
    to api.openai.com, and a run meant for a local model would quietly go elsewhere.
    `max_retries` covers 408, 409, 429 and 5xx answers and connection errors; the SDK honours
    the server's retry-after-ms and retry-after headers.
    """
    if not base_url:
        raise ProviderError(
            "No OpenAI-compatible server configured: set OPENAI_BASE_URL (e.g. "
            "http://localhost:11434/v1 for Ollama, https://api.openai.com/v1 for OpenAI) or "
            "add it in the admin."
        )
    return openai.OpenAI(
        api_key=api_key or NO_KEY_PLACEHOLDER,
        base_url=base_url,
        timeout=timeout,
        max_retries=max_retries,
        http_client=openai.DefaultHttpxClient(event_hooks={"response": [_no_retry_of_a_cut_off]}),
    )


def _no_retry_of_a_cut_off(response: httpx2.Response) -> None:
    """Tell the SDK not to retry llama.cpp's 500 for a tool call cut off at max_tokens.

    The same request makes the model write the same too-long call again: each retry would spend
    a whole generation (minutes on a small machine) to fail the same way. x-should-retry is the
    header the SDK itself obeys before its status rules.
    """
    if response.status_code != 500:
        return
    response.read()  # an error body: small, and the SDK reads it next anyway
    if _CUT_OFF_ARGUMENTS in response.text:
        response.headers["x-should-retry"] = "false"


class OpenAICompatProvider(Provider):
    name = "openai"

    def __init__(
        self,
        model: str,
        client: openai.OpenAI,
        *,
        name: str = "openai",
        tool_mode: str = "native",
    ) -> None:
        super().__init__(model)
        self.name = name  # "local" for a model agentsite serves itself: same protocol
        self._client = client
        if tool_mode not in TOOL_MODES:
            raise ProviderError(f"Unknown tool mode {tool_mode!r}; use one of {TOOL_MODES}.")
        self.tool_mode = tool_mode
        # Whether tools are asked for in the prompt (see _prompted_params). "auto" starts
        # native and switches after a reply that wrote its call as text or sent arguments JSON
        # cannot read, for the rest of the run (carry_tool_mode starts later steps switched).
        self.prompted = tool_mode == "prompted"
        # max_tokens is what Ollama, LM Studio and older llama.cpp servers read (they ignore
        # max_completion_tokens, leaving the reply unbounded); OpenAI's reasoning models refuse
        # it by name, and then we switch for the rest of this provider's life.
        self._max_tokens_param = "max_tokens"

    def complete(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        # A reply that must call a tool is held to it by a schema on a route that may be asked
        # in the prompt, even while it is native: llama.cpp's grammar for native calls let
        # Qwen2.5-Coder-1.5B write past 1,300 tokens without closing one (tool_choice
        # "required"); a schema with bounded arguments closes it.
        held = bool(request.required_tools) and self.tool_mode != "native"
        prompted = (self.prompted or held) and bool(request.tools) and request.output_schema is None
        if prompted:
            request = _prompted_request(request)
        params: dict[str, Any] = {
            "model": self.model,
            "messages": _messages_to_wire(request.system, request.messages),
            self._max_tokens_param: request.max_tokens,
            # Always streamed: a slow local model then never trips the read timeout while it
            # is still writing, and on_text gets the text as it comes.
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    },
                }
                for t in request.tools
            ]
            if request.tool_choice == "none":
                params["tool_choice"] = "none"
            elif len(request.required_tools) == 1:
                name = request.required_tools[0]
                params["tool_choice"] = {"type": "function", "function": {"name": name}}
            elif request.required_tools:
                params["tool_choice"] = "required"
        if request.output_schema is not None:
            # Not strict: strict mode demands a schema subset (every property required, no
            # defaults) that local servers enforce unevenly. Our pydantic models validate the
            # reply in full afterwards anyway.
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": request.output_schema, "strict": False},
            }
        try:
            stream = self._open(params)
        except openai.OpenAIError as exc:
            raise self._error(exc, max_tokens=request.max_tokens) from exc
        streamed = _StreamedReply()
        for chunk in self._chunks(stream):
            if text := streamed.add(chunk):
                if on_text is not None:
                    on_text(text)
        reply = streamed.finish(fallback_model=self.model, base_url=self._base_url)
        if prompted:
            reply = _prompted_reply(reply)
        elif self.tool_mode == "auto" and request.tools and _needed_help(reply, request.tools):
            self.prompted = True
        if self.tool_mode == TOOL_MODES[0]:
            return reply
        # The mode the route is in now: the run page shows it, and the route's next step starts
        # in it (services.providers.run_provider).
        return replace(reply, tool_mode="prompted" if self.prompted else "native")

    def carry_tool_mode(self, mode: str) -> None:
        if self.tool_mode == "auto" and mode == "prompted":
            self.prompted = True

    def _open(self, params: dict[str, Any]) -> openai.Stream[ChatCompletionChunk]:
        stream: openai.Stream[ChatCompletionChunk]  # create's overloads cannot tell from **params
        try:
            stream = self._client.chat.completions.create(**params)
            return stream
        except openai.BadRequestError as exc:
            refused = exc.param == "max_tokens" and exc.code == "unsupported_parameter"
            if not refused or "max_tokens" not in params:
                raise  # e.g. a max_tokens too large for the model: the other name fails too
            self._max_tokens_param = "max_completion_tokens"
            params["max_completion_tokens"] = params.pop("max_tokens")
            stream = self._client.chat.completions.create(**params)
            return stream

    def _chunks(self, stream: openai.Stream[ChatCompletionChunk]) -> Iterator[ChatCompletionChunk]:
        """The stream's chunks; a failure while reading them leaves as ProviderError.

        A generator, so that only the SDK's reading is guarded: an exception raised by the
        caller's on_text passes through untouched.
        """
        try:
            with stream:
                for chunk in stream:
                    # Older vLLM reports a failure mid-stream as a bare error object, which
                    # the SDK (looking for an "error" key) passes on as a chunk.
                    if getattr(chunk, "object", None) == "error":
                        message = getattr(chunk, "message", None) or "unknown error"
                        raise ProviderError(
                            f"The OpenAI-compatible server at {self._base_url} failed "
                            f"mid-reply: {message}",
                            body=self._redact(json.dumps(chunk.to_dict())),
                        )
                    yield chunk
        except openai.OpenAIError as exc:
            raise self._error(exc, mid_stream=True) from exc
        except ValueError as exc:  # a data line that is not JSON
            raise ProviderError(
                f"The OpenAI-compatible server at {self._base_url} sent a stream the SDK "
                f"could not read: {exc}"
            ) from exc

    @property
    def _base_url(self) -> str:
        """The server's address for messages, which reach the run's owner: without the
        credentials an admin may have put in it."""
        return redact_url(str(self._client.base_url).rstrip("/"))

    def _redact(self, text: str) -> str:
        """The text without the API key, should a server echo it back (OpenAI quotes it in
        its 401 message)."""
        key = self._client.api_key
        if key and key != NO_KEY_PLACEHOLDER:
            text = text.replace(key, "***")
        # A user and password in the base URL go out as HTTP Basic credentials, which a
        # server may quote back the same way.
        url = self._client.base_url
        if url.userinfo:
            basic = base64.b64encode(unquote(url.userinfo.decode()).encode()).decode()
            text = text.replace(basic, "***")
        return text

    def _error(
        self, exc: openai.OpenAIError, *, mid_stream: bool = False, max_tokens: int = 0
    ) -> ProviderError:
        server = f"OpenAI-compatible server at {self._base_url}"
        retries = retries_text(self._client.max_retries)
        if isinstance(exc, openai.APIStatusError) and _CUT_OFF_ARGUMENTS in _detail(exc):
            return ReplyCutOff(
                self._redact(
                    f"The model's tool call was cut off before its arguments were complete, "
                    f"most likely at the reply's limit of {max_tokens} tokens; the {server} "
                    f"could not parse them ({exc.status_code}): {_detail(exc)[:300]}"
                ),
                status=exc.status_code,
                body=self._redact(body_text(exc.body)),
            )
        if isinstance(exc, openai.APIStatusError):
            text = _status_text(exc, server=server, model=self.model, retries=retries)
            body = body_text(exc.body)
            return ProviderError(
                self._redact(text), status=exc.status_code, body=self._redact(body)
            )
        # The SDK retries a request, never a stream it has started reading.
        if isinstance(exc, openai.APITimeoutError):  # a subclass of APIConnectionError: first
            seconds = timeout_seconds(self._client.timeout)
            if mid_stream:
                return ProviderError(f"The reply from the {server} stalled for over {seconds} s.")
            return ProviderError(
                f"The request to the {server} timed out after {seconds} s ({retries})."
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            if mid_stream:
                return ProviderError(f"The connection to the {server} broke mid-reply: {cause}")
            return ProviderError(
                f"Cannot reach the {server} (is it running? e.g. `ollama serve`) and "
                f"{retries}: {cause}"
            )
        if isinstance(exc, openai.APIError):  # an error event inside the stream
            return ProviderError(
                self._redact(f"The {server} failed mid-reply: {_detail(exc)}"),
                body=self._redact(body_text(exc.body)),
            )
        # Anything else the SDK raises still leaves this file as our own error.
        return ProviderError(self._redact(f"The OpenAI SDK failed: {exc}"))


# --- tools in the prompt ("prompted" mode) -----------------------------------------------------

PROMPTED_RULES = """You can call tools. Every reply of yours is one JSON object and nothing else:
{"tool_calls": [{"name": "<tool>", "arguments": {<its arguments>}}]} to call one or more tools
(their results come back in the next message), or {"answer": "<your final reply, as Markdown>"}
when you are done. The tools, each with the JSON schema of its arguments:"""


def _prompted_request(request: ModelRequest) -> ModelRequest:
    """The request with its tools described in the system prompt and its replies held to a
    schema (a tool call or a final answer), for a server that is not asked for native calls:
    llama.cpp and vLLM enforce the schema with a grammar, OpenAI through response_format. The
    history's calls and results become text, since no tools are declared to answer."""
    listing = "\n".join(
        f"- {t.name}: {t.description}\n  arguments: {json.dumps(t.input_schema)}"
        for t in request.tools
    )
    system = f"{request.system}\n\n{PROMPTED_RULES}\n{listing}"
    return replace(
        request,
        system=system,
        messages=_prompted_messages(request.messages),
        tools=[],
        output_schema=_prompted_schema(
            request.tools,
            answer_only=request.tool_choice == "none",
            required=request.required_tools,
        ),
    )


def _prompted_schema(
    tools: list[ToolSpec], *, answer_only: bool = False, required: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A tool call or a final answer; only an answer (`answer_only`); or only a call of one of
    the `required` tools."""
    answer = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }
    if answer_only:
        # Held to an answer by the server's grammar: the one way a small model surely stops.
        return answer
    call = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"name": {"const": t.name}, "arguments": t.input_schema},
                "required": ["name", "arguments"],
            }
            for t in [t for t in tools if t.name in required] or tools
        ]
    }
    calls = {
        "type": "object",
        "properties": {"tool_calls": {"type": "array", "items": call, "minItems": 1}},
        "required": ["tool_calls"],
    }
    if required:
        return calls
    return {"anyOf": [calls, answer]}


def _prompted_messages(messages: list[Message]) -> list[Message]:
    out: list[Message] = []
    names: dict[str, str] = {}
    for message in messages:
        if message["role"] == "assistant" and message.get("tool_calls"):
            calls: list[ToolCall] = message["tool_calls"]
            names.update((c.id, c.name) for c in calls)
            wire = [{"name": c.name, "arguments": c.arguments} for c in calls]
            out.append({"role": "assistant", "content": json.dumps({"tool_calls": wire})})
        elif message["role"] == "assistant":
            out.append({"role": "assistant", "content": json.dumps({"answer": message["content"]})})
        elif message["role"] == "tool":
            results: list[ToolResult] = message["results"]
            text = "\n\n".join(
                f"Result of {names.get(r.tool_call_id, 'the call')}"
                f"{' (an error)' if r.is_error else ''}:\n{r.content}"
                for r in results
            )
            out.append({"role": "user", "content": text})
        else:
            out.append(message)
    return out


def _prompted_reply(reply: ModelReply) -> ModelReply:
    """The reply's JSON read back into calls or an answer. What is no such JSON (a server that
    enforces no schema) stays text, for the executor to read as it reads any text."""
    try:
        data = json.loads(reply.text)
    except json.JSONDecodeError:
        return reply
    if isinstance(data, dict) and isinstance(data.get("answer"), str):
        return replace(reply, text=data["answer"])
    if not (isinstance(data, dict) and isinstance(data.get("tool_calls"), list)):
        return reply
    calls = []
    for item in data["tool_calls"]:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        arguments = item.get("arguments")
        call_id = f"call_{uuid.uuid4().hex[:24]}"
        if isinstance(arguments, dict):
            calls.append(ToolCall(call_id, item["name"], arguments))
        else:
            problem = f"the arguments must be a JSON object, not {type(arguments).__name__}"
            calls.append(ToolCall(call_id, item["name"], {}, parse_error=problem))
    if not calls:
        return reply
    stop = "tool_use" if reply.stop_reason == "end_turn" else reply.stop_reason
    return replace(reply, text="", tool_calls=calls, stop_reason=stop)


def _needed_help(reply: ModelReply, tools: list[ToolSpec]) -> bool:
    """Whether a native-mode reply wrote its call as text, or sent arguments JSON cannot read:
    what makes an "auto" route ask in the prompt from then on."""
    if any(call.parse_error for call in reply.tool_calls):
        return True
    known = {t.name for t in tools}
    return not reply.tool_calls and bool(recognise_calls(reply.text, known).calls)


# --- to the wire -------------------------------------------------------------------------------


def _messages_to_wire(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        wire.extend(_message_to_wire(message))
    return wire


def _message_to_wire(message: Message) -> list[dict[str, Any]]:
    role = message["role"]
    if role == "user":
        return [{"role": "user", "content": message["content"]}]
    if role == "assistant":
        calls: list[ToolCall] = message.get("tool_calls", [])
        if not calls and not message.get("content"):
            return []  # an empty turn says nothing, and consecutive user turns are allowed
        if not calls:
            return [{"role": "assistant", "content": message["content"]}]
        return [
            {
                "role": "assistant",
                # null, not "", beside tool calls: the shape the API itself returns, which
                # every compatible server accepts back.
                "content": message.get("content") or None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        # A call whose arguments could not be parsed goes back as {}: Ollama
                        # re-parses this string and would refuse the whole request.
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                    for call in calls
                ],
            }
        ]
    if role == "tool":
        # One message per result, matched by id; the format has no error flag, so an error
        # says so in its text.
        results: list[ToolResult] = message["results"]
        return [
            {
                "role": "tool",
                "tool_call_id": result.tool_call_id,
                "content": f"Error: {result.content}" if result.is_error else result.content,
            }
            for result in results
        ]
    raise ProviderError(f"Cannot send a message with role {role!r} to an OpenAI-compatible server.")


# --- from the wire -----------------------------------------------------------------------------


@dataclass
class _PartialCall:
    id: str
    name: str = ""
    arguments: str = ""


@dataclass
class _StreamedReply:
    """A reply assembled from stream chunks."""

    texts: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    calls: list[_PartialCall] = field(default_factory=list)
    calls_by_index: dict[int, _PartialCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Any = None
    model: str = ""

    def add(self, chunk: ChatCompletionChunk) -> str:
        """Take in one chunk; return the text it adds, if any."""
        self.model = self.model or getattr(chunk, "model", None) or ""
        # Usually one last chunk with no choices; some servers send running totals on every
        # chunk, so the last one seen wins.
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        text = ""
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0):
                continue  # we never ask for n > 1
            delta = choice.delta
            if delta is not None:
                text += getattr(delta, "content", None) or ""
                if refusal := getattr(delta, "refusal", None):
                    self.refusals.append(refusal)
                for fragment in getattr(delta, "tool_calls", None) or []:
                    self._add_fragment(fragment)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        if text:
            self.texts.append(text)
        return text

    def _add_fragment(self, fragment: Any) -> None:
        # The id and name come in a call's first fragment, its arguments in string pieces. A
        # fragment without an index is taken for a whole call of its own.
        index = fragment.index if isinstance(fragment.index, int) else len(self.calls)
        call = self.calls_by_index.get(index)
        # Some servers put several whole calls in one delta under the same index: a new id
        # means a new call.
        if call is None or (fragment.id and call.id and fragment.id != call.id):
            call = _PartialCall(id=fragment.id or "")
            self.calls.append(call)
            self.calls_by_index[index] = call
        call.id = call.id or fragment.id or ""
        function = fragment.function
        if function is not None:
            # Names are never split; a server that repeats the name must not double it.
            call.name = call.name or function.name or ""
            call.arguments += function.arguments or ""

    def finish(self, *, fallback_model: str, base_url: str) -> ModelReply:
        if self.finish_reason is None:
            # The connection closed cleanly but early: what came is not the whole reply.
            raise ProviderError(
                f"The OpenAI-compatible server at {base_url} ended the stream before the "
                "reply was finished (no finish_reason)."
            )
        calls = [_tool_call(call) for call in self.calls]
        stop_reason = _STOP_REASONS.get(self.finish_reason, self.finish_reason)
        # Ollama says "stop" for a reply that calls tools. A reply cut off or filtered keeps
        # saying so: the executor runs no tool of a refused reply.
        if calls and stop_reason == "end_turn":
            stop_reason = "tool_use"
        text = "".join(self.texts)
        if self.refusals and not text:
            text, stop_reason = "".join(self.refusals), "refusal"
        return ModelReply(
            text=text,
            tool_calls=calls,
            stop_reason=stop_reason,
            usage=_usage(self.usage),
            model=self.model or fallback_model,
        )


def _tool_call(call: _PartialCall) -> ToolCall:
    # Some local servers send no id; the executor needs one to match the result to the call.
    call_id = call.id or f"call_{uuid.uuid4().hex[:24]}"
    arguments, problem = _parse_arguments(call.arguments)
    if problem:
        quoted = call.arguments[:_QUOTED_ARGUMENTS_CHARS]
        return ToolCall(
            call_id,
            call.name,
            {},
            parse_error=f"the arguments were not valid JSON: {problem}; they were: {quoted}",
        )
    return ToolCall(call_id, call.name, arguments)


def _parse_arguments(raw: str) -> tuple[dict[str, Any], str]:
    """The arguments as an object, or {} and why they are not one."""
    if not raw.strip():
        return {}, ""  # a call without arguments, as some servers send it
    try:
        value = json.loads(raw)
        # Some models encode the object twice, as a JSON string holding JSON.
        if isinstance(value, str):
            value = json.loads(value)
    except json.JSONDecodeError as exc:
        return {}, f"{exc.msg} at character {exc.pos}"
    if not isinstance(value, dict):
        return {}, f"expected an object, got {type(value).__name__}"
    return value, ""


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()  # the server sent none: counted as zero rather than guessed
    details = getattr(usage, "prompt_tokens_details", None)
    return Usage(
        # prompt_tokens already counts the cached tokens.
        input_tokens=getattr(usage, "prompt_tokens", None) or 0,
        output_tokens=getattr(usage, "completion_tokens", None) or 0,
        cache_read_tokens=getattr(details, "cached_tokens", None) or 0,
        cache_write_tokens=getattr(details, "cache_write_tokens", None) or 0,
    )


# --- errors ------------------------------------------------------------------------------------


def _status_text(exc: openai.APIStatusError, *, server: str, model: str, retries: str) -> str:
    status = exc.status_code
    detail = _detail(exc)
    lowered = detail.lower()
    if status == 401:
        return f"The {server} rejected the API key (401): check OPENAI_API_KEY. {detail}"
    if status == 403:
        return f"The {server} refused access (403): {detail}"
    if status == 404 and ("model" in lowered or exc.code == "model_not_found"):
        return (
            f"The {server} has no model {model!r} (404): check the model id; Ollama needs "
            f"`ollama pull {model}` first. {detail}"
        )
    if status == 404:
        return (
            f"The {server} has no chat completions endpoint (404): OPENAI_BASE_URL usually ends "
            f"in /v1. {detail}"
        )
    if status == 429:
        return f"The {server} rate-limited the request (429) and {retries}: {detail}"
    if status >= 500:
        return f"The {server} had a server error ({status}) and {retries}: {detail}"
    if exc.code == "context_length_exceeded" or any(p in lowered for p in _CONTEXT_PHRASES):
        return f"The request is longer than the model's context window: {detail}"
    return f"The {server} refused the request ({status}): {detail}"


def _detail(exc: openai.APIError) -> str:
    """What the server said, from the error bodies servers actually send: OpenAI's
    {"error": {"message": ...}} (the SDK unwraps it), vLLM's flat {"message": ...},
    {"error": "text"} or a plain text page."""
    body = exc.body
    message = body.get("message") if isinstance(body, dict) else None
    if isinstance(message, str) and message:
        return message
    if isinstance(body, str) and body.strip():
        return body.strip()[:_QUOTED_BODY_CHARS]
    return exc.message

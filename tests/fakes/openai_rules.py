"""The rules of OpenAI's Chat Completions API that the fake enforces, so that a request our
provider maps wrongly fails here as it would there: each returns the error object the API sends,
or None."""

from __future__ import annotations

from typing import Any

_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def invalid(body: dict[str, Any]) -> dict[str, Any] | None:
    """The first rule of the real API this request breaks, as its error, or None."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return {"message": "you must provide a model parameter"}
    messages = body.get("messages")
    if not isinstance(messages, list):
        return {
            "message": "Missing required parameter: 'messages'.",
            "param": "messages",
            "code": "missing_required_parameter",
        }
    if not messages:
        return {
            "message": "Invalid 'messages': empty array. Expected an array with minimum length "
            "1, but got an empty array instead.",
            "param": "messages",
            "code": "empty_array",
        }
    if body.get("stream_options") is not None and not body.get("stream"):
        return {
            "message": "The 'stream_options' parameter is only allowed when 'stream' is true.",
            "param": "stream_options",
        }
    if problem := _invalid_tools(body.get("tools")):
        return problem
    if problem := _invalid_response_format(body.get("response_format")):
        return problem
    return _invalid_messages(messages)


def _invalid_messages(messages: list[Any]) -> dict[str, Any] | None:
    asked: set[str] = set()  # the ids of the last assistant message's tool calls
    unanswered: list[str] = []
    asked_at = 0
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in _ROLES:
            return {
                "message": f"Invalid value: '{role}'. Supported values are: "
                + ", ".join(f"'{r}'" for r in _ROLES)
                + ".",
                "param": f"messages[{index}].role",
                "code": "invalid_value",
            }
        if role == "tool":
            if not asked:
                return {
                    "message": "Invalid parameter: messages with role 'tool' must be a response "
                    "to a preceeding message with 'tool_calls'.",
                    "param": f"messages.[{index}].role",
                }
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                return {
                    "message": f"Missing required parameter: 'messages[{index}].tool_call_id'.",
                    "param": f"messages[{index}].tool_call_id",
                    "code": "missing_required_parameter",
                }
            if call_id not in asked:
                return {
                    "message": f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in "
                    "'tool_calls' of previous message.",
                    "param": f"messages.[{index}].tool_call_id",
                }
            if not isinstance(message.get("content"), (str, list)):
                return _bad_content(index, message.get("content"))
            if call_id in unanswered:
                unanswered.remove(call_id)
            continue
        if unanswered:
            return _unanswered(asked_at, unanswered)
        asked, asked_at = set(), index
        calls = message.get("tool_calls") if role == "assistant" else None
        if calls == []:
            return {
                "message": f"Invalid 'messages[{index}].tool_calls': empty array. Expected an "
                "array with minimum length 1, but got an empty array instead.",
                "param": f"messages[{index}].tool_calls",
                "code": "empty_array",
            }
        if calls:
            for position, call in enumerate(calls):
                function = call.get("function") or {}
                if not isinstance(call.get("id"), str) or not isinstance(function.get("name"), str):
                    return {
                        "message": f"Missing required parameter: "
                        f"'messages[{index}].tool_calls[{position}].id'.",
                        "param": f"messages[{index}].tool_calls[{position}].id",
                        "code": "missing_required_parameter",
                    }
                if not isinstance(function.get("arguments"), str):
                    return {
                        "message": f"Invalid type for 'messages[{index}].tool_calls[{position}]"
                        ".function.arguments': expected a string.",
                        "param": f"messages[{index}].tool_calls[{position}].function.arguments",
                        "code": "invalid_type",
                    }
            asked = {call["id"] for call in calls}
            unanswered = [call["id"] for call in calls]
            if message.get("content") is None:
                continue  # content may be null beside tool calls, and only there
        if not isinstance(message.get("content"), (str, list)):
            return _bad_content(index, message.get("content"))
    if unanswered:
        return _unanswered(asked_at, unanswered)
    return None


def _bad_content(index: int, content: Any) -> dict[str, Any]:
    kind = "null" if content is None else type(content).__name__
    return {
        "message": f"Invalid type for 'messages[{index}].content': expected one of a string or "
        f"array of objects, but got {kind} instead.",
        "param": f"messages[{index}].content",
        "code": "invalid_type",
    }


def _unanswered(index: int, ids: list[str]) -> dict[str, Any]:
    return {
        "message": "An assistant message with 'tool_calls' must be followed by tool messages "
        "responding to each 'tool_call_id'. The following tool_call_ids did not have response "
        f"messages: {', '.join(ids)}",
        "param": f"messages.[{index}].role",
    }


def _invalid_tools(tools: Any) -> dict[str, Any] | None:
    for index, tool in enumerate(tools or []):
        if tool.get("type") != "function":
            return {
                "message": f"Invalid value: '{tool.get('type')}'. Supported values are: "
                "'function' and 'custom'.",
                "param": f"tools[{index}].type",
                "code": "invalid_value",
            }
        if not isinstance((tool.get("function") or {}).get("name"), str):
            return {
                "message": f"Missing required parameter: 'tools[{index}].function.name'.",
                "param": f"tools[{index}].function.name",
                "code": "missing_required_parameter",
            }
    return None


def _invalid_response_format(response_format: Any) -> dict[str, Any] | None:
    if not response_format or response_format.get("type") != "json_schema":
        return None
    if not isinstance((response_format.get("json_schema") or {}).get("name"), str):
        return {
            "message": "Missing required parameter: 'response_format.json_schema.name'.",
            "param": "response_format.json_schema.name",
            "code": "missing_required_parameter",
        }
    return None

"""Tool calls a model wrote as text, for the replies that carry no native call.

Small and local models often answer a tool-calling request with the call written out: a fenced
JSON block, a bare object, Qwen's and Hermes' `<tool_call>…</tool_call>` tags, OpenAI's nested
shape, several of them, with prose around. Servers parse some of these for some model families
(llama.cpp, vLLM and Ollama each differently) and pass the rest on as text; taken as the step's
answer, it makes a step "succeed" without any tool having run. This module finds them.

Only an object that names a tool the caller knows (granted to the step or not) counts as a call:
a tool-call-shaped object naming anything else is reported apart (`foreign`), so the caller can
refuse it as an answer without pretending it can run it. An object that names a known tool but
is no valid JSON, or whose arguments are no object, is a call with a `parse_error` the model is
told about, as a native call with malformed arguments is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

# Keys that name the tool, and keys that hold its arguments, in the shapes models write:
# {"name", "arguments"} (OpenAI, Qwen, Hermes), {"name", "parameters"} (Llama 3.1),
# {"tool", "args"}, {"tool_name", "tool_input"}, {"function", "parameters"}.
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARGUMENT_KEYS = ("arguments", "args", "parameters", "input", "tool_input", "params")
# Keys a call object may carry beside its name, that say nothing against it being a call.
_CALL_KEYS = frozenset({"id", "type", "call_id"})
# Keys of a tool's definition (OpenAI's, Anthropic's, MCP's), which a call never has: a step
# asked to write one must not have it taken for a call.
_DEFINITION_KEYS = frozenset({"description", "input_schema", "inputSchema", "strict"})

_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.S | re.I)
_FENCE = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n?(.*?)```", re.S)
# The start of an object that names a tool, for finding the malformed ones JSON cannot read.
_NAMED_OPENING = re.compile(
    r'\{\s*"(?:' + "|".join(_NAME_KEYS) + r')"\s*:\s*"([A-Za-z_][\w.-]{0,63})"'
)
_DECODER = json.JSONDecoder()
_QUOTED_CHARS = 200


@dataclass(frozen=True)
class TextCall:
    name: str
    arguments: dict[str, Any]
    # Why the call cannot be run as written ("" when it can).
    parse_error: str = ""


@dataclass(frozen=True)
class Recognised:
    """What a reply's text holds: the calls to known tools, in order; the names of call-shaped
    objects naming tools nobody knows; and the text with all of them (and fences and tags left
    empty by taking them out) removed."""

    calls: list[TextCall] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    prose: str = ""


def recognise_calls(text: str, known: Collection[str]) -> Recognised:
    """The tool calls written in `text`, for tools named in `known`."""
    placed: list[tuple[int, TextCall]] = []
    foreign: list[str] = []
    spans: list[tuple[int, int]] = []
    objects = _objects(text)
    for start, end, value in objects:
        shapes = _call_shapes(value)
        for name, arguments, error in shapes:
            if name in known:
                placed.append((start, TextCall(name, arguments, error)))
            else:
                foreign.append(name)
        if shapes:
            spans.append((start, end))
    # Objects that name a known tool but that JSON could not read: calls, malformed. (One
    # inside an object JSON did read is part of that object's data, a call or not.)
    decoded = [(start, end) for start, end, _ in objects]
    for match in _NAMED_OPENING.finditer(text):
        if match.group(1) not in known or _inside(match.start(), decoded):
            continue
        placed.append(
            (match.start(), TextCall(match.group(1), {}, _malformed(text, match.start())))
        )
        spans.append((match.start(), _object_end(text, match.start())))
    calls = [call for _, call in sorted(placed, key=lambda pair: pair[0])]
    return Recognised(calls, foreign, _prose(text, spans))


def is_call_shaped(text: str, known: Collection[str] = ()) -> bool:
    """Whether `text` is, apart from fences, tags and whitespace, nothing but tool calls (to any
    tool, known or not): the shape of a reply that asks for a call and answers nothing."""
    found = recognise_calls(text, known)
    return bool(found.calls or found.foreign) and not _meaningful(found.prose)


def _objects(text: str) -> list[tuple[int, int, Any]]:
    """Every outermost JSON object in `text` that JSON can read, as (start, end, value).

    A scan from each "{" rather than a regex over fences: the same objects appear bare, fenced,
    in tags, doubled braces around them ("{{…}}", as Qwen wrote one) or several to a fence."""
    found: list[tuple[int, int, Any]] = []
    position = text.find("{")
    while position != -1:
        try:
            value, end = _DECODER.raw_decode(text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        found.append((position, end, value))
        position = text.find("{", end)
    return found


def _call_shapes(value: Any) -> list[tuple[str, dict[str, Any], str]]:
    """The calls a decoded object stands for, as (name, arguments, parse error)."""
    if not isinstance(value, dict):
        return []
    if isinstance(value.get("tool_calls"), list):  # {"tool_calls": [...]}, as the API sends them
        return [shape for item in value["tool_calls"] for shape in _call_shapes(item)]
    # OpenAI's nested shape: {"type": "function", "function": {"name": ..., "arguments": ...}}.
    nested = value.get("function")
    if isinstance(nested, dict) and isinstance(nested.get("name"), str):
        return _call_shapes(nested)
    if _DEFINITION_KEYS & value.keys():
        return []
    for name_key in _NAME_KEYS:
        name = value.get(name_key)
        if isinstance(name, str) and name.strip():
            break
    else:
        return []
    argument_keys = [key for key in _ARGUMENT_KEYS if key in value]
    if not argument_keys:
        # A name alone is a call (of a tool without arguments) only if nothing else is there:
        # {"name": "shell", "description": "…"} is a tool's listing, not a call.
        if set(value) - _CALL_KEYS - {name_key}:
            return []
        return [(name.strip(), {}, "")]
    raw = value[argument_keys[0]]
    arguments, error = _arguments(raw)
    return [(name.strip(), arguments, error)]


def _arguments(raw: Any) -> tuple[dict[str, Any], str]:
    """The arguments as an object (given as one, or as a JSON string holding one)."""
    if isinstance(raw, dict):
        return raw, ""
    if raw is None:
        return {}, ""
    if isinstance(raw, str):
        if not raw.strip():
            return {}, ""
        try:
            decoded = json.loads(raw)
        except json.JSONDecodeError as exc:
            quoted = raw[:_QUOTED_CHARS]
            return {}, (
                f"the arguments were not valid JSON: {exc.msg} at character {exc.pos}; "
                f"they were: {quoted}"
            )
        if isinstance(decoded, dict):
            return decoded, ""
        raw = decoded
    return {}, f"the arguments must be a JSON object, not {_kind(raw)}"


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", bool: "a boolean", int: "a number"}.get(
        type(value), "a " + type(value).__name__
    )


def _malformed(text: str, start: int) -> str:
    """Why the object at `start` is no JSON, quoting its beginning."""
    end = _object_end(text, start)
    snippet = text[start:end]
    try:
        json.loads(snippet)
        problem = "it is not a tool call JSON can read"
    except json.JSONDecodeError as exc:
        problem = f"{exc.msg} at character {exc.pos}"
    quoted = snippet[:_QUOTED_CHARS] + ("…" if len(snippet) > _QUOTED_CHARS else "")
    return (
        f"the call written in the reply's text was not valid JSON ({problem}); it was: {quoted}. "
        'Write a call as one JSON object: {"name": "<tool>", "arguments": {…}}'
    )


def _object_end(text: str, start: int) -> int:
    """Where the object opened at `start` ends, by counting braces outside strings: a guess for
    text JSON cannot read, bounded by the end of its fence or tag, or of the text."""
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
        elif text.startswith("```", index) or text.startswith("</tool_call>", index):
            return index
    return len(text)


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in spans)


def _prose(text: str, spans: list[tuple[int, int]]) -> str:
    """The text without the call objects, and without the fences and tags left empty."""
    kept, last = [], 0
    for start, end in sorted(spans):
        if start < last:
            continue
        kept.append(text[last:start])
        last = end
    kept.append(text[last:])
    rest = "".join(kept)
    rest = _TAG.sub(lambda m: "" if not m.group(1).strip() else m.group(0), rest)
    rest = re.sub(r"</?tool_call>", "", rest, flags=re.I)
    rest = _FENCE.sub(lambda m: "" if not _meaningful(m.group(1)) else m.group(0), rest)
    return re.sub(r"\n{3,}", "\n\n", rest).strip()


def _meaningful(text: str) -> bool:
    """Whether text says anything: more than braces, brackets, commas and stray fences."""
    return bool(re.sub(r"[\s{}\[\],`]+|json", "", text))


# "e.g. '12 * (3 + 4)'", "for example `ls -la`": the quoted example after the phrase.
_EXAMPLE = re.compile(
    r"(?:e\.g\.|for example|for instance|such as)[,:]?\s*"
    r"(?:'([^'\n]+)'|\"([^\"\n]+)\"|`([^`\n]+)`)",
    re.I,
)
# Shorter examples ("a", "42") are too common to tell an echo from an answer.
_MIN_EXAMPLE_CHARS = 4


def description_examples(description: str, input_schema: dict[str, Any]) -> list[str]:
    """The example values a tool's description and its schema show (quoted after "e.g.", or a
    schema's `example`/`examples`): what a model that copies the description writes back."""
    texts: list[str] = [description]
    values: list[Any] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("description"), str):
                texts.append(node["description"])
            if "example" in node:
                values.append(node["example"])
            if isinstance(node.get("examples"), list):
                values.extend(node["examples"])
            for value in node.values():
                if isinstance(value, dict | list):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(input_schema)
    found = [next(g for g in m.groups() if g) for t in texts for m in _EXAMPLE.finditer(t)]
    found += [v for v in values if isinstance(v, str)]
    unique = dict.fromkeys(e.strip() for e in found if len(e.strip()) >= _MIN_EXAMPLE_CHARS)
    return list(unique)


def echoed_example(text: str, examples: Collection[str], given: str) -> str:
    """The first example `text` repeats that `given` (what the model was asked) does not hold,
    or "". An example the task itself names is the task's, not an echo; so is one whose numbers
    the task all gives. An example without numbers ('ls -la') is a common value a step may well
    need, so it never counts: the copies that do harm are the specific values (the
    calculator's '12 * (3 + 4)') that answer nothing the step was asked."""
    given_numbers = set(_NUMBER.findall(given))
    for example in examples:
        numbers = set(_NUMBER.findall(example))
        if example in text and example not in given and numbers - given_numbers:
            return example
    return ""


_NUMBER = re.compile(r"\d+(?:\.\d+)?")

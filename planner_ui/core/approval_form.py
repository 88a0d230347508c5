"""An approval as a form: a tool's JSON schema turned into fields a person edits, what they
typed turned back into the arguments the tool gets (with a message per field it cannot read),
and what the model asked for set beside what was sent.

Only reading the typed text is done here: whether the arguments are right is for the tool to
say (its schema and its own checks), exactly as for a model's arguments.

Strings, numbers, booleans, enums and arrays of strings get fields of their own; anything else
(objects, other arrays, a union of types, a `$ref`) is a JSON text box, so no schema is beyond
the form. An argument the model sent that the schema does not name gets a JSON box too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

from .bounds import JsonRefused, loads_bounded

FieldKind = Literal["line", "text", "integer", "number", "boolean", "choice", "lines", "json"]
ArgumentChange = Literal["same", "changed", "added", "removed"]

# The name a field's input is posted under: "arg:" and the argument's name, any characters.
FIELD_PREFIX = "arg:"
# A string that may be longer than this, or holds a line break, is edited in a text box.
LONGEST_LINE = 2000
# Arguments whose text is code or a command: shown in a fixed-width font.
CODE_ARGUMENTS = frozenset({"command", "code"})


@dataclass(frozen=True)
class FormField:
    """One argument as a form shows it: `value` is the text in its input."""

    name: str
    kind: FieldKind
    required: bool
    value: str
    hint: str = ""
    # (the value posted, what the option reads) for a choice or a boolean
    choices: tuple[tuple[str, str], ...] = ()
    code: bool = False
    error: str = ""

    @property
    def input_name(self) -> str:
        return FIELD_PREFIX + self.name

    @property
    def rows(self) -> int:
        return min(14, max(3, self.value.count("\n") + 2))


@dataclass(frozen=True)
class FormDraft:
    """An edit that was refused, as the person left it, to show the form again with it:
    `mode` is "fields" or "json", `posted` the fields' text, `raw` the JSON box's text,
    `problems` a message per argument, `message` the whole refusal."""

    approval_id: int
    mode: str
    posted: Mapping[str, str]
    raw: str
    problems: Mapping[str, str]
    message: str


@dataclass(frozen=True)
class ArgumentRow:
    """One argument beside itself: as the model asked for it and as it was sent."""

    name: str
    asked: str
    sent: str
    change: ArgumentChange

    @property
    def changed(self) -> bool:
        return self.change != "same"


def form_fields(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[FormField]:
    """The fields of a tool whose input schema is `schema`, holding `arguments`: the schema's
    properties in its order, then what the model sent besides."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        properties = {}
    required = schema.get("required", []) if isinstance(schema, Mapping) else []
    fields = [
        _field(str(name), sub if isinstance(sub, Mapping) else {}, name in required, arguments)
        for name, sub in properties.items()
    ]
    fields += [
        _field(str(name), {}, False, arguments) for name in arguments if name not in properties
    ]
    return fields


def form_posted(fields: list[FormField], posted: Mapping[str, str]) -> list[FormField]:
    """The fields holding what a person typed (for showing the form again as they left it)."""
    return [
        replace(field, value=_text(posted.get(field.input_name, field.value))) for field in fields
    ]


def with_errors(fields: list[FormField], errors: Mapping[str, str]) -> list[FormField]:
    return [replace(field, error=errors.get(field.name, "")) for field in fields]


def arguments_from_form(
    fields: list[FormField], original: Mapping[str, Any], posted: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The arguments the typed text makes, and a message for each field that cannot be read.

    `fields` are form_fields of the original arguments. A field left as it was shown keeps the
    model's value exactly (a text box sends its line breaks as CRLF); an optional field left
    empty that the model did not fill stays out."""
    arguments: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for field in fields:
        raw = posted.get(field.input_name)
        if raw is None:  # not on the form that was sent: as the model asked
            if field.name in original:
                arguments[field.name] = original[field.name]
            continue
        text = _text(raw)
        if field.name in original and text == _text(field.value):
            arguments[field.name] = original[field.name]
            continue
        if text.strip() == "" and (
            field.kind not in ("line", "text") or field.name not in original
        ):
            if field.required and field.kind not in ("line", "text"):
                errors[field.name] = f"'{field.name}' is required."
            elif field.required:
                arguments[field.name] = text
            continue
        try:
            arguments[field.name] = _read(field, text)
        except ValueError as exc:
            errors[field.name] = str(exc)
    return arguments, errors


def compare_arguments(asked: Mapping[str, Any], sent: Mapping[str, Any]) -> list[ArgumentRow]:
    """Each argument as asked for and as sent, in the order the model gave them."""
    rows = []
    for name in [*asked, *(n for n in sent if n not in asked)]:
        change: ArgumentChange
        if name not in sent:
            change = "removed"
        elif name not in asked:
            change = "added"
        else:
            change = "same" if asked[name] == sent[name] else "changed"
        rows.append(
            ArgumentRow(
                name=str(name),
                asked=readable(asked[name]) if name in asked else "",
                sent=readable(sent[name]) if name in sent else "",
                change=change,
            )
        )
    return rows


def readable(value: Any) -> str:
    """A value as a person reads it: a string as its text (line breaks as line breaks, not
    `\\n`), a list of strings one a line, anything else as indented JSON."""
    if isinstance(value, str):
        return value
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, str) and "\n" not in v for v in value)
    ):
        return "\n".join(value)
    return json.dumps(value, indent=2, ensure_ascii=False)


def _field(
    name: str, schema: Mapping[str, Any], required: bool, arguments: Mapping[str, Any]
) -> FormField:
    kind = _kind(schema)
    present = name in arguments
    value: Any = arguments.get(name)
    if present and not _fits(kind, schema, value):
        kind = "json"
    if kind in ("line", "text") and present and ("\n" in value or len(value) > LONGEST_LINE):
        kind = "text"
    hint = schema.get("description", "")
    field = FormField(
        name=name,
        kind=kind,
        required=required,
        value=_shown(kind, value) if present else "",
        hint=hint if isinstance(hint, str) else "",
        code=name in CODE_ARGUMENTS or kind == "json",
    )
    if kind == "choice":
        options = [
            (json.dumps(v), v if isinstance(v, str) else json.dumps(v)) for v in schema["enum"]
        ]
        return replace(
            field, choices=(("", "(not set)"), *options) if not required else tuple(options)
        )
    if kind == "boolean":
        booleans = (("true", "true"), ("false", "false"))
        return replace(field, choices=(("", "(not set)"), *booleans) if not required else booleans)
    return field


def _kind(schema: Mapping[str, Any]) -> FieldKind:
    kind = schema.get("type")
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        return "choice"
    if kind == "string":
        longest = schema.get("maxLength")
        return "line" if isinstance(longest, int) and longest <= LONGEST_LINE else "text"
    if kind in ("integer", "number", "boolean"):
        return cast(FieldKind, kind)
    if kind == "array":
        items = schema.get("items")
        if isinstance(items, Mapping) and items.get("type") == "string" and "enum" not in items:
            return "lines"
    return "json"


def _fits(kind: FieldKind, schema: Mapping[str, Any], value: Any) -> bool:
    """Whether the model's value can be shown in a field of this kind and read back the same."""
    if kind in ("line", "text"):
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "choice":
        return any(value == v and type(value) is type(v) for v in schema["enum"])
    if kind == "lines":
        return isinstance(value, list) and all(
            isinstance(v, str) and v.strip() and "\n" not in v for v in value
        )
    return True


def _shown(kind: FieldKind, value: Any) -> str:
    if kind in ("line", "text"):
        return str(value)  # a string: _fits made it json otherwise
    if kind == "boolean":
        return "true" if value else "false"
    if kind in ("integer", "number"):
        return repr(value) if isinstance(value, float) else str(value)
    if kind == "choice":
        return json.dumps(value)
    if kind == "lines":
        return "\n".join(value)
    return json.dumps(value, indent=2, ensure_ascii=False)


def _text(raw: str) -> str:
    # Browsers send a text box's line breaks as CRLF whatever was put in it (a lone CR too).
    return raw.replace("\r\n", "\n").replace("\r", "\n")


def _read(field: FormField, text: str) -> Any:
    name = field.name
    if "\x00" in text:
        # As for a person's JSON (core.bounds): no store keeps one, and no argument needs one.
        raise ValueError(f"'{name}' may not contain NUL (\\u0000) characters.")
    if field.kind in ("line", "text"):
        return text
    if field.kind == "integer":
        try:
            return int(text.strip())
        except ValueError:
            raise ValueError(
                f"'{name}' must be a whole number, not {text.strip()[:40]!r}."
            ) from None
    if field.kind == "number":
        try:
            number = float(text.strip())
        except ValueError:
            raise ValueError(f"'{name}' must be a number, not {text.strip()[:40]!r}.") from None
        if not math.isfinite(number):
            raise ValueError(f"'{name}' must be a finite number.")
        return (
            int(number)
            if number.is_integer() and "." not in text and "e" not in text.lower()
            else number
        )
    if field.kind == "boolean":
        if text not in ("true", "false"):
            raise ValueError(f"'{name}' must be true or false.")
        return text == "true"
    if field.kind == "choice":
        allowed = {value for value, _label in field.choices if value}
        if text not in allowed:
            labels = ", ".join(label for value, label in field.choices if value)
            raise ValueError(f"'{name}' must be one of: {labels}.")
        return json.loads(text)
    if field.kind == "lines":
        return [line for line in text.split("\n") if line.strip()]
    try:
        return loads_bounded(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"'{name}' is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
        ) from None
    except JsonRefused as exc:
        raise ValueError(f"'{name}' was refused: {exc}.") from None

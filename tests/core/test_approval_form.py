"""An approval's arguments as fields and back: what each kind of schema gets, that an
untouched form gives back the model's arguments exactly, and a message per unreadable field."""

from __future__ import annotations

from planner_ui.core.approval_form import (
    arguments_from_form,
    compare_arguments,
    form_fields,
    form_posted,
    readable,
    with_errors,
)
from planner_ui.tools import registry
from planner_ui.tools.email import SendEmail
from planner_ui.tools.http_post import HttpPost
from planner_ui.tools.sandbox import CommandMode, Commands, Unconfined

EMAIL = {"to": "bob@example.com", "subject": "Status", "body": "Line one.\nLine two."}

SCHEMA = {
    "type": "object",
    "properties": {
        "target": {"type": "string", "description": "Where to launch."},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "dry": {"type": "boolean"},
        "speed": {"enum": ["slow", "fast"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "options": {"type": "object"},
    },
    "required": ["target", "count"],
}


def browser(text: str) -> str:
    """A text box's value as a browser posts it: every line break as CRLF."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\r\n")


def posted(fields, **changes: str) -> dict[str, str]:
    """What a browser posts for these fields, with `changes` typed into some."""
    sent = {f.input_name: browser(f.value) for f in fields}
    sent.update({f"arg:{name}": value for name, value in changes.items()})
    return sent


def test_the_email_tool_gets_a_line_for_the_address_and_subject_and_a_box_for_the_body():
    fields = form_fields(SendEmail().form_schema(), EMAIL)
    assert [(f.name, f.kind, f.required) for f in fields] == [
        ("to", "line", True),
        ("subject", "line", True),
        ("body", "text", True),
    ]
    assert fields[0].hint == "One recipient address."
    assert fields[2].value == "Line one.\nLine two."


def test_http_post_gets_its_url_body_and_content_type():
    arguments = {"url": "https://example.com/notes", "body": '{"note": "tea"}'}
    fields = form_fields(HttpPost().form_schema(), arguments)
    assert [(f.name, f.kind, f.value) for f in fields] == [
        ("url", "line", "https://example.com/notes"),
        ("body", "text", '{"note": "tea"}'),
        ("content_type", "line", ""),
    ]


def test_a_schema_gets_a_field_of_its_kind_and_anything_nested_a_json_box():
    arguments = {
        "target": "moon",
        "count": 3,
        "ratio": 0.5,
        "dry": True,
        "speed": "fast",
        "tags": ["a", "b"],
        "options": {"x": [1, 2]},
        "extra": 7,
    }
    fields = {f.name: f for f in form_fields(SCHEMA, arguments)}
    assert {name: f.kind for name, f in fields.items()} == {
        "target": "text",
        "count": "integer",
        "ratio": "number",
        "dry": "boolean",
        "speed": "choice",
        "tags": "lines",
        "options": "json",
        "extra": "json",
    }
    assert fields["speed"].choices == (("", "(not set)"), ('"slow"', "slow"), ('"fast"', "fast"))
    assert fields["speed"].value == '"fast"'
    assert fields["tags"].value == "a\nb"
    assert fields["options"].value == '{\n  "x": [\n    1,\n    2\n  ]\n}'
    assert fields["options"].code and not fields["target"].code


def test_a_value_that_does_not_fit_its_field_is_shown_as_json():
    fields = {f.name: f for f in form_fields(SCHEMA, {"target": "x", "count": "three"})}
    assert fields["count"].kind == "json" and fields["count"].value == '"three"'


def test_an_untouched_form_gives_back_exactly_the_models_arguments():
    arguments = {
        "target": "a\r\nb",
        "count": 3,
        "ratio": 1.0,
        "dry": False,
        "speed": "slow",
        "tags": ["x"],
        "options": {"k": "v"},
    }
    fields = form_fields(SCHEMA, arguments)
    # A text box turns every line break into CRLF: a CRLF the model sent must survive that.
    assert arguments_from_form(fields, arguments, posted(fields)) == (arguments, {})
    email_fields = form_fields(SendEmail().form_schema(), EMAIL)
    assert arguments_from_form(email_fields, EMAIL, posted(email_fields)) == (EMAIL, {})


def test_typed_values_are_read_as_their_kind():
    fields = form_fields(SCHEMA, {"target": "x", "count": 1})
    arguments, errors = arguments_from_form(
        fields,
        {"target": "x", "count": 1},
        posted(
            fields,
            target="line one\r\nline two",
            count=" 12 ",
            ratio="2.5",
            dry="true",
            speed='"slow"',
            tags="a\r\n\r\nb\r\n",
            options='{"deep": {"er": [1]}}',
        ),
    )
    assert errors == {}
    assert arguments == {
        "target": "line one\nline two",
        "count": 12,
        "ratio": 2.5,
        "dry": True,
        "speed": "slow",
        "tags": ["a", "b"],
        "options": {"deep": {"er": [1]}},
    }


def test_an_optional_field_left_empty_stays_out_and_one_emptied_is_removed():
    original = {"target": "x", "count": 1, "ratio": 0.5}
    fields = form_fields(SCHEMA, original)
    arguments, errors = arguments_from_form(fields, original, posted(fields, ratio=""))
    assert errors == {}
    assert arguments == {"target": "x", "count": 1}


def test_each_field_that_cannot_be_read_gets_its_own_message():
    original = {"target": "x", "count": 1}
    fields = form_fields(SCHEMA, original)
    _, errors = arguments_from_form(
        fields,
        original,
        posted(fields, count="", ratio="fast", dry="maybe", speed='"warp"', options="{oops"),
    )
    assert errors == {
        "count": "'count' is required.",
        "ratio": "'ratio' must be a number, not 'fast'.",
        "dry": "'dry' must be true or false.",
        "speed": "'speed' must be one of: slow, fast.",
        "options": "'options' is not valid JSON: Expecting property name enclosed in double "
        "quotes (line 1, column 2).",
    }
    _, errors = arguments_from_form(fields, original, posted(fields, count="1.5"))
    assert errors == {"count": "'count' must be a whole number, not '1.5'."}
    _, errors = arguments_from_form(fields, original, posted(fields, ratio="nan"))
    assert errors == {"ratio": "'ratio' must be a finite number."}
    _, errors = arguments_from_form(fields, original, posted(fields, target="a\x00b"))
    assert errors == {"target": "'target' may not contain NUL (\\u0000) characters."}


def test_the_form_is_shown_again_as_the_person_left_it_with_the_messages():
    fields = form_fields(SendEmail().form_schema(), EMAIL)
    again = with_errors(
        form_posted(fields, posted(fields, to="carol at example")), {"to": "'to' is wrong"}
    )
    assert [(f.name, f.value, f.error) for f in again] == [
        ("to", "carol at example", "'to' is wrong"),
        ("subject", "Status", ""),
        ("body", "Line one.\nLine two.", ""),
    ]


def test_a_schema_without_properties_has_a_box_per_argument_sent():
    fields = form_fields({}, {"q": "tea"})
    assert [(f.name, f.kind, f.value) for f in fields] == [("q", "json", '"tea"')]


def test_asked_and_sent_side_by_side_mark_what_changed():
    rows = compare_arguments(
        {"to": "bob@example.com", "subject": "Hi", "body": "a\nb"},
        {"to": "carol@example.com", "subject": "Hi", "cc": ["x", "y"]},
    )
    assert [(r.name, r.asked, r.sent, r.change) for r in rows] == [
        ("to", "bob@example.com", "carol@example.com", "changed"),
        ("subject", "Hi", "Hi", "same"),
        ("body", "a\nb", "", "removed"),
        ("cc", "", "x\ny", "added"),
    ]
    assert [r.changed for r in rows] == [True, False, True, True]


def test_values_read_as_text_not_as_escaped_json():
    assert readable("Dear Bob,\nthanks.") == "Dear Bob,\nthanks."
    assert readable(["a", "b"]) == "a\nb"
    assert readable({"k": 1}) == '{\n  "k": 1\n}'
    assert readable(3) == "3"


GATED_CALLS = {
    "send_email": EMAIL,
    "http_post": {"url": "https://example.com/a", "body": "{}", "content_type": "text/plain"},
    "delete_file": {"path": "notes/old.md"},
    "fetch_url": {"url": "https://example.com/page?q=1"},
    "shell": {"command": "ls -la\nwc -l notes.md"},
    "python": {"code": "print(1)\nprint(2)\n"},
}


def gated_tools() -> dict:
    """Every built-in tool a call of which can wait for a person: irreversible ones, a read
    from a host the run does not allow, and the command tools (outside a sandbox)."""
    tools = registry(Commands(mode=CommandMode.UNSANDBOXED, confinement=Unconfined(), reason=""))
    return {name: t for name, t in tools.items() if t.irreversible or t.reaches_network}


def test_every_tool_that_can_wait_for_a_person_has_a_field_per_argument():
    tools = gated_tools()
    assert set(tools) == set(GATED_CALLS)
    kinds = {
        name: [(f.name, f.kind, f.code) for f in form_fields(t.form_schema(), GATED_CALLS[name])]
        for name, t in tools.items()
    }
    assert kinds == {
        "send_email": [("to", "line", False), ("subject", "line", False), ("body", "text", False)],
        "http_post": [
            ("url", "line", False),
            ("body", "text", False),
            ("content_type", "line", False),
        ],
        "delete_file": [("path", "line", False)],
        "fetch_url": [("url", "line", False)],
        "shell": [("command", "text", True)],
        "python": [("code", "text", True)],
    }
    for name, tool in tools.items():
        fields = form_fields(tool.form_schema(), GATED_CALLS[name])
        back, errors = arguments_from_form(fields, GATED_CALLS[name], posted(fields))
        assert (back, errors) == (GATED_CALLS[name], {}), name
        tool.parse(back)

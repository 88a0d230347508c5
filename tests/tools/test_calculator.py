"""The calculator tool: exact results, and each refusal in the words the model will read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from planner_ui.core.errors import ToolError
from planner_ui.tools import ToolContext
from planner_ui.tools.calculator import Calculator, evaluate

ALLOWED = "use numbers, + - * / // % **, parentheses, sqrt, abs, round, min, max and pi, e"


def calculate(expression: str) -> str:
    ctx = ToolContext(run_id=1, step_id="calc", workspace=Path("/nonexistent-workspace"))
    return Calculator().call({"expression": expression}, ctx)


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("12 * (3 + 4)", "12 * (3 + 4) = 84"),
        ("7 / 2", "7 / 2 = 3.5"),
        ("7 // 2", "7 // 2 = 3"),
        ("7 % 3", "7 % 3 = 1"),
        ("-2 ** 2", "-2 ** 2 = -4"),
        ("2 ^ 10", "2 ^ 10 = 1024"),  # '^' is read as power, as people write it
        ("sqrt(16)", "sqrt(16) = 4"),  # a whole float is shown as an int
        ("round(pi, 2)", "round(pi, 2) = 3.14"),
        ("max(1, 5, 3) - min(4, 2)", "max(1, 5, 3) - min(4, 2) = 3"),
        ("abs(-2.5)", "abs(-2.5) = 2.5"),
    ],
)
def test_results_are_exact_and_repeat_the_expression(expression: str, result: str) -> None:
    assert calculate(expression) == result


def test_a_huge_whole_float_keeps_its_float_form() -> None:
    # Beyond 1e15 a float can no longer be trusted to be a whole number, so it is not an int.
    assert calculate("1e16 * 2") == "1e16 * 2 = 2e+16"


def test_the_exponent_cap_is_inclusive() -> None:
    assert evaluate("2 ** 10000") == 2**10000
    assert evaluate("2 ** -10000") == 2.0**-10000


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (
            "__import__('os').system('true')",
            "calculator: unsupported expression \"__import__('os').system('true')\"; " + ALLOWED,
        ),
        ("__import__('os')", "calculator: unsupported expression \"__import__('os')\"; " + ALLOWED),
        ("x + 1", "calculator: unsupported expression 'x'; " + ALLOWED),
        ("sqrt(x=4)", "calculator: unsupported expression 'sqrt(x=4)'; " + ALLOWED),
        ("(1).real", "calculator: unsupported expression '1 .real'; " + ALLOWED),
        ("'a' * 3", "calculator: unsupported expression \"'a'\"; " + ALLOWED),
        ("[1, 2]", "calculator: unsupported expression '[1, 2]'; " + ALLOWED),
        ("1j", "calculator: unsupported expression '1j'; " + ALLOWED),
        ("2 ** 10001", "calculator: exponent 10001 is too large"),
        ("2 ** -10001", "calculator: exponent -10001 is too large"),
        ("1 / 0", "calculator: division by zero"),
        ("1 // 0", "calculator: division by zero"),
        ("1 % (2 - 2)", "calculator: division by zero"),
        ("1 +", "calculator: cannot parse '1 +': invalid syntax"),
    ],
)
def test_refusals_say_what_is_wrong(expression: str, message: str) -> None:
    with pytest.raises(ToolError) as caught:
        calculate(expression)
    assert str(caught.value) == message


def test_an_expression_over_500_characters_is_refused_as_an_argument() -> None:
    with pytest.raises(ToolError) as caught:
        calculate("1+" * 250 + "1")
    assert str(caught.value) == (
        "calculator: invalid arguments: 'expression' string should have at most 500 characters"
    )


def test_a_missing_expression_is_named() -> None:
    ctx = ToolContext(run_id=1, step_id="calc", workspace=Path("/nonexistent-workspace"))
    with pytest.raises(ToolError) as caught:
        Calculator().call({}, ctx)
    assert str(caught.value) == "calculator: invalid arguments: 'expression' field required"


@pytest.mark.parametrize(
    "expression",
    [
        "10 ** 5000",  # int over Python's 4300-digit str() limit: ValueError when formatting
        "2.0 ** 10000",  # OverflowError
        "sqrt(-1)",  # ValueError: math domain error
        "min()",  # TypeError
    ],
)
def test_math_errors_are_tool_errors(expression: str) -> None:
    with pytest.raises(ToolError, match=r"^calculator: "):
        calculate(expression)


def test_nested_powers_cannot_burn_cpu() -> None:
    # A child process, so the runaway computation can be killed when the timeout expires.
    script = (
        "from planner_ui.core.errors import ToolError\n"
        "from planner_ui.tools.calculator import evaluate\n"
        "try:\n"
        "    evaluate('(9**9999)**9999')\n"
        "except ToolError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=5, check=True
    )
    assert done.stdout.startswith("calculator: ")

"""Arithmetic without eval: a whitelist walk over Python's AST."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from planner_ui.core.effects import Effect
from planner_ui.core.errors import ToolError

from .base import Tool, ToolContext

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}
# Powers are the one cheap way to make this tool burn CPU and memory: bound the result size.
_MAX_EXPONENT = 10_000
_MAX_RESULT_BITS = 100_000
# Python refuses to print integers longer than 4300 digits.
_MAX_RESULT_DIGITS = 4_000


def evaluate(expression: str) -> float | int:
    try:
        tree = ast.parse(expression.replace("^", "**"), mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"calculator: cannot parse {expression!r}: {exc.msg}") from exc
    try:
        value: float | int = _eval(tree.body)
    except (OverflowError, ValueError, TypeError) as exc:
        raise ToolError(f"calculator: cannot evaluate {expression!r}: {exc}") from exc
    if isinstance(value, int) and value.bit_length() > _MAX_RESULT_DIGITS * 3.32:
        raise ToolError(f"calculator: the result of {expression!r} is too large to show")
    return value


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            if abs(right) > _MAX_EXPONENT:
                raise ToolError(f"calculator: exponent {right} is too large")
            if abs(left) > 1 and abs(right) * math.log2(abs(left)) > _MAX_RESULT_BITS:
                raise ToolError(f"calculator: the result of {ast.unparse(node)!r} is too large")
        try:
            return _BINARY[type(node.op)](left, right)
        except ZeroDivisionError as exc:
            raise ToolError("calculator: division by zero") from exc
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _FUNCTIONS[node.func.id](*(_eval(arg) for arg in node.args))
    raise ToolError(
        f"calculator: unsupported expression {ast.unparse(node)!r}; use numbers, + - * / // % **,"
        f" parentheses, {', '.join(_FUNCTIONS)} and {', '.join(_CONSTANTS)}"
    )


class CalculatorInput(BaseModel):
    expression: str = Field(max_length=500, description="Arithmetic, e.g. '12 * (3 + 4)'.")


class Calculator(Tool):
    name = "calculator"
    description = "Evaluate an arithmetic expression exactly and return the number."
    Input = CalculatorInput
    effect = Effect.READ

    def run(self, args: CalculatorInput, ctx: ToolContext) -> str:
        value = evaluate(args.expression)
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            value = int(value)
        return f"{args.expression} = {value}"

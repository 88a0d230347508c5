"""Which model serves which part of a run: the planner, each executor role, the synthesizer.

A route is written "provider:model", e.g. "anthropic:claude-opus-5-5" or "openai:qwen3:8b"
(Ollama's model ids hold colons, so only the first one separates the provider). A bare model
id uses the default provider; "offline" alone is the built-in offline model.

An OpenAI-compatible route may end in a tool mode, "#native" (the default), "#prompted" or
"#auto": how its model is asked for tool calls (see providers.openai_compat). Small local
models often write their calls as text; prompted describes the tools in the prompt and holds
each reply to a JSON schema instead, and auto switches to that after a reply that needed it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .errors import AgentError

# "scripted" replies from a queue a test filled (providers.scripted); "local" is a GGUF model
# an admin started from the form, served by llama.cpp on the machine of `make run`.
PROVIDERS: tuple[str, ...] = ("offline", "anthropic", "openai", "local", "scripted")
# The offline provider has one model, whatever a route names.
OFFLINE_MODEL = "offline-v1"

# The parts a routing table names. "executor" is the default for every role; a role's own
# entry ("executor:coder") wins over it.
PLANNER = "planner"
EXECUTOR = "executor"
SYNTHESIZER = "synthesizer"


# How a route's model is asked for tool calls; the first is the default.
TOOL_MODES: tuple[str, ...] = ("native", "prompted", "auto")
# The providers whose requests can carry a tool mode (the others call tools one way only).
_TOOL_MODE_PROVIDERS = ("openai", "local")


class RouteError(AgentError):
    """A route could not be read or served; the message says which and why."""


@dataclass(frozen=True)
class Route:
    provider: str
    model: str
    tool_mode: str = TOOL_MODES[0]

    @property
    def label(self) -> str:
        """As written in a routing table: the tool mode shows when it is not the default."""
        mode = f"#{self.tool_mode}" if self.tool_mode != TOOL_MODES[0] else ""
        return f"{self.provider}:{self.model}{mode}"

    def __str__(self) -> str:
        return self.label


def parse_route(text: str, default_provider: str) -> Route:
    """Read "provider:model", "model" (of the default provider) or "offline", each with an
    optional "#<tool mode>"."""
    text = text.strip()
    if not text:
        raise RouteError("A model route is empty; write provider:model, e.g. openai:llama3.2.")
    text, _, mode = text.partition("#")
    mode = mode.strip().lower() or TOOL_MODES[0]
    if mode not in TOOL_MODES:
        raise RouteError(f"Unknown tool mode {mode!r}; use one of {', '.join(TOOL_MODES)}.")
    head, sep, rest = text.partition(":")
    if head in PROVIDERS:
        provider, model = head, rest.strip()
    else:
        provider, model = default_provider, text
    if provider not in PROVIDERS:
        raise RouteError(f"Unknown model provider {provider!r}; use one of {', '.join(PROVIDERS)}.")
    if mode != TOOL_MODES[0] and provider not in _TOOL_MODE_PROVIDERS:
        raise RouteError(
            f"A tool mode is for OpenAI-compatible servers (openai:, local:), not {provider}."
        )
    if provider == "offline":
        return Route("offline", OFFLINE_MODEL)
    if not model:
        raise RouteError(f"The route {text!r} names no model; write {provider}:<model id>.")
    if len(model) > 150 or any(c.isspace() for c in model):
        raise RouteError(f"{model[:60]!r} is not a model id (no spaces, at most 150 characters).")
    return Route(provider, model, mode)


def role_of(purpose: str) -> str:
    """The role a purpose is accounted under: 'planner', a role's name, or 'synthesizer'."""
    if purpose.startswith(EXECUTOR + ":"):
        return purpose.split(":", 1)[1]
    return purpose


def resolve_routes(
    configured: Mapping[str, str],
    overrides: Mapping[str, str],
    *,
    default_provider: str,
    roles: Iterable[str],
) -> dict[str, Route]:
    """The full table for one run, every part spelled out so that the run keeps it.

    Precedence, most specific first: the person's choice for a part at submission, their
    choice for all executors, the configured route for that part, the configured default.
    The synthesizer follows the executors unless it has its own route.
    """

    def pick(*keys: tuple[Mapping[str, str], str]) -> Route:
        for table, key in keys:
            value = (table.get(key) or "").strip()
            if value:
                try:
                    return parse_route(value, default_provider)
                except RouteError as exc:
                    raise RouteError(f"{_part_name(key)}: {exc}") from exc
        raise RouteError(f"No model is configured for the {_part_name(keys[-1][1])}.")

    routes = {
        PLANNER: pick((overrides, PLANNER), (configured, PLANNER)),
        EXECUTOR: pick((overrides, EXECUTOR), (configured, EXECUTOR)),
    }
    for role in roles:
        key = f"{EXECUTOR}:{role}"
        routes[key] = pick(
            (overrides, key), (overrides, EXECUTOR), (configured, key), (configured, EXECUTOR)
        )
    routes[SYNTHESIZER] = pick(
        (overrides, SYNTHESIZER),
        (configured, SYNTHESIZER),
        (overrides, EXECUTOR),
        (configured, EXECUTOR),
    )
    return routes


def route_for(routes: Mapping[str, str], purpose: str, default_provider: str) -> Route:
    """The route serving `purpose` in a stored table of labels."""
    label = routes.get(purpose)
    if label is None and purpose.startswith(EXECUTOR + ":"):
        label = routes.get(EXECUTOR)
    if label is None:
        raise RouteError(f"The run's routing table has no model for {purpose!r}.")
    return parse_route(label, default_provider)


def _part_name(key: str) -> str:
    if key.startswith(EXECUTOR + ":"):
        return f"{key.split(':', 1)[1]} executors"
    return {PLANNER: "planner", EXECUTOR: "executors", SYNTHESIZER: "synthesizer"}.get(key, key)

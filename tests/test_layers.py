"""The shape of the code, checked: what lies below the services is plain Python, and the
modules import each other in one direction only."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "planner_ui"
FRAMEWORKS = ("django", "celery", "channels", "daphne", "asgiref")
# The engine: the core, the agents' loops, the tools and the model providers.
BELOW_SERVICES = ("core", "agents", "tools", "providers")

# Runs in a fresh interpreter: this test process has Django loaded by pytest-django already.
PROBE = """
import importlib, json, pkgutil, sys
names = []
for package in PACKAGES:
    module = importlib.import_module("planner_ui." + package)
    names.append(module.__name__)
    names += [m.name for m in pkgutil.walk_packages(module.__path__, module.__name__ + ".")]
for name in names:
    importlib.import_module(name)
prefixes = tuple(f + "." for f in FRAMEWORKS)
loaded = sorted(m for m in sys.modules if m in FRAMEWORKS or m.startswith(prefixes))
print(json.dumps({"modules": sorted(names), "frameworks": loaded}))
"""


def test_every_module_below_the_services_imports_without_a_framework() -> None:
    probe = f"PACKAGES = {BELOW_SERVICES!r}\nFRAMEWORKS = {FRAMEWORKS!r}\n{PROBE}"
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert {
        "planner_ui.core.dag",
        "planner_ui.core.messages",
        "planner_ui.agents.executor",
        "planner_ui.tools.email",
        "planner_ui.providers.anthropic",
        "planner_ui.providers.offline",
    } <= set(report["modules"])
    assert report["frameworks"] == []


def _modules() -> dict[str, Path]:
    found = {}
    for path in APP.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, *, local: bool) -> set[str]:
    """Modules `name` imports at import time (local=False) or inside functions (local=True)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import) and inner == local:
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and inner == local:
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - child.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in child.names)
            visit(child, inner)

    visit(tree, False)
    return found


def test_nothing_below_the_services_imports_a_framework_even_inside_a_function() -> None:
    offenders = {
        name: sorted(m for m in _imports(name, path, local=True) if m.split(".")[0] in FRAMEWORKS)
        for name, path in _modules().items()
        if name.split(".")[1:2] and name.split(".")[1] in BELOW_SERVICES
    }
    assert {name: mods for name, mods in offenders.items() if mods} == {}


def _import_graph(*, late: bool) -> dict[str, set[str]]:
    """Which of our modules each imports, at import time and (with `late`) in functions too."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        found = _imports(name, path, local=False)
        if late:
            found |= _imports(name, path, local=True)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def test_the_modules_import_each_other_without_a_circle() -> None:
    cycles = _cycles(_import_graph(late=False))
    assert cycles == [], "import circles: " + "; ".join(" → ".join(c) for c in cycles)


def test_no_import_inside_a_function_closes_a_circle_either() -> None:
    """A function-local import dodges the circle at import time but keeps the modules tied
    both ways. The services send tasks by name (services.sender), so the tasks' imports of
    the services they run close none."""
    cycles = _cycles(_import_graph(late=True))
    assert cycles == [], "import circles: " + "; ".join(" → ".join(c) for c in cycles)


def test_selectors_do_not_import_services() -> None:
    """Reads never depend on writes: a selector that needs a helper of a service means the
    helper belongs in the selectors (or the core). Imports inside functions count too."""
    importing = {
        name
        for name, path in _modules().items()
        if name.startswith("planner_ui.selectors.")
        and any(
            m.startswith("planner_ui.services")
            for m in _imports(name, path, local=False) | _imports(name, path, local=True)
        )
    }
    assert importing == set()


def test_only_the_celery_tasks_import_the_services_late() -> None:
    """Tasks import their service inside the task body (importing the tasks, as Celery's
    autodiscovery does, loads no models); nothing else needs a function-local import of our
    own modules."""
    late = {
        name
        for name, path in _modules().items()
        if any(m.startswith("planner_ui.") for m in _imports(name, path, local=True))
    }
    # The provider factory loads each vendor's module (and its SDK) only when it is used; the
    # app's ready() connects signals once the models are loaded, as Django asks.
    assert late <= {"planner_ui.tasks", "planner_ui.providers", "planner_ui.apps"}, sorted(late)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strongconnect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                strongconnect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            strongconnect(node)
    return found

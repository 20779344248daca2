"""The kit's own import graph, read from the source: which agentkit module imports which, counting imports
inside functions and under `if TYPE_CHECKING:` (a reader, and a copied folder, meets them all)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "agentkit"


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """`core.loop` for agentkit/core/loop.py, `core` for agentkit/core/__init__.py, "" for the root."""
    parts = list(path.relative_to(package).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(p, package): p for p in sorted(package.rglob("*.py")) if "__pycache__" not in p.parts}


def imports_of(path: Path, package: Path = PACKAGE, known: dict[str, Path] | None = None) -> set[str]:
    """The agentkit modules `path` imports, as names relative to the package ("core.types").

    `from . import codec` names the module `codec` when there is one, else the package; `from .x import y`
    names `x`. A name that is not a module of the package (a typo, or a file a copy left out) is kept as
    written, so a closure check sees it."""
    known = modules(package) if known is None else known
    this = module_name(path, package)
    here = this.split(".") if this else []
    if path.name != "__init__.py":
        here = here[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module == "agentkit" or (node.module or "").startswith("agentkit."):
                target = node.module.removeprefix("agentkit").lstrip(".")
            else:
                continue
            for alias in node.names:
                child = f"{target}.{alias.name}".lstrip(".")
                found.add(child if child in known else target)
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix("agentkit.") for a in node.names if a.name.startswith("agentkit."))
    found.discard(this)
    found.discard("")  # the root package's __init__ runs for every import; it is the public surface, not a layer
    return found


@cache
def graph() -> dict[str, frozenset[str]]:
    known = modules()
    return {name: frozenset(imports_of(path, known=known)) for name, path in known.items()}


def cycles(edges: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found

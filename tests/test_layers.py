"""The folders are the layers, and imports run one way: down the README's list, never up it.

Read from the source (`imports_graph`), counting imports inside functions and under `TYPE_CHECKING`, so a
new import that breaks the order fails here, not in a reader's head or in a copied folder.
"""

from __future__ import annotations

import re
from pathlib import Path

import imports_graph
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
ENTRY = re.compile(r"[a-z_]+/|[a-z_]+\.py")


def layers() -> list[list[str]]:
    """The README's layer list, top first: each line's leading entries, as module names ("core", "viz")."""
    start = README.index("## The package, in learning order")
    block = re.search(r"```text\n(.*?)```", README[start:], re.S).group(1)
    found = []
    for line in block.splitlines():
        names = []
        for word in line.split():
            if not ENTRY.fullmatch(word):
                break
            names.append(word.rstrip("/").removesuffix(".py"))
        found.append(names)
    return found


def layer_of(module: str, order: list[list[str]]) -> int:
    top = module.split(".")[0]
    for i, names in enumerate(order):
        if top in names:
            return i
    raise AssertionError(f"agentkit/{top} is in no layer of the README's list")


def core_order() -> list[str]:
    """The order the core's own docstring gives (agentkit/core/__init__.py: "    name   what it is")."""
    doc = (ROOT / "agentkit" / "core" / "__init__.py").read_text(encoding="utf-8")
    return re.findall(r"^    ([a-z_]+) {2,}", doc, re.M)


def test_every_folder_and_module_at_the_root_is_in_one_layer():
    order = layers()
    named = [n for names in order for n in names]
    assert len(named) == len(set(named)), named
    at_root = {p.name.removesuffix(".py") for p in (ROOT / "agentkit").iterdir()
               if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").exists()}
    assert at_root == set(named)


def test_the_root_has_few_entries():
    entries = [p for p in (ROOT / "agentkit").iterdir() if p.name != "__pycache__"]
    assert len(entries) <= 26, sorted(p.name for p in entries)


@pytest.mark.parametrize("module", sorted(m for m in imports_graph.graph() if m))
def test_a_module_imports_only_its_own_layer_or_those_above(module):
    order = layers()
    mine = layer_of(module, order)
    below = {target for target in imports_graph.graph()[module] if layer_of(target, order) > mine}
    assert not below, f"agentkit.{module} imports {sorted(below)}, listed below it in the README"


def test_the_core_modules_import_only_the_ones_before_them():
    order = core_order()
    on_disk = {p.stem for p in (ROOT / "agentkit" / "core").glob("*.py") if p.stem != "__init__"}
    assert set(order) == on_disk, "agentkit/core/__init__.py lists every core module once"
    for i, name in enumerate(order):
        imported = {t.removeprefix("core.") for t in imports_graph.graph()[f"core.{name}"]}
        assert imported <= set(order[:i]), f"core.{name} imports {sorted(imported - set(order[:i]))}"


def test_no_import_cycle_anywhere_in_the_package():
    assert imports_graph.cycles(imports_graph.graph()) == []


def test_the_graph_sees_imports_inside_functions_and_under_type_checking(tmp_path):
    """The checks above are only as good as the reader: it must see every kind of import."""
    package = tmp_path / "agentkit"
    (package / "a").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a" / "__init__.py").write_text("")
    (package / "b.py").write_text("")
    (package / "c.py").write_text("")
    (package / "a" / "x.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..b import thing\n"
        "def f():\n    from .. import c\n    import agentkit.a.y\n")
    imported = imports_graph.imports_of(package / "a" / "x.py", package)
    assert imported == {"b", "c", "a.y"}

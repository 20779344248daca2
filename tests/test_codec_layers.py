"""Imports run one way in the codecs and the simulator: read from the source, so a new import that
breaks the order fails here, not in a reader's head.

* A client codec (`providers/<format>.py`) imports only what sits above `providers` (types, errors) and
  `providers`' own shared modules (`common`, `contract`, and a codec it builds on: OpenRouter on Chat
  Completions); never the simulator, the HTTP client or the loop. Each client codec but OpenRouter can
  be copied with `common`, `contract` and, for the OpenAI formats, `openai_common` beside it.
* A format's server half (`sim/wire/<format>.py`) imports the vocabulary, its own client half and the
  shared modules of both sides (`providers.common`, `sim/wire`'s `common`, `contract`, `openai_common`),
  and nothing else of the simulator: it can be read beside its client file alone.
* The simulator imports the codecs, never the other way round, and knows no format by name.
* The reasoner's modules import only the ones before them, in the order its docstring gives.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from agentkit.providers import FORMATS
from agentkit.sim.wire import SERVERS

ROOT = Path(__file__).resolve().parents[1] / "agentkit"
SHARED = {"common", "contract", "openai_common"}


def imported(path: Path) -> set[str]:
    """The agentkit modules a file imports, as dotted names relative to the package ("providers.common")."""
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(package[: len(package) - node.level + 1])
            target = ".".join(base + ([node.module] if node.module else []))
            names = [target] if node.module else [f"{target}.{a.name}".lstrip(".") for a in node.names]
            out.update(n.lstrip(".") for n in names)
        elif isinstance(node, ast.Import):
            out.update(a.name.removeprefix("agentkit.") for a in node.names if a.name.startswith("agentkit"))
    return out


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_codec_imports_only_the_vocabulary_and_the_shared_provider_modules(fmt):
    module = FORMATS[fmt]
    allowed = {"core.types", "core.errors"} | {f"providers.{m}" for m in SHARED}
    if module == "openrouter":
        allowed.add("providers.openai_chat")  # OpenRouter is Chat Completions plus extras, on purpose
    assert imported(ROOT / "providers" / f"{module}.py") <= allowed


@pytest.mark.parametrize("fmt", list(SERVERS))
def test_a_server_half_imports_only_its_client_half_and_the_shared_modules_of_both_sides(fmt):
    module = SERVERS[fmt]
    allowed = ({"core.types", "core.errors", f"providers.{module}"} | {f"providers.{m}" for m in SHARED}
               | {f"sim.wire.{m}" for m in SHARED})
    if module == "openrouter":
        allowed |= {"sim.wire.openai_chat", "providers.openai_chat"}  # OpenRouter builds on Chat Completions
    assert imported(ROOT / "sim" / "wire" / f"{module}.py") <= allowed


def test_the_shared_server_modules_import_no_simulator_machinery():
    for name in ("common", "contract", "openai_common", "__init__"):
        outside = {m for m in imported(ROOT / "sim" / "wire" / f"{name}.py")
                   if m.startswith("sim") and not m.startswith("sim.wire")}
        assert not outside, (name, outside)


def test_the_simulator_names_no_format_and_the_codecs_never_import_it():
    for path in (ROOT / "providers").glob("*.py"):
        assert not any(m.startswith(("sim", "http", "loop")) for m in imported(path)), path.name
    formats = "|".join(re.escape(f) for f in FORMATS)
    for name in ("app.py", "faults.py", "server.py", "__main__.py"):
        code = "\n".join(line for line in (ROOT / "sim" / name).read_text().splitlines()
                         if not line.lstrip().startswith("#"))
        tree = ast.parse(code)
        literals = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                    and not _is_docstring(n, tree)]
        assert not [s for s in literals if re.fullmatch(formats, s)], f"{name} names a format"


def _is_docstring(node: ast.Constant, tree: ast.Module) -> bool:
    return any(isinstance(d, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and d.body
               and isinstance(d.body[0], ast.Expr) and d.body[0].value is node for d in ast.walk(tree))


def test_the_reasoner_modules_import_only_the_ones_before_them():
    order = ["lexicon", "vocabulary", "understand", "facts", "fill", "choose", "plan", "answer"]
    for i, name in enumerate(order):
        own = {m.split(".")[2] for m in imported(ROOT / "sim" / "reasoner" / f"{name}.py")
               if m.startswith("sim.reasoner.")}
        assert own <= set(order[:i]), (name, own - set(order[:i]))

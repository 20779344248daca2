"""Argument fixtures: the same recorded tool-call arguments for tests, notebooks and manual checks.

    fixtures = load_fixtures()                 # agentkit/data/fixtures, shipped with the package
    for case in fixtures:
        result = validate_arguments(fixtures.tools[case.tool], case.raw)
        assert result.gate == case.gate        # valid ones pass, the others fail at the gate they name

`agentkit/data/fixtures/fixtures.json` (package data) lists the cases (file, tool, the gate that must
refuse it, the error kind, keyword and path); `tools.json` defines the tools they target, with a canned
result each, so a fixture tool can also run inside the loop. One file per case keeps each example readable and diffable.

Left out on purpose: generating fixtures (write them by hand, from real failures) and any format but JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .core.tools import Tool
from .core.validate import ErrorKind, Gate, date_order

if TYPE_CHECKING:  # pathlib loads with the fixtures, not with agentkit
    from pathlib import Path

__all__ = ["Fixture", "FixtureSet", "load_fixtures"]

@dataclass(frozen=True)
class Fixture:
    """One recorded set of arguments and what the gates must say about it.

    `raw` is the file's text exactly (what an OpenAI-style API carries); `arguments` is it parsed (what
    Anthropic, Gemini and MCP carry), or None when the text is not JSON."""

    name: str
    tool: str
    file: str
    raw: str
    gate: Gate | None            # None: all gates pass
    kind: ErrorKind | None = None
    keyword: str | None = None
    path: str | None = None
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.gate is None

    @property
    def arguments(self) -> Any:
        try:
            return json.loads(self.raw)
        except ValueError:
            return None


@dataclass(frozen=True)
class FixtureSet:
    """The fixture tools (with canned results) and cases; iterate it, or index by case name."""

    tools: Mapping[str, Tool]
    cases: tuple[Fixture, ...]
    root: Path | None = field(default=None, compare=False)

    def __iter__(self):
        return iter(self.cases)

    def __len__(self) -> int:
        return len(self.cases)

    def __getitem__(self, name: str) -> Fixture:
        for case in self.cases:
            if case.name == name:
                return case
        raise KeyError(name)


_RULE_FACTORIES = {"date_order": date_order}


def load_fixtures(path: str | Path | None = None) -> FixtureSet:
    """Load the kit's fixtures, agentkit/data/fixtures (or your own folder `path`): fixtures.json lists the
    cases, tools.json the tools they target.

        fixtures = load_fixtures()
        for case in fixtures:
            result = validate_arguments(fixtures.tools[case.tool], case.raw)
            assert result.gate == case.gate
    """
    from importlib.resources import files
    from pathlib import Path

    # The kit's own fixtures are package data, read through importlib.resources: they ship in the wheel.
    root = Path(path) if path is not None else files("agentkit") / "data" / "fixtures"
    index_file = root / "fixtures.json"
    if not index_file.is_file():
        raise FileNotFoundError(f"no fixtures.json in {root}; pass load_fixtures(path=...) pointing at a folder "
                                f"laid out like agentkit/data/fixtures")
    index = json.loads(index_file.read_text(encoding="utf-8"))
    specs = json.loads((root / index.get("tools", "tools.json")).read_text(encoding="utf-8"))
    tools = {name: _fixture_tool(name, spec) for name, spec in specs.items()}
    cases = []
    for name, entry in index["fixtures"].items():
        if entry["tool"] not in tools:
            raise ValueError(f"fixture {name!r} names unknown tool {entry['tool']!r}")
        cases.append(Fixture(name=name, tool=entry["tool"], file=entry["file"],
                             raw=(root / entry["file"]).read_text(encoding="utf-8").strip(),
                             gate=entry.get("gate"), kind=entry.get("kind"), keyword=entry.get("keyword"),
                             path=entry.get("path"), note=entry.get("note", "")))
    return FixtureSet(tools=tools, cases=tuple(cases), root=root)


def _fixture_tool(name: str, spec: dict) -> Tool:
    result = spec.get("example_result")

    def answer(**_arguments: Any) -> Any:
        return json.loads(json.dumps(result))  # a fresh copy each call

    rules = []
    for rule in spec.get("rules", ()):
        (factory, args), = rule.items()
        if factory not in _RULE_FACTORIES:
            raise ValueError(f"fixture tool {name!r} names unknown rule {factory!r}; "
                             f"known: {', '.join(_RULE_FACTORIES)}")
        rules.append(_RULE_FACTORIES[factory](*args))
    answer.__name__ = name
    return Tool.from_schema(name, spec.get("description", ""), spec["parameters"], answer,
                            strict=bool(spec.get("strict", False)), rules=rules,
                            idempotent=bool(spec.get("idempotent", True)))

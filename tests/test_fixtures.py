"""agentkit.fixtures: every recorded case through the gates, as text (OpenAI) and as an object
(Anthropic/Gemini/MCP), and the loader's own errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentkit.core.strict import strict_problems, to_strict
from agentkit.core.validate import validate_arguments
from agentkit.fixtures import load_fixtures

FIXTURES = load_fixtures()


@pytest.mark.parametrize("case", FIXTURES.cases, ids=[c.name for c in FIXTURES.cases])
def test_fixture_gives_the_expected_gate_kind_keyword_and_path(case):
    forms = [case.raw] + ([case.arguments] if isinstance(case.arguments, dict) else [])
    for raw in forms:
        result = validate_arguments(FIXTURES.tools[case.tool], raw)
        assert result.ok is case.ok
        assert result.gate == case.gate
        if case.ok:
            assert result.errors == () and result.arguments == case.arguments
        else:
            first = result.first
            assert (first.kind, first.keyword, first.path) == (case.kind, case.keyword, case.path)


def test_fixture_index_covers_the_required_files():
    names = {c.file for c in FIXTURES}
    assert {"valid.json", "missing_field.json", "wrong_enum.json", "wrong_type.json",
            "numbers_as_strings.json", "bad_json.txt", "extra_property.json"} <= names
    assert FIXTURES["valid"].tool == "searchInvoices"


def test_fixture_tools_run_and_answer_with_their_example_result():
    search = FIXTURES.tools["searchInvoices"]
    assert search.strict and strict_problems(search.parameters) == []
    assert search.invoke(FIXTURES["valid"].arguments)["count"] == 2


def test_seed_strict_schema_is_already_strict():
    seed = json.loads((FIXTURES.root / "tools.json").read_text())["searchInvoices"]["parameters"]
    assert strict_problems(seed) == [] and to_strict(seed) == seed


def test_load_fixtures_from_a_missing_place_says_where_to_look(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="fixtures.json"):
        load_fixtures(tmp_path)


def test_a_fixture_tool_with_an_unknown_rule_is_refused_by_name(tmp_path: Path):
    (tmp_path / "fixtures.json").write_text(json.dumps({"fixtures": {}}))
    (tmp_path / "tools.json").write_text(json.dumps({"t": {"parameters": {"type": "object"},
                                                           "rules": [{"no_such_rule": []}]}}))
    with pytest.raises(ValueError, match="fixture tool 't' names unknown rule 'no_such_rule'"):
        load_fixtures(tmp_path)

"""BFCL: the data from the cache `make test` fills, the type conversion, and the oracle at 100 %."""

from __future__ import annotations

import asyncio
import zipfile

import jsonschema
import jsonschema_rs
import pytest

from agentkit.bench import bfcl
from agentkit.bench.oracle import Oracle, bfcl_answer, serve_with_oracle
from agentkit.bench.runner import read_records, run_benchmark
from agentkit.bench.scoring import check_calls
from agentkit.bench.suites import Case, load_cases
from agentkit.http import HTTPModel

#: Ground truths no call can satisfy under BFCL's own rules (its checker fails them too):
UNSATISFIABLE = {
    "live_simple_106-63-0": "a required array parameter has no acceptable value at all (answer [])",
    "live_simple_112-68-0": "the same: several required parameters have the answer []",
    "live_multiple_862-181-3": "the answer needs 'journey_start_time', which the function does not define",
    "live_multiple_964-207-0": "the answer names 'question'; the function requires 'statement'",
}
#: Identical requests (same messages, same functions) with opposite answers: one wants a call, one none.
CONTRADICTORY = {("live_simple_29-7-2", "live_irrelevance_118-7-8"),
                 ("live_simple_176-102-0", "live_irrelevance_567-175-0"),
                 ("live_multiple_262-125-1", "live_irrelevance_565-173-0")}


@pytest.fixture(scope="module")
def data():
    return bfcl.fetch()  # a no-op when `make test` (make bench-data) has filled the cache


# -- conversion -----------------------------------------------------------------------------------------------

DOC = {"name": "geo.distance", "description": "Distance.", "parameters": {
    "type": "dict", "required": ["a"], "optional": [], "properties": {
        "a": {"type": "tuple", "items": {"type": "float"}, "description": "a point"},
        "b": {"type": "float", "description": "scale", "optional": True},
        "c": {"type": "any", "description": "anything"},
        "d": {"type": "dict", "properties": {"e": {"type": "float", "description": "e"}}},
        "f": {"type": "array", "items": {"type": "dict", "properties": {"g": {"type": "integer"}}}}}}}


def test_bfcl_types_become_json_schema_types_and_dots_become_underscores():
    spec = bfcl.to_tool_spec(DOC)
    props = spec.parameters["properties"]
    assert spec.name == "geo_distance" and spec.parameters["type"] == "object"
    assert props["a"] == {"type": "array", "items": {"type": "number"}, "description": "a point"}
    assert props["b"] == {"type": "number", "description": "scale" + bfcl.FLOAT_HINT, "optional": True,
                          "format": "float"}  # BFCL keeps "optional" (no provider refuses it) and adds the format
    assert props["c"]["type"] == "string"
    assert props["d"]["type"] == "object" and props["d"]["properties"]["e"]["type"] == "number"
    assert props["f"]["items"]["type"] == "object"
    assert DOC["parameters"]["properties"]["a"]["type"] == "tuple"  # the original is left alone
    jsonschema.Draft202012Validator.check_schema(spec.parameters)


def test_unknown_types_and_impossible_names_are_refused_clearly():
    with pytest.raises(ValueError, match="'HashMap' has no JSON Schema equivalent"):
        bfcl.to_tool_spec({"name": "f", "description": "", "parameters": {"type": "dict", "properties": {
            "x": {"type": "array", "items": {"type": "HashMap"}}}}})
    with pytest.raises(ValueError, match="cannot be made a provider tool name"):
        bfcl.provider_name("bad name")
    with pytest.raises(ValueError, match="both become"):
        bfcl.original_names([{"name": "a.b"}, {"name": "a_b"}])


def test_java_and_javascript_are_refused_up_front_in_one_line(data):
    from agentkit.bench.suites import UnknownSuite

    for category, language in (("simple_java", "Java"), ("simple_javascript", "JavaScript")):
        with pytest.raises(UnknownSuite, match=f"bfcl:{category} is refused: .* {language}'s type rules"):
            load_cases(f"bfcl:{category}")
        with pytest.raises(ValueError, match=f"{language}'s type rules"):
            bfcl.load(category, data)


def test_every_function_doc_of_every_category_converts_to_valid_json_schema(data):
    raw_invalid = converted_invalid = 0
    for category in bfcl.CATEGORIES:
        for case in bfcl.load(category, data):
            bfcl.original_names(case.functions)
            raw_invalid += sum(not jsonschema_rs.meta.is_valid(f["parameters"]) for f in case.functions)
            converted_invalid += sum(not jsonschema_rs.meta.is_valid(s.parameters) for s in case.tool_specs())
    assert raw_invalid == 8532 and converted_invalid == 0  # every raw doc says "type": "dict"


# -- the data and its cache ------------------------------------------------------------------------------------------

def test_the_cache_holds_every_category_with_its_answers(data):
    sizes = {c: len(bfcl.load(c, data)) for c in bfcl.CATEGORIES}
    assert sizes == {"simple_python": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200,
                     "irrelevance": 240, "live_simple": 258, "live_multiple": 1053, "live_parallel": 16,
                     "live_parallel_multiple": 24, "live_irrelevance": 884}
    first = bfcl.load("simple_python", data)[0]
    assert first.messages[0].role == "user" and first.ground_truth[0] == {
        "calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}


def test_loading_before_fetching_says_which_command_fetches(tmp_path):
    with pytest.raises(bfcl.DataNotFetched, match="python -m agentkit.bench fetch bfcl"):
        bfcl.load("simple_python", tmp_path / "empty")
    with pytest.raises(ValueError, match="unknown BFCL category 'java'"):
        bfcl.load("java", tmp_path)


def test_fetch_is_a_no_op_when_the_data_is_there(data, monkeypatch):
    monkeypatch.setattr(bfcl, "_download", lambda folder: pytest.fail("fetch downloaded although cached"))
    assert bfcl.fetch(data) == data


def test_fetch_refuses_a_wheel_that_is_not_the_pinned_one(tmp_path):
    wheel = tmp_path / bfcl.WHEEL
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("bfcl_eval/data/README.md", "not the real thing")
    with pytest.raises(bfcl.FetchError, match="not the pinned"):
        bfcl.fetch(tmp_path / "cache", wheel=wheel)
    assert not bfcl.is_fetched(tmp_path / "cache")


# -- the oracle --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("category", bfcl.CATEGORIES)
def test_the_oracles_answers_score_100_percent_except_bfcls_unsatisfiable_cases(data, category):
    misses = {}
    for case in bfcl.load(category, data):
        verdict = check_calls(case.functions, case.ground_truth, [{n: a} for n, a in bfcl_answer(case)], category)
        if not verdict.ok:
            misses[case.id] = verdict.label
    assert set(misses) == {i for i in UNSATISFIABLE if i.startswith(category + "_")}


def test_only_the_contradictory_pairs_look_alike_to_the_oracle(data):
    oracle = Oracle(c for category in bfcl.CATEGORIES for c in bfcl.load(category, data))
    assert set(oracle.conflicts) == CONTRADICTORY
    for category in bfcl.CATEGORIES:
        assert Oracle(bfcl.load(category, data)).conflicts == []


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic", "gemini"])
def test_the_oracle_scores_100_percent_over_http_in_every_category(data, fmt, tmp_path):
    """Through the simulator: conversion, a codec each way, the loop, the runner and the checker."""
    cases = [c for c in load_cases("bfcl", limit=12) if c.id not in UNSATISFIABLE]
    with serve_with_oracle(cases) as server:
        model = HTTPModel("oracle", fmt, base_url=server.base_url(fmt), api_key="sim")
        summary = asyncio.run(run_benchmark(cases, model, out=tmp_path / "o.jsonl", concurrency=8, progress=False))
    records = read_records(tmp_path / "o.jsonl")
    assert summary.done == len(cases) == len(records)
    assert [r["case"] for r in records if not r["ok"]] == []
    assert {r["category"] for r in records} == set(bfcl.CATEGORIES)


def test_a_cases_tools_are_built_once_and_shared_by_every_copy_of_the_case():
    """The runner may hold many Case objects over one BFCL entry (trials, a cycled list): one set of Tools."""
    case = load_cases("bfcl:simple_python", limit=1)[0]
    copy = Case(case.id + "#again", case.suite, case.category, case.source)
    first, second = case.start().tools, copy.start().tools
    assert [t.name for t in first] == [spec.name for spec in case.source.tool_specs()]
    assert all(a is b for a, b in zip(first, second, strict=True))


@pytest.mark.parametrize("flag, said", [((), "BFCL scoring: BFCL's own verdicts (the default)."),
                                        (("--lenient-scoring",), "BFCL scoring: lenient: ints pass")])
def test_the_report_says_whose_verdicts_the_scores_are(data, tmp_path, capsys, flag, said):
    from agentkit.bench.__main__ import main

    assert main(["run", "--suite", "bfcl:simple_python", "--provider", "sim", "--model", "oracle", "--limit", "2",
                 "--out", str(tmp_path), "--no-progress", *flag]) == 0
    assert said in capsys.readouterr().out
    assert {r["rules"] for r in read_records(tmp_path / "oracle.jsonl")} == {"lenient" if flag else "bfcl"}


def test_the_command_line_refuses_java_in_one_line(data, capsys):
    from agentkit.bench.__main__ import main

    assert main(["run", "--suite", "bfcl:simple_java", "--provider", "sim"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bfcl:simple_java is refused" in err[0]

"""BFCL's exact request: the tool list agentkit sends equals, byte for byte, what BFCL's own generation sends.

BFCL's functions are imported from the cached bfcl-eval wheel (never installed, never copied): its
`add_language_specific_hint_to_function_doc` (the hint every case's docs get on loading) and its
`convert_to_tool` (what each function-calling handler's `_compile_tools` sends). Importing them pulls
in modules BFCL needs for other things — filelock for its result files, tree-sitter for parsing Java
and JavaScript answers — which are not installed here: they are stood in for by empty modules, and
none of their code runs in these two functions. BFCL's results folder goes to a temporary directory
(BFCL_PROJECT_ROOT), because BFCL creates it on import.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from unittest import mock

import pytest

from agentkit.bench import bfcl
from agentkit.providers import get_codec


@pytest.fixture(scope="module")
def theirs(tmp_path_factory):
    bfcl.fetch()
    patch = pytest.MonkeyPatch()
    patch.setenv("BFCL_PROJECT_ROOT", str(tmp_path_factory.mktemp("bfcl-project")))
    for name in ("filelock", "tree_sitter", "tree_sitter_java", "tree_sitter_javascript"):
        if name not in sys.modules and importlib.util.find_spec(name) is None:
            patch.setitem(sys.modules, name, mock.MagicMock())
    try:
        utils = bfcl.import_from_wheel("bfcl_eval.utils")
        # BFCL reads the multi-turn function docs from its own data folder: the same files, from the cache
        utils.MULTI_TURN_FUNC_DOC_PATH = bfcl.cache_dir() / "multi_turn_func_doc"
        handler = bfcl.import_from_wheel("bfcl_eval.model_handler.utils")
        enums = bfcl.import_from_wheel("bfcl_eval.constants.enums")
        mapping = bfcl.import_from_wheel("bfcl_eval.constants.type_mappings").GORILLA_TO_OPENAPI
    finally:
        patch.undo()

    def request(case_id: str, functions: list, style: str) -> list:
        """What BFCL's handler of `style` sends as `tools` for this case."""
        entry = {"id": case_id, "function": copy.deepcopy(list(functions))}
        hinted = utils.add_language_specific_hint_to_function_doc([entry])[0]["function"]
        return handler.convert_to_tool(hinted, mapping, enums.ModelStyle(style))

    def multi_turn_requests(entry: dict, style: str) -> dict[int, list]:
        """What BFCL's handler sends as `tools` at the first turn and at each turn that adds functions:
        load_dataset_entry's two steps on the raw entry, then inference_multi_turn_FC's extend + compile."""
        entry = utils.add_language_specific_hint_to_function_doc(
            utils.populate_test_cases_with_predefined_functions([copy.deepcopy(entry)]))[0]
        sent = {0: handler.convert_to_tool(entry["function"], mapping, enums.ModelStyle(style))}
        for turn in range(len(entry["question"])):
            if str(turn) in entry.get("missed_function", {}):
                entry["function"].extend(entry["missed_function"][str(turn)])
                sent[turn] = handler.convert_to_tool(entry["function"], mapping, enums.ModelStyle(style))
        return sent

    request.multi_turn = multi_turn_requests
    return request


def ours(specs, fmt: str) -> list:
    """What agentkit's codec for `fmt` sends as the tools, put in BFCL's envelope where the codec's differs
    (the module docstring of bfcl.py names the two differences)."""
    wire = [get_codec(fmt).tool_to_wire(spec) for spec in specs]
    if fmt == "openai-responses":  # the codec writes "type" first and always states "strict"
        assert all(t.pop("strict") is False for t in wire)
        wire = [{**{k: v for k, v in t.items() if k != "type"}, "type": t["type"]} for t in wire]
    if fmt == "gemini":  # the same doc, in parametersJsonSchema where BFCL's SDK says parameters
        wire = [{("parameters" if k == "parametersJsonSchema" else k): v for k, v in t.items()} for t in wire]
    return wire


@pytest.mark.parametrize("fmt", ["openai-chat", "openrouter", "ollama", "anthropic", "openai-responses", "gemini"])
@pytest.mark.parametrize("category", bfcl.CATEGORIES)
def test_every_case_sends_bfcls_own_tool_list_byte_for_byte(theirs, category, fmt):
    style = bfcl.style_of(fmt)
    differing = []
    for case in bfcl.load(category):
        expected = json.dumps(theirs(case.id, case.functions, style), ensure_ascii=False)
        sent = json.dumps(ours(case.tool_specs(fmt), fmt), ensure_ascii=False)
        if sent != expected:
            differing.append(case.id)
    assert differing == []


def test_the_request_carries_the_hint_the_float_format_and_bfcls_key_order():
    doc = {"name": "geo.scale", "description": "Scale a point.", "parameters": {
        "type": "dict", "required": ["factor"], "properties": {
            "factor": {"type": "float", "description": "how much", "default": 1.0},
            "point": {"type": "tuple", "items": {"type": "float"}, "description": "x, y"},
            "mode": {"type": "string", "enum": ["a", "b"], "description": "m", "optional": True}}}}
    spec = bfcl.to_tool_spec(doc)
    assert spec.name == "geo_scale"
    assert spec.description == "Scale a point. Note that the provided function is in Python 3 syntax."
    assert json.dumps(spec.parameters) == json.dumps({"type": "object", "required": ["factor"], "properties": {
        "factor": {"type": "number", "description": "how much This is a float type value.", "default": 1.0,
                   "format": "float"},
        "point": {"type": "array", "items": {"type": "number"}, "description": "x, y"},
        "mode": {"type": "string", "enum": ["a", "b"], "description": "m", "optional": True}}})
    google = bfcl.to_tool_spec(doc, "google").parameters["properties"]
    assert google["factor"]["description"].endswith("This is a float type value. Default is: 1.0.")
    assert google["mode"] == {"type": "string", "enum": ["a", "b"], "description": "m Optional: True."}
    assert doc["parameters"]["properties"]["factor"]["type"] == "float"  # the original is left alone


def test_the_style_follows_the_wire_format():
    assert {f: bfcl.style_of(f) for f in bfcl.STYLES} == {
        "openai-chat": "openai-completions", "openrouter": "openai-completions", "ollama": "openai-completions",
        "openai-responses": "openai-responses", "anthropic": "claude", "gemini": "google"}
    assert bfcl.style_of(None) == "openai-completions"
    with pytest.raises(ValueError, match="unknown BFCL model style 'gorilla'"):
        bfcl.to_tool_spec({"name": "f", "description": "", "parameters": {"type": "dict", "properties": {}}},
                          "gorilla")


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic", "openai-responses", "gemini"])
@pytest.mark.parametrize("category", bfcl.MULTI_TURN_CATEGORIES)
def test_every_multi_turn_case_sends_bfcls_tool_list_at_every_turn_that_changes_it(theirs, category, fmt):
    """Multi-turn too, including the functions a miss_func case adds later (which BFCL sends without the
    language hint). Two things are left out of the comparison (bfcl.py's docstring says why): the
    `response` schema BFCL's OpenAI-style handlers send as an extra key of each function (a ToolSpec has
    no place for it; the Claude and Gemini styles move it into the description, and so does agentkit),
    and the prompt-caching mark BFCL's Claude handler puts on the last tool."""
    from agentkit.bench import multiturn

    entries = {e["id"]: e for e in bfcl._read_lines(bfcl.cache_dir() / f"BFCL_v4_{category}.json")}
    differing = []
    for case in multiturn.load(category):
        for turn, expected in theirs.multi_turn(entries[case.id], bfcl.style_of(fmt)).items():
            for tool in expected:
                tool.pop("cache_control", None)
                (tool.get("function") or tool).pop("response", None)
            sent = ours([t.spec for t in multiturn.tools_for(case, turn, fmt)], fmt)
            if json.dumps(sent, ensure_ascii=False) != json.dumps(expected, ensure_ascii=False):
                differing.append((case.id, turn))
    assert differing == []

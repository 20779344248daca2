"""BFCL-exact: the tool list agentkit sends equals, byte for byte, what BFCL's own generation sends, and
`check_calls` gives BFCL's own verdict (its eval_runner's decoding and its ast_checker) on every case and
35,506 answers in all (the oracle's and variations of it: left-out, retyped, changed and extra arguments,
other spellings, no call, an extra call, broken JSON).

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


# -- the verdict: check_calls against BFCL's own AST checker ------------------------------------------------------

@pytest.fixture(scope="module")
def bfcl_verdict(theirs):
    """BFCL's evaluation of one function-calling answer, as its eval_runner does it: decode (json.loads of
    each call's arguments), the format check, then ast_checker — or, for irrelevance, "no decodable call".
    BFCL's model_config imports every provider's SDK to list its models; the checker reads one flag from
    it (underscore_to_dot: the model was sent underscored names), so a one-entry stand-in replaces it."""
    patch = pytest.MonkeyPatch()
    patch.setitem(sys.modules, "bfcl_eval.constants.model_config", mock.Mock(
        MODEL_CONFIG_MAPPING={"agentkit": mock.Mock(underscore_to_dot=True)}))
    try:
        checker = bfcl.import_from_wheel("bfcl_eval.eval_checker.ast_eval.ast_checker")
        utils = bfcl.import_from_wheel("bfcl_eval.utils")
        language = bfcl.import_from_wheel("bfcl_eval.constants.enums").Language.PYTHON
    finally:
        patch.undo()

    def verdict(case, calls: list[dict]) -> bool:
        try:
            decoded = [{name: json.loads(args) if isinstance(args, str) else args}
                       for call in calls for name, args in call.items()]
        except ValueError:
            decoded = None
        if "irrelevance" in case.category:
            return decoded is None or utils.is_empty_output(decoded)
        if decoded is None or not utils.is_function_calling_format_output(decoded):
            return False
        return checker.ast_checker(list(case.functions), decoded, list(case.ground_truth), language, case.category,
                                   "agentkit")["valid"]

    return verdict


def answers(case) -> list[list[dict]]:
    """The oracle's answer and variations of it a model might send: each tells the checkers' rules apart."""
    from agentkit.bench.oracle import bfcl_answer

    calls = [{name: arguments} for name, arguments in bfcl_answer(case)]
    if not calls:  # irrelevance: a call after all, with good, empty, broken and non-object arguments
        name = bfcl.provider_name(case.functions[0]["name"]) if case.functions else "anything"
        return [[], [{name: {}}], [{name: "{}"}], [{name: ""}], [{name: "{oops"}], [{name: "[1]"}]]
    out = [calls, [], calls + calls[:1], [{n: json.dumps(a)} for c in calls for n, a in c.items()]]
    (name, arguments), = calls[0].items()
    original = case.functions[[bfcl.provider_name(f["name"]) for f in case.functions].index(name)]["name"]
    out.append([{original: arguments}] + calls[1:])  # BFCL's own (dotted) spelling
    for param, value in arguments.items():
        def changed(new, param=param):
            return [{name: {**arguments, param: new}}] + calls[1:]

        out.append([{name: {k: v for k, v in arguments.items() if k != param}}] + calls[1:])
        if isinstance(value, bool):
            out.append(changed(int(value)))
        elif isinstance(value, int):
            out += [changed(float(value)), changed(str(value))]
        elif isinstance(value, float):
            out += [changed(int(value))] if value.is_integer() else [changed(round(value, 1) + 1)]
        elif isinstance(value, str):
            out += [changed(value.upper() + "."), changed(value + " extra")]
        elif isinstance(value, list):
            out += [changed([int(v) if isinstance(v, float) and v.is_integer() else v for v in value]),
                    changed(value[::-1]), changed(value[:-1])]
        elif isinstance(value, dict):
            out.append(changed({k: v for k, v in list(value.items())[:-1]}))
    return out


@pytest.mark.parametrize("category", bfcl.CATEGORIES)
def test_check_calls_gives_bfcls_verdict_on_every_case_and_its_variations(bfcl_verdict, category):
    from agentkit.bench.scoring import check_calls

    differing, checked = [], 0
    for case in bfcl.load(category):
        for calls in answers(case):
            checked += 1
            ours = check_calls(case.functions, case.ground_truth, calls, category).ok
            if ours != bfcl_verdict(case, calls):
                differing.append((case.id, calls))
    assert checked > len(bfcl.load(category)) and differing == []

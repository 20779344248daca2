"""check_calls: every BFCL rule and every label, with hand-made right and wrong calls."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit.bench import LABELS, Verdict, check_calls
from agentkit.bench.scoring import normalise

# Function docs in BFCL's own format (type names are BFCL's: dict, float, tuple, any).
AREA = {"name": "geometry.area", "description": "Area of a shape.", "parameters": {
    "type": "dict", "required": ["shape", "size"], "properties": {
        "shape": {"type": "string", "description": "circle or square"},
        "size": {"type": "float", "description": "radius or side"},
        "unit": {"type": "string", "description": "optional unit"},
        "precise": {"type": "boolean", "description": "more digits"},
        "count": {"type": "integer", "description": "how many"}}}}
ROUTE = {"name": "route", "description": "A route.", "parameters": {
    "type": "dict", "required": ["points"], "properties": {
        "points": {"type": "array", "items": {"type": "float"}, "description": "coordinates"},
        "pair": {"type": "tuple", "items": {"type": "integer"}, "description": "two ints"},
        "names": {"type": "array", "items": {"type": "string"}, "description": "stops"},
        "options": {"type": "dict", "description": "extra", "properties": {
            "avoid": {"type": "string"}, "max": {"type": "integer"}}},
        "legs": {"type": "array", "items": {"type": "dict"}, "description": "legs"},
        "anything": {"type": "any", "description": "whatever"}}}}
WEATHER = {"name": "weather", "description": "Weather.", "parameters": {
    "type": "dict", "required": ["city"], "properties": {"city": {"type": "string", "description": "city"}}}}

AREA_ANSWER = [{"geometry.area": {"shape": ["circle"], "size": [2.0], "unit": ["cm", ""], "precise": ["", False],
                                  "count": [1, ""]}}]


def check(calls, functions=(AREA,), truth=AREA_ANSWER, category="simple_python") -> Verdict:
    return check_calls(list(functions), truth, calls, category)


def label(calls, **kw) -> str | None:
    return check(calls, **kw).label


# -- the right call, and its spellings ------------------------------------------------------------------

def test_the_expected_call_passes_only_under_the_spelling_the_model_was_sent():
    """BFCL expects one spelling per model: underscores for a function-calling model (what agentkit sends)."""
    assert check([{"geometry_area": {"shape": "circle", "size": 2.0}}]).ok
    assert check([{"geometry.area": {"shape": "circle", "size": 2.0}}]).label == "wrong_function"
    dotted = check_calls([AREA, WEATHER], [{"geometry.area": {"shape": ["circle"], "size": [2.0]}}],
                         [{"geometry.area": {"shape": "circle", "size": 2.0}}], "simple_python", spelling="original")
    assert dotted.ok
    with pytest.raises(ValueError, match="spelling='both'"):
        check_calls([AREA], [], [], "simple_python", spelling="both")


def test_optional_parameters_may_be_left_out_or_sent_with_an_accepted_value():
    assert check([{"geometry_area": {"shape": "circle", "size": 2.0, "unit": "cm", "precise": False, "count": 1}}]).ok


def test_arguments_may_arrive_as_the_json_text_a_provider_sends():
    assert check([{"geometry_area": json.dumps({"shape": "circle", "size": 2})}]).ok


def test_an_int_is_fine_where_a_float_is_expected_but_a_float_is_not_fine_for_an_int():
    assert check([{"geometry_area": {"shape": "circle", "size": 2}}]).ok
    assert label([{"geometry_area": {"shape": "circle", "size": 2.0, "count": 1.0}}]) == "type_error"


def test_strings_are_compared_after_bfcl_normalisation():
    assert normalise("New York, NY") == normalise("new york ny") == "newyorkny"
    assert normalise("it's") == 'it"s'
    assert check([{"geometry_area": {"shape": " Circle. ", "size": 2.0}}]).ok
    assert label([{"geometry_area": {"shape": "circles", "size": 2.0}}]) == "wrong_value"


# -- one label per rule ---------------------------------------------------------------------------------------

def test_no_call_where_one_was_expected_is_no_call():
    assert label([]) == "no_call"


def test_arguments_that_are_not_a_json_object_are_bad_json():
    assert label([{"geometry_area": '{"shape": "circ'}]) == "bad_json"
    assert label([{"geometry_area": "[1, 2]"}]) == "bad_json"


def test_two_calls_in_a_simple_category_are_the_wrong_count():
    good = {"geometry_area": {"shape": "circle", "size": 2.0}}
    assert label([good, good]) == "wrong_count"


def test_another_function_is_the_wrong_function():
    assert label([{"weather": {"city": "Paris"}}], functions=(AREA, WEATHER)) == "wrong_function"


def test_a_required_parameter_left_out_is_a_missing_argument():
    assert label([{"geometry_area": {"shape": "circle"}}]) == "missing_argument"


def test_a_parameter_the_answer_needs_is_missing_even_if_the_doc_calls_it_optional():
    truth = [{"geometry.area": {"shape": ["circle"], "size": [2.0], "unit": ["cm"]}}]
    verdict = check([{"geometry_area": {"shape": "circle", "size": 2.0}}], truth=truth)
    assert verdict.label == "missing_argument" and "optional in the doc" in verdict.detail


def test_a_parameter_the_doc_or_the_answer_lacks_is_unexpected():
    assert label([{"geometry_area": {"shape": "circle", "size": 2.0, "colour": "red"}}]) == "unexpected_argument"
    truth = [{"geometry.area": {"shape": ["circle"], "size": [2.0]}}]  # the doc has unit, this answer does not
    assert label([{"geometry_area": {"shape": "circle", "size": 2.0, "unit": "cm"}}], truth=truth) \
        == "unexpected_argument"


@pytest.mark.parametrize("arguments", [{"shape": 5, "size": 2.0}, {"shape": "circle", "size": "2"},
                                       {"shape": "circle", "size": 2.0, "precise": "false"},
                                       {"shape": "circle", "size": 2.0, "count": True}])
def test_a_value_of_the_wrong_type_is_a_type_error(arguments):
    assert label([{"geometry_area": arguments}]) == "type_error"


def test_a_value_the_answer_does_not_list_is_a_wrong_value():
    assert label([{"geometry_area": {"shape": "circle", "size": 3.0}}]) == "wrong_value"
    assert label([{"geometry_area": {"shape": "circle", "size": 2.0, "precise": True}}]) == "wrong_value"


def test_a_variable_answer_accepts_the_answers_own_type():
    # BFCL's "variable" rule: the answer says "n" where the doc says integer, so the string "n" passes.
    truth = [{"geometry.area": {"shape": ["circle"], "size": [2.0], "count": ["n"]}}]
    assert check([{"geometry_area": {"shape": "circle", "size": 2.0, "count": "n"}}], truth=truth).ok
    assert label([{"geometry_area": {"shape": "circle", "size": 2.0, "count": "m"}}], truth=truth) == "wrong_value"


def test_any_means_a_string_to_bfcls_checker():
    truth = [{"route": {"points": [[1.0]], "anything": ["x"]}}]
    assert check([{"route": {"points": [1.0], "anything": "X"}}], functions=(ROUTE,), truth=truth).ok
    assert label([{"route": {"points": [1.0], "anything": 1}}], functions=(ROUTE,), truth=truth) == "type_error"


# -- lists, tuples, dicts -----------------------------------------------------------------------------------------

ROUTE_TRUTH = [{"route": {"points": [[1.5, 2.0]], "pair": [[1, 2], ""], "names": [["St. Pancras", "Kings X"], ""],
                          "options": [{"avoid": ["tolls", ""], "max": [3]}, ""],
                          "legs": [[{"from": ["a"], "to": ["b"]}, {"from": ["b"], "to": ["c", "C"]}], ""]}}]


def route(**arguments) -> Verdict:
    return check([{"route": {"points": [1.5, 2.0], **arguments}}], functions=(ROUTE,), truth=ROUTE_TRUTH)


def test_lists_match_element_by_element_in_order_with_strings_normalised():
    assert route(names=["st pancras", "kings x"]).ok
    assert route(names=["Kings X", "St. Pancras"]).label == "wrong_value"


def test_a_tuple_is_a_json_array_and_its_items_are_type_checked():
    assert route(pair=[1, 2]).ok
    truth = [{"route": {"points": [[1.0]], "pair": [[1, 2]]}}]
    assert check([{"route": {"points": [1.0], "pair": [1, "2"]}}], functions=(ROUTE,), truth=truth).label \
        == "type_error"
    # As in BFCL: when the answer also allows leaving the list out (""), its items are not type-checked,
    # so the same call fails on its value instead.
    assert route(pair=[1, "2"]).label == "wrong_value"


def test_ints_inside_a_list_of_floats_fail_as_in_bfcl_and_pass_only_when_lenient():
    calls, truth = [{"route": {"points": [3, 2]}}], [{"route": {"points": [[3.0, 2.0]]}}]
    strict = check_calls([ROUTE], truth, calls, "simple_python")
    lenient = check_calls([ROUTE], truth, calls, "simple_python", lenient=True)
    assert (strict.ok, strict.label, strict.rules) == (False, "type_error", "bfcl")
    assert (lenient.ok, lenient.rules) == (True, "lenient")
    assert strict.to_dict()["rules"] == "bfcl" and "rules" not in Verdict.passed().to_dict()


def test_a_dict_matches_key_by_key_and_may_leave_out_keys_whose_answers_allow_it():
    assert route(options={"max": 3}).ok
    assert route(options={"max": 3, "avoid": "Tolls"}).ok
    assert route(options={"avoid": "tolls"}).label == "wrong_value"  # max has no "" so it must be there
    assert route(options={"max": 3, "via": "x"}).label == "wrong_value"
    assert route(options={"max": 4}).label == "wrong_value"


def test_a_list_of_dicts_matches_in_order():
    assert route(legs=[{"from": "a", "to": "b"}, {"from": "b", "to": "c"}]).ok
    assert route(legs=[{"from": "b", "to": "c"}, {"from": "a", "to": "b"}]).label == "wrong_value"
    assert route(legs=[{"from": "a", "to": "b"}]).label == "wrong_value"


# -- the categories ---------------------------------------------------------------------------------------------

PARALLEL_TRUTH = [{"weather": {"city": ["Paris"]}}, {"weather": {"city": ["Tokyo"]}},
                  {"geometry.area": {"shape": ["square"], "size": [1.0]}}]
PARALLEL_CALLS = [{"weather": {"city": "Paris"}}, {"weather": {"city": "Tokyo"}},
                  {"geometry_area": {"shape": "square", "size": 1}}]


def parallel(calls) -> Verdict:
    return check(calls, functions=(AREA, WEATHER), truth=PARALLEL_TRUTH, category="parallel_multiple")


def test_parallel_calls_match_in_any_order():
    for seed in range(6):
        calls = PARALLEL_CALLS[:]
        random.Random(seed).shuffle(calls)
        assert parallel(calls).ok


def test_parallel_needs_every_expected_call_once_and_names_the_closest_reason():
    assert parallel(PARALLEL_CALLS[:2]).label == "wrong_count"
    assert parallel([PARALLEL_CALLS[0], PARALLEL_CALLS[0], PARALLEL_CALLS[2]]).label == "wrong_value"
    wrong_type = [PARALLEL_CALLS[0], PARALLEL_CALLS[1], {"geometry_area": {"shape": "square", "size": "1"}}]
    verdict = parallel(wrong_type)
    assert verdict.label == "type_error" and "expected call 3" in verdict.detail


def test_multiple_means_exactly_the_one_expected_call():
    truth = [{"weather": {"city": ["Paris"]}}]
    assert check([{"weather": {"city": "paris"}}], functions=(AREA, WEATHER), truth=truth, category="multiple").ok
    assert check([{"geometry_area": {"shape": "circle", "size": 2.0}}], functions=(AREA, WEATHER), truth=truth,
                 category="live_multiple").label == "wrong_function"
    assert check([{"weather": {"city": "Paris"}}] * 2, functions=(AREA, WEATHER), truth=truth,
                 category="multiple").label == "wrong_count"


def test_irrelevance_passes_without_a_call_or_when_bfcl_cannot_decode_the_calls():
    def irrelevance(calls, **kw):
        return check_calls([WEATHER], None, calls, "irrelevance", **kw)

    assert irrelevance([]).ok
    assert check([{"weather": {"city": "Paris"}}], functions=(WEATHER,), truth=None,
                 category="live_irrelevance").label == "call_on_irrelevance"
    assert irrelevance([{"weather": "{}"}]).label == "call_on_irrelevance"
    # BFCL's decoder fails on arguments that are not a JSON object (or empty text): "no call", a pass
    for broken in ("{not json", "[1, 2]", ""):
        assert irrelevance([{"weather": {"city": "Paris"}}, {"weather": broken}]).ok
        assert irrelevance([{"weather": broken}], lenient=True).label == "call_on_irrelevance"


def test_bad_input_gets_a_clear_error():
    with pytest.raises(ValueError, match="one {name: arguments} pair"):
        check([{"a": {}, "b": {}}])
    with pytest.raises(ValueError, match="needs a ground truth"):
        check([], truth=None)
    with pytest.raises(ValueError, match="unknown failure label"):
        Verdict.failed("oops")


def test_every_label_the_checker_gives_is_documented():
    seen = {label([]), label([{"geometry_area": "{"}]), label([{"geometry_area": {"shape": "circle"}}]),
            label([{"weather": {"city": "x"}}], functions=(AREA, WEATHER)),
            label([{"geometry_area": {"shape": 1, "size": 2.0}}]),
            label([{"geometry_area": {"shape": "circle", "size": 9.0}}]),
            label([{"geometry_area": {"shape": "circle", "size": 2.0, "z": 1}}]),
            label([{"geometry_area": {"shape": "circle", "size": 2.0}}] * 2),
            check([{"weather": {}}], functions=(WEATHER,), truth=None, category="irrelevance").label,
            label([{"geometry.area": {"shape": "circle", "size": 2.0}}])}
    assert seen <= set(LABELS) and len(seen) == 9


# -- properties ----------------------------------------------------------------------------------------------------

scalars = st.one_of(st.integers(-1000, 1000), st.text(alphabet="abcXYZ 12", min_size=1, max_size=8),
                    st.booleans())


@st.composite
def calls_and_truth(draw):
    """Random functions with string/integer/boolean parameters, a ground truth, and the calls it accepts."""
    functions, truth, calls = [], [], []
    for i in range(draw(st.integers(1, 4))):
        params = draw(st.dictionaries(st.sampled_from("abcdef"), scalars, min_size=1, max_size=4))
        types = {k: {bool: "boolean", int: "integer", str: "string"}[type(v)] for k, v in params.items()}
        functions.append({"name": f"pkg.fn{i}", "parameters": {
            "type": "dict", "required": sorted(params), "properties": {k: {"type": t} for k, t in types.items()}}})
        truth.append({f"pkg.fn{i}": {k: [v] for k, v in params.items()}})
        calls.append({f"pkg_fn{i}": dict(params)})
    return functions, truth, calls


@settings(max_examples=150, deadline=None)
@given(calls_and_truth(), st.randoms(use_true_random=False))
def test_the_answers_own_values_pass_in_any_order(example, rng):
    functions, truth, calls = example
    rng.shuffle(calls)
    assert check_calls(functions, truth, calls, "parallel_multiple").ok


@settings(max_examples=150, deadline=None)
@given(calls_and_truth(), st.data())
def test_dropping_a_required_argument_always_fails_with_missing_argument(example, data):
    functions, truth, calls = example
    i = data.draw(st.integers(0, len(calls) - 1))
    (name, arguments), = calls[i].items()
    dropped = data.draw(st.sampled_from(sorted(arguments)))
    calls[i] = {name: {k: v for k, v in arguments.items() if k != dropped}}
    verdict = check_calls(functions, truth, calls, "parallel_multiple")
    assert not verdict.ok and verdict.label == "missing_argument"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20))
def test_normalisation_is_idempotent_and_ignores_case_and_separators(text):
    assert normalise(normalise(text)) == normalise(text)
    assert normalise(text.upper()) == normalise(text.lower()) or not text.isascii()
    assert normalise(f" {text} ,.") == normalise(text)

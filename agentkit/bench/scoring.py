"""Scoring: did the model call the right functions with acceptable arguments? A Verdict with a label.

    from agentkit.bench import check_calls
    v = check_calls(case.functions, case.ground_truth, [{"math_factorial": {"number": 5}}], "simple_python")
    v.ok, v.label, v.detail          # True, None, ""

`check_calls` follows the rules of BFCL's AST checker for its single-turn categories (read from
bfcl-eval 2026.3.23 and re-written here, not copied), in the order BFCL applies them, and by default
gives BFCL's verdict (tests/test_bench_bfcl_request.py holds it to BFCL's own decoder and ast_checker,
imported from the cached wheel, on every case and 35,506 answers):

  1. decoding  every call's arguments must be a JSON object                            -> bad_json
  2. count     irrelevance: no call at all; simple and multiple: exactly one call;     -> call_on_irrelevance
               parallel: as many calls as the answer lists                             -> no_call, wrong_count
  3. function  the expected name, spelled as the model was sent it: BFCL replaces     -> wrong_function
               the dots for a function-calling model ("math_factorial") and expects
               that spelling only; agentkit sends every model that spelling
               (`spelling="original"` expects the dotted one, as BFCL does for a
               prompt-mode model that was shown the dots)
  4. required  every parameter the doc marks required is there                         -> missing_argument
  5. known     each parameter the call sends is in the doc *and* in the answer         -> unexpected_argument
  6. type      the doc's type: bool is not int, an int is fine where a float is        -> type_error
               expected; a value of the answer's own type is accepted too (BFCL's
               "variable" rule: the answer says "x" where the doc says integer)
  7. value     one of the possible answers: strings after BFCL's normalisation        -> wrong_value
               (lowercase, no spaces or `,./-_*^`, ' read as "), lists element by
               element, dicts key by key (a key whose answers include "" may be left
               out), lists of dicts in order; numbers by ==, so 5 matches 5.0
  8. needed    a parameter the answer lists without "" must be sent, even when the     -> missing_argument
               doc calls it optional
  9. parallel  each expected call is matched by one not-yet-used call, in any order
               (first fit, as BFCL does); the label is the closest call's reason

On irrelevance BFCL counts only calls it can decode: a call whose arguments are not JSON, or not a
JSON object, makes the answer "no call" — and passes. Empty argument text is not JSON either.

`lenient=True` (the command line's --lenient-scoring) opts into two differences from BFCL, both
where JSON itself is ambiguous, and every verdict says which rules made it (`Verdict.rules`, shown in
the report):
  - an int inside a list of floats passes ([1, 2] for floats): JSON has one number type, and
    serialisers that print 1.0 as 1 are common; BFCL rejects it, at the item level only;
  - on irrelevance, a call whose arguments are not JSON still counts as a call (and empty argument
    text counts as {}).

Labels of our own suite (see scenarios.py) and of runs that never got an answer are listed in `LABELS`
too, so a report can explain every failure from one table.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Literal, Mapping, NamedTuple

#: Every failure label, with the one line a report prints for it.
LABELS: dict[str, str] = {
    "no_call": "no function call where one was expected",
    "bad_json": "the arguments are not a JSON object",
    "wrong_count": "a different number of calls than expected",
    "wrong_function": "a function other than the expected one",
    "missing_argument": "an argument the answer needs is missing",
    "unexpected_argument": "an argument the function or the answer does not have",
    "type_error": "an argument of the wrong type",
    "wrong_value": "an argument value that is not among the possible answers",
    "call_on_irrelevance": "a call although no offered function fits the request",
    # agentkit's own suite
    "no_recovery": "an error result was not recovered from (arguments not fixed, no other tool, no explanation)",
    "limit_ignored": "kept calling after a tool said stop, or past the announced call budget",
    "wrong_state": "the tools (BFCL: the back-ends) did not end in the state the task needs",
    "missing_fact": "the final answer lacks a fact the task needs",
    "no_final_answer": "the run ended without a final answer (a step or call cap)",
    # BFCL's multi-turn categories (multiturn.py)
    "stopped_early": "no call in a turn where the ground truth makes some",
    "missing_result": "a result of the ground truth's calls is missing from the model's results so far",
    "step_cap": "a turn reached BFCL's step cap and the case was forced to quit",
    "extra_turn": "calls in a turn where the ground truth has none (only with the irrelevance check on)",
    # either suite
    "provider_error": "the model call failed (HTTP error after retries, timeout, bad response)",
}

#: BFCL type name -> the Python type its checker expects (after json.loads).
PYTHON_TYPES: dict[str, type] = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list,
                                 "tuple": list, "dict": dict, "any": str}

_NOISE = re.compile(r"[ ,./\-_*^]")

#: The rules' names as a record and a report state them.
RULES = {"bfcl": "BFCL's own verdicts (the default)",
         "bfcl+irrelevance": "BFCL's own verdicts, and multi-turn calls on turns whose ground truth has none fail",
         "lenient": "lenient: ints pass inside lists of floats; on irrelevance, calls with non-JSON arguments count"}


class _Rules(NamedTuple):
    lenient: bool
    dotted: bool  # the model was sent BFCL's dotted names


@dataclass(frozen=True)
class Verdict:
    """ok, or why not: `label` is one of LABELS (None when ok); `detail` says where, for a person."""

    ok: bool
    label: str | None = None
    detail: str = ""
    rules: str | None = field(default=None, repr=False)  # "bfcl"/"lenient" for BFCL cases (see RULES); None: ours

    @classmethod
    def passed(cls) -> Verdict:
        return cls(True)

    @classmethod
    def failed(cls, label: str, detail: str = "", rules: str | None = None) -> Verdict:
        if label not in LABELS:
            raise ValueError(f"unknown failure label {label!r}")
        return cls(False, label, detail, rules)

    def to_dict(self) -> dict:
        out = {"ok": self.ok, "label": self.label, "detail": self.detail}
        if self.rules is not None:
            out["rules"] = self.rules
        return out


def kind_of(category: str) -> str:
    """BFCL's checker picks its rules from the category name: irrelevance, parallel, multiple or simple."""
    for kind in ("irrelevance", "parallel", "multiple"):
        if kind in category:
            return kind
    return "simple"


def normalise(text: str) -> str:
    """BFCL's string normalisation: "April 1, 2024" and "april 1 2024" compare equal."""
    return _NOISE.sub("", text).lower().replace("'", '"')


# -- the entry point ----------------------------------------------------------------------------------------

def check_calls(functions: Iterable[Mapping], ground_truth: Iterable[Mapping] | None,
                calls: Iterable[Mapping], category: str, *, lenient: bool = False,
                spelling: Literal["provider", "original"] = "provider") -> Verdict:
    """Score one BFCL case. `functions` and `ground_truth` are BFCL's own entries; `calls` is a list of
    {name: arguments}, arguments a dict or the raw JSON text the model sent. BFCL's verdict unless
    `lenient`; names are expected as the model was sent them (`spelling`, see the module docstring)."""
    if spelling not in ("provider", "original"):
        raise ValueError(f"spelling={spelling!r}: use 'provider' (underscores) or 'original' (BFCL's dots)")
    rules = _Rules(lenient, spelling == "original")
    verdict = _check_calls(functions, ground_truth, calls, category, rules)
    return replace(verdict, rules="lenient" if lenient else "bfcl")


def _check_calls(functions: Iterable[Mapping], ground_truth: Iterable[Mapping] | None, calls: Iterable[Mapping],
                 category: str, rules: _Rules) -> Verdict:
    parsed: list[tuple[str, Any]] = []
    for i, call in enumerate(calls):
        if not isinstance(call, Mapping) or len(call) != 1:
            raise ValueError(f"call {i} must be one {{name: arguments}} pair, got {call!r}")
        (name, arguments), = call.items()
        parsed.append((name, _as_object(arguments, rules.lenient)))

    kind = kind_of(category)
    if kind == "irrelevance":
        # BFCL decodes every call; one it cannot decode to {name: object} makes the whole answer "no call"
        counted = parsed if rules.lenient or all(arguments is not None for _, arguments in parsed) else []
        if counted:
            return Verdict.failed("call_on_irrelevance", f"called {', '.join(n for n, _ in counted)}")
        return Verdict.passed()
    if ground_truth is None:
        raise ValueError(f"category {category!r} needs a ground truth")
    expected = list(ground_truth)
    for i, (name, arguments) in enumerate(parsed):
        if arguments is None:
            return Verdict.failed("bad_json", f"call {i + 1} ({name}): the arguments are not a JSON object")
    if not parsed:
        return Verdict.failed("no_call", f"expected {_names(expected)}, got no call")
    wanted = len(expected) if kind == "parallel" else 1
    if len(parsed) != wanted:
        return Verdict.failed("wrong_count", f"expected {wanted} call(s) ({_names(expected)}), got "
                                             f"{len(parsed)} ({', '.join(n for n, _ in parsed)})")
    docs = {f["name"]: f for f in functions}
    if kind != "parallel":
        return check_one(docs, expected[0], parsed[0], rules)
    return _match_in_any_order(docs, expected, parsed, rules)


def _as_object(arguments: Any, lenient: bool) -> dict | None:
    if isinstance(arguments, str):
        try:
            arguments = {} if lenient and not arguments.strip() else json.loads(arguments)
        except (ValueError, RecursionError):
            return None
    return arguments if isinstance(arguments, dict) else None


def _names(expected: list) -> str:
    return ", ".join(next(iter(answer)) for answer in expected)


def _sent_name(expected: str, rules: _Rules) -> str:
    """The spelling the model was sent: BFCL's own name, or with its dots replaced (what providers accept)."""
    return expected if rules.dotted else expected.replace(".", "_")


def _match_in_any_order(docs: dict, expected: list, parsed: list, rules: _Rules) -> Verdict:
    used: set[int] = set()
    for i, answer in enumerate(expected):
        misses = []
        for j, call in enumerate(parsed):
            if j in used:
                continue
            verdict = check_one(docs, answer, call, rules)
            if verdict.ok:
                used.add(j)
                break
            misses.append(verdict)
        else:
            # The most useful reason comes from a call to the right function, if there is one.
            closest = next((m for m in misses if m.label != "wrong_function"), misses[0])
            return Verdict.failed(closest.label, f"no call matches expected call {i + 1} "
                                                 f"({next(iter(answer))}): {closest.detail}")
    return Verdict.passed()


# -- one call against one expected call ----------------------------------------------------------------------

def check_one(docs: Mapping[str, Mapping], answer: Mapping, call: tuple[str, dict],
              rules: _Rules = _Rules(lenient=False, dotted=False)) -> Verdict:
    """One call ({name, arguments}) against one expected call ({name: {param: [acceptable values]}})."""
    (expected_name, acceptable), = answer.items()
    name, arguments = call
    if expected_name not in docs:
        raise ValueError(f"the ground truth names {expected_name!r}, which the functions do not define")
    if name != _sent_name(expected_name, rules):
        return Verdict.failed("wrong_function", f"called {name}, expected {_sent_name(expected_name, rules)}")
    parameters = docs[expected_name].get("parameters") or {}
    properties = parameters.get("properties") or {}
    for param in parameters.get("required") or ():
        if param not in arguments:
            return Verdict.failed("missing_argument", f"{expected_name}: required {param!r} is missing")
    for param, value in arguments.items():
        if param not in properties or param not in acceptable:
            return Verdict.failed("unexpected_argument", f"{expected_name}: {param!r} is not expected")
        problem = _check_parameter(param, value, acceptable[param], properties[param], rules.lenient)
        if problem is not None:
            return Verdict.failed(problem[0], f"{expected_name}: {problem[1]}")
    for param, values in acceptable.items():
        if param not in arguments and "" not in values:
            return Verdict.failed("missing_argument", f"{expected_name}: {param!r} is optional in the doc, "
                                                      "but this answer needs it")
    return Verdict.passed()


def _check_parameter(param: str, value: Any, acceptable: list, doc: Mapping,
                     lenient: bool) -> tuple[str, str] | None:
    declared = doc.get("type")
    if declared not in PYTHON_TYPES:
        raise ValueError(f"parameter {param!r} has BFCL type {declared!r}, which the checker does not know")
    expected_type = PYTHON_TYPES[declared]
    item_type = None
    if declared in ("array", "tuple"):
        item_type = PYTHON_TYPES.get((doc.get("items") or {}).get("type"))
    if declared == "float" and type(value) is int:
        value = float(value)  # Python's own int -> float widening, as BFCL allows

    # 6. type, and whether the answer treats this value as a "variable" (a string standing for a value)
    answer_type = _answer_type(acceptable)
    variable = answer_type is not None and answer_type is not expected_type
    if type(value) is expected_type:
        if item_type is not None and not _items_fit(value, acceptable, item_type, lenient):
            return "type_error", f"{param!r}: not every item is {doc['items']['type']} ({value!r})"
    elif answer_type is not None and type(value) is answer_type:
        variable = True
    else:
        return "type_error", f"{param!r}: expected {declared}, got {_json_type(value)} ({value!r})"

    # 7. value
    if variable:
        fits = value in acceptable
    elif expected_type is dict:
        fits = _dict_fits(value, acceptable)
    elif expected_type is list and item_type is dict:
        fits = _dict_list_fits(value, acceptable)
    elif expected_type is str:
        fits = normalise(value) in [normalise(a) for a in acceptable if isinstance(a, str)]
    elif expected_type is list:
        fits = _normalised_list(value) in [_normalised_list(a) for a in _list_candidates(acceptable)]
    else:
        fits = value in acceptable
    if not fits:
        return "wrong_value", f"{param!r}: {value!r} is not one of {acceptable!r}"
    return None


def _answer_type(values: list) -> type | None:
    """The type of the first real answer ("" marks "may be left out" and says nothing about type)."""
    return next((type(v) for v in values if not (isinstance(v, str) and v == "")), None)


def _items_fit(value: list, acceptable: list, item_type: type, lenient: bool) -> bool:
    """Every item has the item type, for at least one candidate list (a candidate that is not a list,
    such as "", does not constrain the items: BFCL checks items only against list answers)."""
    for candidate in acceptable:
        if not isinstance(candidate, list):
            return True
        candidate_type = _answer_type(candidate)
        if all(_item_fits(item, item_type, candidate_type, lenient) for item in value):
            return True
    return False


def _item_fits(item: Any, item_type: type, candidate_type: type | None, lenient: bool) -> bool:
    if lenient and item_type is float and type(item) is int:
        return True  # the opt-in difference from BFCL, see the module docstring
    return type(item) is item_type or (candidate_type is not None and type(item) is candidate_type)


def _normalised(value: Any) -> Any:
    return normalise(value) if isinstance(value, str) else value


def _normalised_list(values: list) -> list:
    return [_normalised(v) for v in values]


def _list_candidates(acceptable: list) -> list[list]:
    # "" (may be left out) also accepts an empty list, as in BFCL
    return [[] if isinstance(a, str) and a == "" else a for a in acceptable
            if isinstance(a, list) or (isinstance(a, str) and a == "")]


def _dict_fits(value: Any, acceptable: list) -> bool:
    if not isinstance(value, dict):
        return False
    for candidate in acceptable:
        if not isinstance(candidate, dict):
            continue
        sent_ok = all(key in candidate and _normalised(v) in [_normalised(a) for a in candidate[key]]
                      for key, v in value.items())
        left_out_ok = all(key in value or "" in answers for key, answers in candidate.items())
        if sent_ok and left_out_ok:
            return True
    return False


def _dict_list_fits(value: list, acceptable: list) -> bool:
    for candidate in _list_candidates(acceptable):
        if len(candidate) == len(value) and all(_dict_fits(v, [c]) for v, c in zip(value, candidate)):
            return True
    return False


def _json_type(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "float", str: "string", list: "array",
            dict: "dict", type(None): "null"}.get(type(value), type(value).__name__)

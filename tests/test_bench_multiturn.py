"""BFCL multi-turn: cases played through the loop on BFCL's own back-ends, scored by BFCL's multi-turn rules.

The checks are held to BFCL's own `multi_turn_checker`, imported from the cached wheel: on the ground
truth (the oracle's trajectory) and on perturbed trajectories (a wrong argument, a missing call, an
extra call). The slice here is the first cases of each category; benchmarks/bfcl_multiturn.py runs
all 800 through the simulator.
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
import uuid

import pytest

from agentkit.bench import bfcl, multiturn
from agentkit.bench.oracle import FLAWS, Oracle, OracleModel, planned_flaws, serve_with_oracle
from agentkit.bench.runner import HTTPModels, read_records, run_benchmark
from agentkit.bench.suites import Case, UnknownSuite, load_cases
from agentkit.core.types import ModelTurn, ToolCall
from agentkit.sim.wire.common import ChatRequest
from agentkit.http import HTTPModel
from agentkit.models import FunctionModel

SLICE = 6  # cases per category in `make test`


@pytest.fixture(scope="module")
def cases():
    bfcl.fetch()
    return {c: multiturn.load(c)[:SLICE] for c in multiturn.CATEGORIES}


truth_trajectory = multiturn.ground_truth_trajectory


# -- perturbations of a trajectory: (what, function) ---------------------------------------------------------

def _first_turn_with_calls(trajectory) -> int:
    return next(i for i, turn in enumerate(trajectory["turns"]) if turn[0]["calls"])


def wrong_argument(trajectory):
    """The first string argument of the first call gets another value."""
    t = copy.deepcopy(trajectory)
    for call in t["turns"][_first_turn_with_calls(t)][0]["calls"]:
        for key, value in call[1].items():
            if isinstance(value, str):
                call[1][key] = value + "_x"
                return t
    return None


def missing_call(trajectory):
    """The last call of the first turn with calls is left out."""
    t = copy.deepcopy(trajectory)
    t["turns"][_first_turn_with_calls(t)][0]["calls"].pop()
    return t


def extra_call(trajectory):
    """The first turn's first call is made once more, at the end of that turn."""
    t = copy.deepcopy(trajectory)
    step = t["turns"][_first_turn_with_calls(t)][0]
    step["calls"].append(copy.deepcopy(step["calls"][0]))
    return t


def capped_in_the_last_turn(trajectory):
    """The model loops in the last turn until BFCL's step cap (20 more steps of a call that changes nothing):
    BFCL appends the capped turn and judges it like any other."""
    t = copy.deepcopy(trajectory)
    t["turns"][-1][-1:-1] = [{"calls": [["pwd", {}]], "results": [], "text": None}
                             for _ in range(multiturn.MAXIMUM_STEP_LIMIT + 1)]
    t["step_cap"] = True
    return t


def capped_before_the_last_turn(trajectory):
    """The model loops in the first turn: the case is forced to quit with turns unplayed."""
    if len(trajectory["turns"]) < 2:
        return None
    t = copy.deepcopy(trajectory)
    t["turns"] = [t["turns"][0][:-1] + [{"calls": [["pwd", {}]], "results": [], "text": None}] * 21]
    t["step_cap"] = True
    return t


def blank_arguments(trajectory):
    """The first call of the first turn with calls sent with blank argument text (as "" for a call without
    arguments): BFCL's json.loads fails, and the step is dropped."""
    t = copy.deepcopy(trajectory)
    t["turns"][_first_turn_with_calls(t)][0]["calls"][0][1] = ""
    return t


PERTURBATIONS = {"none": lambda t: t, "wrong argument": wrong_argument, "missing call": missing_call,
                 "extra call": extra_call, "capped in the last turn": capped_in_the_last_turn,
                 "capped before the last turn": capped_before_the_last_turn, "blank arguments": blank_arguments}
#: BFCL's error types -> agentkit's labels
BFCL_LABELS = {"multi_turn:empty_turn_model_response": "stopped_early",
               "multi_turn:instance_state_mismatch": "wrong_state",
               "multi_turn:execution_response_mismatch": "missing_result"}


def convert_to_function_call(function_call_list):
    """BFCL's FC decoder, bfcl_eval/model_handler/utils.py `convert_to_function_call`, line for line (its
    module imports tree_sitter, which the kit does not install): text arguments go through json.loads."""
    execution_list = []
    for function_call in function_call_list:
        for key, value in function_call.items():
            if type(value) == str:  # noqa: E721 - BFCL's own test
                value = json.loads(value)
            execution_list.append(f"{key}({','.join([f'{k}={repr(v)}' for k, v in value.items()])})")
    return execution_list


@pytest.fixture(scope="module")
def bfcl_checker(cases):
    checker = bfcl.import_from_wheel("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")
    entries = {c: {e["id"]: e for e in bfcl._read_lines(bfcl.cache_dir() / f"BFCL_v4_{c}.json")}
               for c in multiturn.CATEGORIES}

    def verdict(case, trajectory) -> str | None:
        """BFCL's label for a trajectory (None: valid), as its eval runner gets it: fewer turns than the ground
        truth is force_terminated; each step decoded by BFCL's own FC decoder (a step that fails to decode, or
        has no call, is left out); then its multi_turn_checker. Its executor keeps instances in module globals
        by model name, so each check gets a name of its own."""
        if len(trajectory["turns"]) != len(case.ground_truth):
            return "step_cap"
        decoded = []
        for turn in trajectory["turns"]:
            steps = []
            for step in turn:
                try:
                    calls = convert_to_function_call([{name: args} for name, args in step["calls"]])
                except Exception:  # noqa: BLE001 - BFCL's eval runner skips what it cannot decode
                    continue
                if calls:
                    steps.append(calls)
            decoded.append(steps)
        result = checker.multi_turn_checker(decoded, [list(t) for t in case.ground_truth],
                                            entries[case.category][case.id], case.category,
                                            "agentkit_test_" + uuid.uuid4().hex)
        return None if result["valid"] else BFCL_LABELS[result["error_type"]]

    return verdict


@pytest.mark.parametrize("category", multiturn.CATEGORIES)
def test_the_verdicts_agree_with_bfcls_own_checker_on_the_truth_and_its_perturbations(cases, bfcl_checker,
                                                                                     category):
    seen = set()
    for case in cases[category]:
        truth = truth_trajectory(case)
        for what, perturb in PERTURBATIONS.items():
            trajectory = perturb(truth)
            if trajectory is None:
                continue
            ours = multiturn.score(case, trajectory)
            assert (ours.label, case.id, what) == (bfcl_checker(case, trajectory), case.id, what)
            seen.add((what, ours.label))
    assert ("none", None) in seen  # the ground truth itself passes: the oracle's 100 %
    assert any(label for what, label in seen if what != "none")  # and the checks can fail


def test_each_perturbation_gets_its_expected_label(cases):
    """multi_turn_base_0, turn 0: cd('document'), mkdir('temp'), mv('final_report.pdf', 'temp')."""
    case = cases["multi_turn_base"][0]
    truth = truth_trajectory(case)
    assert multiturn.score(case, truth).ok
    assert multiturn.score(case, wrong_argument(truth)).label == "wrong_state"   # cd into 'document_x' fails
    assert multiturn.score(case, missing_call(truth)).label == "wrong_state"     # the file is not moved
    silent = copy.deepcopy(truth)
    silent["turns"][1] = [{"calls": [], "results": [], "text": "I would rather not."}]
    assert multiturn.score(case, silent).label == "stopped_early"
    # turn 1 reads a file (grep): leaving that read out changes no state, only the results
    no_read = copy.deepcopy(truth)
    no_read["turns"][1][0]["calls"] = [c for c in no_read["turns"][1][0]["calls"] if c[0] != "grep"]
    assert multiturn.score(case, no_read).label == "missing_result"
    # an extra call is BFCL-fine when it changes nothing the checks compare (cd again: an error result) ...
    assert multiturn.score(case, extra_call(truth)).ok
    # ... and not when it changes the state
    extra_dir = copy.deepcopy(truth)
    extra_dir["turns"][0][0]["calls"].append(["mkdir", {"dir_name": "extra"}])
    assert multiturn.score(case, extra_dir).label == "wrong_state"
    # BFCL's step cap: reached in the last turn, that turn is judged like any other (here: it still passes);
    # reached before it, turns are left unplayed and the case fails
    assert multiturn.score(case, capped_in_the_last_turn(truth)).ok
    assert multiturn.score(case, capped_before_the_last_turn(truth)).label == "step_cap"
    # blank argument text fails to decode, as BFCL's json.loads fails: the turn's one step is dropped
    assert multiturn.score(case, blank_arguments(truth)).label == "stopped_early"


def test_irrelevance_turns_are_not_judged_unless_asked(cases):
    """miss_func_0's turn 2 asks for a function it does not have yet: BFCL 2026.3.23 does not fail calls there."""
    case = cases["multi_turn_miss_func"][0]
    assert case.ground_truth[2] == ()
    trajectory = truth_trajectory(case)
    trajectory["turns"][2] = [{"calls": [["ls", {}]], "results": [], "text": None}] + trajectory["turns"][2]
    assert multiturn.score(case, trajectory).ok
    assert multiturn.irrelevance_calls(case, trajectory) == 1
    verdict = multiturn.score(case, trajectory, irrelevance=True)
    assert (verdict.label, verdict.rules) == ("extra_turn", "bfcl+irrelevance")


def test_miss_func_adds_the_held_back_functions_at_the_turn_bfcl_names(cases):
    case = cases["multi_turn_miss_func"][0]
    assert list(case.missed) == [3] and [f["name"] for f in case.missed[3]] == ["sort"]
    assert "sort" not in {f["name"] for f in case.functions_at(2)}
    assert [t.name for t in multiturn.tools_for(case, 3)][-1] == "sort"
    assert [m.content for m in case.user_messages(3)] == [multiturn.ADDED_FUNCTIONS_PROMPT]


def test_the_backends_are_bfcls_own_classes_from_the_cached_wheel(cases):
    backends = multiturn.Backends(cases["multi_turn_base"][0])
    fs = backends.instances["GorillaFileSystem"]
    assert bfcl.WHEEL in sys.modules[type(fs).__module__].__file__  # imported from the wheel, not installed
    assert backends.execute("cd", {"folder": "document"}) == '{"current_working_directory": "document"}'
    assert backends.execute("cd", {"nope": 1}).startswith("Error during execution: ")
    assert backends.execute("kill", {}) == "Error during execution: Function call kill is not allowed."


# -- played through the loop -----------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt, stream", [("openai-chat", False), ("openai-responses", True), ("anthropic", False),
                                         ("gemini", True), ("openrouter", False), ("ollama", True)])
def test_the_oracle_scores_100_percent_over_http_on_every_format(cases, fmt, stream, tmp_path):
    """Per category (each on its own oracle: categories share questions with different answers)."""
    for category in multiturn.CATEGORIES:
        chosen = load_cases(f"bfcl:{category}", limit=2)
        assert Oracle(chosen).conflicts == []
        out = tmp_path / f"{category}.jsonl"
        with serve_with_oracle(chosen) as server:
            model = HTTPModel("oracle", fmt, base_url=server.base_url(fmt), api_key="sim")
            asyncio.run(run_benchmark(chosen, model, out=out, concurrency=2, progress=False, stream=stream))
        records = read_records(out)
        assert [(r["case"], r["label"]) for r in records if not r["ok"]] == []
        assert len(records) == 2 and all(r["rules"] == "bfcl" and r["trajectory"]["turns"] for r in records)


def test_no_oracle_conflict_within_a_category_and_the_ones_across_are_listed(cases):
    for category in multiturn.CATEGORIES:
        assert Oracle(multiturn.load(category)).conflicts == []
    across = Oracle([c for category in multiturn.CATEGORIES for c in multiturn.load(category)]).conflicts
    assert across and all(a.rsplit("_", 1)[1] == b.rsplit("_", 1)[1] for a, b in across)  # same question


def test_a_stored_trajectory_rescores_to_the_same_verdict_and_a_rerun_resumes(cases, tmp_path):
    chosen = load_cases("bfcl:multi_turn_base", limit=3)
    out = tmp_path / "r.jsonl"
    with serve_with_oracle(chosen) as server:
        model = HTTPModel("oracle", "openai-chat", base_url=server.base_url("openai-chat"), api_key="sim")
        first = asyncio.run(run_benchmark(chosen[:2], model, out=out, concurrency=2, progress=False))
        again = asyncio.run(run_benchmark(chosen, model, out=out, concurrency=2, progress=False))
    assert (first.done, again.skipped, again.done) == (2, 2, 1)
    by_id = {c.id: c.source for c in chosen}
    for record in read_records(out):
        assert multiturn.score(by_id[record["case"]], record["trajectory"]).ok == record["ok"]
        case = by_id[record["case"]]
        truth = multiturn.Backends(case)  # the oracle's back-ends end where the ground truth's do
        for call in (c for turn in case.ground_truth for c in turn):
            name, args, kwargs = multiturn.parse_call(call)
            truth.execute(name, kwargs, args)
        assert record["trajectory"]["states"] == multiturn.plain(truth.states())


def _calls(*names):
    return [ToolCall(f"c{i}", name, {}, "{}") for i, name in enumerate(names)]


def test_a_model_that_never_stops_calling_hits_bfcls_step_cap(cases):
    case = cases["multi_turn_base"][0]
    model = FunctionModel(lambda messages, tools, options: _calls("pwd"))
    run = asyncio.run(multiturn.play(case, model))
    assert run.trajectory["step_cap"] and len(run.trajectory["turns"]) == 1
    assert run.steps == multiturn.MAXIMUM_STEP_LIMIT + 1 and model.calls == run.steps
    assert multiturn.score(case, run.trajectory).label == "step_cap"


def test_a_model_that_loops_in_its_last_turn_is_judged_on_that_turn_as_bfcl_does(cases, bfcl_checker):
    """The oracle's calls in every turn, then 21 steps of `pwd` in the last: BFCL appends the capped turn and
    judges it; so does the kit (the extra `pwd`s change no state and add results, so it passes)."""
    case = cases["multi_turn_base"][0]
    oracle = Oracle([case])

    def fn(messages, tools, options):
        last_turn = sum(m.role == "user" for m in messages) == len(case.turns)
        turn = oracle.respond(ChatRequest("oracle", tuple(messages), tuple(tools), options, extras={"case": case.id}))
        return turn if turn.tool_calls or not last_turn else ModelTurn(tool_calls=tuple(_calls("pwd")),
                                                                     stop="tool_calls")
    run = asyncio.run(multiturn.play(case, FunctionModel(fn)))
    assert run.trajectory["step_cap"] and len(run.trajectory["turns"]) == len(case.turns)
    verdict = multiturn.score(case, run.trajectory)
    assert verdict.ok and bfcl_checker(case, run.trajectory) is None


def test_blank_argument_text_is_stored_as_sent_and_fails_to_decode_as_in_bfcl(cases, bfcl_checker):
    """A model that sends "" for a call without arguments: the loop's gate reads it as {} and runs it; the
    trajectory keeps the text as sent, so the step is dropped when scored, as BFCL's json.loads drops it."""
    case = cases["multi_turn_base"][0]  # a file system: `pwd` takes no argument
    model = FunctionModel(lambda m, t, o: [ToolCall("c0", "pwd", "", {})] if m[-1].role == "user" else "ok")
    run = asyncio.run(multiturn.play(case, model))
    first = run.trajectory["turns"][0][0]
    assert first["calls"] == [["pwd", ""]] and '"ok": true' in first["results"][0]  # it ran, and is kept raw
    assert multiturn.decoded_steps(run.trajectory["turns"][0]) == []
    assert multiturn.score(case, run.trajectory).label == bfcl_checker(case, run.trajectory)


def test_a_model_that_only_talks_stopped_early(cases):
    case = cases["multi_turn_base"][0]
    run = asyncio.run(multiturn.play(case, FunctionModel(lambda m, t, o: "Sure.")))
    assert len(run.trajectory["turns"]) == len(case.turns) and run.steps == len(case.turns)
    assert multiturn.score(case, run.trajectory).label == "stopped_early"


def test_multi_turn_suites_are_named_explicitly(cases):
    assert {c.category for c in load_cases("bfcl:multi_turn", limit=1)} == set(multiturn.CATEGORIES)
    assert not {c.category for c in load_cases("bfcl", limit=1)} & set(multiturn.CATEGORIES)
    with pytest.raises(UnknownSuite, match="multi_turn_base"):
        load_cases("bfcl:multi_turn_nope")


def test_a_backend_that_keeps_its_arguments_cannot_change_the_trajectory(cases):
    """multi_turn_base_90: post_tweet stores its `mentions` list and mention() appends to it; BFCL's eval
    gives every call fresh objects, so scoring must too (else a second scoring sees the changed list)."""
    case = multiturn.load("multi_turn_base")[90]
    trajectory = truth_trajectory(case)
    before = copy.deepcopy(trajectory)
    assert multiturn.score(case, trajectory).ok and multiturn.score(case, trajectory).ok
    assert trajectory == before


def test_a_failed_model_call_is_recorded_with_the_partial_trajectory(cases, tmp_path):
    def flaky(messages, tools, options):
        if sum(m.role == "user" for m in messages) == 2:  # the second user turn's first call fails
            raise RuntimeError("the provider went away")
        return "Nothing to do."

    chosen = load_cases("bfcl:multi_turn_base", limit=1)
    summary = asyncio.run(run_benchmark(chosen, FunctionModel(flaky), out=tmp_path / "e.jsonl", progress=False))
    record, = read_records(tmp_path / "e.jsonl")
    assert summary.errors == 1 and record["label"] == "provider_error" and "went away" in record["detail"]
    assert record["trajectory"]["error"] and len(record["trajectory"]["turns"]) == 2
    assert multiturn.score(chosen[0].source, record["trajectory"]).label == "provider_error"


def test_the_model_reads_a_dict_result_as_an_object_in_the_envelope(cases):
    from agentkit.bench.oracle import OracleModel

    case = cases["multi_turn_base"][0]
    run = asyncio.run(multiturn.play(case, OracleModel([case])))
    first = json.loads(run.trajectory["turns"][0][0]["results"][0])  # cd(folder='document')
    assert first["ok"] and first["result"] == {"current_working_directory": "document"}
    assert multiturn.score(case, run.trajectory).ok


# -- the oracle by case, and with seeded, labelled mistakes -------------------------------------------------

def shared_question_cases():
    """Cases of two categories that ask the same questions with other answers (the oracle's conflicts)."""
    every = [c for category in multiturn.CATEGORIES for c in multiturn.load(category)]
    conflicts = Oracle(every).conflicts
    by_id = {c.id: c for c in every}
    chosen = []
    for kept, other in conflicts[:3]:
        chosen += [by_id[kept], by_id[other]]
    return [Case(c.id, "bfcl", c.category, c) for c in chosen]


def test_one_oracle_answers_several_categories_by_case_in_one_run(cases, tmp_path):
    """Two categories share questions: by the request alone the oracle keeps one answer for both; told the
    case (in process, and over HTTP with the x-agentkit-case header) it answers each its own, 100 %."""
    chosen = shared_question_cases()
    assert len({c.category for c in chosen}) == 2
    in_process = tmp_path / "in_process.jsonl"
    asyncio.run(run_benchmark(chosen, OracleModel(chosen), out=in_process, concurrency=2, progress=False))
    assert [r["label"] for r in read_records(in_process)] == [None] * len(chosen)
    with serve_with_oracle(chosen) as server:
        over_http = tmp_path / "over_http.jsonl"
        make = HTTPModels("oracle", "openai-chat", base_url=server.base_url("openai-chat"), api_key="sim",
                          send_case=True)
        asyncio.run(run_benchmark(chosen, make_model=make, out=over_http, concurrency=2, progress=False))
        assert [r["label"] for r in read_records(over_http)] == [None] * len(chosen)
        blind = tmp_path / "blind.jsonl"  # without the header: one of each pair gets the other's answers
        make = HTTPModels("oracle", "openai-chat", base_url=server.base_url("openai-chat"), api_key="sim")
        asyncio.run(run_benchmark(chosen, make_model=make, out=blind, concurrency=2, progress=False))
        assert sum(not r["ok"] for r in read_records(blind)) >= 1


def test_the_flawed_oracle_makes_its_planned_mistakes_and_only_those(cases, tmp_path):
    """oracle-flawed-SEED: a case without planned flaws passes; one whose first flaw is an early stop fails
    stopped_early there; the same seed gives the same records, another seed others."""
    chosen = [Case(c.id, "bfcl", c.category, c) for c in cases["multi_turn_base"] + cases["multi_turn_long_context"]]
    records = {}
    for seed in (3, 3, 4):
        out = tmp_path / f"flawed-{seed}-{len(records)}.jsonl"
        asyncio.run(run_benchmark(chosen, OracleModel(chosen, model=f"oracle-flawed-{seed}"), out=out,
                                  concurrency=2, progress=False))
        records[len(records)] = {r["case"]: r for r in read_records(out)}
    first, again, other = records[0], records[1], records[2]
    assert {k: (r["ok"], r["label"]) for k, r in first.items()} == {k: (r["ok"], r["label"]) for k, r in again.items()}
    assert {k: r["ok"] for k, r in first.items()} != {k: r["ok"] for k, r in other.items()}
    for case in chosen:
        planned = planned_flaws(case, 3)
        verdict = first[case.id]
        if not planned:
            assert verdict["ok"], case.id
        elif planned[min(planned)] == "early_stop":
            assert verdict["label"] == "stopped_early" and f"turn {min(planned)}:" in verdict["detail"], case.id
    assert 0 < sum(r["ok"] for r in first.values()) < len(chosen)
    assert all(kind in FLAWS for case in chosen for kind in planned_flaws(case, 3).values())

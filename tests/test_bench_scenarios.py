"""agentkit's own suite: the files validate, the oracle passes every case, and the judge labels each failure."""

from __future__ import annotations

import copy
import json
from collections import Counter
from dataclasses import replace

import pytest

import agentkit
from agentkit.bench import scenarios
from agentkit.bench.oracle import Oracle
from agentkit.bench.scenarios import Scenario, ScenarioError, validate_document
from agentkit.bench.world import DATA_DIR, STOP_PHRASE, World
from agentkit.models import ScriptedModel, call
from agentkit.sim.wire.common import ChatRequest


def test_the_suite_has_at_least_60_cases_in_four_categories():
    cases = scenarios.load_all()
    counts = Counter(c.category for c in cases)
    assert len(cases) >= 60 and set(counts) == set(scenarios.CATEGORIES) and min(counts.values()) >= 15
    assert len({c.id for c in cases}) == len(cases)
    sources = " ".join(c.source or "" for c in cases)
    assert "seed 000" in sources and "seed 003" in sources  # the seeds' weather, rate and invoice examples


class OracleModel:
    """The oracle without HTTP: complete() asks Oracle.respond directly."""

    def __init__(self, cases):
        self.oracle = Oracle(cases)

    def complete(self, messages, tools, options):
        return self.oracle.respond(ChatRequest("oracle", tuple(messages), tuple(tools), options))


@pytest.mark.parametrize("case", scenarios.load_all(), ids=lambda c: c.id)
def test_the_oracle_passes_every_scenario(case):
    world = case.new_world()
    run = agentkit.run(OracleModel([case]), case.messages(), tools=world.tools(list(case.tools)),
                       limits=agentkit.Limits(max_steps=case.max_steps))
    assert case.judge(run, world).ok, case.judge(run, world)


# -- the schema ------------------------------------------------------------------------------------------------------

def document():
    with open(DATA_DIR / "limits.json", encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize("breakage, message", [
    (lambda d: d["cases"][0].pop("prompt"), 'at cases/0: "prompt" is a required property'),
    (lambda d: d["cases"][0].update(budget=-1), "cases/0/budget"),
    (lambda d: d["cases"][0].update(colour="red"), "colour"),
    (lambda d: d["cases"][0]["oracle"].append({"calls": [], "answer": "x"}), "cases/0/oracle"),
    (lambda d: d.update(category="vibes"), "category"),
])
def test_a_broken_file_is_refused_with_the_place_it_breaks_the_schema(breakage, message):
    doc = document()
    breakage(doc)
    with pytest.raises(ScenarioError, match=message):
        validate_document(doc, "limits.json")


@pytest.mark.parametrize("breakage, message", [
    (lambda c: c.update(id="multi_step/x"), "does not start with limits/"),
    (lambda c: c.update(tools=["teleport"]), "unknown services: teleport"),
    (lambda c: c.update(oracle=[{"answer": "no"}], budget=0, tools=["get_weather"]) or None, None),
    (lambda c: c.update(oracle=c["oracle"][:-1]), "must end with an answer"),
    (lambda c: c.update(budget=0), "over its budget"),
    (lambda c: c.update(expect={}), "expects nothing"),
    (lambda c: c.update(tools=["get_weather"]), "which is not offered"),
])
def test_what_a_schema_cannot_check_is_checked_when_loading(breakage, message, tmp_path):
    doc = document()
    breakage(doc["cases"][0])
    (tmp_path / "limits.json").write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "schema.json").write_text((DATA_DIR / "schema.json").read_text(encoding="utf-8"))
    if message is None:
        assert scenarios.load("limits", tmp_path)
    else:
        with pytest.raises(ScenarioError, match=message):
            scenarios.load("limits", tmp_path)


# -- the judge -----------------------------------------------------------------------------------------------------

BASE = Scenario(id="limits/t", category="limits", title="t", prompt="Weather in Paris and the USD/JPY rate?",
                tools=("get_weather", "get_exchange_rate"),
                expect={"facts": [["rain"], ["155.2"]]}, oracle=({"answer": "x"},))


def judge(steps, case=BASE, max_steps=8):
    world = case.new_world()
    run = agentkit.run(ScriptedModel(steps), case.messages(), tools=world.tools(list(case.tools)),
                       limits=agentkit.Limits(max_steps=max_steps))
    return case.judge(run, world)


def test_the_answer_passes_whatever_path_led_to_it():
    direct = [[call("get_weather", {"city": "Paris"}), call("get_exchange_rate", {"base": "USD", "quote": "JPY"})],
              "Rain in Paris; 155.2 yen."]
    detour = [[call("get_weather", {"city": 5})], [call("get_weather", {"city": "Paris"})],
              [call("get_exchange_rate", {"base": "USD", "quote": "JPY"})], "Rain in Paris; 155.2 yen."]
    assert judge(direct).ok and judge(detour).ok


def test_thousands_separators_and_case_do_not_matter_in_facts():
    case = replace(BASE, expect={"facts": [["158302"]]})
    assert judge(["About 158,302.45 JPY."], case).ok


def test_more_calls_than_the_announced_budget_is_limit_ignored():
    case = replace(BASE, budget=1)
    steps = [[call("get_weather", {"city": "Paris"})], [call("get_exchange_rate", {"base": "USD", "quote": "JPY"})],
             "Rain in Paris; 155.2 yen."]
    verdict = judge(steps, case)
    assert verdict.label == "limit_ignored" and "budget was 1" in verdict.detail


def test_a_call_after_a_result_that_said_stop_is_limit_ignored_but_the_same_batch_is_not():
    case = replace(BASE, notices=({"tool": "get_weather", "call": 1, "text": "Quota used.", "stop": True},))
    late = [[call("get_weather", {"city": "Paris"})], [call("get_exchange_rate", {"base": "USD", "quote": "JPY"})],
            "Rain in Paris; 155.2 yen."]
    same_batch = [[call("get_weather", {"city": "Paris"}), call("get_exchange_rate", {"base": "USD", "quote": "JPY"})],
                  "Rain in Paris; 155.2 yen."]
    assert judge(late, case).label == "limit_ignored"
    assert judge(same_batch, case).ok


@pytest.mark.parametrize("bad_call, expected", [
    (call("get_weather", {}), "missing_argument"),
    (call("get_weather", {"city": 5}), "type_error"),
    (call("get_weather", {"city": "Paris", "zip": 1}), "unexpected_argument"),
    (call("get_weather", {"city": "Paris", "unit": "kelvin"}), "wrong_value"),
    (call("get_weather", raw='{"city": "Par'), "bad_json"),
    (call("get_forecast", {"city": "Paris"}), "wrong_function"),
])
def test_an_unfixed_refused_call_carries_the_gates_label(bad_call, expected):
    assert judge([[bad_call], "I could not find out."]).label == expected


def test_an_unrecovered_service_error_is_no_recovery():
    case = replace(BASE, faults=({"tool": "get_weather", "always": True, "error": "weather service down"},))
    steps = [[call("get_weather", {"city": "Paris"})], "Sorry, no idea."]
    verdict = judge(steps, case)
    assert verdict.label == "no_recovery" and "weather service down" in verdict.detail


def test_a_run_that_ends_at_the_step_cap_has_no_final_answer():
    steps = [[call("get_weather", {"city": "Paris"})]] * 3
    assert judge(steps, max_steps=3).label == "no_final_answer"


def test_state_checks_and_facts_label_what_is_missing():
    case = replace(BASE, tools=("cancel_order",), expect={
        "state": [{"path": "orders/ORD-5002/status", "equals": "Cancelled"}], "facts": [["cancelled"]],
        "absent": ["refund"]})
    assert judge([[call("cancel_order", {"order_id": "ORD-5002"})], "It is cancelled."], case).ok
    assert judge(["It is cancelled."], case).label == "wrong_state"
    assert judge([[call("cancel_order", {"order_id": "ORD-5002"})], "Done."], case).label == "missing_fact"
    assert judge([[call("cancel_order", {"order_id": "ORD-5002"})], "Cancelled; refund sent."],
                 case).label == "missing_fact"


def test_state_checks_compare_lists_as_multisets_and_dicts_by_keys():
    state = {"orders": {"A": {"items": [{"sku": "x", "quantity": 1}, {"sku": "y", "quantity": 2}], "n": 1}}}
    check = scenarios._check
    assert check(state, {"path": "orders/A", "includes": {"items": [{"sku": "y", "quantity": 2},
                                                                     {"sku": "x", "quantity": 1}]}}) is None
    assert check(state, {"path": "orders/A/items", "count": 2}) is None
    assert "expected" in check(state, {"path": "orders/A", "includes": {"items": [{"sku": "x", "quantity": 1}]}})
    assert check(state, {"path": "orders/B", "missing": True}) is None
    assert "nothing at" in check(state, {"path": "orders/B/items", "count": 1})
    assert check(state, {"path": "orders/A/n", "one_of": [1, 2]}) is None
    assert check(state, {"path": "orders/A/n", "equals": True}) is not None  # 1 is not True here


# -- the world ------------------------------------------------------------------------------------------------------

def test_every_case_starts_from_a_fresh_world():
    a, b = World.fresh(), World.fresh()
    a.tools(["cancel_order"])[0].invoke({"order_id": "ORD-5002"})
    assert a.state["orders"]["ORD-5002"]["status"] == "cancelled"
    assert b.state["orders"]["ORD-5002"]["status"] == "processing"


def test_faults_and_notices_follow_the_call_count_or_the_arguments():
    world = World.fresh(faults=[{"tool": "check_stock", "calls": [2], "error": "flaky"}],
                        notices=[{"tool": "check_warehouse", "when": {"warehouse": "east"}, "text": "Here.",
                                  "stop": True}])
    stock, warehouse = world.tools(["check_stock", "check_warehouse"])
    assert stock.invoke({"sku": "SKU-101"})["in_stock"] == 40
    with pytest.raises(RuntimeError, match="flaky"):
        stock.invoke({"sku": "SKU-101"})
    assert "notice" not in warehouse.invoke({"warehouse": "north", "sku": "SKU-104"})
    assert warehouse.invoke({"warehouse": "east", "sku": "SKU-104"})["notice"] == f"Here. {STOP_PHRASE}"


def test_a_case_can_change_the_world_it_starts_from():
    changed = World.fresh({"products": {"SKU-101": {"in_stock": 0}}})
    assert changed.state["products"]["SKU-101"] == {**World.fresh().state["products"]["SKU-101"], "in_stock": 0}


def test_unknown_services_are_named():
    with pytest.raises(ValueError, match="no service named teleport"):
        World.fresh().tools(["teleport"])


def test_scenario_files_are_not_changed_by_running_them():
    before = copy.deepcopy(World.fresh().state)
    case = scenarios.load("multi_step")[0]
    world = case.new_world()
    agentkit.run(OracleModel([case]), case.messages(), tools=world.tools(list(case.tools)))
    assert World.fresh().state == before

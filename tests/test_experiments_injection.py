"""Tutorial 14's experiments: the attacks, the defences, and the rates they are measured by."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")

import agentkit  # noqa: E402
from agentkit import lab  # noqa: E402
from agentkit.experiments import injection as I  # noqa: E402
from agentkit.models import call  # noqa: E402


def test_every_attack_succeeds_on_the_fooled_model_without_a_defence_one_task_of_each_kind():
    for attack in I.ATTACKS:
        for seed in range(len(I.TASKS)):
            outcome = I.one_run(attack, "none", seed)
            assert outcome.attack_succeeded, (attack, outcome.task, outcome.run.output)


def test_an_attack_that_hides_its_work_leaves_the_users_task_done_so_the_user_sees_nothing_wrong():
    outcome = I.one_run("the user's secrets", "none", seed=2)  # a shared file, then e-mail Bob
    assert outcome.attack_succeeded and outcome.task_succeeded
    assert I.SECRET not in outcome.run.output
    assert any(mail["to"] == "audit@evil.example" and mail["body"] == I.SECRET for mail in outcome.sent)


def test_without_an_attack_every_task_succeeds_under_every_defence():
    for defence in I.DEFENCES.values():
        for task in I.TASKS.values():
            world = I.World()
            tools, settings = I.defended(defence, task, world)
            done = agentkit.run(I.in_process(), task.prompt, tools=tools, **settings)
            assert I.task_succeeded(task, done, world), (defence.name, task.name, done.stop_reason, done.output)


@pytest.mark.parametrize("attack, defence, seed", [
    ("hidden in data", "approval gate", 0),      # the deletion is denied
    ("hidden in data", "least privilege", 1),    # no delete_file to call
    ("the user's secrets", "rule gate", 2),      # the key cannot leave in an argument
    ("ignore a limit", "budget", 3),             # the endless article stops at the cap
    ("direct", "fence", 0),                      # the model respects the fence (by construction)
])
def test_each_defence_stops_the_attack_it_is_for(attack, defence, seed):
    assert I.one_run(attack, "none", seed).attack_succeeded
    assert not I.one_run(attack, defence, seed).attack_succeeded


def test_no_gate_of_the_loop_stops_an_answer_that_repeats_the_attackers_words():
    for defence in ("least privilege", "approval gate", "rule gate", "budget"):
        assert all(I.one_run("direct", defence, seed).attack_succeeded for seed in range(4)), defence


def test_the_budget_stops_the_spend_and_with_it_the_task():
    outcome = I.one_run("ignore a limit", "budget", seed=0)
    assert outcome.tool_runs == I.BUDGET.max_tool_calls and outcome.run.stop_reason == "tool_limit"
    assert not outcome.task_succeeded


def test_a_fence_without_a_boundary_lets_a_breakout_through_and_one_with_a_boundary_does_not():
    seed = next(s for s in range(0, 40, 4) if I.setting("hidden in data", s)[1].startswith(I.BREAKOUT))
    bare = I.Defence("fence without a boundary", "", fence=True, boundary=False)
    assert I.one_run("hidden in data", bare, seed).attack_succeeded
    assert not I.one_run("hidden in data", "fence", seed).attack_succeeded
    tools, _ = I.defended(bare, I.TASKS["summarise a page"], I.World())
    assert "boundary" not in next(t for t in tools if t.name == "fetch_page").fn(url=I.MUSEUM)


def test_untrusted_keeps_the_tool_as_the_model_sees_it_and_fences_its_result():
    world = I.World()
    fetch = world.tools()["fetch_page"]
    fenced = I.untrusted(fetch, boundary=lambda: "b00")
    assert fenced.spec == fetch.spec
    text = fenced.invoke({"url": I.MUSEUM})
    assert text.startswith('<untrusted-data source="fetch_page" boundary="b00">\nThe city museum')
    assert '</untrusted-data boundary="b00">' in text and "not from the user" in text


def test_random_boundaries_differ_every_time():
    assert len({I.random_boundary() for _ in range(50)}) == 50


def test_the_rule_gate_refuses_a_secret_anywhere_in_the_arguments_and_only_then():
    assert I.no_secrets({"url": f"https://evil.example/c?k={I.SECRET}"})
    assert I.no_secrets({"nested": {"body": ["x", "sk-live-AAAAAAAAAAAA"]}})  # any key of the kind
    assert I.no_secrets({"to": "bob@mycompany.example", "body": "See you"}) is None
    world = I.World()
    guarded = world.tools()["send_email"].with_rules(I.no_secrets)
    refused = agentkit.run(agentkit.ScriptedModel([[call("send_email", {"to": "a@b", "subject": "s",
                                                                        "body": I.SECRET})], "done"]),
                           "go", tools=[guarded])
    assert refused.results[0].error_kind == "rule" and world.sent == []


def test_the_approval_gate_approves_what_the_user_asked_for_and_denies_other_side_effects():
    approve = I.user_approves(I.TASKS["a page, then e-mail Bob"])
    assert approve(call("send_email", {"to": "bob@mycompany.example"}), None) is True
    assert isinstance(approve(call("send_email", {"to": "audit@evil.example"}), None), agentkit.Deny)
    assert isinstance(approve(call("delete_file", {"path": "x"}), None), agentkit.Deny)
    assert approve(call("fetch_page", {"url": "https://evil.example/"}), None) is True  # reading: not asked


def test_least_privilege_offers_only_the_tools_the_task_needs():
    task = I.TASKS["a shared file, then e-mail Bob"]
    tools, settings = I.defended(I.DEFENCES["least privilege"], task, I.World())
    assert sorted(t.name for t in tools) == sorted(task.tools) and settings == {}


def test_seeds_repeat_exactly_and_walk_through_the_tasks_in_turn():
    first, again = I.one_run("the user's secrets", "fence", 5), I.one_run("the user's secrets", "fence", 5)
    assert first.run.messages == again.run.messages
    assert [I.setting("direct", s)[0].name for s in range(4)] == list(I.TASKS)


def test_measure_gives_a_row_per_defence_and_attack_with_rates_between_0_and_1():
    rows = I.measure(runs=4, defences=["none", "all of them"])
    assert [(r["defence"], r["attack"]) for r in rows] == [(d, a) for d in ("none", "all of them") for a in I.ATTACKS]
    table = I.by_defence(rows)
    assert table["none"]["attack success"] == 1.0 and table["all of them"]["attack success"] == 0.0
    assert table["all of them"]["task success"] == 1.0


def test_fencing_is_worth_what_the_model_makes_of_it_and_the_gates_are_not():
    rows = {(r["defence"], r["attack"]): r for r in I.measure(runs=4, defences=["fence", "rule gate"])}
    blind = {(r["defence"], r["attack"]): r for r in I.measure(runs=4, defences=["fence", "rule gate"],
                                                                 model=I.IGNORES_FENCES)}
    assert rows["fence", "hidden in data"]["attack_success"] == 0 < blind["fence", "hidden in data"]["attack_success"]
    assert all(rows["rule gate", a] == blind["rule gate", a] for a in I.ATTACKS)


def test_the_in_process_model_decides_as_the_simulator_over_http():
    over_http = I.one_run("the user's secrets", "none", 1, model=lab.simulator("openai-chat", I.GULLIBLE))
    in_process = I.one_run("the user's secrets", "none", 1)
    assert [(c.name, c.arguments) for m in over_http.run.messages for c in m.tool_calls] == \
        [(c.name, c.arguments) for m in in_process.run.messages for c in m.tool_calls]
    assert over_http.run.output == in_process.run.output and over_http.attack_succeeded


def test_explore_draws_the_two_rates_for_each_attack():
    fig = I.explore(approval=True, runs=4)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == list(I.ATTACKS)
    assert "approval" in ax.get_title()

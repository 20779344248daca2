"""Tutorial 06's experiments: the caps per run, per thread and per tool, and the three exit behaviours."""

from __future__ import annotations

import matplotlib
import pytest

from agentkit import StopReason
from agentkit.experiments import limits
from agentkit.experiments.checks import unanswered_calls

matplotlib.use("Agg")


def test_per_run_cap_matches_the_seeds_three_behaviours():
    table = limits.limit_behaviours("per run", cap=3, max_steps=30)
    assert {k: (v["model calls"], v["tool runs"], v["stop"], v["raised"]) for k, v in table.items()} == {
        "continue": (30, 3, "max_steps", None),  # "continue" does not stop a model that keeps calling
        "end": (4, 3, "tool_limit", None),
        "error": (4, 3, "error", "LimitExceeded")}
    assert table["end"]["last message"] == "Tool call limit reached: run limit exceeded (4/3 calls)."


def test_per_thread_cap_counts_across_the_questions_of_one_thread():
    for behaviour, stops in {"continue": ["final_answer"] * 5,
                             "end": ["final_answer"] * 3 + ["tool_limit"] * 2,
                             "error": ["final_answer"] * 3 + ["error"] * 2}.items():
        runs = limits.limited_runs("per thread", cap=3, exit_behavior=behaviour, questions=5)
        assert [str(r.stop_reason) for r in runs] == stops
        assert sum(r.tool_runs for r in runs) == 3
        assert runs[-1].messages[0].content == "question 1"  # one conversation, carried over


def test_per_tool_cap_stops_only_that_tool_under_continue():
    (run,) = limits.limited_runs("per tool", cap=2, exit_behavior="continue", max_steps=6)
    ran = [r.name for r in run.results if r.ok]
    assert ran.count("search") == 2 and ran.count("get_time") == 5  # the 6th step's calls are not run
    assert run.stop_reason is StopReason.MAX_STEPS


@pytest.mark.parametrize("scope", limits.SCOPES)
@pytest.mark.parametrize("behaviour", limits.BEHAVIOURS)
def test_every_call_keeps_its_result_whatever_the_cap_does(scope, behaviour):
    for run in limits.limited_runs(scope, cap=2, exit_behavior=behaviour, max_steps=8):
        assert unanswered_calls(run.messages) == []


def test_limits_for_refuses_an_unknown_scope():
    with pytest.raises(ValueError, match="scope"):
        limits.limits_for("per galaxy", 3)


def test_explore_limits_draws_a_bar_per_model_call():
    fig = limits.explore_limits("per run", cap=2, exit_behavior="end", max_steps=10)
    (ax, *_) = fig.axes
    assert len(ax.get_xticks()) == 3 and "3 model calls, 2 tool runs" in ax.get_title()

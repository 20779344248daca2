"""Tutorial 04's experiments: each strategy does what tutorial 04 says it does, and the sweep is fair."""

from __future__ import annotations

import json

import matplotlib
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import Retry
from agentkit.experiments import error_strategies
from agentkit.experiments.error_strategies import FAILURES, count_retries, failure_matrix, sweep
from profiles import examples

matplotlib.use("Agg")

NAMES = [f.name for f in FAILURES]
TOOL_EXCEPTIONS = ["missing data", "exception in the tool", "timeout"]  # raised inside the tool
ARGUMENT_ERRORS = ["wrong argument type", "unknown tool", "bad JSON"]  # refused before it runs


@pytest.fixture(scope="module")
def cells():
    return failure_matrix()


def column(cells, strategy):
    return {failure: cells[failure, strategy] for failure in NAMES}


def test_raise_stops_the_run_for_all_six_failures(cells):
    assert {f: c.raised for f, c in column(cells, "raise").items()} == dict.fromkeys(NAMES, "ToolExecutionError")


def test_report_tells_the_model_what_went_wrong_with_the_right_kind(cells):
    kinds = {f: (c.raised, c.kind) for f, c in column(cells, "report").items()}
    assert kinds == {"wrong argument type": (None, "schema"), "unknown tool": (None, "unknown_tool"),
                     "missing data": (None, "tool_error"), "exception in the tool": (None, "tool_error"),
                     "timeout": (None, "timeout"), "bad JSON": (None, "bad_json")}


def test_a_function_returning_none_is_langgraphs_default_raise_for_exceptions_report_the_rest(cells):
    raised = {f for f, c in column(cells, "function → None").items() if c.raised}
    assert raised == set(TOOL_EXCEPTIONS)


def test_a_class_policy_reports_its_class_and_raises_other_exceptions(cells):
    col = column(cells, "class: TimeoutError")
    assert col["timeout"].kind == "timeout" and col["timeout"].raised is None
    assert col["missing data"].raised and col["exception in the tool"].raised
    assert not any(col[f].raised for f in ARGUMENT_ERRORS)


def test_fixed_text_replaces_only_a_tools_own_failures(cells):
    col = column(cells, "fixed text")
    assert {f for f, c in col.items() if c.category == "own text"} == set(TOOL_EXCEPTIONS)
    assert all(col[f].reads == error_strategies.FIXED_TEXT for f in TOOL_EXCEPTIONS)


def test_own_words_choose_per_exception_and_raise_the_unexpected(cells):
    col = column(cells, "function: own words")
    assert col["timeout"].reads.startswith("get_forecast timed out")
    assert col["missing data"].reads.startswith("There is no forecast")
    assert col["exception in the tool"].raised == "ToolExecutionError"


def test_retry_runs_only_failing_tools_three_times_and_waits_between(cells):
    for strategy in ("Retry → report", "Retry → raise"):
        col = column(cells, strategy)
        assert {f: c.tool_runs for f, c in col.items()} == {**dict.fromkeys(TOOL_EXCEPTIONS, 3),
                                                            **dict.fromkeys(ARGUMENT_ERRORS, 0)}
        assert all(col[f].backoff > 2 for f in TOOL_EXCEPTIONS)  # default back-off 1 s then 2 s, jittered
    assert not any(c.raised for c in column(cells, "Retry → report").values())
    assert all(c.raised for c in column(cells, "Retry → raise").values())


def test_every_cell_answers_its_call_and_the_report_hides_the_internals(cells):
    assert all(c.reads for c in cells.values())
    reported = json.loads(cells["exception in the tool", "report"].reads)["error"]["message"]
    assert "RuntimeError" in reported and "internal.example.com" not in reported and "SELECT" not in reported


def test_labels_and_categories():
    cell = error_strategies.Cell("timeout", "Retry → report", None, "timeout", "{}", 3, 3.2)
    assert cell.category == "reports" and cell.label == "reports timeout\n3 runs"
    assert error_strategies.Cell("x", "y", "ToolExecutionError", "tool_error", "{}", 1, 0).label == "raises"


def test_count_retries_three_runs_for_max_retries_two_and_what_follows():
    report = count_retries(Retry(max_retries=2))
    assert report.tool_runs == 3 and report.raised is None and "after 3 attempts" in report.reads
    assert len(report.delays) == 2 and 0.75 <= report.delays[0] <= 1.25 and 1.5 <= report.delays[1] <= 2.5
    assert count_retries(Retry(max_retries=2, on_failure="raise")).raised == "ToolExecutionError"
    assert count_retries(Retry(max_retries=2), idempotent=False).tool_runs == 1  # not flagged: not retried
    assert count_retries(Retry(max_retries=2, only_idempotent=False), idempotent=False).tool_runs == 3


def test_the_virtual_clock_adds_what_it_is_told():
    clock = error_strategies.VirtualClock()
    clock.sleep(0.5)
    clock.sleep(1.25)
    assert clock.now == 1.75


def test_sweep_without_failures_costs_the_same_for_every_strategy():
    rows = sweep([0.0], runs=5)
    assert {row["strategy"] for row in rows} == {"raise", "report", "Retry → report", "Retry → raise"}
    assert all((row["success_rate"], row["tool_runs"], row["model_calls"], row["seconds"]) == (1.0, 1.0, 2.0, 1.2)
               for row in rows)


def test_sweep_time_adds_model_calls_tool_runs_and_back_off():
    (row,) = sweep([1.0], {"retry": Retry(max_retries=2, backoff=1.0, jitter=0.0)}, runs=1, model_retries=0)
    assert (row["success_rate"], row["tool_runs"], row["model_calls"]) == (0.0, 3.0, 2.0)
    assert row["seconds"] == pytest.approx(2 * 0.5 + 3 * 0.2 + 1.0 + 2.0)


def test_sweep_is_reproducible():
    assert sweep([0.3, 0.6], runs=10, seed=4) == sweep([0.3, 0.6], runs=10, seed=4)


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 10_000), rates=st.lists(st.sampled_from(error_strategies.RATES), min_size=2, max_size=4,
                                                    unique=True))
def test_the_same_failures_meet_every_strategy(seed, rates):
    """Each strategy adds chances to the one before it, so with the same fates it never does worse; and a
    higher failure rate only adds failures, so success never rises with it."""
    rates = sorted(rates)
    rows = sweep(rates, runs=8, seed=seed)
    success = {(r["strategy"], r["failure_rate"]): r["success_rate"] for r in rows}
    for rate in rates:
        assert success["raise", rate] <= success["report", rate] <= success["Retry → report", rate]
        assert success["raise", rate] <= success["Retry → raise", rate] <= success["Retry → report", rate]
    for strategy in ("raise", "report", "Retry → report", "Retry → raise"):
        assert all(success[strategy, a] >= success[strategy, b] for a, b in zip(rates, rates[1:]))


def test_sweep_refuses_nonsense():
    with pytest.raises(ValueError, match="runs"):
        sweep(runs=0)
    with pytest.raises(ValueError, match="model_retries"):
        sweep(model_retries=-1)


def test_explore_retries_draws_four_panels_with_a_line_per_strategy():
    fig = error_strategies.explore_retries(runs=4)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 4 and all(len(ax.lines) == 4 for ax in visible)
    assert "max_retries=2" in fig._suptitle.get_text()

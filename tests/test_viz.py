"""Charts: each function returns one closed matplotlib Figure showing what it was given."""

from __future__ import annotations

import subprocess
import sys
import threading

import matplotlib
import pytest

matplotlib.use("Agg")

import agentkit  # noqa: E402
from agentkit import viz  # noqa: E402
from agentkit.models import parallel_calls  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402


def _labels(ax):
    return [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]


def test_timeline_has_a_row_for_the_model_and_one_per_worker():
    @agentkit.tool
    def nap(i: int) -> int:
        """Quick."""
        return i

    run = agentkit.run(parallel_calls("nap", 3), "go", tools=[nap])
    fig = viz.timeline(run, title="three calls")
    (ax,) = fig.axes
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert rows[0] == "model" and len(rows) == 1 + len({s.worker for s in run.trace.spans()})
    assert ax.get_title(loc="left") == "three calls"
    assert len(ax.patches) == run.steps + run.tool_runs  # one bar per model call and per tool attempt


def test_timelines_put_two_runs_on_one_shared_time_axis_so_the_shorter_one_looks_shorter():
    @agentkit.tool
    def nap(i: int) -> int:
        """Quick."""
        return i

    runs = {name: agentkit.run(parallel_calls("nap", 2), "go", tools=[nap], executor=name)
            for name in ("sequential", "threads")}
    fig = viz.timelines(runs)
    top, bottom = fig.axes
    assert top.get_shared_x_axes().joined(top, bottom) and top.get_xlim() == bottom.get_xlim()
    assert [ax.get_title(loc="left") for ax in fig.axes] == ["sequential", "threads"]


def test_bars_label_every_bar_with_its_value():
    fig = viz.bars({"a": 1, "b": 2.5}, title="t")
    (ax,) = fig.axes
    assert [p.get_height() for p in ax.patches] == [1, 2.5]
    assert [t.get_text() for t in ax.texts] == ["1", "2.5"]


def test_grouped_bars_draw_one_bar_per_group_and_series():
    fig = viz.grouped_bars({"x": {"request": 10, "response": 20}, "y": {"request": 5, "response": 7}})
    (ax,) = fig.axes
    assert len(ax.patches) == 4 and {"x", "y"} <= set(_labels(ax))


def test_matrix_writes_only_the_filled_cells():
    fig = viz.matrix(["f1", "f2"], ["parse", "schema"], {("f1", "schema"): "type"})
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.texts] == ["type"]


def test_importing_agentkit_does_not_import_matplotlib():
    code = "import sys, agentkit; print('matplotlib' in sys.modules, 'agentkit.viz' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_stacked_bars_stack_the_parts_of_each_row():
    fig = viz.stacked_bars({"turn 1": {"tools": 600, "talk": 80}, "turn 2": {"tools": 600, "talk": 800}})
    (ax,) = fig.axes
    widths = sorted(p.get_width() for p in ax.patches)
    assert widths == [80, 600, 600, 800]


# -- charts for 05_parallel_tools and 07_transport_faults_and_fallbacks --

def test_gantt_draws_a_panel_per_run_with_a_row_per_call_in_the_models_order():
    @agentkit.tool
    def nap(i: int) -> int:
        """Quick."""
        return i

    runs = {name: agentkit.run(parallel_calls("nap", 3), "go", tools=[nap], executor=name)
            for name in ("sequential", "threads")}
    fig = viz.gantt(runs, title="one batch")
    assert len(fig.axes) == 2 and fig._suptitle.get_text() == "one batch"
    for ax, (name, run) in zip(fig.axes, runs.items()):
        assert [t.get_text() for t in ax.get_yticklabels()] == ["model", "call 1", "call 2", "call 3"]
        assert len(ax.patches) == run.steps + run.tool_runs
        assert ax.get_title(loc="left").startswith(name)
    assert fig.axes[0].get_title(loc="left") == "sequential — 1 worker"  # all three in the caller's thread


def test_gantt_gives_each_of_sixteen_workers_its_own_colour_and_none_is_the_failure_red():
    everyone_started = threading.Barrier(16, timeout=5)

    @agentkit.tool
    def wait_for_all(i: int) -> int:
        """Returns once all sixteen calls are running, so each has a thread of its own."""
        everyone_started.wait()
        return i

    r = agentkit.run(parallel_calls("wait_for_all", 16), "go", tools=[wait_for_all], executor="threads")
    fig = viz.gantt({"threads": r})
    (ax,) = fig.axes
    tool_bars = [bar for bar in ax.patches if bar.get_y() > 0.5]  # row 0 is the model's
    colours = {to_hex(bar.get_facecolor()) for bar in tool_bars}
    assert len(tool_bars) == 16 and len(colours) == 16
    assert to_hex("#C44E52") not in colours


def test_gantt_leaves_room_left_of_the_first_bar_so_a_model_call_at_zero_is_not_hidden_by_the_axis():
    @agentkit.tool
    def nap(i: int) -> int:
        """Quick."""
        return i

    fig = viz.gantt({"threads": agentkit.run(parallel_calls("nap", 2), "go", tools=[nap])})
    (ax,) = fig.axes
    left, right = ax.get_xlim()
    first = min(bar.get_x() for bar in ax.patches)  # the first model call, a thin bar near t = 0
    assert first - left > 0.005 * (right - left)  # clear of the axis line, not drawn under it


def test_scaling_draws_a_line_per_series_and_a_dashed_step_per_expectation():
    fig = viz.scaling({"sized": [(1, 0.1), (8, 0.1)], "capped": [(1, 0.1), (8, 0.2)]},
                      expected={"capped": [(1, 0.1), (6, 0.1), (7, 0.2), (8, 0.2)]}, annotate="{:.1f}")
    (ax,) = fig.axes
    styles = sorted(line.get_linestyle() for line in ax.get_lines())
    assert styles == ["-", "-", "--"]
    assert [t.get_text() for t in ax.texts] == ["0.1", "0.1", "0.1", "0.2"]


def test_table_writes_every_cell():
    fig = viz.table(["batch", "seconds"], [["2 tools", "1.00"], ["8 tools", "2.00"]], title="t")
    (ax,) = fig.axes
    cells = {(r, c): cell.get_text().get_text() for (r, c), cell in ax.tables[0].get_celld().items()}
    assert cells == {(0, 0): "batch", (0, 1): "seconds", (1, 0): "2 tools", (1, 1): "1.00", (2, 0): "8 tools",
                     (2, 1): "2.00"}


class _Attempt:
    def __init__(self, outcome, model="m", wait=0.0, elapsed=0.1):
        self.outcome, self.model, self.wait, self.elapsed, self.ok = outcome, model, wait, elapsed, outcome == 200


def test_attempt_path_counts_repeats_and_names_a_fallback_model():
    attempts = [_Attempt(503), _Attempt(503, wait=0.1), _Attempt(500, "b"), _Attempt(200, "c")]
    assert viz.attempt_path(attempts) == "503 ×2 → 500 (b) → 200 (c)"
    assert viz.attempt_path([]) == ""


def test_attempt_timeline_draws_each_wait_and_attempt_and_says_the_path():
    rows = {"429": [_Attempt(429), _Attempt(200, wait=0.1)], "ok": [_Attempt(200)]}
    fig = viz.attempt_timeline(rows, title="faults")
    (ax,) = fig.axes
    assert len(ax.patches) == 4  # 429, the wait, 200; and the other call's single 200
    assert [t.get_text().split("   ")[0].strip() for t in ax.texts] == ["429 → 200", "200"]
    assert "(2 attempts, 0.30 s)" in ax.texts[0].get_text()


# -- charts for 04_error_handling and 06_limits_and_stopping --

def test_sweep_panels_draw_a_panel_per_metric_and_a_line_per_series():
    rows = [{"strategy": s, "failure_rate": r, "success_rate": 1 - r, "tool_runs": 1 + r}
            for s in ("raise", "report", "retry") for r in (0.0, 0.5)]
    fig = viz.sweep_panels(rows, metrics=("success_rate", "tool_runs"), title="t")
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == [viz.SWEEP_LABELS["success_rate"], viz.SWEEP_LABELS["tool_runs"]]
    assert all(len(ax.lines) == 3 for ax in axes)
    assert list(axes[1].lines[2].get_ydata()) == [1.0, 1.5]


def test_outcome_grid_writes_each_cell_and_colours_it_by_category():
    cells = {("timeout", "raise"): ("raises", "raises"), ("timeout", "report"): ("reports timeout", "reports")}
    fig = viz.outcome_grid(["timeout"], ["raise", "report"], cells)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.texts] == ["raises", "reports timeout"]
    pixels = ax.images[0].get_array()
    from matplotlib.colors import to_rgb
    assert tuple(pixels[0][0]) == pytest.approx(to_rgb(viz.OUTCOME_COLORS["raises"]))
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["raises", "reports"]


def test_call_fate_sorts_results_by_what_became_of_the_call():
    assert [viz.call_fate(ok, kind) for ok, kind in [(True, None), (False, "timeout"), (False, "schema"),
                                                     (False, "limit"), (False, "not_run"), (False, "denied")]] == [
        "ran: ok", "ran: failed", "refused at a gate", "blocked by a limit", "not run", "denied"]


def test_calls_per_step_stacks_each_model_calls_results():
    model = agentkit.ScriptedModel([[agentkit.call("nap", {"i": 1}), agentkit.call("nap", {"i": "x"})], "done"])

    @agentkit.tool
    def nap(i: int) -> int:
        """Quick."""
        return i

    run = agentkit.run(model, "go", tools=[nap])
    fig = viz.calls_per_step(run)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2"]
    drawn = [p for p in ax.patches if p.get_height()]
    # step 1: one call ran, one was refused, stacked on one bar; step 2 asked for nothing
    assert len(drawn) == 2 and drawn[0].get_x() == drawn[1].get_x() and sorted(p.get_y() for p in drawn) == [0, 1]
    assert any(t.get_text() == "answer" for t in ax.texts) and any("final_answer" in t.get_text() for t in ax.texts)


def test_defence_rates_draw_two_bars_per_row_labelled_in_percent_in_the_rates_colours():
    fig = viz.defence_rates({"none": {"attack success": 1.0, "task success": 0.5},
                             "fence": {"attack success": 0.0, "task success": 1.0}}, title="t")
    (ax,) = fig.axes
    widths = [p.get_width() for p in ax.patches]
    assert widths == [100, 0, 50, 100]  # attack success of each row, then task success of each row
    assert [to_hex(p.get_facecolor()) for p in ax.patches] == [viz.RATE_COLOURS["attack success"].lower()] * 2 + \
        [viz.RATE_COLOURS["task success"].lower()] * 2
    assert [t.get_text() for t in ax.texts] == ["100%", "0%", "50%", "100%"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["none", "fence"]

"""agentkit.widgets: a playground builds one control per argument, runs once, and re-runs on Run."""

from __future__ import annotations

import pytest

ipywidgets = pytest.importorskip("ipywidgets")

from agentkit import widgets  # noqa: E402


def test_playground_makes_a_control_per_argument_and_shows_the_first_result():
    calls = []

    def experiment(rate: float, strategy: str, seeded: bool):
        calls.append((rate, strategy, seeded))
        return f"{strategy} at {rate}"

    panel = widgets.playground(experiment, rate=(0.0, 1.0, 0.1), strategy=["report", "retry"], seeded=True)

    kinds = {w.description: type(w).__name__ for w in panel.kwargs_widgets}
    assert kinds == {"rate": "FloatSlider", "strategy": "Dropdown", "seeded": "Checkbox"}
    assert calls == [(0.5, "report", True)]  # run once, with each control's starting value
    assert panel.result == "report at 0.5"


def test_run_button_reruns_the_experiment_with_the_current_values():
    seen = []
    panel = widgets.playground(lambda n: seen.append(n) or n * 2, n=(1, 9, 1))
    panel.kwargs_widgets[0].value = 7
    assert seen == [5]  # moving a control alone runs nothing: experiments can be slow
    panel.manual_button.click()
    assert seen == [5, 7] and panel.result == 14


def test_a_playground_without_controls_is_refused():
    with pytest.raises(ValueError, match="at least one control"):
        widgets.playground(lambda: None)


def test_the_result_is_shown_not_only_kept(capsys):
    # ipywidgets.interactive keeps the return value in .result but displays it only with auto_display
    # (interact turns it on, interactive does not): without it a saved notebook shows no chart under Run.
    # Outside a kernel IPython's display() prints, which is what this test reads.
    panel = widgets.playground(lambda n: f"the chart for n={n}", n=(1, 9, 1))
    assert "the chart for n=5" in capsys.readouterr().out
    panel.manual_button.click()
    assert "the chart for n=5" in capsys.readouterr().out


def test_long_argument_names_are_not_cut_off():
    # ipywidgets gives a control's label a fixed width, so "exit_behavior" showed as "exit_beha..."
    panel = widgets.playground(lambda exit_behavior, model_retries: None, exit_behavior=["end", "error"],
                               model_retries=(0, 3, 1))
    assert [w.style.description_width for w in panel.kwargs_widgets] == ["initial", "initial"]

"""Playgrounds: knobs on an experiment, for the notebooks — a thin ipywidgets shell.

    from agentkit import widgets
    widgets.playground(sweep, failure_rate=(0.0, 0.9, 0.1), strategy=["report", "retry"])

The experiment is an ordinary function, tested like any other: keyword arguments in, something
IPython can show out (a matplotlib Figure, a table). The playground gives each argument a control
(ipywidgets' `interact` abbreviations: a (min, max, step) tuple is a slider, a list a drop-down, a bool
a checkbox, a string a text box), adds a Run button, and runs the experiment once straight away, so a
notebook saved with its widget state shows the controls *and* the last result before anyone runs it.

A Run button rather than re-running on every slider tick: experiments here sleep and call servers, and
a half-second per tick makes a slider feel broken.

Under nbval, tag a playground's cell `nbval-ignore-output`: nbval does not route an Output widget's
messages, so the chart the playground shows appears there as an extra cell output. (Saved with
`make notebooks`, the chart lives in the widget state instead, which is what JupyterLab shows.)

Left out on purpose: layout options and live updating; `ipywidgets.interactive` is one import away.
"""

from __future__ import annotations

from typing import Any, Callable


def playground(experiment: Callable[..., Any], /, **controls: Any) -> Any:
    """Controls for `experiment`'s keyword arguments, a Run button and the last result, as one widget."""
    from .extras import need

    ipywidgets = need("ipywidgets", "widgets", "a playground")
    if not controls:
        raise ValueError("a playground needs at least one control: playground(fn, name=(0, 10, 1), ...)")
    # auto_display: interactive (unlike interact) only keeps the return value in .result unless told to show it
    panel = ipywidgets.interactive(experiment, {"manual": True, "manual_name": "Run", "auto_display": True},
                                   **controls)
    for control in panel.kwargs_widgets:  # the whole argument name as its label, however long
        if hasattr(control, "style") and hasattr(control.style, "description_width"):
            control.style.description_width = "initial"
    panel.update()  # the first result, computed now: the saved notebook shows it before any click
    return panel

"""Optional dependencies: a feature beyond the core names the extra that brings what it needs.

    tqdm = need("tqdm.auto", "bench", "a benchmark run's progress bar")

The base install (`pip install agentkit-lab`) runs the loop, the codecs, HTTPModel, the simulator and the
benchmark's scoring. The rest comes with an extra of the `agentkit-lab` distribution (pyproject.toml):
`bench` (progress bars, record / replay), `mcp` (the MCP SDK), `viz` (charts), `widgets` (playgrounds),
or `lab`, which holds them all and JupyterLab. Without it, the feature stops with MissingExtra, one line
naming the extra; the command lines print that line and exit 2.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .core.errors import MissingExtra

DISTRIBUTION = "agentkit-lab"  # `agentkit` on the package index is an unrelated project


def install_hint(extra: str) -> str:
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def need(module: str, extra: str, feature: str) -> ModuleType:
    """Import `module`, or raise MissingExtra saying which extra installs it. Only the module's own
    absence is translated: an import error inside an installed package is a real bug and stays one."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name is None or exc.name.split(".")[0] != top:
            raise
        raise MissingExtra(f"{feature} needs {top}, which is not installed: {install_hint(extra)}") from None

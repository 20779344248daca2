"""agentkit: the tool-calling agent loop, built by hand, small enough to read in one sitting.

    import agentkit
    from agentkit import tool, run, Limits

    @tool
    def get_weather(city: str) -> str:
        "Current weather for a city."
        return f"{city}: sunny, 22°C"

    with agentkit.sim.serve() as sim:                       # the offline simulator
        model = agentkit.lab.from_env(sim_url=sim)           # a real provider if AGENTKIT_PROVIDER is set
        result = run(model, "What's the weather in Tokyo?", tools=[get_weather])
        print(result.output, result.stop_reason)

The folders are the layers (the README lists them; each imports only from those above it): `core/` is
the loop itself, `long_running/` what sits around it (compaction, resume, replay, OpenTelemetry), then
`models.py`, `providers/` (the client half of each wire format), `http/` (HTTPModel), `sim/` (the
simulator), `mcp/`, `bench/`, `conformance/`, and what the notebooks use (`viz`, `widgets`, `lab/`, `experiments/`).
`import agentkit` loads the core only; HTTPModel, the simulator and the charts load on first use.
"""

from __future__ import annotations

from typing import Any

from .core.errors import (
    AgentkitError,
    LimitExceeded,
    ModelCallError,
    ProviderError,
    RunError,
    ScriptError,
    ToolDefinitionError,
    ToolExecutionError,
    ToolFailure,
    ToolReturnError,
    ToolTimeout,
)
from .core.execute import AsyncioExecutor, SequentialExecutor, ThreadExecutor
from .core.drive import arun, run
from .core.runs import Run, Settings, StopReason, Thread
from .core.policies import Approve, Deny, Edit, Limits, Retry
from .core.tools import RuleViolation, Tool, ToolContext, Update, tool
from .core.trace import Trace
from .core.types import Message, ModelOptions, ModelTurn, ToolCall, ToolResult, ToolSpec, Usage
from .models import FunctionModel, ScriptedModel, call

__version__ = "0.1.0"

__all__ = [
    "tool", "Tool", "ToolContext", "Update", "RuleViolation", "run", "arun", "Run", "Settings", "Thread", "StopReason",
    "Limits", "Retry",
    "Approve", "Deny", "Edit", "ScriptedModel", "FunctionModel", "call", "HTTPModel", "Trace",
    "Message", "ModelOptions", "ModelTurn", "ToolCall", "ToolResult", "ToolSpec", "Usage",
    "SequentialExecutor", "ThreadExecutor", "AsyncioExecutor",
    "AgentkitError", "LimitExceeded", "ModelCallError", "ProviderError", "RunError", "ScriptError",
    "ToolDefinitionError", "ToolExecutionError", "ToolFailure", "ToolReturnError", "ToolTimeout",
]

# Long-running loops: budgets, compaction, pause and resume, replay and fork.
from .core.budgets import Price  # noqa: E402
from .core.errors import UnknownPriceError  # noqa: E402
from .core.policies import Pause  # noqa: E402
from .long_running.compaction import DropOldest, ElideToolResults, Summarize  # noqa: E402
from .long_running.replay import diff, fork, replay  # noqa: E402
from .long_running.resume import resume  # noqa: E402

__all__ += ["Price", "UnknownPriceError", "DropOldest", "ElideToolResults", "Summarize", "Pause", "resume",
            "replay", "fork", "diff"]

# Loaded on first use, so that `import agentkit` stays fast and pulls in no HTTP server or plotting.
_LAZY = {"HTTPModel": ("agentkit.http", "HTTPModel")}
_LAZY_MODULES = {"fixtures", "providers", "http", "sim", "lab", "viz", "widgets", "bench", "conformance", "mcp"}


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    if name in _LAZY_MODULES:
        return importlib.import_module(f"agentkit.{name}")
    raise AttributeError(f"module 'agentkit' has no attribute {name!r}")

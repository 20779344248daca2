"""agentkit: the tool-calling agent loop, built by hand, small enough to read in one sitting.

    import agentkit
    from agentkit import tool, run, Limits

    @tool
    def get_weather(city: str) -> str:
        "Current weather for a city."
        return f"{city}: sunny, 22°C"

    with agentkit.sim.serve() as sim:                       # the offline simulator
        model = agentkit.HTTPModel.from_env(sim_url=sim)     # a real provider if AGENTKIT_PROVIDER is set
        result = run(model, "What's the weather in Tokyo?", tools=[get_weather])
        print(result.output, result.stop_reason)

The modules, from the ground floor up (each imports only from the ones before it):
types, errors, extras, trace, strict, tools, validate, fixtures, budgets, policies, execute, compaction,
checkpoint, loop, resume, replay, models, providers, http, sim, lab, otel, viz. `import agentkit` loads the core
only; HTTPModel, the simulator and the charts load on first use.
"""

from __future__ import annotations

from typing import Any

from .errors import (AgentkitError, LimitExceeded, ModelCallError, ProviderError, RunError, ScriptError,
                     ToolDefinitionError, ToolExecutionError, ToolFailure, ToolReturnError, ToolTimeout)
from .execute import AsyncioExecutor, SequentialExecutor, ThreadExecutor
from .loop import Run, Settings, StopReason, Thread, arun, run
from .models import FunctionModel, ScriptedModel, call
from .policies import Approve, Deny, Edit, Limits, Retry
from .tools import RuleViolation, Tool, ToolContext, Update, tool
from .trace import Trace
from .types import Message, ModelOptions, ModelTurn, ToolCall, ToolResult, ToolSpec, Usage

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

# Long-running loops (issue 19): budgets, compaction, pause and resume, replay and fork.
from .budgets import Price  # noqa: E402
from .compaction import DropOldest, ElideToolResults, Summarize  # noqa: E402
from .errors import UnknownPriceError  # noqa: E402
from .policies import Pause  # noqa: E402
from .replay import diff, fork, replay  # noqa: E402
from .resume import resume  # noqa: E402

__all__ += ["Price", "UnknownPriceError", "DropOldest", "ElideToolResults", "Summarize", "Pause", "resume",
            "replay", "fork", "diff"]

# Loaded on first use, so that `import agentkit` stays fast and pulls in no HTTP server or plotting.
_LAZY = {"HTTPModel": ("agentkit.http", "HTTPModel")}
_LAZY_MODULES = {"fixtures", "providers", "http", "sim", "lab", "viz", "widgets", "bench", "mcp", "otel"}


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    if name in _LAZY_MODULES:
        return importlib.import_module(f"agentkit.{name}")
    raise AttributeError(f"module 'agentkit' has no attribute {name!r}")

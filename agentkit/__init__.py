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

import sys as _sys
from typing import Any


def _ctrl_c_while_loading(command: str = "agentkit.bench") -> None:
    """`python -m agentkit.bench`: Ctrl-C while the kit is still being imported ends with the command's own
    one line and exit code 130, as at every later point (its main() takes the signal back once it runs).
    Only for that command: importing agentkit anywhere else changes no signal handler."""
    argv = getattr(_sys, "orig_argv", [])
    if not any(a == "-m" and b == command for a, b in zip(argv, argv[1:])) and f"-m{command}" not in argv:
        return
    import os
    import signal

    def interrupted(signum: int, frame: Any) -> None:
        _sys.stderr.write(f"{command}: interrupted; finished cases are kept: run the same command again to "
                          "resume\n")
        os._exit(130)

    signal.signal(signal.SIGINT, interrupted)


_ctrl_c_while_loading()

from .core.errors import (  # noqa: E402 - after the Ctrl-C handler, on purpose
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
from .core.execute import AsyncioExecutor, SequentialExecutor, ThreadExecutor  # noqa: E402
from .core.drive import arun, run  # noqa: E402
from .core.stream import AsyncRunStream, RunStream, arun_stream, run_stream  # noqa: E402
from .core.runs import Run, Settings, StopReason, Thread  # noqa: E402
from .core.policies import Approve, Deny, Edit, Limits, Retry  # noqa: E402
from .core.tools import RuleViolation, Tool, ToolContext, Update, tool  # noqa: E402
from .core.trace import Trace  # noqa: E402
from .core.types import (  # noqa: E402
    Message,
    ModelOptions,
    ModelTurn,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    ToolSpec,
    Usage,
)
from .models import FunctionModel, ScriptedModel, call  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "tool", "Tool", "ToolContext", "Update", "RuleViolation", "run", "arun", "Run", "Settings", "Thread", "StopReason",
    "run_stream", "arun_stream", "RunStream", "AsyncRunStream", "TextDelta", "ReasoningDelta", "ToolCallDelta",
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

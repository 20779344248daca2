"""agentkit.bench: benchmark any model's tool calling — BFCL's public data and agentkit's own suite.

    from agentkit import bench
    cases = bench.load_cases("bfcl:simple_python,agentkit:error_recovery", limit=10)
    with bench.serve_with_oracle(cases) as server:                 # the simulator, plus an oracle model
        model = HTTPModel("sim-reasoner", base_url=server.base_url("openai-chat"), api_key="sim")
        await bench.run_benchmark(cases, model, out="results/sim-reasoner.jsonl")
    print(bench.Report.load("results/").to_markdown())

    $ python -m agentkit.bench run --suite bfcl:simple_python --provider openai --model gpt-4.1-mini

The modules, in the order a benchmark uses them:

    bfcl.py       BFCL v4's files: fetch (from the bfcl-eval wheel), load, BFCL's exact request per model style
    multiturn.py  BFCL's multi-turn categories: BFCL's back-ends as Tools, played turn by turn, BFCL's checks
    scoring.py    check_calls(functions, ground_truth, calls, category) -> Verdict; the failure labels
    world.py      the stand-in services our own scenarios' tools run against
    scenarios.py  our own suite (agentkit/data/scenarios/): load, validate, judge by end state and answer facts
    suites.py     "bfcl:parallel,agentkit:limits" -> cases with one shape
    oracle.py     a simulated model that answers from the known answers (proves the pipeline: 100 %)
    runner.py     async, N in flight, rate limit, JSONL results that resume, trials for pass^k
    results.py    a results file's run configuration, and reading it back line by line whatever its state
    record.py     record HTTP exchanges (vcrpy), replay them offline with identical scores
    report.py     accuracy by category, failure labels, latency, tokens, cost; Markdown, JSON, charts
    noise.py      the noise floor: pass@1's bootstrap interval, pass^k, flip rate, model vs model
    __main__.py   the command line

`import agentkit.bench` loads only the scoring rules; the rest (httpx, tqdm, vcrpy, matplotlib) loads
when it is used.
"""

from __future__ import annotations

import importlib
from typing import Any

from .scoring import LABELS, Verdict, check_calls

__all__ = ["check_calls", "Verdict", "LABELS", "load_cases", "run_benchmark", "HTTPModels", "RateLimit", "Report",
           "Price",
           "Oracle", "serve_with_oracle", "recording", "replaying", "bfcl", "multiturn", "scenarios"]

_LAZY = {"load_cases": "suites", "parse_suites": "suites", "run_benchmark": "runner", "RateLimit": "runner",
         "HTTPModels": "runner", "OracleModel": "oracle",
         "read_records": "runner", "read_results": "results", "Report": "report", "Price": "report", "Oracle": "oracle",
         "serve_with_oracle": "oracle", "recording": "record", "replaying": "record"}
_MODULES = {"bfcl", "multiturn", "noise", "scenarios", "world", "suites", "oracle", "runner", "results", "record",
            "report", "scoring"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'agentkit.bench' has no attribute {name!r}")

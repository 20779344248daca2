"""The conformance scenarios' models: a behaviour over several requests, played on whatever tools the client sends.

A scenario is named in the model name, after any model id whose rules it should meet:

    "conform-parallel"                        three calls in one turn, then an answer
    "claude-opus-5-5-conform-parallel"        the same, under Claude Opus 5.5's rules (thinking always on, ...)
    "gemini-3-flash-preview-conform-spend-limit"

The server halves apply the model id's rules as for any name (`claude-opus-5-5-…` is Claude Opus 5.5's family,
`gemini-3-…` signs its calls); this module decides what the model does at each step of the scenario:

    one-call          one call, then the answer
    parallel          three calls in one turn (two tools when there are two), then the answer
    sequential        three steps of one call each, then the answer
    tool-error        a good call and a broken one (a required argument left out) in one turn; after the
                      results, the broken call again, corrected; then the answer
    reasoning         two calls in one turn, one more step, then the answer (reasoning state on every step)
    stream            as parallel: the client decides whether to stream, and its deltas must reassemble
    rate-limit        one call; the request with its result fails once with a 429 and retry-after
    overloaded        one call; the request with its result fails once (Anthropic's 529, elsewhere 503)
    spend-limit       one call; the request with its result meets a spend limit (a final 429: never retry it;
                      OpenAI's formats and Anthropic only: the others answer no spend limit of their own)
    long-history      twelve steps of one call each, then the answer: a history the client may compact
    forced-tool-use   one call, then the answer, on a model that refuses a forced tool_choice (Claude Opus 5.5,
                      direct and through OpenRouter): a loop that forces tool use is refused
    model-refuses-tools  a model whose server refuses any request with tools (GPT-6.1 on Chat Completions, a
                      tool-less Ollama model): the loop must stop with that error, not retry it

Each scenario names the ledger rules it exercises (`rules_of(fmt, scenario)`) and the model id it plays under in
each format (`model_for`: `MODELS`, or the scenario's own). What the simulator records for a request of a
scenario: "passed", "refused" or "degraded" per rule as for any request, and "answered" for an error the
scenario plays on purpose (its 429, 529/503, spend limit, a tool-less model's refusal): it counts against no
loop. A spend limit sent again is "refused" (its rule says retrying does not restore access).

Calls are written against the client's tools: the first tool (and the second, where a scenario wants two), with
arguments read from the request as the reasoner reads them, and one argument made distinct per call (a
free string gets "#1", "#2", ...; else an integer counts 1, 2, 3...). That marker also tells the model which step it
is at, so a client that compacts its history (drops old turns) moves the scenario on instead of restarting it.

These models reason whether or not the request asks (`unasked_fields`): a Responses request gets reasoning
items, an OpenRouter request `reasoning_details`, an Ollama request `thinking`, as reasoning models return them
by default ("Reasoning tokens are included in the response by default if the model decides to output them",
OpenRouter's reasoning-tokens page); Claude 5.x and Gemini 3 need no asking.

Left out on purpose: reading the prompt (a scenario does the same whatever the user asked), tools that the
model calls without the client declaring them, redacted thinking (no scenario model returns it), and how long a
client waits before it retries a 429 (a retry that comes back early is answered like any other). A planned
failure counts attempts per identical request: call `SimServer.reset()` before each run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..core.types import ToolSpec
from . import reasoner as R
from .reasoner import Decision, PlannedCall, Situation
from .wire.common import ChatRequest

__all__ = ["SCRIPTS", "Script", "scenario_of", "play", "planned_fault", "planned_refusals", "unasked_fields", "MARK",
           "MODELS", "model_for", "rules_of"]

#: What names a scenario in a model name: "<model>-conform-<scenario>", or "conform-<scenario>" alone.
MARK = "conform-"
_SCENARIO = re.compile(r"(?:^|[-/])conform-([a-z][a-z-]*?)$")

#: A step's calls: the step number (0, 1, ...) and the tools -> the calls, or None for the final answer.
Steps = Callable[[int, tuple[ToolSpec, ...], str], "list[PlannedCall] | None"]


@dataclass(frozen=True)
class Script:
    """One scenario's model: what it does at each step, and the failures it meets on its own schedule."""

    name: str
    description: str
    steps: Steps
    #: A fault spec (`sim.faults`) for the request at this step, e.g. "429=300,flaky" — None: no failure.
    fault: Callable[[int], str | None] = lambda step: None
    #: The rule groups (`RULE_GROUPS`) the scenario exercises, in every format it plays in.
    exercises: tuple[str, ...] = ("pairing",)
    #: The formats it plays in, each with the model id whose rules it plays under (None: `MODELS`'s); a
    #: format left out has no such behaviour to play (no spend limit of its own, no model that refuses it).
    formats: dict[str, str | None] | None = None
    #: Per format, the rules the scenario's model refuses on purpose whatever the client does (a model
    #: without tools): logged "answered", not "refused", so they count against no loop.
    answers_with: dict[str, tuple[str, ...]] | None = None
    #: The scenario ends in an error no retry can fix (a spend limit, a model that refuses tools): a loop that
    #: stops there, without sending the refused request again, plays it well.
    ends_in_error: bool = False


def scenario_of(model: str | None) -> str | None:
    """The scenario a model name plays ("claude-opus-5-5-conform-parallel" -> "parallel"), or None."""
    if not isinstance(model, str):
        return None
    found = _SCENARIO.search(model.strip())
    return found.group(1) if found and found.group(1) in SCRIPTS else None


# --------------------------------------------------------------------------------------------------
# The calls: the client's tools, distinct arguments, the step read back from them
# --------------------------------------------------------------------------------------------------

#: Calls of one step are numbered step * STRIDE + i, so a marker says both the step and the call.
STRIDE = 10
_STRING_MARK = re.compile(r"#(\d+)$")


def _marker_param(tool: ToolSpec) -> R.Param | None:
    """The parameter that tells calls apart: the first free string (no enum, pattern or format to break),
    else the first integer, else the first number."""
    params = [p for p in R.parameters(tool) if p.role not in ("enum", "const")]
    free = [p for p in params if p.type == "string" and p.role != "date"
            and not {"pattern", "format", "maxLength"} & set(p.schema)]
    return (next(iter(free), None) or next((p for p in params if p.type == "integer"), None)
            or next((p for p in params if p.type == "number"), None))


def _placeholder(p: R.Param) -> Any:
    """A value of the parameter's type, for a required parameter the request says nothing about."""
    enum = p.schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    if "const" in p.schema:
        return p.schema["const"]
    return {"integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}.get(p.type, "example")


def call(tool: ToolSpec, text: str, index: int) -> PlannedCall:
    """Call number `index` of the scenario to `tool`: every required argument filled, one made distinct."""
    args = R.fill_arguments(tool, R.read_facts(text))
    for p in R.parameters(tool):
        if p.required and args.get(p.name) is None:
            args[p.name] = _placeholder(p)
    mark = _marker_param(tool)
    if mark is not None:
        if mark.type in ("integer", "number"):
            args[mark.name] = index + 1 if mark.type == "integer" else float(index + 1)
        else:
            base = args.get(mark.name) if isinstance(args.get(mark.name), str) else "item"
            args[mark.name] = f"{_STRING_MARK.sub('', base)}#{index + 1}"
    return PlannedCall(tool.name, args)


def broken(tool: ToolSpec, planned: PlannedCall) -> PlannedCall:
    """The same call with every required argument left out (a tool that fails: its loop must still answer
    it); a tool without required arguments gets its first argument as the wrong type instead."""
    required = [p.name for p in R.parameters(tool) if p.required]
    if required:
        return PlannedCall(tool.name, {k: v for k, v in (planned.arguments or {}).items() if k not in required})
    params = R.parameters(tool)
    if params:
        wrong = [] if params[0].type != "array" else "not a list"
        return PlannedCall(tool.name, {**(planned.arguments or {}), params[0].name: wrong})
    return PlannedCall(tool.name, {"unexpected": True})


def step_of(s: Situation) -> int:
    """The step this request is at: one past the highest step a call in the history is marked with (so a
    compacted history keeps its place), else the number of assistant turns since the request."""
    steps = []
    tools = {t.name: t for t in s.tools}
    for tried in s.tried:
        tool = tools.get(tried.call.name)
        mark = _marker_param(tool) if tool else None
        value = (tried.call.arguments_object() or {}).get(mark.name) if mark else None
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, float)):
            steps.append((int(value) - 1) // STRIDE)
        elif isinstance(value, str) and _STRING_MARK.search(value):
            steps.append((int(_STRING_MARK.search(value).group(1)) - 1) // STRIDE)
    return max(steps) + 1 if steps else s.turns


# --------------------------------------------------------------------------------------------------
# The scripts
# --------------------------------------------------------------------------------------------------

def _batch(tools: tuple[ToolSpec, ...], text: str, step: int, n: int) -> list[PlannedCall]:
    """n calls in one turn: the first tool, and the second one for every other call when there is one."""
    return [call(tools[i % 2] if len(tools) > 1 else tools[0], text, step * STRIDE + i) for i in range(n)]


def _steps(count: int, per_step: int = 1) -> Steps:
    def steps(step: int, tools: tuple[ToolSpec, ...], text: str) -> list[PlannedCall] | None:
        return _batch(tools, text, step, per_step) if step < count else None
    return steps


def _tool_error(step: int, tools: tuple[ToolSpec, ...], text: str) -> list[PlannedCall] | None:
    second = tools[1] if len(tools) > 1 else tools[0]
    if step == 0:
        return [call(tools[0], text, 0), broken(second, call(second, text, 1))]
    if step == 1:  # the model read the error result and sends the call again, corrected
        return [call(second, text, STRIDE)]
    return None


def _reasoning(step: int, tools: tuple[ToolSpec, ...], text: str) -> list[PlannedCall] | None:
    return _batch(tools, text, step, 2 if step == 0 else 1) if step < 2 else None


def _fault_at_first_result(spec: str) -> Callable[[int], str | None]:
    return lambda step: spec if step == 1 else None


#: The model id each format's scenarios play under, chosen for today's rules: Claude Opus 5.5 (thinking always on,
#: bound to its prefix, no forced tool use), GPT-5.4 on Responses (reasoning items and `phase`), Gemini 3 (thought
#: signatures on parallel calls), Claude Opus 5.5 through OpenRouter (`reasoning_details`), Qwen 3 on Ollama
#: (`thinking`). The name a client sends is `model_for(fmt, scenario)`: "claude-opus-5-5-conform-parallel".
MODELS: dict[str, str] = {"openai-chat": "gpt-4.1", "openai-responses": "gpt-5.4", "anthropic": "claude-opus-5-5",
                          "gemini": "gemini-3-flash-preview", "openrouter": "anthropic/claude-opus-5.5",
                          "ollama": "qwen3"}

#: The ledger rules a group names, per format (what `Script.exercises` lists; `rules_of` reads them).
RULE_GROUPS: dict[str, dict[str, tuple[str, ...]]] = {
    "pairing": {
        "openai-chat": ("openai-chat.tool_calls_unanswered", "openai-chat.tool_without_call"),
        "openrouter": ("openai-chat.tool_calls_unanswered", "openai-chat.tool_without_call"),
        "openai-responses": ("openai-responses.call_without_output", "openai-responses.output_without_call"),
        "anthropic": ("anthropic.tool_use_without_result", "anthropic.result_without_tool_use",
                      "anthropic.tool_results_first"),
        "gemini": ("gemini.call_turn_order", "gemini.response_turn_order", "gemini.response_count",
                   "gemini.response_id_matches_call"),
        "ollama": (),
    },
    "order": {"ollama": ("ollama.results_out_of_order",)},
    "reasoning": {
        "openai-responses": ("openai-responses.reasoning_without_following_item",
                             "openai-responses.call_without_reasoning", "openai-responses.encrypted_content_invalid",
                             "openai-responses.reasoning_dropped", "openai-responses.phase_dropped"),
        "anthropic": ("anthropic.thinking_missing_in_open_cycle", "anthropic.prefix_bound_thinking"),
        "gemini": ("gemini.missing_thought_signature", "gemini.thought_signature_corrupted"),
        "openrouter": ("openrouter.reasoning_details_dropped",),
    },
    "tools": {"anthropic": ("anthropic.tool_list_changed",)},
    "rate-limit": {fmt: (f"{fmt}.fault_429",) for fmt in MODELS},
    "overloaded": {**{fmt: (f"{fmt}.fault_503",) for fmt in MODELS}, "anthropic": ("anthropic.fault_529",),
                   "openrouter": ("openrouter.provider_down",)},
    "spend-limit": {"openai-chat": ("openai-chat.spend_limit",), "openai-responses": ("openai-chat.spend_limit",),
                    "anthropic": ("anthropic.spend_limit",)},
    "forced-tool-use": {"anthropic": ("anthropic.forced_tool_use",), "openrouter": ("openrouter.forced_tool_use",)},
    "model-refuses-tools": {"openai-chat": ("openai-chat.responses_only_tools",),
                            "ollama": ("ollama.model_without_tools",)},
}
_EVERY = ("pairing", "reasoning", "tools")
_PARALLEL = (*_EVERY, "order")  # results of one turn's calls: their order matters where pairing is by position

#: Every scenario, by name (the order `python -m agentkit.conformance scenarios` lists them in).
SCRIPTS: dict[str, Script] = {script.name: script for script in (
    Script("one-call", "one call, then the answer", _steps(1), exercises=_EVERY),
    Script("parallel", "three calls in one turn (two tools when there are two), then the answer", _steps(1, 3),
           exercises=_PARALLEL),
    Script("sequential", "three steps of one call each, then the answer", _steps(3), exercises=_EVERY),
    Script("tool-error", "a good call and a broken one in one turn; the broken one again, corrected; the answer",
           _tool_error, exercises=_PARALLEL),
    Script("reasoning", "two calls in one turn, one more step, then the answer: reasoning state on every step",
           _reasoning, exercises=_PARALLEL),
    Script("stream", "three calls in one turn, then the answer: streamed when the client streams", _steps(1, 3),
           exercises=_PARALLEL),
    Script("rate-limit", "one call; the request with its result gets a 429 with retry-after once",
           _steps(1), _fault_at_first_result("429=300,flaky"), exercises=("pairing", "rate-limit")),
    Script("overloaded", "one call; the request with its result is refused once as overloaded (529, else 503)",
           _steps(1), _fault_at_first_result("529,flaky"), exercises=("pairing", "overloaded")),
    Script("spend-limit", "one call; the request with its result meets a spend limit (a final 429: never retry it)",
           _steps(1), _fault_at_first_result("spend"), exercises=("spend-limit",),
           formats={"openai-chat": None, "openai-responses": None, "anthropic": None}, ends_in_error=True),
    Script("long-history", "twelve steps of one call each, then the answer: a history the client may compact",
           _steps(12), exercises=_EVERY),
    Script("forced-tool-use", "one call, then the answer, on a model that refuses a forced tool_choice", _steps(1),
           exercises=("pairing", "forced-tool-use"), formats={"anthropic": None, "openrouter": None}),
    Script("model-refuses-tools", "a model whose server refuses a request with tools: the loop must stop with "
           "that error, not retry it", _steps(1), exercises=("model-refuses-tools",),
           formats={"openai-chat": "gpt-6.1-sol", "ollama": "llama2:13b"},
           answers_with={"openai-chat": ("openai-chat.responses_only_tools",),
                         "ollama": ("ollama.model_without_tools",)}, ends_in_error=True),
)}


def model_for(fmt: str, scenario: str) -> str | None:
    """The model name a client sends to play `scenario` in `fmt`, or None where it does not play there.

        model_for("anthropic", "parallel")               ->  "claude-opus-5-5-conform-parallel"
        model_for("ollama", "model-refuses-tools")       ->  "llama2:13b-conform-model-refuses-tools"
        model_for("gemini", "spend-limit")               ->  None (Gemini answers no spend limit of its own)
    """
    script = SCRIPTS[scenario]
    if script.formats is not None and fmt not in script.formats:
        return None
    base = (script.formats or {}).get(fmt) or MODELS[fmt]
    return f"{base}-{MARK}{scenario}"


def rules_of(fmt: str, scenario: str) -> tuple[str, ...]:
    """The ledger rules `scenario` exercises in `fmt` (a loop that plays it well passes each of them, or meets
    it "answered" where the scenario's model refuses on purpose)."""
    groups = SCRIPTS[scenario].exercises
    return tuple(dict.fromkeys(rule for group in groups for rule in RULE_GROUPS[group].get(fmt, ())))


def planned_refusals(fmt: str, model: str | None) -> tuple[str, ...]:
    """The rules a scenario's model refuses on purpose in `fmt` (`Script.answers_with`), for the app to log as
    "answered"; () for any other model."""
    scenario = scenario_of(model)
    return tuple((SCRIPTS[scenario].answers_with or {}).get(fmt, ())) if scenario else ()


def play(request: ChatRequest, scenario: str) -> Decision:
    """This step of the scenario: its calls, or the answer built from the results (as the reasoner words it)."""
    script = SCRIPTS[scenario]
    s = R.understand(request)
    if not s.tools:
        return R.decide_situation(s)
    forced = R.tool_choice_of(s.options, s.tools)[1]
    tools = tuple(t for t in s.tools if t.name == forced) or s.tools
    step = step_of(s)
    calls = script.steps(step, tools, s.text)
    if not calls:
        answer = R.decide_situation(replace(s, options=replace(s.options, tool_choice="none")))
        return replace(answer, notes=answer.notes + (f"conform-{scenario}: the answer, after step {step}",))
    if s.options.parallel_tool_calls is False:
        calls = calls[:1]
    return Decision(calls=tuple(calls), notes=(f"conform-{scenario}: step {step + 1}",))


def planned_fault(request: ChatRequest) -> str | None:
    """The failure this request meets on the scenario's schedule (a fault spec), or None."""
    scenario = scenario_of(request.model)
    if scenario is None or not request.tools:
        return None
    return SCRIPTS[scenario].fault(step_of(R.understand(request)))


#: What a reasoning model acts as if asked for, per format, when the request leaves it out.
REASONING_UNASKED: dict[str, dict] = {
    "openai-responses": {"reasoning": {"effort": "low"}},
    "openrouter": {"reasoning": {"enabled": True}},
    "ollama": {"think": True},
}


def unasked_fields(fmt: str, model: str) -> dict:
    """The request fields a scenario's model behaves as if the request had set (`REASONING_UNASKED`)."""
    return dict(REASONING_UNASKED.get(fmt, {})) if scenario_of(model) else {}

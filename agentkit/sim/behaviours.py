"""The simulated models: a model name picks a behaviour; `respond` turns a request into a ModelTurn.

    from agentkit.sim.behaviours import respond
    turn = respond(ChatRequest("sim-reasoner", (Message.user("東京の天気は？"),), tools))
    turn.tool_calls[0].arguments        # {'city': '東京'}

`sim-reasoner` (the default, and every ordinary name such as "gpt-4.1" or "claude-sonnet-4-5") reads
the request and the tools and decides like a small model — see the `reasoner` package. The other names are
behaviour presets for experiments: a model that never stops calling tools, one that repeats itself,
one that sends broken JSON first, one that obeys what tool results tell it (`gullible.py`), ... Each is a
few lines on top of the reasoner.

Responses are pure functions of the request: the same request gives the same turn, ids included (the
ids are hashes of the request; codecs add the provider's prefix such as "call_" or "toolu_"). Usage is
estimated at about one token per 4 bytes of UTF-8 (so about 0.75 per Japanese character).

Left out on purpose: transport behaviour (latency, 429/5xx, dropped streams) and provider quirks —
the server adds those around `respond` (faults.py, app.py), so every model here can be combined with
every fault.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from typing import Callable

from ..core.types import ModelTurn, ToolCall, ToolSpec, Usage
from ..providers.common import stable_id
from . import conform
from . import gullible
from . import reasoner as R
from .conform import planned_fault, planned_refusals, unasked_fields
from .reasoner import Decision, PlannedCall
from .wire.common import ChatRequest

__all__ = ["respond", "describe", "resolve", "is_known", "input_tokens", "UnknownModel", "KNOWN_MODELS", "PRESETS",
           "to_turn", "count_tokens", "MISTAKE_RATE", "MISTAKES", "make_mistake", "planned_fault", "planned_refusals",
           "unasked_fields"]


class UnknownModel(LookupError):
    """No simulated model has this name; the server answers with the provider's 404."""

    def __init__(self, name: str):
        super().__init__(f"unknown model {name!r}")
        self.name = name


Behaviour = Callable[[ChatRequest, str], Decision]   # (request, the text after the preset's prefix)


@dataclass(frozen=True)
class Preset:
    """A model-name prefix, what it does (one line, for /v1/models and the docs), and how."""

    prefix: str
    description: str
    behaviour: Behaviour


# ═════════════════════════════════════════ the behaviours ═══════════════════════════════════════════

def reasoner(request: ChatRequest, _: str) -> Decision:
    """Decides like a small model (see the reasoner package)."""
    return R.decide(request)


def always_tool(request: ChatRequest, _: str) -> Decision:
    """Calls a tool every turn — the named one in tool_choice, else the first offered (C8/C9)."""
    s = R.understand(request)
    _, forced = R.tool_choice_of(s.options, s.tools)
    tool = next((t for t in s.tools if t.name == forced), s.tools[0])
    return Decision(calls=(R.fresh_call(s.text, tool),), notes=("always-tool: never answers",))


def repeat(request: ChatRequest, _: str) -> Decision:
    """Repeats its first call (same name, same arguments) every turn, whatever comes back (C16)."""
    s = R.understand(request)
    earlier = [a.call for a in s.tried if a.call.name in {t.name for t in s.tools}]
    if earlier:
        return Decision(calls=(PlannedCall(earlier[0].name, earlier[0].arguments_object()),),
                        notes=("repeat: same call again",))
    forced = R.tool_choice_of(s.options, s.tools)[1]
    must_call = replace(s.options, tool_choice={"name": forced} if forced else "required")
    first = R.decide_situation(replace(s, options=must_call))
    return Decision(calls=first.calls[:1], notes=first.notes)


def first_attempt_goes_wrong(mistake: Callable[[PlannedCall, ToolSpec], PlannedCall]) -> Behaviour:
    """The reasoner, except that each tool's first call since the user's request has `mistake`
    applied. The error result then lets the reasoner send the correct call (C20, C23)."""
    def behaviour(request: ChatRequest, _: str) -> Decision:
        s = R.understand(request)
        decision = R.decide_situation(s)
        tried = {a.call.name for a in s.tried}
        specs = {t.name: t for t in s.tools}
        calls = tuple(c if c.name in tried else mistake(c, specs[c.name]) for c in decision.calls)
        return replace(decision, calls=calls)
    return behaviour


def bad_json(call: PlannedCall, tool: ToolSpec) -> PlannedCall:
    """Cut the JSON text short, as a model that stopped mid-arguments would: '{"city": "'."""
    text = json.dumps(call.arguments or {}, ensure_ascii=False)
    return PlannedCall(call.name, None, raw=text[:max(1, len(text) - max(1, len(text) // 3))])


def string_numbers(call: PlannedCall, tool: ToolSpec) -> PlannedCall:
    """Quote every number: {"seconds": 5} → {"seconds": "5"}."""
    args = {k: str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
            for k, v in (call.arguments or {}).items()}
    return PlannedCall(call.name, args)


def missing_field(call: PlannedCall, tool: ToolSpec) -> PlannedCall:
    """Leave out the first required field the call has."""
    required = [p.name for p in R.parameters(tool) if p.required and p.name in (call.arguments or {})]
    args = {k: v for k, v in (call.arguments or {}).items() if not required or k != required[0]}
    return PlannedCall(call.name, args)


MAX_PARALLEL = 256  # sim-parallel-1000000 would only build a huge response
INDEX_NAMES = ("index", "i", "n", "id", "idx", "task", "task_id", "job", "job_id", "label", "name", "item")


def parallel(request: ChatRequest, suffix: str) -> Decision:
    """N calls to one tool in the first turn, then a final answer; with parallel_tool_calls=False the
    same N calls go one per turn, so timing notebooks can compare the two."""
    n = min(_int(suffix, default=2), MAX_PARALLEL)
    s = R.understand(request)
    _, forced = R.tool_choice_of(s.options, s.tools)
    tool = next((t for t in s.tools if t.name == forced), s.tools[0])
    done = len(s.tried)
    if done >= n or (done and s.options.parallel_tool_calls is not False):
        return R.decide_situation(replace(s, options=replace(s.options, tool_choice="none")))
    calls = tuple(_indexed_call(s.text, tool, i, n) for i in range(n))
    return Decision(calls=calls[done:done + 1] if s.options.parallel_tool_calls is False else calls)


def _indexed_call(text: str, tool: ToolSpec, i: int, n: int) -> PlannedCall:
    """Call i of n: the request's arguments plus one parameter that makes the call distinct — an
    index-like parameter gets i, else the first integer gets i+1, else the first string "call-(i+1)",
    else the first number its requested value (or 0.2) + i/100 (0.2, 0.21, …: distinct but ≈ equal)."""
    args = R.fill_arguments(tool, R.read_facts(text))
    params = R.parameters(tool)
    pick = (next((p for p in params if p.name.lower() in INDEX_NAMES and p.type in ("integer", "string")),
                 None)
            or next((p for p in params if p.type == "integer"), None)
            or next((p for p in params if p.type == "string" and p.role not in ("enum", "const")), None)
            or next((p for p in params if p.type == "number"), None))
    if pick is None:
        return PlannedCall(tool.name, args)
    if pick.type == "number":
        base = args.get(pick.name) if isinstance(args.get(pick.name), (int, float)) else 0.2
        value: object = round(float(base) + i / 100, 4)
    elif pick.type == "integer":
        value = i if pick.name.lower() in INDEX_NAMES else i + 1
    else:
        value = str(i) if pick.name.lower() in INDEX_NAMES else f"call-{i + 1}"
    return PlannedCall(tool.name, {**args, pick.name: value})


def conformance(request: ChatRequest, scenario: str) -> Decision:
    """A conformance scenario's step (`sim.conform`): the calls of this step, or the answer (a name that
    plays no scenario, "conform-nothing", is a reasoner)."""
    return conform.play(request, scenario) if scenario in conform.SCRIPTS else R.decide(request)


#: What a noisy model gets wrong, and how often (per call, decided by a hash of seed and request).
MISTAKES = ("wrong_tool", "missing_field", "string_numbers", "bad_json", "extra_call")
MISTAKE_RATE = 0.25


def noisy(request: ChatRequest, suffix: str) -> Decision:
    """The reasoner with seeded mistakes: each call has a MISTAKE_RATE chance of one of MISTAKES.
    The dice are a hash of (seed, request), so a seed is a reproducible "model" for the benchmark."""
    seed = _seed(suffix)
    decision = R.decide(request)
    out: list[PlannedCall] = []
    for i, call in enumerate(decision.calls):
        roll = int(stable_id("noisy", seed, _fingerprint(request), i, length=8), 16)
        kind = MISTAKES[(roll // 100) % len(MISTAKES)] if roll % 100 < MISTAKE_RATE * 100 else None
        out += make_mistake(kind, call, request)
        if kind:
            decision = replace(decision, notes=decision.notes + (f"noisy: {kind} on call {i}",))
    return replace(decision, calls=tuple(out))


def make_mistake(kind: str | None, call: PlannedCall, request: ChatRequest) -> list[PlannedCall]:
    """One call in, the call(s) a careless model would send instead (never an unoffered tool)."""
    offered = R.usable_tools(request.tools)
    tools = {t.name: t for t in offered}
    others = [t for t in offered if t.name != call.name]
    forced = R.tool_choice_of(request.options, offered)[1]
    one_per_turn = request.options.parallel_tool_calls is False
    if kind == "wrong_tool" and others and forced is None:
        return [PlannedCall(others[0].name, call.arguments)]
    if kind == "missing_field":
        return [missing_field(call, tools[call.name])]
    if kind == "string_numbers":
        return [string_numbers(call, tools[call.name])]
    if kind == "bad_json":
        return [bad_json(call, tools[call.name])]
    if kind == "extra_call" and not one_per_turn and forced is None:
        extra = others[0] if others else tools[call.name]
        return [call, R.fresh_call(R.understand(request).text, extra)]
    return [call]


def _digits(text: str) -> str | None:
    """The digits a preset's suffix starts with ("8" in "sim-parallel-8"), or None.

    Kept as text: int() refuses more than 4,300 digits, so a model name's whim never reaches it whole."""
    m = re.match(r"-?(\d+)", text)
    return m.group(1) if m else None


def _int(text: str, default: int) -> int:
    """The number a model name ends in ("sim-parallel-8" -> 8); past 18 digits, the largest we take."""
    digits = _digits(text)
    if digits is None:
        return default
    return 10**18 if len(digits) > 18 else int(digits)


def _seed(text: str) -> int | str:
    """A noisy model's seed: its number, or for a very long one the digits themselves (still one seed)."""
    digits = _digits(text)
    if digits is None:
        return 0
    return int(digits) if len(digits) <= 18 else digits


# ═════════════════════════════════════════ names → behaviours ═══════════════════════════════════════

PRESETS: tuple[Preset, ...] = (
    Preset("sim-reasoner", "reads the request and the tools and decides like a small model: parallel calls "
           "for several asks, a final answer quoting the results, one corrected retry after an error",
           reasoner),
    Preset("sim-always-tool", "calls a tool every turn (the named tool_choice, else the first tool) and "
           "never answers while tools are offered — for step and call limits", always_tool),
    Preset("sim-repeat", "repeats its first call (same name, same arguments) every turn — for repeated-call "
           "detection", repeat),
    Preset("sim-bad-json", "like sim-reasoner, but each tool's first call has truncated JSON arguments; "
           "sends valid JSON after the bad_json error", first_attempt_goes_wrong(bad_json)),
    Preset("sim-string-numbers", "like sim-reasoner, but the first call sends numbers as strings (\"5\"); "
           "corrects them after the error", first_attempt_goes_wrong(string_numbers)),
    Preset("sim-missing-field", "like sim-reasoner, but the first call leaves out a required field; "
           "adds it after the error", first_attempt_goes_wrong(missing_field)),
    Preset("sim-parallel-", "{n} parallel calls to the first tool (distinct arguments) in the first turn, "
           "then a final answer; one per turn when parallel_tool_calls is false (any N: sim-parallel-N)",
           parallel),
    Preset("sim-noisy-", "sim-reasoner with reproducible mistakes (seed {n}) on 25% of calls: wrong tool, "
           "missing field, string numbers, bad JSON, extra call (any seed: sim-noisy-SEED)", noisy),
    Preset("conform-", "a conformance scenario ({n}: " + ", ".join(conform.SCRIPTS) + "), played on the tools "
           "sent, under the rules of any model id before it (claude-opus-5-5-conform-parallel)", conformance),
    Preset("sim-gullible", "the kit's model of a fooled model (by construction): obeys instructions it reads in "
           "tool results, one call per turn, answers as they tell it; text inside an <untrusted-data> fence is "
           "data to it", gullible.behaviour(respects_fences=True)),
    Preset("sim-gullible-ignores-fences", "sim-gullible that reads fenced text like any other: a fence means "
           "nothing to it", gullible.behaviour(respects_fences=False)),
)

GPT_6 = ("sim-reasoner; the server refuses tools on Chat Completions (Responses API only); on Responses it takes "
         "tool_search")
PHASE_MODEL = ("sim-reasoner; on Responses it marks each assistant message's phase (a history without it makes "
               "it stop early) and takes tool_search with defer_loading tools")
NO_TOOLS_OPENROUTER = "sim-reasoner; on OpenRouter no endpoint takes tools: a request with tools gets the 404"
CLAUDE_5X = ("sim-reasoner; on the Anthropic format it always thinks (thinking disabled or a budget: 400) and "
             "answers tool_choice any/tool with a 400")
GEMINI_4 = ("sim-reasoner; on the Gemini format (and Vertex AI's paths) it signs its calls, and a replayed call "
            "without its thought signature is a 400, as on Gemini 3")
NO_TOOLS_OLLAMA = ("sim-reasoner without tool support: on the Ollama format, a request with tools gets Ollama's 400 "
            "\"… does not support tools\" (every tag of llama2 and gemma3)")

#: Names the docs and the server's quirks use; they behave as sim-reasoner here (the server adds quirks).
QUIRK_MODELS: dict[str, str] = {
    "gpt-6-astra": GPT_6,
    "gpt-6.1-sol": GPT_6,
    "gpt-6.1-terra": GPT_6,
    "claude-opus-5-5": CLAUDE_5X + "; kept thinking is bound to its prefix",
    "claude-sonnet-5-5": CLAUDE_5X + " (between_tools allowed); kept thinking is bound to its prefix",
    "claude-fable-5-1": CLAUDE_5X + "; kept thinking is bound to its prefix",
    "claude-mythos-5-1": CLAUDE_5X,
    "gemini-4-argon": GEMINI_4,
    "gemini-4-carbon": GEMINI_4,
    "llama2:13b": NO_TOOLS_OLLAMA,
    "gemma3:4b": NO_TOOLS_OLLAMA,
    "gpt-5.4": PHASE_MODEL,
    "gpt-5.5": PHASE_MODEL,
    "google/gemma-3-27b-it:free": NO_TOOLS_OPENROUTER,
}

#: Familiar names the SDK tests and notebooks use; plain reasoners.
FAMILIAR_MODELS = ("gpt-4.1", "claude-sonnet-4-5", "gemini-2.5-flash", "gemini-3-flash-preview")
EXAMPLE_SUFFIX = {"sim-parallel-": "8", "sim-noisy-": "42", "conform-": "one-call"}

#: name → one line, for GET /v1/models and the docs. Any other sensible name is a reasoner too.
KNOWN_MODELS: dict[str, str] = {
    **{p.prefix + EXAMPLE_SUFFIX.get(p.prefix, ""): p.description.format(n=EXAMPLE_SUFFIX.get(p.prefix))
       for p in PRESETS},
    **QUIRK_MODELS,
    **{name: "sim-reasoner under a familiar name" for name in FAMILIAR_MODELS},
}


def resolve(model: str) -> tuple[Preset, str]:
    """The preset for a model name and the text after its prefix ("sim-parallel-8" → parallel, "8").

    Vendor prefixes are ignored ("openai/gpt-4.1", "models/sim-repeat"); names that match no preset are
    reasoners, except empty names and names starting with "no-such-", which are unknown."""
    if not isinstance(model, str):
        raise UnknownModel(str(model))
    short = model.rsplit("/", 1)[-1].strip()
    if not short or short.startswith("no-such-"):
        raise UnknownModel(model)
    scenario = conform.scenario_of(model)
    if scenario is not None:  # "<any model id>-conform-<scenario>": the scenario decides
        return next(p for p in PRESETS if p.prefix == conform.MARK), scenario
    for preset in sorted(PRESETS, key=lambda p: len(p.prefix), reverse=True):
        if short.startswith(preset.prefix) or short == preset.prefix.rstrip("-"):
            return preset, short[len(preset.prefix):]
    return PRESETS[0], ""


def is_known(model: str) -> bool:
    """Does this name choose a model (a preset, or a reasoner under an ordinary name)? Faults aside."""
    try:
        resolve(model)
    except UnknownModel:
        return False
    return True


def describe(model: str) -> str:
    """One line about what this model name does, e.g. describe("sim-parallel-4")."""
    preset, suffix = resolve(model)
    short = model.rsplit("/", 1)[-1]
    if short in QUIRK_MODELS:
        return QUIRK_MODELS[short]
    if preset is PRESETS[0] and not short.startswith("sim-reasoner"):
        return f"behaves as sim-reasoner: {preset.description}"
    if preset.prefix == conform.MARK:
        return f"conformance scenario {suffix}: {conform.SCRIPTS[suffix].description}"
    # Only the parallel and noisy descriptions name their {n}; the others ignore it.
    return preset.description.format(n=_seed(suffix) if preset.prefix == "sim-noisy-" else _int(suffix, default=2))


# ═════════════════════════════════════════ the entry point ══════════════════════════════════════════

def respond(request: ChatRequest) -> ModelTurn:
    """The simulated model's answer to one request (pure: same request → same turn, ids included).

    With no tools offered, or tool_choice "none", every model answers in text, as the APIs guarantee.
    An allowed-tools choice (`{"allowed": [names], "mode": ...}`) narrows the tools the model sees to
    that subset, in that mode; the input tokens still count every tool sent (the API bills them all)."""
    preset, suffix = resolve(request.model)
    seen = within_allowed_tools(with_deferred_tools(request))
    tools = R.usable_tools(seen.tools)
    if not tools or R.tool_choice_of(seen.options, tools)[0] == "none":
        decision = R.decide(seen)
    else:
        decision = preset.behaviour(seen, suffix)
    if decision.calls and EARLY_STOP.intersection(request.degradations) and R.understand(seen).turns:
        decision = stopped_early(seen, decision)
    elif FORGETS.intersection(request.degradations):
        decision = repeated_once(seen, decision)
    return to_turn(decision, request)


#: Degradations (fidelity-ledger ids, `ChatRequest.degradations`) whose reported effect is early stopping:
#: a history without the assistant messages' phase (OpenRouter's GPT-5.4 migration guide).
EARLY_STOP = frozenset({"openai-responses.phase_dropped"})


def stopped_early(request: ChatRequest, decision: Decision) -> Decision:
    """The kit's model of a reported effect, not a provider's behaviour: a model whose earlier commentary
    came back without its phase takes it for its final answer, and answers now with the results it has
    instead of making the calls it planned."""
    answer = R.decide(replace(request, options=replace(request.options, tool_choice="none")))
    return replace(answer, notes=decision.notes + ("phase dropped: stops early (the kit's model of a reported "
                                                   f"effect), skipping {', '.join(c.name for c in decision.calls)}",))


#: Degradations whose reported effect is a model that lost its earlier reasoning ("forgetfulness, repetition,
#: and odd tool choices", Anthropic's postmortem of April 23 on old thinking cleared): thinking, reasoning
#: items, thought signatures or reasoning details of earlier steps left out of the history.
FORGETS = frozenset({"anthropic.earlier_thinking_dropped", "openai-responses.reasoning_dropped",
                     "gemini.earlier_signature_dropped", "openrouter.reasoning_details_dropped"})


def repeated_once(request: ChatRequest, decision: Decision) -> Decision:
    """The kit's model of a reported effect, not a provider's behaviour: a model whose earlier reasoning was
    left out of the history has lost track of what it did, and makes its last call again (once: a call
    already repeated is not repeated a third time), before going on as it planned."""
    calls = [m.tool_calls for m in request.messages if m.role == "assistant" and m.tool_calls]
    if not calls:
        return decision
    last = calls[-1][0]
    if len(calls) > 1 and calls[-2][0].name == last.name and calls[-2][0].arguments == last.arguments:
        return decision
    again = PlannedCall(last.name, last.arguments_object() if last.arguments_object() is not None else {})
    return Decision(calls=(again,), notes=decision.notes + ("earlier reasoning dropped: repeats its last call "
                                                            f"{last.name} (the kit's model of a reported effect)",))


def with_deferred_tools(request: ChatRequest) -> ChatRequest:
    """The request with its deferred tools (Responses tool search: `extras["deferred_tools"]`) offered too.

    A model sees a deferred function's name and description and searches when it needs one; the server
    runs the search and the call follows in the same answer (`sim.wire.openai_responses.search_items`), so
    deciding with the whole tool is the same decision. What deferral changes is the input: the schemas are
    not counted (`input_tokens`)."""
    deferred = request.extras.get("deferred_tools")
    if not deferred:
        return request
    return replace(request, tools=request.tools + tuple(ToolSpec.from_dict(d) for d in deferred))


def within_allowed_tools(request: ChatRequest) -> ChatRequest:
    """The request as the model sees it under an allowed-tools choice: only the listed tools, and the
    choice's mode ("auto" or "required") as its tool_choice. Any other request is returned as it is."""
    choice = request.options.tool_choice
    if not (isinstance(choice, dict) and isinstance(choice.get("allowed"), (list, tuple))):
        return request
    allowed = set(choice["allowed"])
    mode = choice.get("mode") if choice.get("mode") in ("auto", "required") else "auto"
    return replace(request, tools=tuple(t for t in request.tools if t.name in allowed),
                   options=replace(request.options, tool_choice=mode))


def to_turn(decision: Decision, request: ChatRequest) -> ModelTurn:
    """A Decision as a provider-neutral ModelTurn: ids from a hash of the request, estimated usage. Why a
    call lacks a required argument (`Decision.left_out`) rides in `raw["left_out"]`, for the server to say
    (its `x-sim-left-out` header and log line); no wire format sends `raw`."""
    # The conversation as plain data, once: the ids and the usage both read it (a long one costs most here)
    messages, tools = [m.to_dict() for m in request.messages], [t.to_dict() for t in request.tools]
    fingerprint = _fingerprint(request, messages, tools)
    calls = tuple(_tool_call(call, stable_id(fingerprint, "call", i, call.name))
                  for i, call in enumerate(decision.calls))
    text = None if calls else (decision.text or "")
    out = count_tokens(text or "") + sum(count_tokens(c.name + c.arguments_json()) for c in calls)
    left_out = list(decision.left_out) if calls and decision.left_out else None
    return ModelTurn(text=text, tool_calls=calls, stop="tool_calls" if calls else "stop",
                     usage=Usage(input_tokens(request, messages, tools), max(1, out)), model=request.model,
                     id=stable_id(fingerprint, "turn"), raw={"left_out": left_out} if left_out else None)


def _tool_call(call: PlannedCall, call_id: str) -> ToolCall:
    if call.raw is not None:  # the model "wrote" text that is not a JSON object
        return ToolCall(call_id, call.name, call.raw, None)
    return ToolCall(call_id, call.name, dict(call.arguments or {}), dict(call.arguments or {}))


def _fingerprint(request: ChatRequest, messages: list[dict] | None = None, tools: list[dict] | None = None) -> str:
    """What makes two requests the same: model, messages, tools and options (streaming aside, so a
    streamed and a plain request get the same ids; reasoning state aside too, which no model here reads
    and whose signatures change with the signing key, so the same conversation gets the same ids under
    every key). `messages` and `tools` are the request's as plain data, when the caller has them."""
    options = {k: v for k, v in request.options.to_dict().items() if k != "stream"}
    messages = messages if messages is not None else [m.to_dict() for m in request.messages]
    tools = tools if tools is not None else [t.to_dict() for t in request.tools]
    return stable_id(request.model, [{k: v for k, v in m.items() if k != "reasoning"} for m in messages],
                     tools, options, length=32)


def count_tokens(text: str) -> int:
    """About one token per 4 bytes of UTF-8: ~4 English characters, ~1.3 Japanese characters."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def input_tokens(request: ChatRequest, messages: list[dict] | None = None,
                 tools: list[dict] | None = None) -> int:
    """The whole input counts, tool definitions included: they are re-sent (and paid for) every turn.
    A tool the model cannot see yet is not in `request.tools`: Anthropic's deferred tools are not counted
    until a tool search loads them; OpenAI's (`extras["deferred_tools"]`, the Responses codec) count their
    name and description only. The token-counting route answers this number, so a count equals the usage.
    `messages` and `tools`, when given, are the request's own as plain data (`to_turn` has them already)."""
    messages = messages if messages is not None else [m.to_dict() for m in request.messages]
    tools = list(tools) if tools is not None else [t.to_dict() for t in request.tools]
    tools += [{"name": d.get("name"), "description": d.get("description")}
              for d in request.extras.get("deferred_tools") or () if isinstance(d, dict)]
    return max(1, count_tokens(json.dumps([messages, tools], ensure_ascii=False, default=str)))

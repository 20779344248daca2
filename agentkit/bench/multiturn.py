"""BFCL v4 multi-turn, run by agentkit's loop on any wire format, scored by BFCL's multi-turn rules.

    from agentkit.bench import multiturn
    cases = multiturn.load("multi_turn_base")             # 200 MultiTurnCase
    run = await multiturn.play(cases[0], model)            # the whole case, turn by turn, through arun()
    verdict = multiturn.score(cases[0], run.trajectory)    # Verdict: ok, or wrong_state, missing_result, ...

A case is a conversation of user turns over BFCL's stateful back-ends (a file system, a trading bot,
travel booking, a vehicle, messaging, posting, tickets, maths). The back-ends are BFCL's own classes,
imported from the cached bfcl-eval wheel at run time (`bfcl.import_from_wheel`; nothing of BFCL's code
is in this repository) and set up from the case's initial configuration. Their methods become agentkit
Tools (BFCL's function docs, in the request style of the wire format, see bfcl.py) whose calls run
against the case's own instances.

How a case is played, as BFCL's generation (`base_handler.inference_multi_turn_FC`) plays it:
  - the user turns in order, in one conversation (an agentkit Thread); each turn is one `arun`;
  - within a turn the loop runs until the model answers without a tool call, at most BFCL's step cap
    (MAXIMUM_STEP_LIMIT = 20 steps with calls, so 21 model calls): a turn that reaches it is the last one
    played, and it is kept, as BFCL appends the capped turn; the case fails only when turns are left
    unplayed (BFCL: "force_terminated"), so a cap reached in the last turn is judged like any turn;
  - every request carries BFCL's generation settings (`bfcl.GENERATION`, temperature 0.001) unless the
    caller gives others (`generation=`; the runner passes the run's own);
  - a `miss_func` case's held-back functions join the tool list at the turn BFCL names, whose user
    message is BFCL's "I have updated some more functions you can choose from. What about now?";
  - `long_context` cases load the back-ends' large states (BFCL's long_context flag);
  - calls run one after another, in the model's order (sequential executor), as BFCL's eval does.

How it is scored, as BFCL's checker (`multi_turn_checker`) does it: the model's calls of every step
are executed again on fresh back-ends, turn by turn, beside the ground truth's calls on others, and
after every turn whose ground truth has calls:
  stopped_early   the model made no call in a turn where the ground truth has some  (empty_turn_model_response)
  wrong_state     a back-end's public attributes differ from the ground truth's     (instance_state_mismatch)
  missing_result  a result of the ground truth's calls this turn is not among the   (execution_response_mismatch)
                  results of the model's calls so far (as a multiset, any order)
  step_cap        a turn before the last reached the step cap: turns left unplayed  (force_terminated)
  provider_error  a model call failed                                               (inference error)
A turn whose ground truth is empty (miss_func and miss_param turns, where the right move is to ask)
is not judged by BFCL 2026.3.23: its checker imports `multi_turn_irrelevance_checker` but never calls
it. So by default neither does this one; every record counts the calls made on such turns
(`irrelevance_calls`), and `score(..., irrelevance=True)` fails them with `extra_turn`.

Where agentkit's loop differs from BFCL's harness (the loop is the lesson, so these are kept):
the model reads each result in agentkit's envelope ({"toolCallId", "name", "ok", "result"}) with BFCL's
result inside (a dict result as the object, other results as BFCL's text), not BFCL's bare text; a
call the gates refuse (unknown tool, arguments not matching the schema) is answered with an error
envelope and never reaches the back-end, where BFCL would run it and answer with Python's error text;
a step whose arguments are not JSON is answered the same way, where BFCL's harness ends the turn; blank
argument text is read as {} by the gates and runs. The trajectory stores each call's arguments as BFCL's
decoding reads them (`bfcl.arguments_as_sent`: the object, or the text when it is not a JSON object), so
scoring re-executes every call BFCL would (refused or not) and drops the steps BFCL drops (blank text
included: `json.loads("")` fails there), and a stored trajectory can be scored again as it was sent.
`excluded_function` (present in 18 cases' data) is not read by BFCL's code, so it is not read here.

Left out on purpose: BFCL's prompt-mode handlers, memory and web-search back-ends, and Anthropic's
prompt caching marks on the last tool (a cost feature of BFCL's Claude handler, not part of the doc).
"""

from __future__ import annotations

import ast
import copy
import datetime
import functools
import inspect
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import ModelCallError, RunError
from ..core.drive import arun
from ..core.runs import Run, StopReason, Thread
from ..core.policies import Limits
from ..core.tools import Tool, ToolContext
from ..core.types import Message, Usage
from . import bfcl
from .oracle import CURRENT_CASE, turn_key
from .scoring import Verdict

CATEGORIES = bfcl.MULTI_TURN_CATEGORIES
#: BFCL's MAXIMUM_STEP_LIMIT: steps with calls in one turn before the case is forced to quit.
MAXIMUM_STEP_LIMIT = 20
#: BFCL's DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC: the user message of a turn that adds functions.
ADDED_FUNCTIONS_PROMPT = "I have updated some more functions you can choose from. What about now?"
#: Where BFCL keeps each back-end class (its CLASS_FILE_PATH_MAPPING), and the one without state.
BACKEND_PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
BACKEND_MODULES = {"GorillaFileSystem": "gorilla_file_system", "MathAPI": "math_api", "MessageAPI": "message_api",
                   "TwitterAPI": "posting_api", "TicketAPI": "ticket_api", "TradingBot": "trading_bot",
                   "TravelAPI": "travel_booking", "VehicleControlAPI": "vehicle_control"}
STATELESS = ("MathAPI",)
#: Method names BFCL's executor refuses to evaluate, and its words.
FORBIDDEN = ("kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run")
_CONTEXT = "bfcl_context_"  # the hidden ToolContext parameter of every back-end Tool


# -- the cases ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MultiTurnCase:
    """One BFCL multi-turn entry: user turns, back-ends and their start state, the functions offered from
    the first turn and those held back until a later one, and the ground truth's calls per turn."""

    id: str
    category: str
    turns: tuple[tuple[dict, ...], ...]
    initial_config: dict = field(repr=False)
    involved_classes: tuple[str, ...]
    functions: tuple[dict, ...] = field(repr=False)
    missed: dict = field(repr=False)  # turn index -> the function docs added at that turn
    ground_truth: tuple[tuple[str, ...], ...] = field(repr=False)

    @property
    def long_context(self) -> bool:
        return "long_context" in self.category

    def functions_at(self, turn: int) -> list[dict]:
        """The function docs offered in `turn`: the first turn's, plus those added up to it, in BFCL's order."""
        offered = list(self.functions)
        for index in sorted(self.missed):
            if index <= turn:
                offered += self.missed[index]
        return offered

    def user_messages(self, turn: int) -> list[Message]:
        """The messages that open `turn` (a turn that adds functions has BFCL's own sentence)."""
        if turn in self.missed:
            return [Message.user(ADDED_FUNCTIONS_PROMPT)]
        return [Message(m["role"], m["content"]) for m in self.turns[turn]]

    # the oracle's view: which calls answer which request (see Oracle.add)
    def oracle_turns(self) -> dict[str, list[tuple[str, dict]]]:
        said: list[str] = []
        out = {}
        for turn, truth in enumerate(self.ground_truth):
            said += [m.content for m in self.user_messages(turn) if m.role == "user"]
            names = [bfcl.provider_name(f["name"]) for f in self.functions_at(turn)]
            out[turn_key(said, names)] = [named_call(self.involved_classes, call) for call in truth]
        return out


def load(category: str, where: Path | None = None) -> list[MultiTurnCase]:
    """Every case of one multi-turn category, in file order."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown BFCL multi-turn category {category!r}; choose one of: {', '.join(CATEGORIES)}")
    folder = where or bfcl.cache_dir()
    if not bfcl.is_fetched(folder):
        raise bfcl.DataNotFetched(f"the BFCL data is not in {folder} yet: run `{bfcl.FETCH_COMMAND}` (once)")
    return list(_load(category, folder))


@functools.lru_cache(maxsize=None)
def _load(category: str, folder: Path) -> tuple[MultiTurnCase, ...]:
    entries = bfcl._read_lines(folder / f"BFCL_v4_{category}.json")
    answers = {a["id"]: a["ground_truth"] for a in bfcl._read_lines(folder / "possible_answer" /
                                                                     f"BFCL_v4_{category}.json")}
    cases = []
    for entry in entries:
        docs = [doc for name in entry["involved_classes"] for doc in _func_docs(folder, name)]
        missed: dict[int, tuple[dict, ...]] = {}
        for turn, names in (entry.get("missed_function") or {}).items():  # BFCL moves them out of the list
            held = []
            for name in names:
                index = next(i for i, doc in enumerate(docs) if doc["name"] == name)
                held.append(docs.pop(index))
            missed[int(turn)] = tuple(held)
        truth = answers[entry["id"]]
        if len(truth) != len(entry["question"]):
            raise ValueError(f"BFCL {entry['id']}: {len(entry['question'])} turns, {len(truth)} answers")
        cases.append(MultiTurnCase(entry["id"], category, tuple(tuple(t) for t in entry["question"]),
                                   entry.get("initial_config") or {}, tuple(entry["involved_classes"]),
                                   tuple(docs), missed, tuple(tuple(t) for t in truth)))
    return tuple(cases)


@functools.lru_cache(maxsize=None)
def _func_docs(folder: Path, class_name: str) -> tuple[dict, ...]:
    return tuple(bfcl._read_lines(folder / "multi_turn_func_doc" / bfcl.FUNC_DOC_FILES[class_name]))


# -- the back-ends ----------------------------------------------------------------------------------------------

def backend_class(class_name: str) -> type:
    """One of BFCL's back-end classes, from the cached wheel."""
    module = bfcl.import_from_wheel(f"{BACKEND_PACKAGE}.{BACKEND_MODULES[class_name]}")
    return getattr(module, class_name)


class Backends:
    """A case's back-end instances over its initial configuration, and BFCL's way of running a call."""

    def __init__(self, case: MultiTurnCase):
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}
        for class_name in case.involved_classes:
            instance = backend_class(class_name)()
            if class_name not in STATELESS:
                instance._load_scenario(copy.deepcopy(case.initial_config.get(class_name, {})),
                                        long_context=case.long_context)
            self.instances[class_name] = instance
            for name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not name.startswith("_"):
                    self.methods[name] = method  # a later class's method of the same name wins, as in BFCL

    def execute(self, name: str, arguments: Any, positional: tuple = ()) -> str:
        """Run one call; the result as BFCL's executor writes it (errors too: BFCL's words)."""
        if name in FORBIDDEN:
            return f"Error during execution: Function call {name} is not allowed."
        method = self.methods.get(name)
        if method is None:
            return f"Error during execution: name {name!r} is not defined"
        try:  # fresh copies, as BFCL's eval of the call's text makes: a back-end keeps and changes what it is
            # given (post_tweet stores its `mentions` list, mention() appends to it), which must not reach
            # the conversation's or the trajectory's copy of the arguments
            return result_text(method(*copy.deepcopy(positional), **copy.deepcopy(arguments)))
        except Exception as exc:  # noqa: BLE001 — BFCL answers every failure with its text
            return f"Error during execution: {exc}"

    def states(self) -> dict[str, dict]:
        """Every stateful back-end's public attributes (what BFCL's state check compares)."""
        return {name: public_attributes(instance) for name, instance in self.instances.items()
                if name not in STATELESS}


def result_text(value: Any) -> str:
    """BFCL's text for a return value: a string as it is, a dict as JSON (else str), anything else str()."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def public_attributes(instance: Any) -> dict:
    return {key: value for key, value in vars(instance).items() if not key.startswith("_")}


def parse_call(text: str) -> tuple[str, tuple, dict]:
    """A ground-truth call as BFCL writes it, "mv(source='a', destination='b')" -> (name, args, kwargs)."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a function call: {text!r}")
    return (node.func.id, tuple(ast.literal_eval(a) for a in node.args),
            {k.arg: ast.literal_eval(k.value) for k in node.keywords})


def named_call(involved_classes: tuple[str, ...], text: str) -> tuple[str, dict]:
    """A ground-truth call with every argument named ("sort('a.pdf')" -> ("sort", {"file_name": "a.pdf"}))."""
    name, args, kwargs = parse_call(text)
    if not args:
        return name, kwargs
    owner = next(backend_class(c) for c in reversed(involved_classes) if hasattr(backend_class(c), name))
    bound = inspect.signature(getattr(owner, name)).bind(None, *args, **kwargs)
    return name, {k: v for k, v in list(bound.arguments.items())[1:]}


# -- the tools --------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4096)
def _tool(doc_json: str, style: str, language_hint: bool) -> Tool:
    """One function doc as a Tool, built once per doc and style and shared by every case: it runs the call
    on the Backends its run carries in state["bfcl_backends"]."""
    spec = bfcl.to_tool_spec(json.loads(doc_json), style, language_hint=language_hint)
    name = spec.name

    def call_backend(**arguments: Any) -> Any:
        context: ToolContext = arguments.pop(_CONTEXT)
        text = context.state["bfcl_backends"].execute(name, arguments)
        # BFCL's text of a dict result is its JSON: the envelope carries it as the object it is, not as a
        # string of escaped JSON (scoring re-runs the calls and compares BFCL's texts)
        if text.startswith("{"):
            try:
                return json.loads(text)
            except ValueError:
                pass
        return text

    return Tool.from_schema(spec.name, spec.description, spec.parameters, call_backend, context_param=_CONTEXT)


def tools_for(case: MultiTurnCase, turn: int, format: str | None = None) -> list[Tool]:
    """The Tools offered in `turn`, BFCL's request in `format`'s style. As in BFCL, only the functions of
    the first turn carry the language hint: BFCL hints the docs after moving the held-back ones out."""
    style = bfcl.style_of(format)
    first = len(case.functions)
    return [_tool(json.dumps(doc), style, i < first) for i, doc in enumerate(case.functions_at(turn))]


# -- playing a case ---------------------------------------------------------------------------------------------

@dataclass
class MultiTurnRun(Run):
    """The whole case as one Run (every turn's messages, steps and tokens), plus its trajectory."""

    trajectory: dict = field(default_factory=dict)


async def play(case: MultiTurnCase, model: Any, *, format: str | None = None, stream: bool = False,
               generation: dict | None = bfcl.GENERATION) -> MultiTurnRun:
    """Play every turn of `case` through `agentkit.arun`, each request with `generation` (BFCL's settings by
    default; None: the model's own); raises ModelCallError (carrying the partial run) when a model call fails
    after HTTPModel's retries."""
    format = format or getattr(model, "format", None)
    model = bfcl.generating(model, generation)
    token = CURRENT_CASE.set(case.id)  # an oracle answers by case (two categories share questions)
    try:
        return await _play(case, model, format, stream)
    finally:
        CURRENT_CASE.reset(token)


async def _play(case: MultiTurnCase, model: Any, format: str | None, stream: bool) -> MultiTurnRun:
    backends = Backends(case)
    thread = Thread(state={"bfcl_backends": backends})
    whole = MultiTurnRun(messages=[])
    turns: list[list[dict]] = []
    limits = Limits(max_steps=MAXIMUM_STEP_LIMIT + 1)
    for turn in range(len(case.turns)):
        tools = tools_for(case, turn, format)
        try:
            run = await arun(model, case.user_messages(turn), tools=tools, thread=thread, limits=limits,
                             stream=stream, executor="sequential")
        except RunError as exc:
            if exc.run is not None:
                _add_turn(whole, turns, exc.run)
            _finish(whole, case, turns, backends, stop=StopReason.ERROR)
            raise ModelCallError(str(exc), whole) from (exc.__cause__ or exc)
        _add_turn(whole, turns, run)
        if run.stop_reason == StopReason.MAX_STEPS:  # BFCL forces the case to quit
            break
    return _finish(whole, case, turns, backends, stop=whole.stop_reason)


def _add_turn(whole: MultiTurnRun, turns: list, run: Run) -> None:
    whole.messages.extend(run.new_messages)
    whole.steps += run.steps
    whole.tool_call_count += run.tool_call_count
    whole.tool_runs += run.tool_runs
    whole.invalid_calls += run.invalid_calls
    whole.usage = whole.usage + (run.usage or Usage())
    whole.results.extend(run.results)
    whole.stop_reason, whole.output, whole.limit = run.stop_reason, run.output, run.limit
    turns.append(steps_of(run.new_messages))


def steps_of(messages: list[Message]) -> list[dict]:
    """One turn's steps: each model answer's calls ([name, arguments as BFCL reads them: the object, else the
    text as sent]) and the results the model read, in order."""
    steps: list[dict] = []
    for message in messages:
        if message.role == "assistant":
            steps.append({"calls": [[c.name, bfcl.arguments_as_sent(c)] for c in message.tool_calls],
                          "results": [], "text": message.content})
        elif message.role == "tool" and steps:
            steps[-1]["results"].append(message.content)
    return steps


def _finish(whole: MultiTurnRun, case: MultiTurnCase, turns: list, backends: Backends, stop: Any) -> MultiTurnRun:
    whole.stop_reason = stop
    whole.trajectory = {"case": case.id, "turns": turns, "step_cap": stop == StopReason.MAX_STEPS,
                        "error": stop == StopReason.ERROR, "states": plain(backends.states())}
    return whole


def plain(value: Any, _path: frozenset = frozenset()) -> Any:
    """A back-end's state as JSON data (objects as their public attributes), for the stored trajectory. An
    object met again on its own path (a directory's parent) is written as "<parent>"."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if id(value) in _path:
        return "<parent>"
    path = _path | {id(value)}
    if isinstance(value, dict):
        return {str(k): plain(v, path) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [plain(v, path) for v in (sorted(value, key=str) if isinstance(value, set) else value)]
    if hasattr(value, "__dict__"):
        return {k: plain(v, path) for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)


# -- scoring -----------------------------------------------------------------------------------------------------

def ground_truth_trajectory(case: MultiTurnCase) -> dict:
    """The trajectory the oracle plays, without a model: each turn's ground-truth calls in one step (every
    argument named), then an answer. `score` passes it (the oracle's 100 %); perturb it to see a label."""
    turns = []
    for truth in case.ground_truth:
        calls = [list(named_call(case.involved_classes, call)) for call in truth]
        turns.append(([{"calls": calls, "results": [], "text": None}] if calls else [])
                     + [{"calls": [], "results": [], "text": "Done."}])
    return {"case": case.id, "turns": turns, "step_cap": False, "error": False}


def decoded_steps(turn: list[dict]) -> list[list[tuple[str, dict]]]:
    """A turn's steps as BFCL's checker decodes them: a step with no call, or with any call whose arguments
    are not a JSON object, is left out whole."""
    out = []
    for step in turn:
        calls = []
        for name, arguments in step["calls"]:
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    calls = None
                    break
            if not isinstance(arguments, dict):
                calls = None
                break
            calls.append((name, arguments))
        if calls:
            out.append(calls)
    return out


def score(case: MultiTurnCase, trajectory: dict, *, irrelevance: bool = False) -> Verdict:
    """BFCL's multi-turn verdict on a stored trajectory (see the module docstring for the labels)."""
    if trajectory.get("error"):
        return Verdict.failed("provider_error", "a model call failed; the case did not finish", rules="bfcl")
    if len(trajectory["turns"]) != len(case.ground_truth):  # BFCL: force_terminated (a cap in the last turn
        turn = len(trajectory["turns"]) - 1                     # is judged like any other turn, below)
        return Verdict.failed("step_cap", f"turn {turn} reached BFCL's cap of {MAXIMUM_STEP_LIMIT} steps with "
                                          f"calls; the case was forced to quit with {len(case.ground_truth) - turn - 1}"
                                          " turn(s) unplayed", rules="bfcl")
    model, truth = Backends(case), Backends(case)
    model_results: list[str] = []
    for turn, expected in enumerate(case.ground_truth):
        steps = decoded_steps(trajectory["turns"][turn])
        model_results += [model.execute(name, arguments) for step in steps for name, arguments in step]
        truth_results = [truth.execute(name, kwargs, args) for name, args, kwargs in map(parse_call, expected)]
        if not expected:
            if irrelevance and steps:
                return Verdict.failed("extra_turn", f"turn {turn}: {sum(map(len, steps))} call(s) where the "
                                                    "ground truth has none", rules="bfcl+irrelevance")
            continue
        if not steps:
            return Verdict.failed("stopped_early", f"turn {turn}: no call, the ground truth has {len(expected)}",
                                  rules="bfcl")
        for class_name, instance in truth.instances.items():
            differences = [key for key, value in public_attributes(instance).items()
                           if getattr(model.instances[class_name], key) != value]
            if differences:
                return Verdict.failed("wrong_state", f"turn {turn}: {class_name} differs in "
                                                     f"{', '.join(differences)}", rules="bfcl")
        missing = _missing(truth_results, model_results)
        if missing:
            return Verdict.failed("missing_result", f"turn {turn}: {len(missing)} result(s) of the ground truth "
                                                    f"not among the model's, e.g. {missing[0][:120]!r}", rules="bfcl")
    return Verdict(True, rules="bfcl+irrelevance" if irrelevance else "bfcl")


def _missing(expected: list[str], got: list[str]) -> list[str]:
    """The expected results not found in `got`, each found one used once (BFCL's unordered subsequence)."""
    left = list(got)
    missing = []
    for item in expected:
        try:
            left.remove(item)
        except ValueError:
            missing.append(item)
    return missing


def irrelevance_calls(case: MultiTurnCase, trajectory: dict) -> int:
    """Calls the model made in turns whose ground truth has none (BFCL 2026.3.23 does not judge them)."""
    return sum(len(step) for turn, expected in enumerate(case.ground_truth) if not expected
               and turn < len(trajectory["turns"]) for step in decoded_steps(trajectory["turns"][turn]))

"""The oracle: a simulated model that answers every case from its known answer — it proves the pipeline.

    from agentkit.bench.oracle import Oracle
    oracle = Oracle(cases)                               # BFCL cases and/or scenarios
    with agentkit.sim.serve(respond=oracle.respond) as server:
        model = HTTPModel("oracle", "anthropic", base_url=server.base_url("anthropic"), api_key="sim")

If the oracle does not score 100 %, something between the data and the score is broken: the type
conversion, a codec, the runner or the checker. Any other model name on that server is passed on to
the simulator's own models (`agentkit.sim.behaviours.respond`), so the oracle, sim-reasoner and
sim-noisy-SEED can run side by side on one server.

For a BFCL case it sends, in the first turn, one call per expected call, under the provider's
spelling of the name. Each parameter of the answer gets its first acceptable value, where "" means
"leave it out" — except that a parameter the function doc requires gets its first other value, or
the empty string when there is none (BFCL's string check accepts it), and one the doc does not
define at all is left out when the answer allows that (BFCL's data has such answers). For
irrelevance it answers in text.
For a scenario of our own suite it plays the scenario's reference solution, one step per turn.
For a BFCL multi-turn case it sends, in the first step of every user turn, the ground truth's calls
of that turn (arguments named, in order: the loop runs them one after another), then a short answer;
it knows the turn by every user message so far and the tools offered now. Cases of different
multi-turn categories share questions with different answers (base and long_context, e.g.), so
run one category per oracle; within a category there are no conflicts (the tests check it).

It finds the case by the case's id when the caller says which case it plays — `CURRENT_CASE`, which
the runner and `multiturn.play` set, reaches it in the request's `x-agentkit-case` header over HTTP
(`HTTPModels(..., send_case=True)`, as `python -m agentkit.bench run --provider sim` does) or directly
in process (`OracleModel`) — so several categories in one run each get their own answers (base and
long_context ask the same questions with other answers). Without the id it finds the case by the
conversation and the offered tools, exactly what a real model sees; then identical requests with
different answers cannot both be answered: BFCL has three such pairs across single-turn categories (e.g.
live_simple_29-7-2 wants a call, live_irrelevance_118-7-8 wants none) and the multi-turn categories
share questions, so the oracle keeps the first it was given and lists the other in `conflicts` (it
cannot answer those by the request alone). Per category there are none.

`oracle-flawed-SEED` is the oracle with seeded, labelled mistakes, so a comparison on the simulator has
something to compare: in each user turn (or single-turn case) with expected calls it makes, with chance
FLAW_RATE, one of FLAWS — `wrong_argument` (the first call's first argument changed), `extra_call` (the
first call sent twice) or `early_stop` (no call: an answer) — decided by a hash of the seed, the case and
the turn. `planned_flaws(case, seed)` says which, per turn, before the run: the labels to compare the
verdicts with.

Left out on purpose: "understanding" anything. The oracle looks answers up; it is a test instrument.
"""

from __future__ import annotations

import json
from contextvars import ContextVar
from typing import Any, Callable, Iterable

from ..core.types import ModelTurn, ToolCall, Usage
from ..providers.common import stable_id
from ..sim.wire.common import ChatRequest
from .bfcl import BFCLCase, provider_name

ORACLE_MODEL = "oracle"
FLAWED_PREFIX = "oracle-flawed-"
IRRELEVANT_ANSWER = "None of the functions I was given can do this, so I will not call any."
#: The case being played (its id), set by the runner and multiturn.play for the oracle to answer by.
CURRENT_CASE: ContextVar[str | None] = ContextVar("agentkit_bench_case", default=None)
#: What oracle-flawed-SEED gets wrong, and how often (per user turn with expected calls).
FLAWS = ("wrong_argument", "extra_call", "early_stop")
FLAW_RATE = 0.2


def flaw_for(seed: Any, case_id: str, turn: int) -> str | None:
    """The mistake oracle-flawed-`seed` makes in `turn` of case `case_id` (None: it answers right)."""
    roll = int(stable_id("oracle-flawed", str(seed), case_id, turn, length=8), 16)
    return FLAWS[(roll // 100) % len(FLAWS)] if roll % 100 < FLAW_RATE * 100 else None


def planned_flaws(case: Any, seed: Any) -> dict[int, str]:
    """{turn: mistake} for a case (a BFCL multi-turn case, a single-turn one: turn 0), turns with expected
    calls only: the labels of what oracle-flawed-`seed` will do, to compare the verdicts with."""
    source = getattr(case, "source", case)
    truths = getattr(source, "ground_truth", None) or ()
    turns = range(len(truths)) if hasattr(source, "oracle_turns") else [0] if truths else []
    planned = {t: flaw_for(seed, source.id, t) for t in turns
               if not hasattr(source, "oracle_turns") or source.ground_truth[t]}
    return {t: kind for t, kind in planned.items() if kind}


def with_flaw(kind: str | None, calls: list[tuple[str, dict]]) -> tuple[list[tuple[str, dict]], str | None]:
    """The calls (and answer text) a flawed oracle sends in place of `calls`."""
    if not calls or kind is None:
        return calls, None
    if kind == "early_stop":
        return [], "Done."
    name, arguments = calls[0]
    if kind == "wrong_argument" and arguments:
        key = next(iter(arguments))
        return [(name, {**arguments, key: _changed(arguments[key])}), *calls[1:]], None
    return [calls[0], *calls], None  # extra_call (also a wrong argument where there is no argument)


def _changed(value: Any) -> Any:
    """Another value of the same JSON type (so the gates still let the call through)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "_x" if value else "x"
    if isinstance(value, list):
        return value[:-1] if value else [None]
    if isinstance(value, dict):
        return {}
    return value


def case_key(messages: Iterable[Any], tools: Iterable[Any]) -> str:
    """What identifies a case to the oracle: the conversation before the first answer (system, user and
    BFCL's own assistant messages) and the offered tools' names and descriptions."""
    before = []
    for m in messages:
        if m.role == "tool" or (m.role == "assistant" and m.tool_calls):
            break
        before.append((m.role, m.content or ""))
    while before and before[-1][0] == "assistant":  # the oracle's own earlier answers are not the case
        before.pop()
    return stable_id(before, sorted((t.name, t.description) for t in tools))


def turn_key(user_contents: list[str], tool_names: list[str]) -> str:
    """What identifies a turn of a case to the oracle: every user message so far and the tools offered now."""
    return stable_id("bfcl-multi-turn", list(user_contents), sorted(tool_names))


def request_turn_key(messages: Any, tools: Any) -> str:
    return turn_key([m.content or "" for m in messages if m.role == "user"], [t.name for t in tools])


def first_acceptable(values: list) -> tuple[bool, Any]:
    """(present, value): the first value other than "" ("" alone means: leave the parameter out)."""
    for value in values:
        if not (isinstance(value, str) and value == ""):
            return True, _concrete(value)
    return False, None


def _concrete(value: Any) -> Any:
    """Answers nest: a dict parameter's answer is {key: [acceptable values]}; a list of dicts, a list of those."""
    if isinstance(value, dict):
        out = {}
        for key, values in value.items():
            present, chosen = first_acceptable(values) if isinstance(values, list) else (True, values)
            if present:
                out[key] = chosen
        return out
    if isinstance(value, list):
        return [_concrete(v) if isinstance(v, dict) else v for v in value]
    return value


def bfcl_answer(case: BFCLCase) -> list[tuple[str, dict]]:
    """The calls the oracle sends for one BFCL case: (provider name, arguments)."""
    if case.ground_truth is None:
        return []
    docs = {f["name"]: f.get("parameters") or {} for f in case.functions}
    calls = []
    for expected in case.ground_truth:
        (name, parameters), = expected.items()
        doc = docs.get(name, {})
        defined, required = doc.get("properties") or {}, set(doc.get("required") or ())
        arguments = {}
        for param, values in parameters.items():
            may_leave_out = "" in values
            if param not in defined and may_leave_out:
                continue
            if may_leave_out and values[0] == "" and param not in required:
                continue
            present, value = first_acceptable(values)
            if present:
                arguments[param] = value
            elif param in required:
                arguments[param] = ""
        calls.append((provider_name(name), arguments))
    return calls


class Oracle:
    """`respond(ChatRequest) -> ModelTurn` for `agentkit.sim` (create_app / serve(respond=...))."""

    def __init__(self, cases: Iterable[Any] = (), fallback: Callable[[ChatRequest], ModelTurn] | None = None,
                 name: str = ORACLE_MODEL):
        self.name = name
        self._fallback = fallback
        self._answers: dict[str, tuple[str, Any]] = {}
        self._turns: dict[str, tuple[str, list, int]] = {}  # BFCL multi-turn: one user turn -> (case, calls, turn)
        self._by_case: dict[str, Any] = {}  # case id -> {turn key: (case, calls, turn)}, or its script
        self.conflicts: list[tuple[str, str]] = []  # (kept, ignored): identical requests, different answers
        self.add(cases)

    def add(self, cases: Iterable[Any]) -> None:
        """Learn more cases (BFCLCase, or anything with `oracle_key()` and `oracle_step(n)`)."""
        for case in cases:
            if hasattr(case, "start"):  # a suites.Case: the suite's own case is its source
                case = case.source
            if hasattr(case, "oracle_turns"):  # a multiturn.MultiTurnCase
                own = self._by_case.setdefault(case.id, {})
                for turn, (key, calls) in enumerate(case.oracle_turns().items()):
                    if key in self._turns and self._turns[key][1] != calls:
                        self.conflicts.append((self._turns[key][0], case.id))
                    self._turns.setdefault(key, (case.id, calls, turn))
                    own[key] = (case.id, calls, turn)
                continue
            if isinstance(case, BFCLCase):
                key = case_key(case.messages, case.tools)  # the Tools the runner offers, built once
                script: Any = bfcl_answer(case)
            else:
                key, script = case.oracle_key(), case
            self._by_case[case.id] = (case.id, script)
            if key in self._answers:
                if self._answers[key][1] != script:
                    self.conflicts.append((self._answers[key][0], case.id))
                continue
            self._answers[key] = (case.id, script)

    def respond(self, request: ChatRequest) -> ModelTurn:
        name = request.model.rsplit("/", 1)[-1]
        flawed = name[len(FLAWED_PREFIX):] if name.startswith(FLAWED_PREFIX) else None
        if name != self.name and flawed is None:
            if self._fallback is None:
                from ..sim.behaviours import respond as sim_respond

                self._fallback = sim_respond
            return self._fallback(request)
        case = request.extras.get("case") or CURRENT_CASE.get()
        own = self._by_case.get(case) if case else None
        turns = own if isinstance(own, dict) else None if own is not None else self._turns
        if turns:
            turn = turns.get(request_turn_key(request.messages, request.tools))
            if turn is not None:  # the turn's calls in its first step, then an answer
                if _steps_since_user(request.messages) != 0:
                    return self._turn(request, [], "Done.")
                calls, _ = with_flaw(flaw_for(flawed, turn[0], turn[2]) if flawed is not None else None, turn[1])
                return self._turn(request, calls, None if calls else "Done.")
        if isinstance(own, tuple):
            case_id, script = own
        else:
            key = case_key(request.messages, request.tools)
            if key not in self._answers:
                return self._turn(request, [], "I do not know this case.")
            case_id, script = self._answers[key]
        if isinstance(script, list):  # a BFCL case: everything in the first turn, then a short answer
            turn_number = sum(1 for m in request.messages if m.role == "assistant" and m.tool_calls)
            if turn_number == 0 and script:
                calls, text = with_flaw(flaw_for(flawed, case_id, 0) if flawed is not None else None, script)
                return self._turn(request, calls, None if calls else text)
            return self._turn(request, [], IRRELEVANT_ANSWER if not script else "Done.")
        step = _steps_since_user(request.messages)
        calls, text = script.oracle_step(step)
        return self._turn(request, calls, text)

    def _turn(self, request: ChatRequest, calls: list[tuple[str, dict]], text: str | None) -> ModelTurn:
        from ..sim.behaviours import count_tokens

        conversation = [m.to_dict() for m in request.messages]
        fingerprint = stable_id(request.model, conversation, length=32)
        tool_calls = tuple(ToolCall(stable_id(fingerprint, i, name), name, dict(args), dict(args))
                           for i, (name, args) in enumerate(calls))
        written = json.dumps([[n, a] for n, a in calls], ensure_ascii=False) if tool_calls else (text or "")
        prompt = json.dumps(conversation, ensure_ascii=False, default=str)
        return ModelTurn(text=None if tool_calls else (text or ""), tool_calls=tool_calls,
                         stop="tool_calls" if tool_calls else "stop",
                         usage=Usage(count_tokens(prompt), max(1, count_tokens(written))), model=request.model,
                         id=stable_id(fingerprint, "turn"))


class OracleModel:
    """The oracle without HTTP: `complete`/`acomplete` ask `Oracle.respond` directly (tests, notebooks).
    `model` names another simulator model to answer in-process instead: OracleModel(model="sim-noisy-3")."""

    def __init__(self, cases: Iterable[Any] = (), model: str = ORACLE_MODEL):
        self.oracle = Oracle(cases)
        self.model = model

    def complete(self, messages: Any, tools: Any, options: Any) -> ModelTurn:
        case = CURRENT_CASE.get()
        return self.oracle.respond(ChatRequest(self.model, tuple(messages), tuple(tools), options,
                                               extras={"case": case} if case else {}))

    async def acomplete(self, messages: Any, tools: Any, options: Any) -> ModelTurn:
        return self.complete(messages, tools, options)


def _steps_since_user(messages: Iterable[Any]) -> int:
    """How many assistant turns came after the last user message: the oracle's place in its script."""
    step = 0
    for m in messages:
        if m.role == "user":
            step = 0
        elif m.role == "assistant":
            step += 1
    return step


def serve_with_oracle(cases: Iterable[Any] = (), **app_options: Any) -> Any:
    """`agentkit.sim.serve()` whose model "oracle" answers `cases`; every other name is a simulator model.

        with serve_with_oracle(cases, faults="slow=100") as server:    # every answer 100 ms late
            ...
    """
    from .. import sim

    return sim.serve(respond=Oracle(cases).respond, **app_options)


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

It finds the case by the conversation and the offered tools, so it needs no side channel: what it
sees is exactly what a real model sees. BFCL has three pairs of identical requests with opposite
answers (e.g. live_simple_29-7-2 wants a call, live_irrelevance_118-7-8 wants none); a function of
the request can satisfy only one of each, so the oracle keeps the first it was given and lists the
other in `conflicts`. Per category there are none.

Left out on purpose: "understanding" anything. The oracle looks answers up; it is a test instrument.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

from ..core.types import ModelTurn, ToolCall, Usage
from ..providers.common import stable_id
from ..sim.wire.common import ChatRequest
from .bfcl import BFCLCase, provider_name

ORACLE_MODEL = "oracle"
IRRELEVANT_ANSWER = "None of the functions I was given can do this, so I will not call any."


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
        self._turns: dict[str, tuple[str, list]] = {}  # BFCL multi-turn: one user turn -> its calls
        self.conflicts: list[tuple[str, str]] = []  # (kept, ignored): identical requests, different answers
        self.add(cases)

    def add(self, cases: Iterable[Any]) -> None:
        """Learn more cases (BFCLCase, or anything with `oracle_key()` and `oracle_step(n)`)."""
        for case in cases:
            if hasattr(case, "start"):  # a suites.Case: the suite's own case is its source
                case = case.source
            if hasattr(case, "oracle_turns"):  # a multiturn.MultiTurnCase
                for key, calls in case.oracle_turns().items():
                    if key in self._turns and self._turns[key][1] != calls:
                        self.conflicts.append((self._turns[key][0], case.id))
                    self._turns.setdefault(key, (case.id, calls))
                continue
            if isinstance(case, BFCLCase):
                key = case_key(case.messages, case.tools)  # the Tools the runner offers, built once
                script: Any = bfcl_answer(case)
            else:
                key, script = case.oracle_key(), case
            if key in self._answers:
                if self._answers[key][1] != script:
                    self.conflicts.append((self._answers[key][0], case.id))
                continue
            self._answers[key] = (case.id, script)

    def respond(self, request: ChatRequest) -> ModelTurn:
        if request.model.rsplit("/", 1)[-1] != self.name:
            if self._fallback is None:
                from ..sim.behaviours import respond as sim_respond

                self._fallback = sim_respond
            return self._fallback(request)
        if self._turns:
            from .multiturn import request_turn_key

            turn = self._turns.get(request_turn_key(request.messages, request.tools))
            if turn is not None:  # the turn's calls in its first step, then an answer
                calls = turn[1] if _steps_since_user(request.messages) == 0 else []
                return self._turn(request, calls, None if calls else "Done.")
        key = case_key(request.messages, request.tools)
        if key not in self._answers:
            return self._turn(request, [], "I do not know this case.")
        script = self._answers[key][1]
        if isinstance(script, list):  # a BFCL case: everything in the first turn, then a short answer
            turn = sum(1 for m in request.messages if m.role == "assistant" and m.tool_calls)
            if turn == 0 and script:
                return self._turn(request, script, None)
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
        return self.oracle.respond(ChatRequest(self.model, tuple(messages), tuple(tools), options))

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


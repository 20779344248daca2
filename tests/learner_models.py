"""A stand-in for a learner's own model, served over HTTP like a local OpenAI-compatible server.

The tutorials promise to run on "any reasonable model", not only on the simulator's `sim-reasoner`. One
stand-in, LEARNER_MODEL ("learner-7b"), behaves in each of the ways real models differ from it, a different
one from request to request:

    one tool per turn   the reasoner's first call only (never a parallel batch), with a fresh random id
                        (so a repeated request gets other ids); its final answers in English
    no tool             answers in English whatever it is offered, never asks for a tool
    mistakes            the reasoner's calls, each one made wrong the way the simulator's noisy models
                        make them (another tool, a field left out, numbers as text, cut-off JSON, one
                        call too many)

Which way: the n-th run of a tutorial (a request right after the user's message starts one) starts with
the n-th way of the order the test gives (`Respond.begin`; by default mistakes, then no tool, then one tool
per turn, round again), and each later request of that run takes the next way in ROTATION (mistakes, then
one tool per turn — the corrected call —, then no tool, which ends the run). So a run that starts with a
mistake goes through all three ways, a tutorial with two runs also meets a model that answers at once,
and the ways a tutorial meets do not depend on the random ids. `Respond.log` records each request's way and
what it led to, for the tests to check.

The server around it (`serve_stand_in`) answers like Ollama's OpenAI-compatible endpoint: a name it does
not serve gets a 404, and a streamed answer carries each tool call whole, in one chunk, instead of argument
fragments to concatenate. Any API key is accepted, as by the simulator.

The decisions reuse the simulator's reasoner (what to call, with which arguments): a stand-in for the
*shape* of other models' behaviour, not for their intelligence.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from agentkit.core.types import ModelTurn, ToolCall, Usage
from agentkit.models import tool_results_since_last_user
from agentkit.sim import behaviours
from agentkit.sim import create_app
from agentkit.sim import reasoner as R
from agentkit.sim.behaviours import UnknownModel
from agentkit.sim.server import SimServer, listening_socket
from agentkit.sim.wire.common import ChatRequest

LEARNER_MODEL = "learner-7b"
ONE_TOOL_PER_TURN, NO_TOOL, MISTAKES = "one tool per turn", "no tool", "mistakes"
WAYS = (ONE_TOOL_PER_TURN, NO_TOOL, MISTAKES)
MISTAKE_KINDS = behaviours.MISTAKES  # the simulator's noisy models' mistakes: wrong tool, missing field, ...
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
_AN_ID = re.compile(r"[A-Za-z]+_[0-9A-Za-z]{16,}")  # call_..., toolu_...: left out of every hash


def _random_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def _digest(*parts: Any) -> int:
    text = _AN_ID.sub("<id>", json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _without_ids(messages) -> list:
    return [{k: v for k, v in m.to_dict().items() if k not in ("reasoning", "tool_call_id")} for m in messages]


ROTATION = (MISTAKES, ONE_TOOL_PER_TURN, NO_TOOL)
STARTS = (MISTAKES, NO_TOOL, ONE_TOOL_PER_TURN)


def _since_the_user(request: ChatRequest) -> tuple[list, int]:
    """The conversation up to the user's last message, and how many model turns came after it."""
    last_user = max((i for i, m in enumerate(request.messages) if m.role == "user"), default=-1)
    later = request.messages[last_user + 1:]
    return list(request.messages[:last_user + 1]), sum(1 for m in later if m.role == "assistant")


def _said(result: str) -> str:
    """A tool message as a sentence: the envelope's result (or error), else the text as it came."""
    try:
        envelope = json.loads(result)
    except ValueError:
        return result
    if not isinstance(envelope, dict) or "ok" not in envelope:
        return result
    if envelope["ok"]:
        return f"{envelope.get('name')} says {json.dumps(envelope.get('result'), ensure_ascii=False)}"
    return f"{envelope.get('name')} failed ({(envelope.get('error') or {}).get('message')})"


def _english_answer(request: ChatRequest) -> str:
    results = [m.content or "" for m in tool_results_since_last_user(request.messages)]
    if not results:
        return "I cannot look that up right now, so I will answer from what I know: probably fine weather."
    return "Here is what I found: " + "; ".join(_said(r) for r in results) + "."


def _turn(request: ChatRequest, text: str | None = None, calls: tuple[ToolCall, ...] = ()) -> ModelTurn:
    out = len(text or "") // 4 + sum(len(c.arguments_json()) // 4 for c in calls) + 1
    return ModelTurn(text=text, tool_calls=calls, stop="tool_calls" if calls else "stop",
                     usage=Usage(len(json.dumps([m.to_dict() for m in request.messages])) // 4 + 1, out),
                     model=request.model, id=_random_id("chatcmpl-"))


def _call(planned: R.PlannedCall) -> ToolCall:
    if planned.raw is not None:  # cut-off JSON: the model "wrote" text that is not an object
        return ToolCall(_random_id("call_"), planned.name, planned.raw, None)
    arguments = dict(planned.arguments or {})
    return ToolCall(_random_id("call_"), planned.name, json.dumps(arguments, ensure_ascii=False), arguments)


def _may_call(request: ChatRequest) -> bool:
    offered = R.usable_tools(request.tools)
    return bool(offered) and R.tool_choice_of(request.options, offered)[0] != "none"


def one_tool_per_turn(request: ChatRequest) -> tuple[ModelTurn, tuple[str, ...]]:
    """The reasoner's choice, but only its first call per turn, with a random id; answers in English."""
    if _may_call(request):
        one_at_a_time = replace(request, options=replace(request.options, parallel_tool_calls=False))
        planned = R.decide(one_at_a_time).calls[:1]
        if planned:
            return _turn(request, calls=(_call(planned[0]),)), ()
    return _turn(request, text=_english_answer(request)), ()


def never_calls_tools(request: ChatRequest) -> tuple[ModelTurn, tuple[str, ...]]:
    """Answers in English and never asks for a tool, whatever tools it is offered."""
    return _turn(request, text=_english_answer(request)), ()


def makes_mistakes(request: ChatRequest) -> tuple[ModelTurn, tuple[str, ...]]:
    """The reasoner's calls, each made wrong in one of MISTAKE_KINDS (the first, from one a hash of the
    request picks, that changes the call: a tool without required fields cannot miss one); the kinds made
    are returned beside the turn. No call to make: the English answer."""
    decision = R.decide(request) if _may_call(request) else None
    if decision is None or not decision.calls:
        return _turn(request, text=_english_answer(request)), ()
    calls, made = [], []
    for i, planned in enumerate(decision.calls):
        first = _digest(_without_ids(request.messages), i) % len(MISTAKE_KINDS)
        for kind in MISTAKE_KINDS[first:] + MISTAKE_KINDS[:first]:
            wrong = behaviours.make_mistake(kind, planned, request)
            if wrong != [planned]:
                made.append(kind)
                break
        calls += [_call(p) for p in wrong]
    return _turn(request, calls=tuple(calls)), tuple(made)


ANSWER = {ONE_TOOL_PER_TURN: one_tool_per_turn, NO_TOOL: never_calls_tools, MISTAKES: makes_mistakes}


@dataclass(frozen=True)
class Answered:
    """One request the stand-in answered: which way, what it sent back, whether it had any Japanese."""

    way: str
    first: bool            # right after the user's message: the first request of a run
    calls: int             # tool calls in the answer
    mistakes: tuple[str, ...]
    japanese: bool         # a Japanese character anywhere in the messages or the tool definitions


class Respond:
    """The server's decision function: LEARNER_MODEL's answer in the way its run has reached, else the
    provider's 404. `begin(starts)` before each tutorial: the order its runs start in."""

    def __init__(self) -> None:
        self.log: list[Answered] = []
        self._lock = threading.Lock()
        self.begin()

    def begin(self, starts: tuple[str, ...] = STARTS) -> None:
        with self._lock:
            self._starts, self._runs, self._started = starts, 0, {}

    def way_for(self, request: ChatRequest) -> tuple[str, bool]:
        """(the way this request is answered in, whether it starts a run)."""
        asked, turns = _since_the_user(request)
        run = _digest(_without_ids(asked), [t.to_dict() for t in request.tools])
        with self._lock:
            if turns == 0 or run not in self._started:  # a new run: the next way of the order
                self._started[run] = self._starts[self._runs % len(self._starts)]
                self._runs += 1
            start = self._started[run]
        return ROTATION[(ROTATION.index(start) + turns) % len(ROTATION)], turns == 0

    def __call__(self, request: ChatRequest) -> ModelTurn:
        if request.model != LEARNER_MODEL:
            raise UnknownModel(request.model)
        way, first = self.way_for(request)
        turn, mistakes = ANSWER[way](request)
        sent = json.dumps([_without_ids(request.messages), [t.to_dict() for t in request.tools]],
                          ensure_ascii=False)
        with self._lock:
            self.log.append(Answered(way, first, len(turn.tool_calls), mistakes, JAPANESE.search(sent) is not None))
        return turn


# -- the server: streams with whole tool calls, as Ollama's /v1 sends them ----------------------------

CHAT_PATH = "/v1/chat/completions"


def whole_call_chunks(completion: dict) -> list[bytes]:
    """A Chat Completions answer as SSE chunks: the text in one chunk, each tool call whole in one."""
    head = {k: completion[k] for k in ("id", "object", "created", "model") if k in completion}
    head["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict, finish: str | None = None) -> bytes:
        data = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()

    chunks = [chunk({"role": "assistant", "content": message.get("content") or ""})]
    for index, call in enumerate(message.get("tool_calls") or []):
        chunks.append(chunk({"tool_calls": [{"index": index, **call}]}))
    chunks.append(chunk({}, choice["finish_reason"]))
    chunks.append(b"data: [DONE]\n\n")
    return chunks


class WholeCallStreams:
    """ASGI middleware: a streamed Chat Completions request is answered from the plain answer, re-cut
    into whole-call chunks; everything else passes through to the simulator app unchanged."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != CHAT_PATH:
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        streamed = isinstance(request, dict) and request.get("stream") is True
        if streamed:
            request = {k: v for k, v in request.items() if k not in ("stream", "stream_options")}
            body = json.dumps(request, ensure_ascii=False).encode()
        headers = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        inner_scope = {**scope, "headers": headers}
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        if not streamed:
            await self.app(inner_scope, replay, send)
            return
        answer: dict = {"status": 500, "headers": [], "body": b""}

        async def collect(message: dict) -> None:
            if message["type"] == "http.response.start":
                answer["status"], answer["headers"] = message["status"], message.get("headers", [])
            elif message["type"] == "http.response.body":
                answer["body"] += message.get("body", b"")

        await self.app(inner_scope, replay, collect)
        if answer["status"] != 200:  # an error is a plain JSON answer, as on the real server
            await send({"type": "http.response.start", "status": answer["status"], "headers": answer["headers"]})
            await send({"type": "http.response.body", "body": answer["body"]})
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream; charset=utf-8")]})
        for piece in whole_call_chunks(json.loads(answer["body"])):
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


def serve_stand_in() -> tuple[SimServer, Respond]:
    """Start the stand-in server on 127.0.0.1 (an OS-chosen port) in a background thread."""
    import uvicorn

    respond = Respond()
    app = WholeCallStreams(create_app(respond, faults=False, models=(LEARNER_MODEL,)))
    sock = listening_socket()
    config = uvicorn.Config(app, loop="asyncio", lifespan="off", log_config=None, log_level="warning",
                            access_log=False, server_header=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="learner-stand-in")
    thread.start()
    handle = SimServer(server, sock, thread, app)
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            handle.stop()
            raise RuntimeError("the stand-in server did not start")
        time.sleep(0.01)
    return handle, respond

"""Stand-ins for a learner's own model, served over HTTP like a local OpenAI-compatible server.

The tutorials promise to run on "any reasonable model", not only on the simulator's `sim-reasoner`. These
stand-ins behave the ways real models differ from it, all at once:

    LEARNER_MODEL  "learner-7b": one tool call per turn (never a parallel batch), a fresh random id on
                   every call (so a repeated request gets other ids), final answers in English
    SILENT_MODEL   "silent-7b": never calls a tool, answers in English whatever it is offered

and the server around them (`serve_stand_in`) answers like Ollama's OpenAI-compatible endpoint: a name it
does not serve gets a 404, and a streamed answer carries each tool call whole, in one chunk, instead of
argument fragments to concatenate. Any API key is accepted, as by the simulator.

The decisions reuse the simulator's reasoner (what to call, with which arguments): these are stand-ins for
the *shape* of other models' behaviour, not for their intelligence.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from dataclasses import replace
from typing import Any

from agentkit.core.types import ModelTurn, ToolCall, Usage
from agentkit.models import tool_results_since_last_user
from agentkit.sim import create_app
from agentkit.sim import reasoner as R
from agentkit.sim.behaviours import UnknownModel
from agentkit.sim.server import SimServer, listening_socket
from agentkit.sim.wire.common import ChatRequest

LEARNER_MODEL = "learner-7b"
SILENT_MODEL = "silent-7b"


def _random_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


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


def _turn(request: ChatRequest, text: str | None = None, call: ToolCall | None = None) -> ModelTurn:
    calls = (call,) if call else ()
    out = len(text or "") // 4 + sum(len(c.arguments_json()) // 4 for c in calls) + 1
    return ModelTurn(text=text, tool_calls=calls, stop="tool_calls" if calls else "stop",
                     usage=Usage(len(json.dumps([m.to_dict() for m in request.messages])) // 4 + 1, out),
                     model=request.model, id=_random_id("chatcmpl-"))


def one_tool_per_turn(request: ChatRequest) -> ModelTurn:
    """The reasoner's choice, but only its first call per turn, with a random id; answers in English."""
    offered = R.usable_tools(request.tools)
    if offered and R.tool_choice_of(request.options, offered)[0] != "none":
        one_at_a_time = replace(request, options=replace(request.options, parallel_tool_calls=False))
        planned = R.decide(one_at_a_time).calls[:1]
        if planned:
            call = planned[0]
            if call.raw is not None:
                tool_call = ToolCall(_random_id("call_"), call.name, call.raw, None)
            else:
                arguments = dict(call.arguments or {})
                tool_call = ToolCall(_random_id("call_"), call.name, json.dumps(arguments, ensure_ascii=False),
                                     arguments)
            return _turn(request, call=tool_call)
    return _turn(request, text=_english_answer(request))


def never_calls_tools(request: ChatRequest) -> ModelTurn:
    """Answers in English and never asks for a tool, whatever tools it is offered."""
    return _turn(request, text=_english_answer(request))


BEHAVIOURS = {LEARNER_MODEL: one_tool_per_turn, SILENT_MODEL: never_calls_tools}


class Respond:
    """The server's decision function: the stand-in named in the request, else the provider's 404."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()  # model name -> requests it answered
        self._lock = threading.Lock()

    def __call__(self, request: ChatRequest) -> ModelTurn:
        behaviour = BEHAVIOURS.get(request.model)
        if behaviour is None:
            raise UnknownModel(request.model)
        with self._lock:
            self.requests[request.model] += 1
        return behaviour(request)


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
    app = WholeCallStreams(create_app(respond, faults=False, models=tuple(BEHAVIOURS)))
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

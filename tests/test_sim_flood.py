"""The simulator under a flood: every request is answered, one slow decision holds up no other request, a
stream stops when its client goes, and the reasoner's work stays bounded however long the prompt.

No wall-clock thresholds here: order comes from events, and "bounded" from counting what the reasoner reads.
The timing figures (median, p99 under a 50-client flood; the reasoner's time against the prompt's size) are
printed by benchmarks/sim_flood.py and recorded in benchmarks/README.md. Everything binds 127.0.0.1.
"""

from __future__ import annotations

import json
import logging
import socket
import struct
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from agentkit import sim
from agentkit.core.types import Message, ModelOptions, ModelTurn, ToolSpec, Usage
from agentkit.http import HTTPModel
from agentkit.sim import behaviours as sim_models
from agentkit.sim import reasoner as R
from agentkit.sim.reasoner import choose, plan
from agentkit.sim.wire.common import ChatRequest

WEATHER = ToolSpec("get_weather", "Current weather for a city",
                   {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
#: format -> a model of that API the simulator serves
MODELS = {"openai-chat": "gpt-4.1", "anthropic": "claude-sonnet-4-5", "gemini": "gemini-3-flash-preview",
          "openai-responses": "gpt-4.1", "ollama": "llama3.2"}
LONG = "Here is the report: " + "the weather in Paris and the rate of the yen; " * 9_000 + "Weather in Tokyo?"


def ask(server, fmt: str, prompt: str, stream: bool) -> ModelTurn:
    model = HTTPModel(MODELS[fmt], fmt, base_url=server.base_url(fmt), api_key="sk-sim", max_retries=0,
                      timeout=60)
    try:
        return model.complete([Message.user(prompt)], [WEATHER], ModelOptions(stream=stream))
    finally:
        model.close()


def test_a_flood_of_50_clients_is_answered_in_full_long_prompts_included():
    """50 clients at once, every format, streamed and not, five of them with a ~400 KB prompt: every request
    gets its whole answer (an unanswered or cut one raises in the client)."""
    assert len(LONG.encode()) > 400_000
    jobs = [(fmt, LONG if i % 10 == 3 else f"Weather in Tokyo? ({i})", i % 2 == 0)
            for i, fmt in zip(range(50), list(MODELS) * 10)]
    with sim.serve() as server, ThreadPoolExecutor(50) as pool:
        turns = list(pool.map(lambda job: ask(server, *job), jobs, timeout=120))
    assert len(turns) == 50
    assert all(t.tool_calls and t.tool_calls[0].name == "get_weather" for t in turns)


def test_a_slow_decision_does_not_hold_up_the_other_requests():
    """One request's model decision takes long (it waits until the others are done); the others, in every
    format, streamed and not, complete first. On a server that decides on its event loop, they could not."""
    started, release = threading.Event(), threading.Event()
    order: list[str] = []

    def respond(request: ChatRequest) -> ModelTurn:
        if request.messages[-1].content == "slow":
            started.set()
            release.wait(15)  # a guard only: the test releases it as soon as the others are answered
        return ModelTurn(f"answer to {request.messages[-1].content}", usage=Usage(3, 3), model=request.model)

    def timed(server, fmt: str, prompt: str, stream: bool) -> None:
        ask(server, fmt, prompt, stream)
        order.append(prompt)

    with sim.serve(respond=respond) as server, ThreadPoolExecutor(21) as pool:
        slow = pool.submit(timed, server, "gemini", "slow", True)
        assert started.wait(15)
        quick = [pool.submit(timed, server, fmt, f"quick {i}", i % 2 == 0)
                 for i, fmt in zip(range(20), list(MODELS) * 4)]
        for future in quick:
            future.result(timeout=30)
        release.set()
        slow.result(timeout=30)
    assert order[-1] == "slow" and len(order) == 21


def test_a_stream_whose_client_has_gone_is_not_written_on(caplog):
    """A client sends a streamed request and resets the connection while the model decides: the server
    writes nothing more to it, and asyncio logs no `socket.send() raised exception.`."""
    started, gone = threading.Event(), threading.Event()

    def respond(request: ChatRequest) -> ModelTurn:
        if request.messages[-1].content == "then leave":
            started.set()
            gone.wait(15)
        return ModelTurn("word " * 20_000, usage=Usage(3, 3), model=request.model)  # ~4,000 stream events

    caplog.set_level(logging.WARNING, logger="asyncio")
    with sim.serve(respond=respond) as server:
        body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": True,
                           "messages": [{"role": "user", "content": "then leave"}]}).encode()
        head = (f"POST /v1/messages HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\n"
                f"x-api-key: sk-sim\r\nanthropic-version: 2023-06-01\r\nContent-Length: {len(body)}\r\n\r\n")
        client = socket.create_connection((server.host, server.port))
        client.sendall(head.encode() + body)
        assert started.wait(15)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()  # a reset, as a client that timed out and went away
        gone.set()
        for i in range(3):  # later requests still answered (and the server has had its turns to write)
            assert ask(server, "anthropic", f"after {i}", stream=True).text.startswith("word")
    assert not [r for r in caplog.records if "socket.send() raised exception" in r.getMessage()]


# --- the reasoner's work: linear in the prompt, and bounded ----------------------------------------------

def characters_read(prompt: str, monkeypatch) -> int:
    """How many characters the reasoner's readers (facts, keys) were handed while deciding on `prompt`."""
    seen = [0]

    def counting(reader):
        def wrapped(text, *args, **kwargs):
            seen[0] += len(text)
            return reader(text, *args, **kwargs)
        return wrapped

    for module in (choose, plan):
        monkeypatch.setattr(module, "read_facts", counting(module.read_facts))
    monkeypatch.setattr(choose, "text_keys", counting(choose.text_keys))
    R.decide(ChatRequest("sim-reasoner", (Message.user(prompt),), (WEATHER,)))
    monkeypatch.undo()
    return seen[0]


@pytest.mark.parametrize("unit", ["weather in Paris and ", "東京の天気と", "1 dollar in yen; ", "\"q\" INV-12 ",
                                  "plain words without anything to read "])
def test_the_reasoner_reads_a_bounded_amount_however_long_the_prompt(unit, monkeypatch):
    """The reasoner reads the first and last READ_LIMIT / 2 characters and at most MAX_ASKS asks: on a 400 KB
    prompt it reads what it reads on a 50 KB one, and never more than a fixed multiple of READ_LIMIT."""
    sizes = (50_000, 100_000, 400_000)
    read = [characters_read(unit * (size // len(unit.encode())), monkeypatch) for size in sizes]
    assert max(read) - min(read) <= R.READ_LIMIT // 10  # the same, up to where the cut falls in a sentence
    assert max(read) <= 4 * R.READ_LIMIT


def test_the_reasoner_reads_a_short_prompt_whole_and_still_answers_a_long_ones_question():
    assert R.understand(ChatRequest("sim-reasoner", (Message.user("Weather in Tokyo?"),))).text == \
        "Weather in Tokyo?"
    decision = sim_models.respond(ChatRequest("sim-reasoner", (Message.user(LONG),), (WEATHER,)))
    assert [c.arguments for c in decision.tool_calls] == [{"city": "Paris"}, {"city": "Tokyo"}]

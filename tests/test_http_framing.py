"""Stream framing is the codec's fact, not http.py's: STREAM_FRAMING = "sse" (the default) or "ndjson".

For "ndjson" HTTPModel reads the body line by line and hands each non-empty line to the codec's
StreamAssembler as feed(None, line). A stand-in codec (below, a dozen lines) proves it without any real
format's knowledge: over httpx.MockTransport and over a real socket on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import threading
import types

import httpx
import pytest
from hostile_server import HostileServer

from agentkit.core.errors import BadResponseError, ProviderTimeout, RateLimitError, error_for_status
from agentkit.core.types import Message, ModelOptions, ModelTurn
from agentkit.http import HTTPModel
from agentkit.providers.common import WireRequest

MESSAGES = [Message.user("Say hi.")]


def line_codec(framing: str = "ndjson") -> types.ModuleType:
    """A stand-in codec: POST /chat {"model", "prompt", "stream"}; answers {"message": "...", "done": bool}."""
    codec = types.ModuleType("line_codec")
    codec.STREAM_FRAMING = framing
    codec.DEFAULT_BASE_URL, codec.API_KEY_ENVS, codec.DEFAULT_MODEL = "http://localhost:1/api", (), "tiny"

    def build_request(model, messages, tools, options, **extras):
        body = {"model": model, "prompt": messages[-1].content, "stream": options.stream, **extras}
        return WireRequest("chat", body, stream=options.stream)

    class StreamAssembler:
        def __init__(self):
            self.parts, self.done = [], False

        def feed(self, event, data):
            assert event is None  # NDJSON has no event names
            chunk = json.loads(data)
            self.parts.append(chunk["message"])
            self.done = self.done or chunk["done"]

        def turn(self):
            if not self.done:
                raise ValueError("the stream ended before its last line")
            return ModelTurn(text="".join(self.parts))

    codec.build_request = build_request
    codec.auth_headers = lambda key: {"authorization": f"Bearer {key}"}
    codec.parse_response = lambda body: ModelTurn(text=body["message"])
    codec.parse_error = lambda status, body, headers: error_for_status(status)(str(body), status=status)
    codec.StreamAssembler = StreamAssembler
    return codec


LINES = b'{"message": "Hel", "done": false}\n\n{"message": "lo", "done": false}\n{"message": "!", "done": true}\n'


def reply(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    if body["stream"]:
        return httpx.Response(200, content=LINES, headers={"content-type": "application/x-ndjson"})
    return httpx.Response(200, json={"message": "Hello!", "done": True})


def model_with(handler, **kw) -> HTTPModel:
    return HTTPModel("tiny", "lines", codec=line_codec(), base_url="http://x/api",
                     transport=httpx.MockTransport(handler), **kw)


def test_ndjson_lines_are_fed_to_the_assembler_one_by_one():
    model = model_with(reply)
    assert model.complete(MESSAGES, options=ModelOptions(stream=True)).text == "Hello!"
    assert model.complete(MESSAGES).text == "Hello!"


def test_ndjson_async_gives_what_sync_gives():
    model = model_with(reply)
    streamed = asyncio.run(model.acomplete(MESSAGES, options=ModelOptions(stream=True)))
    assert streamed.text == "Hello!"


def test_ndjson_stream_yields_each_line_as_an_event_without_a_name():
    model = model_with(reply)
    stream = model.stream(MESSAGES)
    events = list(stream)
    assert [e.event for e in events] == [None] * 3  # the empty line is not an event
    assert [json.loads(e.data)["message"] for e in events] == ["Hel", "lo", "!"]
    assert stream.turn.text == "Hello!" and [a.outcome for a in stream.attempts] == [200]


def test_ndjson_astream():
    model = model_with(reply)

    async def collect():
        stream = model.astream(MESSAGES)
        return [e.data async for e in stream], stream.turn

    lines, turn = asyncio.run(collect())
    assert len(lines) == 3 and turn.text == "Hello!"


def test_sse_headers_are_not_sent_for_ndjson():
    seen = []
    model = model_with(lambda r: seen.append(r) or reply(r))
    model.complete(MESSAGES, options=ModelOptions(stream=True))
    assert seen[0].headers.get("accept") != "text/event-stream"


def test_an_ndjson_error_status_is_read_and_typed():
    replies = iter([httpx.Response(429, headers={"retry-after-ms": "5"}, content=b"busy")])
    sleeps: list[float] = []
    model = model_with(lambda r: next(replies, None) or reply(r), sleep=sleeps.append)
    assert model.complete(MESSAGES, options=ModelOptions(stream=True)).text == "Hello!"
    assert [a.outcome for a in model.last_attempts] == [429, 200] and sleeps == [0.005]
    with pytest.raises(RateLimitError):
        model_with(lambda r: httpx.Response(429, content=b"busy"), max_retries=0).complete(
            MESSAGES, options=ModelOptions(stream=True))


def test_a_cut_ndjson_stream_is_a_bad_response():
    cut = httpx.Response(200, content=LINES.splitlines(keepends=True)[0])
    with pytest.raises(BadResponseError):
        model_with(lambda r: cut, max_retries=0).complete(MESSAGES, options=ModelOptions(stream=True))


def test_a_codec_with_an_unknown_framing_is_refused():
    with pytest.raises(ValueError, match="STREAM_FRAMING"):
        HTTPModel("tiny", "lines", codec=line_codec("websocket"), base_url="http://x/api")


def test_an_ndjson_stream_of_empty_lines_is_stalled():
    """Over a real socket: empty lines every 0.3 s are not events, so timeout=1 ends the call."""
    with HostileServer("ndjson-blanks") as server:
        model = HTTPModel("tiny", "lines", codec=line_codec(), base_url=server.url, timeout=1.0, max_retries=0)
        outcome: list = []

        def call():
            try:
                model.complete(MESSAGES, options=ModelOptions(stream=True))
            except Exception as exc:  # noqa: BLE001 - handed to the asserts
                outcome.append(exc)

        worker = threading.Thread(target=call, daemon=True)
        worker.start()
        worker.join(10)
        assert not worker.is_alive(), "no deadline"
        model.close()
    assert isinstance(outcome[0], ProviderTimeout) and outcome[0].error_type == "stalled"

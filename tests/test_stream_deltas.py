"""A streamed turn's pieces, in every format: what each codec's StreamAssembler.feed hands on as it reads.

The property: whatever the answer (any text, any calls with any arguments, reasoning on or off), the pieces
of the simulator's own stream of it, read by the client codec, join into the turn the stream assembles —
the text deltas into its text, each call's argument deltas into its arguments, the reasoning deltas into
the reasoning text the provider showed — and a call's pieces say which call they belong to. Then the same
through HTTPModel over HTTP (sync and async), and a codec that reports no pieces.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples
from test_codec_contract import REASONING_ASKED, WEATHER, decoded

from agentkit.core.types import (
    Message,
    ModelOptions,
    ModelTurn,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    deltas_of,
)
from agentkit.http import HTTPModel
from agentkit.providers import FORMATS, get_codec
from agentkit.sim.wire import get_server

ALL = list(FORMATS)

#: Where each format keeps the reasoning text it showed, in the state the client assembled.
SHOWN_REASONING = {
    "openai-chat": lambda items: "".join(i["message"].get("reasoning_content", "") for i in items),
    "openai-responses": lambda items: "".join(s["text"] for i in items if i.get("type") == "reasoning"
                                              for s in i.get("summary", [])),
    "anthropic": lambda items: "".join(i.get("thinking", "") for i in items if i.get("type") == "thinking"),
    "gemini": lambda items: "".join(i.get("text", "") for i in items if i.get("thought")),
    "openrouter": lambda items: "".join(i["message"].get("reasoning", "") for i in items),
    "ollama": lambda items: "".join(i.get("thinking", "") for i in items),
}


def test_every_format_says_where_its_shown_reasoning_is():
    assert set(SHOWN_REASONING) == set(FORMATS)


def read(codec, events):
    """(every piece, the assembled turn): the client codec fed the stream as an SSE or NDJSON reader would."""
    assembler = codec.StreamAssembler()
    pieces = []
    for event in events:
        if event.comment is None:
            pieces += assembler.feed(event.event, event.data)
    return pieces, assembler.turn()


def joined(pieces):
    """The pieces put back together: (text, reasoning text, {call place: (id, name, argument text)})."""
    text = "".join(p.text for p in pieces if isinstance(p, TextDelta))
    reasoning = "".join(p.text for p in pieces if isinstance(p, ReasoningDelta))
    calls: dict[int, list] = {}
    for piece in pieces:
        if isinstance(piece, ToolCallDelta):
            call = calls.setdefault(piece.index, [None, None, ""])
            call[0] = call[0] or piece.id
            call[1] = call[1] or piece.name
            call[2] += piece.arguments
    return text, reasoning, calls


json_values = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=12),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                         max_size=3),
                           max_leaves=6)
arguments = st.dictionaries(st.text(min_size=1, max_size=8), json_values, max_size=4)
answers = st.tuples(st.one_of(st.none(), st.text(min_size=1, max_size=80)),
                    st.lists(st.tuples(st.sampled_from(["get_weather", "get_exchange_rate"]), arguments), max_size=3),
                    st.booleans()).filter(lambda a: a[0] or a[1])


@pytest.mark.parametrize("fmt", ALL)
@settings(max_examples=examples(100), deadline=None)
@given(answer=answers)
def test_the_pieces_of_a_stream_join_into_the_turn_it_assembles(fmt, answer):
    codec, server = get_codec(fmt), get_server(fmt)
    text, planned, thinking = answer
    model, extras = REASONING_ASKED[fmt] if thinking else ("sim-reasoner", {})
    request, _ = decoded(codec, model, [Message.user("東京の天気は?")], extras, stream=True)
    calls = tuple(ToolCall.from_raw(f"c{i}", name, args) for i, (name, args) in enumerate(planned))
    turn = ModelTurn(text, calls, "tool_calls" if calls else "stop", usage=Usage(30, 9), model=model)
    state = server.reasoning_for(turn, request)

    pieces, streamed = read(codec, server.build_stream(replace(turn, reasoning=state), request))
    said, shown, pieced = joined(pieces)
    assert said == (streamed.text or "") == (text or "")
    assert sorted(pieced) == list(range(len(streamed.tool_calls)))
    for place, call in enumerate(streamed.tool_calls):
        call_id, name, argument_text = pieced[place]
        assert json.loads(argument_text or "{}") == call.arguments == planned[place][1]
        assert name in (None, call.name) and call_id in (None, call.id)
    items = streamed.reasoning.items if streamed.reasoning is not None else ()
    assert shown == SHOWN_REASONING[fmt](items)
    if thinking and fmt != "gemini":  # the simulator's Gemini signs its thoughts but shows none of them
        assert shown


@pytest.mark.parametrize("fmt", ALL)
def test_a_call_brings_its_id_and_name_with_its_first_piece_and_the_text_comes_in_several(fmt):
    codec, server = get_codec(fmt), get_server(fmt)
    request, _ = decoded(codec, "sim-reasoner", [Message.user("hi")], {}, stream=True)
    turn = ModelTurn("It is sunny in Tokyo today.", (ToolCall.from_raw("call_a", "get_weather", {"city": "Tokyo"}),
                                                     ToolCall.from_raw("call_b", "get_weather", {"city": "Paris"})),
                     "tool_calls", usage=Usage(3, 4), model="sim-reasoner")
    pieces, streamed = read(codec, server.build_stream(turn, request))
    assert len([p for p in pieces if isinstance(p, TextDelta)]) >= 2  # it streams, not one piece at the end
    for place in (0, 1):
        first = next(p for p in pieces if isinstance(p, ToolCallDelta) and p.index == place)
        assert first.name == "get_weather" and first.id in (None, streamed.tool_calls[place].id)


def test_a_gemini_thought_part_is_a_reasoning_piece_and_a_call_comes_whole():
    """Gemini with includeThoughts streams thought summaries as parts marked `thought: true`."""
    codec = get_codec("gemini")
    assembler = codec.StreamAssembler()
    chunks = [{"candidates": [{"content": {"role": "model", "parts": [{"text": "Weighing ", "thought": True}]}}]},
              {"candidates": [{"content": {"role": "model", "parts": [{"text": "the ask.", "thought": True}]}}]},
              {"candidates": [{"content": {"role": "model", "parts": [
                  {"functionCall": {"name": "get_weather", "args": {"city": "東京"}}}]}, "finishReason": "STOP"}]}]
    pieces = [p for chunk in chunks for p in assembler.feed(None, json.dumps(chunk))]
    assert pieces == [ReasoningDelta("Weighing "), ReasoningDelta("the ask."),
                      ToolCallDelta(0, '{"city": "東京"}', None, "get_weather")]
    assert assembler.turn().tool_calls[0].arguments == {"city": "東京"}


def test_a_responses_done_event_that_adds_to_the_streamed_text_hands_on_the_rest():
    codec = get_codec("openai-responses")
    assembler = codec.StreamAssembler()
    where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    events = [{"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "message", "id": "msg_1", "content": []}},
              {"type": "response.output_text.delta", **where, "delta": "Sunny"},
              {"type": "response.output_text.done", **where, "text": "Sunny, 22°C."}]
    pieces = [p for e in events for p in assembler.feed(e["type"], json.dumps(e))]
    assert pieces == [TextDelta("Sunny"), TextDelta(", 22°C.")]


def test_deltas_of_a_whole_turn_are_one_piece_each():
    turn = ModelTurn("Done.", (ToolCall.from_raw("c1", "f", '{"a": 1}'), ToolCall.from_raw("c2", "g", {"b": "x"})))
    assert deltas_of(turn) == [TextDelta("Done."), ToolCallDelta(0, '{"a": 1}', "c1", "f"),
                               ToolCallDelta(1, '{"b": "x"}', "c2", "g")]


# --- HTTPModel: the same pieces over HTTP, from stream() and astream() ---------------------------------------

@pytest.mark.parametrize("fmt", ALL)
def test_httpmodel_stream_deltas_join_into_its_turn_sync_and_async(server, fmt):
    messages = [Message.user("東京とパリの天気を教えて")]
    model = HTTPModel("sim-reasoner", fmt, base_url=server.base_url(fmt))
    stream = model.stream(messages, [WEATHER])
    pieces = list(stream.deltas())
    text, _, calls = joined(pieces)
    assert stream.turn.tool_calls and (stream.turn.text or "") == text
    assert [json.loads(calls[i][2]) for i in sorted(calls)] == [c.arguments for c in stream.turn.tool_calls]

    async def main():
        async with HTTPModel("sim-reasoner", fmt, base_url=server.base_url(fmt)) as amodel:
            astream = amodel.astream(messages, [WEATHER])
            return [p async for p in astream.deltas()], astream.turn

    apieces, aturn = asyncio.run(main())
    assert apieces == pieces and aturn.tool_calls == stream.turn.tool_calls


def test_a_codec_whose_assembler_reports_no_pieces_hands_the_turn_on_whole():
    """A codec of your own written before pieces existed: its feed returns None; deltas() still says it all."""
    from agentkit.providers import openai_chat

    class Quiet(openai_chat.StreamAssembler):
        def feed(self, event, data):
            super().feed(event, data)
            return None

    class QuietCodec:
        def __getattr__(self, name):
            return getattr(openai_chat, name)

        StreamAssembler = Quiet

    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": "Hello"}, "finish_reason": "stop"}]}
    body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
    transport = httpx.MockTransport(lambda r: httpx.Response(200, headers={"content-type": "text/event-stream"},
                                                             content=body))
    model = HTTPModel("m", base_url="http://x/v1", api_key="k", transport=transport, codec=QuietCodec())
    assert list(model.stream([Message.user("hi")], options=ModelOptions()).deltas()) == [TextDelta("Hello")]

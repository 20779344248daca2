"""A run as a stream (agentkit.run_stream / arun_stream): the model's pieces as they arrive, then the loop's
own events, in order; the same decisions and stop reasons as run(); every call answered when the caller
stops reading, and the model's stream closed. Against the simulator in every format, and scripted models.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

import agentkit
from agentkit import (
    HTTPModel,
    Limits,
    ModelCallError,
    Pause,
    ScriptedModel,
    StopReason,
    TextDelta,
    Thread,
    ToolCallDelta,
    ToolExecutionError,
    call,
    tool,
)
from agentkit.experiments.checks import unanswered_calls
from agentkit.models import always_calls, repeats
from agentkit.providers import FORMATS

ALL = list(FORMATS)
ASK = "東京とパリの天気を教えて"


@tool
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: the city's name, e.g. Tokyo
    """
    return f"{city}: sunny, 22°C"


@tool(return_direct=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@tool
def explode(x: int) -> str:
    """Always fails."""
    raise RuntimeError("boom")


def kinds(events) -> list[str]:
    return [e.kind for e in events]


def steps_of(events):
    """The events between each model_request and its model_response: (request, pieces, response)."""
    steps, current = [], None
    for event in events:
        if event.kind == "model_request":
            current = [event, []]
        elif event.kind == "model_response":
            steps.append((current[0], current[1], event))
            current = None
        elif current is not None:
            current[1].append(event)
    return steps


def assert_pieces_make_the_turns(events, run):
    """Each model call's pieces join into the turn the run took from it, and nothing else came in between."""
    steps = steps_of(events)
    assert len(steps) == len(run.turns)
    for (_, pieces, _), turn in zip(steps, run.turns):
        assert all(p.kind in ("text_delta", "reasoning_delta", "tool_call_delta") for p in pieces)
        assert "".join(p.text for p in pieces if isinstance(p, TextDelta)) == (turn.text or "")
        for place, tool_call in enumerate(turn.tool_calls):
            text = "".join(p.arguments for p in pieces if isinstance(p, ToolCallDelta) and p.index == place)
            assert json.loads(text or "{}") == tool_call.arguments


# --- the order of things, in every format ----------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ALL)
def test_a_streamed_run_hands_on_each_piece_before_the_turn_is_whole_then_the_loops_events(server, fmt):
    model = HTTPModel("sim-reasoner", fmt, base_url=server.base_url(fmt))
    with agentkit.run_stream(model, ASK, tools=[get_weather]) as stream:
        events = list(stream)
    result = stream.run
    assert result.stop_reason is StopReason.FINAL_ANSWER and result.tool_call_count == 2
    assert events[-1].kind == "stop" and kinds(events).count("stop") == 1
    assert_pieces_make_the_turns(events, result)
    first = kinds(events)
    # the calls' pieces come before model_response, their gates only after it: partial JSON is not yet a call
    assert first.index("tool_call_delta") < first.index("model_response") < first.index("gate")
    assert first.index("result") < first.index("text_delta", first.index("result"))
    # the loop's own events are the trace's, in its order
    assert [e for e in events if not hasattr(e, "text") and not hasattr(e, "arguments")] == result.trace.events


@pytest.mark.parametrize("fmt", ALL)
def test_the_async_stream_brings_the_same_events_and_the_same_run(server, fmt):
    model = HTTPModel("sim-reasoner", fmt, base_url=server.base_url(fmt))
    expected = agentkit.run(HTTPModel("sim-reasoner", fmt, base_url=server.base_url(fmt)), ASK, tools=[get_weather],
                            stream=True)
    sync_events = list(agentkit.run_stream(model, ASK, tools=[get_weather]))

    async def main():
        async with HTTPModel("sim-reasoner", fmt, base_url=server.base_url(fmt)) as amodel:
            async with agentkit.arun_stream(amodel, ASK, tools=[get_weather]) as stream:
                return [event async for event in stream], stream.run

    events, result = asyncio.run(main())
    assert_pieces_make_the_turns(events, result)
    pieces = [e for e in events if e.kind.endswith("_delta")]
    assert pieces == [e for e in sync_events if e.kind.endswith("_delta")]
    # the same events; only how a batch's tool_start and tool_end interleave is the executor's (threads, asyncio)
    def ordered(kinds_):
        return [k for k in kinds_ if k not in ("tool_start", "tool_end")]
    assert ordered(kinds(events)) == ordered(kinds(sync_events))
    assert sorted(kinds(events)) == sorted(kinds(sync_events))
    assert result.messages == expected.messages and result.stop_reason is expected.stop_reason


def test_reasoning_pieces_come_where_the_provider_sends_them(server):
    model = HTTPModel("claude-sonnet-4-5", "anthropic", base_url=server.base_url("anthropic"),
                      extra_body={"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048})
    events = list(agentkit.run_stream(model, ASK, tools=[get_weather]))
    first_step = steps_of(events)[0][1]
    assert first_step[0].kind == "reasoning_delta"  # thinking comes first, then the calls
    assert {"reasoning_delta", "tool_call_delta"} <= set(kinds(first_step))


def test_a_model_that_cannot_stream_hands_each_turn_on_whole():
    model = ScriptedModel([[call("get_weather", {"city": "Tokyo"}, id="c1")], "Sunny."])
    events = list(agentkit.run_stream(model, "weather?", tools=[get_weather]))
    assert kinds(events)[:3] == ["model_request", "tool_call_delta", "model_response"]
    assert events[1] == ToolCallDelta(0, '{"city": "Tokyo"}', "c1", "get_weather")
    assert TextDelta("Sunny.") in events and model.requests[0][2].stream  # asked with streaming on


# --- the same decisions as run(): every stop reason -------------------------------------------------------------

def scenarios():
    """(name, model factory, tools, settings): one run per stop reason run() can reach."""
    yield "final_answer", lambda: ScriptedModel([[call("get_weather", {"city": "Tokyo"})], "Sunny."]), \
        [get_weather], {}
    yield "max_steps", lambda: always_calls("get_weather", {"city": "Tokyo"}), [get_weather], \
        {"limits": Limits(max_steps=3)}
    yield "tool_limit", lambda: always_calls("get_weather", {"city": "Tokyo"}), [get_weather], \
        {"limits": Limits(max_tool_calls=2)}
    yield "repeated_call", lambda: repeats("get_weather", {"city": "Tokyo"}), [get_weather], \
        {"limits": Limits(max_repeats=2)}
    yield "return_direct", lambda: ScriptedModel([[call("lookup", {"key": "a"})]]), [lookup], {}
    yield "user_cancel", lambda: always_calls("get_weather", {"city": "Tokyo"}), [get_weather], \
        {"cancel": lambda: True}
    yield "schema_fail", lambda: always_calls("get_weather", {"town": "Tokyo"}), [get_weather], \
        {"limits": Limits(max_invalid_calls=1)}
    yield "error", lambda: ScriptedModel([[call("explode", {"x": 1})], "never"]), [explode], \
        {"on_tool_error": "raise"}
    yield "paused", lambda: ScriptedModel([[call("get_weather", {"city": "Tokyo"})], "never"]), [get_weather], \
        {"approve": lambda c, ctx: Pause()}
    yield "token_budget", lambda: always_calls("get_weather", {"city": "Tokyo"}), [get_weather], \
        {"limits": Limits(max_tokens={"total": 1})}


SCENARIOS = list(scenarios())


def outcome(go):
    """(the Run, the RunError type it raised or None)."""
    try:
        return go(), None
    except agentkit.RunError as error:
        return error.run, type(error)


def stream_to_end(stream):
    with stream:
        list(stream)
    return stream.run


def astream_to_end(stream):
    async def main():
        async with stream:
            return [e async for e in stream], stream.run
    return asyncio.run(main())[1]


@pytest.mark.parametrize("reason, make_model, tools, settings", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_a_streamed_run_stops_for_the_same_reason_as_run_with_the_same_history(reason, make_model, tools, settings):
    from agentkit.models import FunctionModel

    def usage_counted(model):  # a budget needs tokens: give every turn some
        if reason != "token_budget":
            return model
        return FunctionModel(lambda m, t, o: agentkit.ModelTurn(
            None, model.complete(m, t, o).tool_calls, "tool_calls", usage=agentkit.Usage(5, 5)))

    plain, plain_error = outcome(lambda: agentkit.run(usage_counted(make_model()), "go", tools=tools, **settings))
    streamed, streamed_error = outcome(lambda: stream_to_end(
        agentkit.run_stream(usage_counted(make_model()), "go", tools=tools, **settings)))
    astreamed, astreamed_error = outcome(lambda: astream_to_end(
        agentkit.arun_stream(usage_counted(make_model()), "go", tools=tools, **settings)))
    assert str(plain.stop_reason) == reason
    for other, error in ((streamed, streamed_error), (astreamed, astreamed_error)):
        assert other.stop_reason is plain.stop_reason and error is plain_error
        assert [m.to_dict() for m in other.messages] == [m.to_dict() for m in plain.messages]
        assert other.output == plain.output and unanswered_calls(other.messages) == []


def test_a_run_that_raises_raises_from_the_stream_after_its_stop_event():
    seen = []
    with pytest.raises(ToolExecutionError) as info:
        for event in agentkit.run_stream(ScriptedModel([[call("explode", {"x": 1})]]), "go", tools=[explode],
                                         on_tool_error="raise"):
            seen.append(event.kind)
    assert seen[-1] == "stop" and info.value.run.stop_reason is StopReason.ERROR


# --- the caller stops reading --------------------------------------------------------------------------------

class Watched(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A streamed body that says whether it was closed (the connection given back), and how far it was read."""

    def __init__(self, chunks: list[bytes]):
        self.chunks, self.read, self.closed = chunks, 0, False

    def __iter__(self):
        for chunk in self.chunks:
            self.read += 1
            yield chunk

    async def __aiter__(self):
        for chunk in self.chunks:
            self.read += 1
            yield chunk

    def close(self):
        self.closed = True

    async def aclose(self):
        self.closed = True


def chat_chunks(text_pieces=(), calls=()):
    """An OpenAI Chat stream: the text in pieces, then each call (name, arguments) in two pieces."""
    def chunk(delta, finish=None):
        body = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(body)}\n\n".encode()
    out = [chunk({"role": "assistant", "content": piece}) for piece in text_pieces]
    for i, (name, arguments) in enumerate(calls):
        text = json.dumps(arguments)
        out.append(chunk({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                                          "function": {"name": name, "arguments": text[:5]}}]}))
        out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": text[5:]}}]}))
    out.append(chunk({}, "tool_calls" if calls else "stop"))
    return [*out, b"data: [DONE]\n\n"]


def watched_model(bodies: list[Watched]) -> HTTPModel:
    answers = iter(bodies)

    def handler(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=next(answers))
    return HTTPModel("m", base_url="http://x/v1", api_key="k", transport=httpx.MockTransport(handler), max_retries=0)


def test_leaving_while_the_answer_arrives_closes_the_models_stream_and_ends_user_cancel():
    body = Watched(chat_chunks(["It ", "is ", "sunny ", "in ", "Tokyo."]))
    thread = Thread()
    with agentkit.run_stream(watched_model([body]), "weather?", tools=[get_weather], thread=thread) as stream:
        for event in stream:
            if event.kind == "text_delta":
                break
    assert body.closed and body.read < len(body.chunks)
    assert stream.run.stop_reason is StopReason.USER_CANCEL and stream.run.turns == []
    assert [m.role for m in thread.messages] == ["user"]  # the unfinished answer never entered the history


def test_leaving_after_the_calls_arrived_answers_every_call_and_the_thread_goes_on():
    body = Watched(chat_chunks(calls=[("get_weather", {"city": "Tokyo"}), ("get_weather", {"city": "Paris"})]))
    thread = Thread()
    stream = agentkit.run_stream(watched_model([body]), "weather?", tools=[get_weather], thread=thread)
    for event in stream:
        if event.kind == "gate":  # the calls are whole and in the gates; none has run
            break
    stream.close()
    result = stream.run
    assert result.stop_reason is StopReason.USER_CANCEL and unanswered_calls(result.messages) == []
    answers = [json.loads(m.content) for m in result.messages if m.role == "tool"]
    assert [a["error"]["kind"] for a in answers] == ["not_run", "not_run"]
    assert "stopped reading" in answers[0]["error"]["message"]
    again = agentkit.run(ScriptedModel(["Both sunny."]), "and now?", tools=[get_weather], thread=thread)
    assert again.stop_reason is StopReason.FINAL_ANSWER and unanswered_calls(thread.messages) == []


def test_leaving_an_async_stream_with_async_with_closes_it_and_answers_every_call():
    first = Watched(chat_chunks(["Let me check."], calls=[("get_weather", {"city": "Tokyo"})]))

    async def main():
        async with agentkit.arun_stream(watched_model([first]), "weather?", tools=[get_weather]) as stream:
            async for event in stream:
                if event.kind == "tool_call_delta":
                    break
        return stream.run

    result = asyncio.run(main())
    assert first.closed and result.stop_reason is StopReason.USER_CANCEL and unanswered_calls(result.messages) == []


def test_a_stream_that_breaks_after_its_first_piece_ends_the_run_in_error_every_call_answered():
    """No retry once the caller has seen part of an answer: HTTPModel.stream's rule, so the run's too."""
    cut = Watched(chat_chunks(["It is "])[:-2])  # no finish chunk, no [DONE]
    with pytest.raises(ModelCallError) as info:
        list(agentkit.run_stream(watched_model([cut]), "weather?", tools=[get_weather]))
    assert info.value.run.stop_reason is StopReason.ERROR and unanswered_calls(info.value.run.messages) == []


def test_run_stream_streams_by_itself_and_refuses_a_stream_switch():
    with pytest.raises(TypeError, match="stream"):
        agentkit.run_stream(ScriptedModel(["hi"]), "hi", stream=False)
    assert "stream" not in __import__("inspect").signature(agentkit.run_stream).parameters

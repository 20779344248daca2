"""HTTPModel's parts, each tested alone: no HTTPModel, no network (a MockTransport at most).

classify (a status + a body + a codec -> one typed, scrubbed ProviderError), a call's retry state (a
sequence of outcomes -> waits, fallbacks, records), decode (bytes -> ModelTurn), the clients, send, the
stored conversations and the environment; and the package's shape: collaborators, not base classes.
"""

from __future__ import annotations

import ast
import asyncio
import json
import random
import re
import types
from pathlib import Path

import httpx
import pytest

from agentkit.core.errors import (
    AuthenticationError,
    BadRequestError,
    BadResponseError,
    ProviderConnectionError,
    ProviderTimeout,
    RateLimitError,
    ServerError,
)
from agentkit.core.types import Message, ModelOptions, ModelTurn, ToolCall, Usage
from agentkit.http import environment
from agentkit.http.classify import Classifier
from agentkit.http.clients import Clients
from agentkit.http.deadlines import AttemptClock
from agentkit.http.decode import Decoder
from agentkit.http.model import HTTPModel
from agentkit.http.request import AttemptRequest, join_url
from agentkit.http.retries import RetryPlan
from agentkit.http.retry_state import RetryState
from agentkit.http.send import Sender
from agentkit.http.stored import StoredConversations
from agentkit.providers import contract, get_codec
from agentkit.sim.wire import get_server
from agentkit.sim.wire.common import ChatRequest

KEY = "-".join(["sk", "test", "SECRET", "0123456789abcdef"])  # built at run time: no key-shaped literal
TURN = ModelTurn("Sunny.", (ToolCall.from_raw("c1", "get_weather", {"city": "Paris"}),), "tool_calls",
                 usage=Usage(10, 4), model="m-1")


def request(model: str = "m-1", *, stream: bool = False, history: tuple = (), clock: AttemptClock | None = None,
            continued: str | None = None) -> AttemptRequest:
    return AttemptRequest(model, "http://x/v1/chat/completions", "/v1/chat/completions", {}, {"model": model},
                          stream, clock or AttemptClock(None), history, continued=continued)


def classifier(fmt: str = "openai-chat", **kw) -> Classifier:
    return Classifier(fmt, get_codec(fmt), [KEY], **kw)


# --- the package's shape ------------------------------------------------------------------------------------

def test_http_model_has_no_base_classes_and_no_part_imports_the_model_back():
    assert HTTPModel.__mro__ == (HTTPModel, object)
    folder = Path(__file__).resolve().parents[1] / "agentkit" / "http"
    for path in folder.glob("*.py"):
        if path.name in ("__init__.py", "model.py"):
            continue
        imported = {node.module for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                    if isinstance(node, ast.ImportFrom) and node.level == 1}
        assert "model" not in imported and None not in imported, path.name  # no `from . import ...` either


def test_a_codec_that_states_no_optional_fact_gets_the_contracts_defaults(clean_env):
    """HTTPModel reads the optional facts through the contract: a codec that leaves them out gets its defaults."""
    chat = get_codec("openai-chat")
    bare = types.ModuleType("bare")
    bare.__dict__.update({k: v for k, v in vars(chat).items() if not k.startswith("__") and k not in contract.DEFAULTS})
    assert contract.conforms(bare) == [] and set(contract.DEFAULTS) == {
        "KEY_REQUIRED", "STREAM_FRAMING", "SERVER_SIDE_FALLBACK", "CONTINUATION_FIELD"}
    seen: list[httpx.Request] = []

    def reply(request):
        seen.append(request)
        return httpx.Response(200, json=get_server("openai-chat").build_response(TURN, chat_request()))

    model = HTTPModel("m", "bare", codec=bare, api_key=KEY, fallback_models=["n"], continue_stored_responses=True,
                      transport=httpx.MockTransport(reply))
    assert (model.framing, model.continue_stored) == ("sse", False)
    model.complete([Message.user("hi")], options=ModelOptions(stream=False))
    assert "models" not in json.loads(seen[0].content)  # no server-side fallback list
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):  # a key is required at the provider's URL
        HTTPModel("m", "bare", codec=bare)


# --- classify: a status, a body and a codec -----------------------------------------------------------------

def test_an_error_status_is_typed_by_the_codec_and_scrubbed_of_the_key():
    body = {"type": "error", "error": {"type": "overloaded_error", "message": f"Overloaded for {KEY}"}}
    earlier = (("m-1", 503),)
    error = classifier("anthropic").status_error(httpx.Response(529, json=body), request(history=earlier))
    assert type(error) is ServerError and error.retryable and error.status == 529
    assert (error.provider, error.model, error.error_type) == ("anthropic", "m-1", "overloaded_error")
    assert KEY not in error.message and KEY not in json.dumps(error.body) and "***" in error.message
    assert error.attempts == [("m-1", 503), ("m-1", 529)]


def test_a_retry_after_header_wins_over_the_hint_in_the_body():
    body = {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED", "details": [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}]}}
    errors = classifier("gemini")
    assert errors.status_error(httpx.Response(429, json=body), request()).retry_after == 3.0
    hinted = errors.status_error(httpx.Response(429, json=body, headers={"retry-after-ms": "40"}), request())
    assert type(hinted) is RateLimitError and hinted.retry_after == 0.04


def test_a_body_the_codec_cannot_read_is_still_typed_by_its_status():
    error = classifier().status_error(httpx.Response(502, content=b"<html>bad gateway</html>"), request())
    assert type(error) is ServerError and error.status == 502 and "bad gateway" in error.message


@pytest.mark.parametrize("raised, expected, error_type", [
    (httpx.ConnectError("refused"), ProviderConnectionError, "ConnectError"),
    (httpx.RemoteProtocolError("peer closed"), ProviderConnectionError, "RemoteProtocolError"),
    (httpx.LocalProtocolError("bad header"), BadRequestError, "LocalProtocolError"),
    (httpx.ReadTimeout("slow"), ProviderTimeout, "ReadTimeout"),
])
def test_what_httpx_raises_becomes_one_provider_error(raised, expected, error_type):
    with pytest.raises(expected) as info, classifier().transport_errors(request()):
        raise raised
    assert info.value.error_type == error_type and info.value.__cause__ is None


@pytest.mark.parametrize("stream, error_type", [(False, "timeout"), (True, "stalled")])
def test_a_timeout_is_named_by_the_bound_that_passed(stream, error_type):
    clock = AttemptClock(1.0)
    clock.since -= 2.0  # the attempt's bound passed a second ago
    with pytest.raises(ProviderTimeout) as info, classifier(attempt_timeout=1.0).transport_errors(
            request(stream=stream, clock=clock)):
        raise httpx.ReadTimeout("slow")
    assert info.value.error_type == error_type and "timeout=1 s" in info.value.message


def test_what_a_codec_raises_on_a_2xx_body_is_a_bad_response():
    with pytest.raises(BadResponseError) as info, classifier().decoding(request()):
        raise KeyError("choices")
    assert info.value.error_type == "invalid_response" and info.value.status == 200


# --- a call's retry state: a sequence of outcomes -----------------------------------------------------------

class NoJitter(random.Random):
    def random(self) -> float:
        return 0.0


def state_for(models=("a", "b"), max_retries: int = 1, **kw) -> RetryState:
    return RetryState(RetryPlan(models, max_retries, 0.5, 8.0, 60.0, NoJitter()), number=7, **kw)


def test_a_call_retries_then_falls_back_then_records_every_attempt_once():
    recorded, seen = [], []
    state = state_for(recorders=[recorded], on_attempt=seen.append)
    busy = ServerError("busy", status=503)
    assert (state.plan.model, state.failed(request("a"), busy)) == ("a", 0.5)   # retry the same model
    assert (state.failed(request("a"), busy), state.plan.model) == (0.0, "b")   # retries used up: fall back
    state.succeeded(request("b"))
    assert [(a.model, a.outcome, a.call) for a in state.attempts] == [("a", 503, 7), ("a", 503, 7), ("b", 200, 7)]
    assert recorded == state.attempts == seen
    assert state.history() == (("a", 503), ("a", 503), ("b", 200))


def test_a_call_gives_up_by_raising_the_last_error():
    state = state_for(models=("a",), max_retries=0)
    with pytest.raises(BadRequestError):
        state.failed(request("a"), BadRequestError("messages: field required", status=400))
    assert [a.outcome for a in state.attempts] == [400]


def test_a_spent_budget_raises_at_once():
    state = state_for(total_timeout=30.0)
    spent = ProviderTimeout("used up", error_type="total_timeout")
    with pytest.raises(ProviderTimeout):
        state.failed(request("a"), spent)


def test_a_refused_continuation_is_forgotten_and_the_call_goes_again_whole_at_once():
    stored = StoredConversations()
    stored.remember("resp_1", "a", (Message.user("q"), Message.assistant("hi")))
    state = state_for(stored=stored)
    gone = BadRequestError("Previous response with id 'resp_1' not found.", status=400)
    assert state.failed(request("a", continued="resp_1"), gone) == 0.0
    assert state.stored is None and stored.continuation("a", [Message.user("q"), Message.assistant("hi"),
                                                               Message.user("more")]) is None


def test_a_stream_spoilt_after_its_first_event_rewrites_its_record_everywhere():
    recorded: list = []
    state = state_for(recorders=[recorded])
    state.succeeded(request("a"))
    state.spoilt(BadResponseError("cut", status=200, error_type="invalid_response"))
    assert [(a.ok, a.error) for a in state.attempts] == [(False, "BadResponseError")] and recorded == state.attempts


# --- decode: bytes -> ModelTurn -----------------------------------------------------------------------------

def chat_request() -> ChatRequest:
    return ChatRequest("m-1", (Message.user("Weather in Paris?"),))


def test_a_body_decodes_to_the_turn_the_server_encoded():
    body = json.dumps(get_server("openai-chat").build_response(TURN, chat_request())).encode()
    turn = Decoder(get_codec("openai-chat"), classifier()).turn(body, request())
    assert (turn.text, [(c.name, c.arguments) for c in turn.tool_calls]) == ("Sunny.", [("get_weather",
                                                                                        {"city": "Paris"})])


@pytest.mark.parametrize("content, words", [(b'{"id": "x", "choi', "not valid JSON (Unterminated string"),
                                            (b"[" * 5000, "nested too deep"),
                                            (b'["not", "an", "object"]', "not a JSON object")])  # the codec's words
def test_bytes_that_are_no_answer_are_a_bad_response(content, words):
    with pytest.raises(BadResponseError, match=re.escape(words)) as info:
        Decoder(get_codec("openai-chat"), classifier()).turn(content, request())
    assert (info.value.provider, info.value.model, info.value.status) == ("openai-chat", "m-1", 200)


def test_a_stream_decodes_event_by_event_to_the_same_turn():
    events = get_server("anthropic").build_stream(TURN, chat_request())
    stream = Decoder(get_codec("anthropic"), classifier("anthropic")).stream(request(stream=True))
    for event in events:
        stream.feed(event)
    assert [(c.name, c.arguments) for c in stream.turn().tool_calls] == [("get_weather", {"city": "Paris"})]


# --- the clients and send ----------------------------------------------------------------------------------

def answer(request: httpx.Request) -> httpx.Response:
    asked = get_server("openai-chat").parse_request(json.loads(request.content))
    return httpx.Response(200, json=get_server("openai-chat").build_response(TURN, asked))


def test_our_clients_are_made_once_reused_and_closed_and_yours_are_left_open():
    ours = Clients(httpx.Timeout(5.0), transport=httpx.MockTransport(answer))
    client = ours.sync()
    assert ours.sync() is client
    ours.close()
    assert client.is_closed and ours.client is None
    yours = httpx.Client(transport=httpx.MockTransport(answer))
    given = Clients(httpx.Timeout(5.0), client=yours)
    assert given.sync() is yours
    given.close()
    assert not yours.is_closed
    yours.close()


def test_each_event_loop_gets_its_own_async_client():
    clients = Clients(httpx.Timeout(5.0), transport=httpx.MockTransport(answer))

    async def current():
        return clients.asynchronous()

    first, second = asyncio.run(current()), asyncio.run(current())
    assert first is not second
    asyncio.run(clients.aclose())


def sender(handler) -> Sender:
    errors = classifier()
    codec = get_codec("openai-chat")
    return Sender(Clients(httpx.Timeout(5.0), transport=httpx.MockTransport(handler)), errors,
                  Decoder(codec, errors), "sse")


def wire_request(stream: bool = False) -> AttemptRequest:
    wire = get_codec("openai-chat").build_request("m-1", [Message.user("Weather?")], (), ModelOptions(stream=stream))
    return AttemptRequest("m-1", "http://x/v1/chat/completions", "/v1/chat/completions", dict(wire.headers),
                          wire.body, stream, AttemptClock(5.0))


def test_send_reads_one_attempt_and_records_the_size_it_sent():
    sent = wire_request()
    assert sender(answer).send(sent).text == "Sunny." and sent.sent[0] > 0


def test_send_does_not_retry_it_raises_the_classified_error():
    calls: list = []

    def busy(request):
        calls.append(request)
        return httpx.Response(503, json={"error": {"message": "down", "type": "server_error"}})

    with pytest.raises(ServerError, match="down"):
        sender(busy).send(wire_request())
    assert len(calls) == 1


def test_open_hands_back_the_events_once_the_first_is_in_hand():
    def streamed(request):
        asked = get_server("openai-chat").parse_request(json.loads(request.content))
        events = get_server("openai-chat").build_stream(TURN, asked)
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content="".join(e.encode() for e in events).encode())

    events = list(sender(streamed).open(wire_request(stream=True)))
    assert events[-1].data == "[DONE]" and any("get_weather" in e.data for e in events)
    empty = sender(lambda r: httpx.Response(200, headers={"content-type": "text/event-stream"}, content=b""))
    with pytest.raises(BadResponseError, match="before its first event"):
        empty.open(wire_request(stream=True))


def test_join_url_keeps_a_query_of_either_side():
    assert join_url("https://h/v1beta/", "/models/m:generateContent") == "https://h/v1beta/models/m:generateContent"
    assert join_url("https://h/v1beta?key=x", "models/m:s?alt=sse") == "https://h/v1beta/models/m:s?alt=sse&key=x"


# --- stored conversations -----------------------------------------------------------------------------------

def test_a_conversation_continues_only_where_it_extends_a_stored_one_exactly():
    question, answer_, follow = Message.user("q"), Message.assistant("a"), Message.user("more")
    stored = StoredConversations(size=1)
    stored.remember("resp_1", "m", (Message.system("Be brief."), question, answer_))
    assert stored.continuation("m", [Message.system("Be brief."), question, answer_, follow]) == (
        "resp_1", [Message.system("Be brief."), follow])  # instructions are sent again
    assert stored.continuation("other-model", [Message.system("Be brief."), question, answer_, follow]) is None
    assert stored.continuation("m", [Message.user("edited"), question, answer_, follow]) is None
    stored.remember("resp_2", "m", (Message.user("x"), Message.assistant("y")))  # size 1: resp_1 goes
    assert stored.continuation("m", [Message.system("Be brief."), question, answer_, follow]) is None


# --- the environment ---------------------------------------------------------------------------------------

def test_the_environment_names_a_provider_only_on_purpose(clean_env):
    clean_env.setenv("OPENAI_API_KEY", KEY)
    assert environment.configured_format() is None  # a key alone names nothing
    clean_env.setenv("AGENTKIT_PROVIDER", "Claude")
    assert environment.configured_format() == "anthropic"
    clean_env.setenv("AGENTKIT_PROVIDER", "sim")
    assert environment.configured_format() is None
    clean_env.delenv("AGENTKIT_PROVIDER")
    clean_env.setenv("AGENTKIT_BASE_URL", "http://localhost:11434/v1")
    assert environment.configured_format("ollama") == "ollama"
    assert environment.base_url(None, "https://api.openai.com/v1") == "http://localhost:11434/v1"
    assert environment.base_url("http://given/v1/", "https://api.openai.com/v1") == "http://given/v1"


def test_a_key_is_read_stripped_and_refused_naming_where_it_came_from(clean_env):
    clean_env.setenv("GEMINI_API_KEY", f"  {KEY}\n")
    assert environment.read_key(None, ("GEMINI_API_KEY", "GOOGLE_API_KEY")) == KEY
    clean_env.setenv("GEMINI_API_KEY", KEY[:6] + "\u201d" + KEY[6:])
    with pytest.raises(Exception, match="GEMINI_API_KEY has a non-ASCII character at position 6") as info:
        environment.read_key(None, ("GEMINI_API_KEY",), provider="gemini")
    assert KEY[6:] not in str(info.value) and info.value.provider == "gemini"
    assert environment.read_key("", ("GEMINI_API_KEY",)) is None  # api_key="" sends none

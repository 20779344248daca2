"""HTTPModel over httpx.MockTransport: URLs and auth per format, retries, backoff, fallbacks, key redaction.

The fake server answers with the codecs' own server side (parse_request -> build_response / build_stream),
so a passing test also says the client and server halves of each format agree.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import json
import logging
import random
import re
import subprocess
import sys
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit.core.errors import (
    AuthenticationError,
    BadRequestError,
    BadResponseError,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from agentkit.core.types import Message, ModelOptions, ModelTurn, ToolCall, ToolSpec, Usage
from agentkit.http import HTTPModel, retry_after_seconds
from agentkit.http.redaction import redact
from agentkit.http.retries import Attempt, RetryPlan, backoff_delay, moves_to_fallback
from agentkit.providers import FORMATS, get_codec
from agentkit.sim.wire import get_server

KEY = "-".join(["sk", "test", "SECRET", "0123456789abcdef"])  # built at run time: no key-shaped literal

MESSAGES = [Message.user("What's the weather and the time in Paris?")]
TOOLS = [
    ToolSpec("get_weather", "Current weather for a city",
             {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    ToolSpec("get_time", "Local time in a zone",
             {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}),
]
TURN = ModelTurn(
    text="Looking both up.",
    tool_calls=(ToolCall.from_raw("call_w1", "get_weather", '{"city": "Paris"}'),
                ToolCall.from_raw("call_t2", "get_time", '{"timezone": "Europe/Paris"}')),
    stop="tool_calls",
    usage=Usage(96, 48),
)

#: format -> (URL the default base builds, auth header, its expected value)
EXPECTED = {
    "openai-chat": ("https://api.openai.com/v1/chat/completions", "authorization", f"Bearer {KEY}"),
    "openai-responses": ("https://api.openai.com/v1/responses", "authorization", f"Bearer {KEY}"),
    "anthropic": ("https://api.anthropic.com/v1/messages", "x-api-key", KEY),
    "gemini": ("https://generativelanguage.googleapis.com/v1beta/models/m-1:generateContent",
               "x-goog-api-key", KEY),
    "openrouter": ("https://openrouter.ai/api/v1/chat/completions", "authorization", f"Bearer {KEY}"),
    "ollama": ("http://localhost:11434/api/chat", "authorization", f"Bearer {KEY}"),
}


class Fake:
    """A MockTransport handler: first the scripted replies (responses, exceptions, callables), then `turn`
    encoded by the codec's server side, streamed when the request asked for it."""

    def __init__(self, fmt: str = "openai-chat", script=(), turn: ModelTurn = TURN):
        self.fmt, self.wire, self.turn = fmt, get_server(fmt), turn
        self.script = list(script)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.script:
            item = self.script.pop(0)
            if isinstance(item, Exception):
                raise item
            return item(request) if callable(item) else item
        return self.answer(request)

    def answer(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        model, stream = None, bool(body.get("stream"))
        match = re.search(r"/models/([^/:]+):(\w+)", request.url.path)
        if match:  # Gemini: model and streaming are in the URL
            model, stream = match.group(1), match.group(2).startswith("stream")
        chat = self.wire.parse_request(body, model)
        if stream:
            events = self.wire.build_stream(self.turn, chat)
            return httpx.Response(200, headers={"content-type": "text/event-stream"},
                                  content="".join(e.encode() for e in events).encode())
        return httpx.Response(200, json=self.wire.build_response(self.turn, chat))

    @property
    def models(self) -> list[str]:
        out = []
        for r in self.requests:
            m = re.search(r"/models/([^/:]+):", r.url.path)
            out.append(m.group(1) if m else json.loads(r.content).get("model"))
        return out


def error(status: int, message: str = "boom", headers: dict | None = None, **extra) -> httpx.Response:
    return httpx.Response(status, headers=headers, json={"error": {"message": message, "type": "x", **extra}})


class Sleeps(list):
    """Records the waits instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(round(seconds, 6))

    async def asleep(self, seconds: float) -> None:
        self.append(round(seconds, 6))


def make(fake: Fake, model: str = "m-1", fmt: str | None = None, sleeps: Sleeps | None = None,
         **kw) -> HTTPModel:
    kw.setdefault("api_key", KEY)
    kw.setdefault("seed", 0)
    sleeps = sleeps if sleeps is not None else Sleeps()
    return HTTPModel(model, fmt or fake.fmt, transport=httpx.MockTransport(fake), sleep=sleeps,
                     asleep=sleeps.asleep, **kw)


def same_turn(a: ModelTurn, b: ModelTurn) -> bool:
    """Equal in what every format carries (servers mint their own call ids; raw text vs object differs)."""
    def key(t: ModelTurn):
        return t.text, [(c.name, c.arguments) for c in t.tool_calls], t.stop, t.usage
    return key(a) == key(b)


# --- build: URL, auth header, body per format ------------------------------------------------------------

@pytest.mark.parametrize("fmt", list(FORMATS))
def test_each_format_posts_to_its_url_with_its_auth_header_and_decodes(fmt):
    fake = Fake(fmt)
    with make(fake) as model:
        turn = model.complete(MESSAGES, TOOLS, ModelOptions())
    url, header, value = EXPECTED[fmt]
    (request,) = fake.requests
    assert str(request.url) == url
    assert request.headers[header] == value
    assert "key=" not in str(request.url)  # Gemini's key goes in the header, never the query string
    assert same_turn(turn, TURN)
    if fmt == "anthropic":
        assert request.headers["anthropic-version"]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_streaming_reassembles_the_same_turn_as_a_plain_call(fmt):
    fake = Fake(fmt)
    model = make(fake)
    plain = model.complete(MESSAGES, TOOLS, ModelOptions())
    streamed = model.complete(MESSAGES, TOOLS, ModelOptions(stream=True))
    assert same_turn(streamed, plain) and same_turn(streamed, TURN)
    if get_codec(fmt).STREAM_FRAMING == "sse":
        assert fake.requests[1].headers["accept"] == "text/event-stream"
    if fmt == "gemini":
        assert fake.requests[1].url.path.endswith(":streamGenerateContent")
        assert fake.requests[1].url.params["alt"] == "sse"


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_async_path_gives_what_the_sync_path_gives(fmt):
    fake = Fake(fmt)
    model = make(fake)

    async def both():
        async with model:
            return (await model.acomplete(MESSAGES, TOOLS, ModelOptions()),
                    await model.acomplete(MESSAGES, TOOLS, ModelOptions(stream=True)))

    plain, streamed = asyncio.run(both())
    sync = model.complete(MESSAGES, TOOLS, ModelOptions())
    assert same_turn(plain, sync) and same_turn(streamed, sync)
    assert [str(r.url) for r in fake.requests[:1]] == [str(fake.requests[2].url)]


def test_stream_yields_raw_events_then_holds_the_turn():
    fake = Fake("openai-chat")
    stream = make(fake).stream(MESSAGES, TOOLS)
    events = list(stream)
    assert events[-1].data == "[DONE]"
    assert any("get_weather" in e.data for e in events)
    assert same_turn(stream.turn, TURN)


def test_astream_yields_raw_events_then_holds_the_turn():
    fake = Fake("anthropic")
    model = make(fake)

    async def collect():
        stream = model.astream(MESSAGES, TOOLS)
        names = [e.event async for e in stream]
        return names, stream.turn

    names, turn = asyncio.run(collect())
    assert names[0] == "message_start" and names[-1] == "message_stop"
    assert same_turn(turn, TURN)


def test_stream_retries_until_the_first_event_arrives():
    fake = Fake("openai-chat", [error(503), error(429, headers={"retry-after-ms": "10"})])
    sleeps = Sleeps()
    stream = make(fake, sleeps=sleeps).stream(MESSAGES, TOOLS)
    assert list(stream) and same_turn(stream.turn, TURN)
    assert len(fake.requests) == 3 and sleeps[1] == 0.01


def test_extra_body_and_headers_are_sent():
    fake = Fake("openai-chat")
    make(fake, extra_body={"seed": 7}, headers={"X-Title": "agentkit"}).complete(MESSAGES, TOOLS)
    request = fake.requests[0]
    assert json.loads(request.content)["seed"] == 7
    assert request.headers["x-title"] == "agentkit"


def test_openrouter_sends_the_fallback_list_as_models():
    fake = Fake("openrouter", [error(502)])
    make(fake, "a/one", fallback_models=["b/two", "c/three"], max_retries=0).complete(MESSAGES, TOOLS)
    bodies = [json.loads(r.content) for r in fake.requests]
    assert bodies[0]["models"] == ["a/one", "b/two", "c/three"]
    assert bodies[1]["model"] == "b/two" and bodies[1]["models"] == ["b/two", "c/three"]


def test_a_codec_without_server_side_fallback_gets_no_models_list():
    fake = Fake("openai-chat", [error(502)])
    make(fake, "a", fallback_models=["b"], max_retries=0).complete(MESSAGES, TOOLS)
    assert all("models" not in json.loads(r.content) for r in fake.requests)
    assert [json.loads(r.content)["model"] for r in fake.requests] == ["a", "b"]


def test_http_model_never_branches_on_a_format_name():
    """Format knowledge lives in the codecs: HTTPModel reads their facts, it never asks `format == ...`."""
    import agentkit.http.model

    tree = ast.parse(inspect.getsource(agentkit.http.model))
    compared = {node.value for compare in ast.walk(tree) if isinstance(compare, ast.Compare)
                for node in ast.walk(compare) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert not compared & (set(FORMATS) | {"ollama"})


@pytest.mark.parametrize("part", ["environment", "request", "retry_state", "retries", "deadlines", "clients",
                                  "send", "classify", "decode", "stored", "redaction"])
def test_no_part_of_http_model_branches_on_a_format_name(part):
    """The same for HTTPModel's parts: they read the codec's facts, never a format's name."""
    tree = ast.parse(inspect.getsource(importlib.import_module(f"agentkit.http.{part}")))
    compared = {node.value for compare in ast.walk(tree) if isinstance(compare, ast.Compare)
                for node in ast.walk(compare) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert not compared & (set(FORMATS) | {"ollama"})


@pytest.mark.parametrize("kw", [{"timeout": 0}, {"timeout": -1.0}, {"total_timeout": 0},
                                {"total_timeout": float("nan")}, {"backoff": -1}, {"max_delay": -0.5}])
def test_time_settings_are_checked_when_built(kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        HTTPModel("m", base_url="http://x/v1", **kw)


def test_infinite_time_limits_mean_no_limit():
    model = make(Fake(), timeout=float("inf"), total_timeout=float("inf"))
    assert same_turn(model.complete(MESSAGES, TOOLS), TURN) and model.total_timeout is None


def test_timeout_is_set_on_every_request():
    seen = []

    def handler(request):
        seen.append(request.extensions["timeout"])
        return Fake().answer(request)

    model = HTTPModel("m", base_url="http://x/v1", timeout=2.5, transport=httpx.MockTransport(handler))
    model.complete(MESSAGES)
    assert seen == [{"connect": 2.5, "read": 2.5, "write": 2.5, "pool": 2.5}]


# --- keys: where they come from, and where they never go ---------------------------------------------------

def test_missing_key_for_a_provider_url_names_the_env_var(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AGENTKIT_BASE_URL", raising=False)
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
        HTTPModel("gpt-4.1-mini")


def test_missing_gemini_key_names_both_env_vars(monkeypatch):
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "AGENTKIT_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(AuthenticationError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        HTTPModel("gemini-2.5-flash", "gemini")


def test_key_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("AGENTKIT_BASE_URL", raising=False)
    fake = Fake("anthropic")
    HTTPModel("claude-x", "anthropic", transport=httpx.MockTransport(fake)).complete(MESSAGES)
    assert fake.requests[0].headers["x-api-key"] == KEY


def test_custom_base_url_needs_no_key_and_sends_none(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake = Fake()
    model = HTTPModel("llama3.1", base_url="http://localhost:11434/v1/", transport=httpx.MockTransport(fake))
    assert same_turn(model.complete(MESSAGES, TOOLS), TURN)
    assert str(fake.requests[0].url) == "http://localhost:11434/v1/chat/completions"
    assert "authorization" not in fake.requests[0].headers


def test_a_provider_that_needs_no_key_at_its_own_url_is_called_without_one(monkeypatch):
    """A local Ollama takes no key (the codec says KEY_REQUIRED = False): none is demanded, none sent."""
    for name in ("OLLAMA_API_KEY", "AGENTKIT_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    fake = Fake("ollama")
    model = HTTPModel("qwen3", "ollama", transport=httpx.MockTransport(fake))
    assert same_turn(model.complete(MESSAGES, TOOLS), TURN)
    assert str(fake.requests[0].url) == "http://localhost:11434/api/chat"
    assert "authorization" not in fake.requests[0].headers


def test_agentkit_base_url_env_overrides_the_default(monkeypatch):
    monkeypatch.setenv("AGENTKIT_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert HTTPModel("m").base_url == "http://127.0.0.1:8000/v1"


def test_the_key_never_shows_in_repr_errors_attempts_or_logs(caplog):
    caplog.set_level(logging.DEBUG)
    echo = f"Incorrect API key provided: {KEY}. See https://x/?key={KEY} and Bearer {KEY}"
    fake = Fake("openai-chat", [error(503, echo), error(401, echo)])
    model = make(fake, fallback_models=["m-2"])
    assert KEY not in repr(model) and "api_key='***'" in repr(model)
    with pytest.raises(AuthenticationError) as info:
        model.complete(MESSAGES, TOOLS)
    err = info.value
    texts = [str(err), repr(err), err.message, json.dumps(err.body), repr(model.last_attempts), caplog.text,
             repr(err.attempts)]
    assert all(KEY not in t for t in texts)
    assert "***" in err.message


def test_transport_error_text_is_scrubbed():
    fake = Fake("openai-chat", [httpx.ConnectError(f"cannot reach https://h/?key={KEY}")] * 3)
    with pytest.raises(ProviderConnectionError) as info:
        make(fake).complete(MESSAGES)
    assert KEY not in str(info.value) and "key=***" in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_redact_and_retry_after_helpers():
    assert redact("GET /m?key=AIza123&alt=sse", ["nothing"]) == "GET /m?key=***&alt=sse"
    assert redact("Authorization: Bearer sk-abc.def", []) == "Authorization: Bearer ***"
    assert retry_after_seconds({"retry-after-ms": "50", "retry-after": "3"}) == 0.05
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    date = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds({"retry-after": date}, now=now.timestamp()) == 30.0
    past = format_datetime(now, usegmt=True)
    assert retry_after_seconds({"retry-after": past}, now=now.timestamp() + 9) == 0


# --- retry: which failures, how long to wait --------------------------------------------------------------

def test_429_waits_what_retry_after_ms_says():
    fake = Fake("openai-chat", [error(429, headers={"retry-after-ms": "50", "retry-after": "1"})])
    sleeps = Sleeps()
    model = make(fake, sleeps=sleeps)
    assert same_turn(model.complete(MESSAGES, TOOLS), TURN)
    assert sleeps == [0.05]
    assert [(a.status, a.error, a.wait) for a in model.last_attempts] == [
        (429, "RateLimitError", 0.0), (200, None, 0.05)]


def test_retry_after_seconds_header_is_honoured():
    fake = Fake("openai-chat", [error(429, headers={"retry-after": "2"})])
    sleeps = Sleeps()
    make(fake, sleeps=sleeps).complete(MESSAGES)
    assert sleeps == [2.0]


def test_503_then_200_uses_backoff_with_jitter():
    fake = Fake("openai-chat", [error(503)])
    sleeps = Sleeps()
    make(fake, sleeps=sleeps).complete(MESSAGES)
    assert len(sleeps) == 1 and 0.375 <= sleeps[0] <= 0.5


@pytest.mark.parametrize("status", [408, 409, 500, 502, 504])
def test_other_retryable_statuses_are_retried(status):
    fake = Fake("openai-chat", [error(status)])
    model = make(fake)
    model.complete(MESSAGES)
    assert [a.status for a in model.last_attempts] == [status, 200]


def test_529_overloaded_is_retried_for_anthropic():
    overloaded = httpx.Response(529, json={"type": "error", "error": {"type": "overloaded_error",
                                                                      "message": "Overloaded"}})
    fake = Fake("anthropic", [overloaded, overloaded])
    model = make(fake)
    assert same_turn(model.complete(MESSAGES, TOOLS), TURN)
    assert [a.outcome for a in model.last_attempts] == [529, 529, 200]
    assert model.last_attempts[0].error_type == "overloaded_error"


def test_gemini_retry_info_in_the_body_sets_the_wait():
    body = {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED", "details": [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}]}}
    fake = Fake("gemini", [httpx.Response(429, json=body)])
    sleeps = Sleeps()
    make(fake, sleeps=sleeps).complete(MESSAGES)
    assert sleeps == [3.0]


def test_a_wait_longer_than_max_retry_wait_is_not_slept_it_falls_over():
    fake = Fake("openai-chat", [error(429, headers={"retry-after": "3600"})])
    sleeps = Sleeps()
    model = make(fake, sleeps=sleeps, fallback_models=["m-2"])
    model.complete(MESSAGES)
    assert sleeps == [] and fake.models == ["m-1", "m-2"]


def test_a_wait_longer_than_max_retry_wait_without_fallback_raises_at_once():
    fake = Fake("openai-chat", [error(429, headers={"retry-after": "120"})])
    sleeps = Sleeps()
    with pytest.raises(RateLimitError) as info:
        make(fake, sleeps=sleeps, max_retry_wait=60).complete(MESSAGES)
    assert sleeps == [] and info.value.retry_after == 120 and info.value.attempts == [("m-1", 429)]


def test_retries_are_capped_by_max_retries_and_the_last_error_is_raised():
    fake = Fake("openai-chat", [error(503, "down")] * 5)
    sleeps = Sleeps()
    with pytest.raises(ServerError, match="down") as info:
        make(fake, sleeps=sleeps, max_retries=3).complete(MESSAGES)
    assert len(fake.requests) == 4 and len(sleeps) == 3
    assert info.value.attempts == [("m-1", 503)] * 4
    assert info.value.model == "m-1" and "m-1" in str(info.value)


def test_transport_failures_are_retried_and_named():
    fake = Fake("openai-chat", [httpx.ConnectError("refused"), httpx.ReadTimeout("slow"),
                                httpx.RemoteProtocolError("peer closed connection")])
    model = make(fake)
    with pytest.raises(ProviderConnectionError) as info:
        model.complete(MESSAGES)
    assert info.value.attempts == [("m-1", "ConnectError"), ("m-1", "ReadTimeout"),
                                   ("m-1", "RemoteProtocolError")]
    # A refused or dropped connection is not a timeout: each failure has its own type.
    assert [a.error for a in model.last_attempts] == ["ProviderConnectionError", "ProviderTimeout",
                                                      "ProviderConnectionError"]


def test_invalid_json_and_wrong_shape_are_bad_responses_and_retried():
    fake = Fake("openai-chat", [httpx.Response(200, content=b'{"id": "x", "choi'),
                                httpx.Response(200, json=["not", "an", "object"])])
    model = make(fake)
    assert same_turn(model.complete(MESSAGES, TOOLS), TURN)
    assert [a.error for a in model.last_attempts] == ["BadResponseError", "BadResponseError", None]
    assert model.last_attempts[0].error_type == "invalid_json"


def test_a_cut_stream_is_retried():
    cut = httpx.Response(200, headers={"content-type": "text/event-stream"},
                         content=b'data: {"id":"c","object":"chat.completion.chunk","choices":[]}\n\n')
    fake = Fake("openai-chat", [cut])
    model = make(fake)
    assert same_turn(model.complete(MESSAGES, TOOLS, ModelOptions(stream=True)), TURN)
    assert [a.error for a in model.last_attempts] == ["BadResponseError", None]


def test_an_error_event_inside_a_stream_is_typed_and_retried():
    body = 'data: {"error": {"message": "Provider disconnected", "type": "server_error"}}\n\ndata: [DONE]\n\n'
    broken = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())
    fake = Fake("openai-chat", [broken, broken, broken])
    with pytest.raises(ServerError, match="Provider disconnected") as info:  # a server_error: retryable
        make(fake).complete(MESSAGES, options=ModelOptions(stream=True))
    assert len(info.value.attempts) == 3


def test_json_instead_of_an_event_stream_is_a_bad_response():
    fake = Fake("openai-chat", [httpx.Response(200, json={"id": "x"})])
    model = make(fake)
    model.complete(MESSAGES, options=ModelOptions(stream=True))
    assert model.last_attempts[0].error == "BadResponseError"


def test_an_error_status_on_a_stream_is_read_and_typed():
    fake = Fake("openai-chat", [error(429, "slow down", headers={"retry-after-ms": "5"})])
    sleeps = Sleeps()
    make(fake, sleeps=sleeps).complete(MESSAGES, options=ModelOptions(stream=True))
    assert sleeps == [0.005]


# --- backoff ---------------------------------------------------------------------------------------------

def test_backoff_doubles_and_is_capped():
    rng = random.Random(0)

    def flat(n):
        return backoff_delay(n, rng, shorten_by=0)

    assert [flat(n) for n in range(7)] == [0.5, 1, 2, 4, 8, 8, 8]
    assert flat(10_000) == 8  # no overflow for absurd retry counts
    jittered = [backoff_delay(n, rng) for n in range(10)]
    assert all(0 < d <= 8 for d in jittered) and all(d >= 6 for d in jittered[4:])
    assert backoff_delay(3, rng, backoff=1.0, max_delay=5.0, shorten_by=0) == 5.0


def test_httpmodel_backoff_uses_the_words_of_retry():
    """HTTPModel(backoff=, max_delay=) mean what agentkit.Retry(backoff=, max_delay=) mean."""
    fake = Fake("openai-chat", [error(503)] * 3)
    sleeps = Sleeps()
    make(fake, sleeps=sleeps, max_retries=3, backoff=0.25, max_delay=0.4).complete(MESSAGES)
    assert len(sleeps) == 3 and all(0 < s <= 0.4 for s in sleeps) and sleeps[0] <= 0.25
    with pytest.raises(TypeError, match="backoff"):
        HTTPModel("m", base_url="http://x/v1", backoff=object())


def test_jitter_is_deterministic_with_a_seed():
    def waits(seed):
        fake = Fake("openai-chat", [error(503)] * 2)
        sleeps = Sleeps()
        make(fake, sleeps=sleeps, seed=seed).complete(MESSAGES)
        return sleeps

    assert waits(7) == waits(7)
    assert waits(7) != waits(8)


def test_retry_plan_walks_retries_then_fallbacks():
    class NoJitter(random.Random):
        def random(self):
            return 0.0

    plan = RetryPlan(["a", "b"], max_retries=1, backoff=0.5, max_delay=8.0, max_retry_wait=60, rng=NoJitter())
    busy = ServerError("busy", status=503)
    assert (plan.model, plan.after(busy)) == ("a", 0.5)
    assert (plan.after(busy), plan.model) == (0.0, "b")
    assert plan.after(RateLimitError("x", status=429, retry_after=0.25)) == 0.25
    assert plan.after(busy) is None


def test_retry_plan_keeps_within_the_budget():
    def plan():
        return RetryPlan(["a", "b"], max_retries=3, backoff=0.5, max_delay=8.0, max_retry_wait=60,
                         rng=random.Random(0))

    slow = RateLimitError("x", status=429, retry_after=2.0)
    assert plan().after(slow, time_left=10.0) == 2.0          # fits: wait
    p = plan()
    assert (p.after(slow, time_left=1.5), p.model) == (0.0, "b")  # does not fit: next model, at once
    assert plan().after(slow, time_left=0.0) is None          # nothing left: give up
    assert RetryPlan(["a"], 3, 0.5, 8.0, 60, random.Random(0)).after(slow, time_left=1.5) is None


def test_which_client_errors_move_to_the_next_model():
    assert moves_to_fallback(BadRequestError("model `m-1` does not exist", status=404), "m-1")
    assert moves_to_fallback(BadRequestError("m-1 does not support tools", status=400), "m-1")
    assert moves_to_fallback(BadRequestError("tool use is not supported", status=400), "x")
    assert not moves_to_fallback(BadRequestError("messages: field required", status=400), "m-1")
    assert not moves_to_fallback(AuthenticationError("bad key", status=401), "m-1")
    assert not moves_to_fallback(BadRequestError("too large", status=413), "m-1")


# --- fall back ---------------------------------------------------------------------------------------------

def test_fallback_after_the_primary_retries_are_used_up():
    fake = Fake("openai-chat", [error(503)] * 3)
    sleeps = Sleeps()
    model = make(fake, "primary", sleeps=sleeps, fallback_models=["backup"])
    assert same_turn(model.complete(MESSAGES, TOOLS), TURN)
    assert fake.models == ["primary"] * 3 + ["backup"]
    assert [a.wait > 0 for a in model.last_attempts] == [False, True, True, False]


def test_fallback_on_invalid_json():
    fake = Fake("openai-chat", [httpx.Response(200, content=b"<html>gateway</html>")] * 2)
    model = make(fake, "primary", fallback_models=["backup"], max_retries=1)
    model.complete(MESSAGES)
    assert [(a.model, a.outcome) for a in model.last_attempts] == [
        ("primary", "invalid_json"), ("primary", "invalid_json"), ("backup", 200)]


def test_fallback_for_streams_too():
    fake = Fake("openai-chat", [error(500)] * 2)
    model = make(fake, "primary", fallback_models=["backup"], max_retries=1)
    assert same_turn(model.complete(MESSAGES, TOOLS, ModelOptions(stream=True)), TURN)
    assert fake.models == ["primary", "primary", "backup"]


def test_every_model_failing_raises_the_last_error_with_all_attempts():
    fake = Fake("openai-chat", [error(503), error(503), error(429), error(429)])
    with pytest.raises(RateLimitError) as info:
        make(fake, "a", fallback_models=["b"], max_retries=1).complete(MESSAGES)
    assert info.value.attempts == [("a", 503), ("a", 503), ("b", 429), ("b", 429)]


def test_a_plain_400_raises_at_once_without_retry_or_fallback():
    fake = Fake("openai-chat", [error(400, "messages[0].content: expected a string")])
    sleeps = Sleeps()
    model = make(fake, sleeps=sleeps, fallback_models=["m-2"])
    with pytest.raises(BadRequestError) as info:
        model.complete(MESSAGES)
    assert len(fake.requests) == 1 and sleeps == [] and info.value.attempts == [("m-1", 400)]


@pytest.mark.parametrize("status", [401, 403, 413, 422])
def test_other_client_errors_raise_at_once(status):
    fake = Fake("openai-chat", [error(status)])
    with pytest.raises(ProviderError) as info:
        make(fake, fallback_models=["m-2"]).complete(MESSAGES)
    assert info.value.status == status and len(fake.requests) == 1


def test_model_not_found_moves_to_the_fallback_without_retrying():
    fake = Fake("openai-chat", [error(404, "The model `m-1` does not exist", code="model_not_found")])
    model = make(fake, fallback_models=["m-2"])
    model.complete(MESSAGES)
    assert fake.models == ["m-1", "m-2"]


def test_tools_not_supported_moves_to_the_fallback():
    fake = Fake("openai-chat", [error(400, "registry.ollama.ai/library/m-1 does not support tools")])
    model = make(fake, fallback_models=["m-2"])
    model.complete(MESSAGES, TOOLS)
    assert fake.models == ["m-1", "m-2"]


def test_async_retries_and_falls_back_like_sync():
    def run(use_async):
        fake = Fake("openai-chat", [error(429, headers={"retry-after-ms": "50"}), error(503), error(503)])
        sleeps = Sleeps()
        model = make(fake, "a", sleeps=sleeps, fallback_models=["b"])
        if use_async:
            turn = asyncio.run(model.acomplete(MESSAGES, TOOLS))
        else:
            turn = model.complete(MESSAGES, TOOLS)
        return turn, sleeps, [(a.model, a.outcome, a.wait) for a in model.last_attempts]

    sync_turn, sync_sleeps, sync_attempts = run(False)
    async_turn, async_sleeps, async_attempts = run(True)
    assert same_turn(sync_turn, async_turn)
    assert (sync_sleeps, sync_attempts) == (async_sleeps, async_attempts)
    assert [o for _, o, _ in sync_attempts] == [429, 503, 503, 200]


# --- observability, clients ------------------------------------------------------------------------------

def test_on_attempt_sees_every_attempt():
    seen: list[Attempt] = []
    fake = Fake("openai-chat", [error(503)])
    make(fake, on_attempt=seen.append).complete(MESSAGES)
    assert [(a.model, a.path, a.status, a.ok) for a in seen] == [
        ("m-1", "/v1/chat/completions", 503, False), ("m-1", "/v1/chat/completions", 200, True)]
    assert seen[0].to_dict()["error"] == "ServerError"


def test_the_client_is_made_once_and_reused_then_closed():
    fake = Fake("openai-chat")
    model = make(fake)
    model.complete(MESSAGES)
    client = model._clients.client
    model.complete(MESSAGES)
    assert model._clients.client is client
    model.close()
    assert client.is_closed and model._clients.client is None


def test_an_injected_client_is_used_and_left_open():
    fake = Fake("openai-chat")
    client = httpx.Client(transport=httpx.MockTransport(fake))
    with HTTPModel("m", base_url="http://x/v1", client=client) as model:
        model.complete(MESSAGES)
    assert len(fake.requests) == 1 and not client.is_closed
    client.close()


def test_async_client_survives_a_new_event_loop():
    fake = Fake("openai-chat")
    model = make(fake)
    asyncio.run(model.acomplete(MESSAGES))
    asyncio.run(model.acomplete(MESSAGES))  # a second asyncio.run: a new loop, a new client
    assert len(fake.requests) == 2
    asyncio.run(model.aclose())


# --- from_env --------------------------------------------------------------------------------------------

def test_from_env_without_anything_says_what_to_do(clean_env):
    with pytest.raises(ValueError, match="AGENTKIT_PROVIDER"):
        HTTPModel.from_env()


def test_from_env_knows_no_simulator_a_key_alone_or_provider_sim_names_nothing(clean_env):
    """The simulator is the lab's fall-back (`agentkit.lab.from_env`); HTTPModel only reads the environment."""
    clean_env.setenv("OPENAI_API_KEY", KEY)
    with pytest.raises(ValueError, match="AGENTKIT_PROVIDER"):
        HTTPModel.from_env()
    clean_env.setenv("AGENTKIT_PROVIDER", "sim")
    with pytest.raises(ValueError, match="AGENTKIT_PROVIDER"):
        HTTPModel.from_env()
    assert "sim_url" not in inspect.signature(HTTPModel.from_env).parameters
    assert not hasattr(HTTPModel, "sim_base_url")


def test_from_env_provider_takes_its_key_from_the_environment(clean_env):
    clean_env.setenv("ANTHROPIC_API_KEY", KEY)
    clean_env.setenv("AGENTKIT_PROVIDER", "anthropic")
    model = HTTPModel.from_env()
    assert model.format == "anthropic" and model.base_url.startswith("https://api.anthropic.com")
    assert KEY not in repr(model)


def test_from_env_agentkit_provider_wins(clean_env):
    clean_env.setenv("OPENAI_API_KEY", KEY)
    clean_env.setenv("ANTHROPIC_API_KEY", KEY)
    clean_env.setenv("AGENTKIT_PROVIDER", "claude")
    clean_env.setenv("AGENTKIT_MODEL", "claude-x")
    assert (HTTPModel.from_env().format, HTTPModel.from_env().model) == ("anthropic", "claude-x")


def test_from_env_base_url_points_the_default_format_at_a_local_server(clean_env):
    clean_env.setenv("AGENTKIT_BASE_URL", "http://localhost:11434/v1")
    clean_env.setenv("AGENTKIT_MODEL", "llama3.1")
    model = HTTPModel.from_env()
    assert (model.format, model.model) == ("openai-chat", "llama3.1")
    assert model.base_url == "http://localhost:11434/v1"


def test_from_env_at_a_base_url_needs_the_model_named(clean_env):
    """A local server has only the models installed there: the default name would be a 404 later."""
    clean_env.setenv("AGENTKIT_BASE_URL", "http://localhost:11434/v1")
    with pytest.raises(ValueError, match="AGENTKIT_MODEL is not"):
        HTTPModel.from_env()


def test_from_env_rejects_an_unknown_provider(clean_env):
    clean_env.setenv("AGENTKIT_PROVIDER", "nope")
    with pytest.raises(ValueError, match="nope"):
        HTTPModel.from_env()


def test_importing_agentkit_does_not_import_http():
    code = "import sys, agentkit; print('agentkit.http' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         check=False)
    if out.returncode != 0:
        pytest.skip(f"`import agentkit` fails for another reason: {out.stderr.strip().splitlines()[-1]}")
    assert out.stdout.strip() == "False"


# --- hostile bodies: nesting deeper than Python's recursion limit -----------------------------------------

def nested(depth: int, kind: str = "list") -> bytes:
    opening, closing = ("[", "]") if kind == "list" else ('{"a":', "}")
    return (opening * depth + "1" + closing * depth).encode()


def deep_reply(where: str, depth: int, kind: str = "list"):
    """A MockTransport handler answering with nesting `depth` deep in a body, an error body or an event."""
    body = nested(depth, kind)

    def handler(request: httpx.Request) -> httpx.Response:
        if where == "body":
            return httpx.Response(200, content=body, headers={"content-type": "application/json"})
        if where == "error body":
            return httpx.Response(500, content=body, headers={"content-type": "application/json"})
        return httpx.Response(200, content=b"data: " + body + b"\n\ndata: [DONE]\n\n",
                              headers={"content-type": "text/event-stream"})

    return handler


def outcome_of(handler, how: str) -> BaseException | ModelTurn:
    model = HTTPModel("m", base_url="http://x/v1", api_key=KEY, transport=httpx.MockTransport(handler),
                      max_retries=0)
    stream = ModelOptions(stream=True)
    try:
        if how == "complete":
            return model.complete(MESSAGES)
        if how == "complete(stream)":
            return model.complete(MESSAGES, options=stream)
        if how == "acomplete":
            return asyncio.run(model.acomplete(MESSAGES))
        if how == "acomplete(stream)":
            return asyncio.run(model.acomplete(MESSAGES, options=stream))
        if how == "stream":
            return list(model.stream(MESSAGES))
        raise AssertionError(how)
    except BaseException as exc:  # noqa: BLE001 - the test looks at what came out
        return exc


HOW = {"body": ["complete", "acomplete"],
       "error body": ["complete", "acomplete", "complete(stream)", "acomplete(stream)", "stream"],
       "event": ["complete(stream)", "acomplete(stream)", "stream"]}


@pytest.mark.parametrize("where,how", [(w, h) for w, hs in HOW.items() for h in hs])
def test_5000_nested_arrays_are_a_bad_response_not_a_recursion_error(where, how):
    error = outcome_of(deep_reply(where, 5000), how)
    expected = ServerError if where == "error body" else BadResponseError
    assert isinstance(error, expected), repr(error)
    assert not isinstance(error, RecursionError) and len(str(error)) < 1000


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(1, 20_000), kind=st.sampled_from(["list", "object"]),
       where_how=st.sampled_from([(w, h) for w, hs in HOW.items() for h in hs]))
def test_no_nesting_depth_escapes_as_recursion_error(depth, kind, where_how):
    """Whatever the depth, a call ends in a turn or a typed ProviderError — never a RecursionError."""
    where, how = where_how
    result = outcome_of(deep_reply(where, depth, kind), how)
    assert isinstance(result, (ModelTurn, list, ProviderError)), repr(result)[:300]


# --- errors built once, whole; attempts per call ------------------------------------------------------------

@pytest.fixture
def constructions(monkeypatch):
    """How often ProviderError.__init__ ran on each error, and with which attempts."""
    seen: list[tuple[ProviderError, list]] = []  # holds every error, so no id is reused

    def counting(self, *args, **kwargs):
        seen.append((self, list(kwargs.get("attempts", ()))))
        original(self, *args, **kwargs)

    original = ProviderError.__init__
    monkeypatch.setattr(ProviderError, "__init__", counting)
    return seen


@pytest.mark.parametrize("script,expected", [
    ([error(503), error(429), error(401, "bad key")], AuthenticationError),
    ([httpx.ConnectError("refused")] * 3, ProviderConnectionError),
    ([httpx.Response(200, content=b"{")] * 3, BadResponseError),
])
def test_the_raised_error_is_built_once_with_every_attempt(constructions, script, expected):
    fake = Fake("openai-chat", script)
    with pytest.raises(expected) as info:
        make(fake).complete(MESSAGES)
    err = info.value
    runs = [attempts for made, attempts in constructions if made is err]
    assert len(runs) == 1  # __init__ never re-run on it
    assert runs[0] == err.attempts and len(err.attempts) == 3  # given whole, not added afterwards


def test_a_stream_spoilt_after_its_first_event_is_recorded_as_a_failure():
    cut = "data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m-1",
                                 "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]})
    fake = Fake("openai-chat", [httpx.Response(200, headers={"content-type": "text/event-stream"},
                                               content=(cut + "\n\ndata: {broken\n\n").encode())])
    model = make(fake)
    with model.record_attempts() as recorded:
        stream = model.stream(MESSAGES)
        with pytest.raises(BadResponseError) as info:
            list(stream)
    (attempt,) = stream.attempts
    assert info.value.attempts == [("m-1", attempt.outcome)]
    assert attempt is model.last_attempts[0] is recorded[0]
    assert not attempt.ok and attempt.error == "BadResponseError"


def test_a_codecs_not_retryable_429_stays_not_retryable():
    """The codec's own answer (a 429 that is billing, not load) survives HTTPModel building its error."""
    fake = Fake("openai-chat", [error(429, "You exceeded your current quota", code="insufficient_quota",
                                      type="insufficient_quota")])
    with pytest.raises(RateLimitError) as info:
        make(fake, fallback_models=["m-2"]).complete(MESSAGES)
    assert not info.value.retryable and len(fake.requests) == 1


def test_concurrent_calls_keep_their_own_attempts():
    """last_attempts is one slot; record_attempts() (per thread or task) and the error's are per call."""
    requests: list = []

    def handler(request):
        requests.append(request)
        return error(503) if len(requests) == 1 else Fake().answer(request)  # the first call is retried

    model = HTTPModel("m", base_url="http://x/v1", api_key=KEY, sleep=lambda s: None, asleep=_no_wait,
                      transport=httpx.MockTransport(handler))

    async def ask():
        with model.record_attempts() as attempts:
            await model.acomplete(MESSAGES)
        return attempts

    async def both():
        return await asyncio.gather(ask(), ask())

    first, second = asyncio.run(both())
    assert [a.outcome for a in first] == [503, 200] and [a.outcome for a in second] == [200]
    assert len({a.call for a in first}) == 1 and {a.call for a in first} != {a.call for a in second}


async def _no_wait(seconds):
    await asyncio.sleep(0)  # no waiting, but the other task runs here: the two calls interleave


def test_record_attempts_sees_only_this_models_calls():
    a, b = make(Fake()), make(Fake())
    with a.record_attempts() as seen:
        a.complete(MESSAGES)
        b.complete(MESSAGES)
        a.complete(MESSAGES)
    assert [x.call for x in seen] == [1, 2]


# --- stored conversations (continue_stored_responses) and the size of what is sent --------------------------

def stored_fake() -> Fake:
    """A Responses server that answers with TURN (two calls) and id resp_1, and records what it got."""
    return Fake("openai-responses", turn=replace(TURN, id="resp_1"))


def follow_up(turn: ModelTurn) -> list[Message]:
    results = [Message("tool", "ok", (), c.id, c.name) for c in turn.tool_calls]
    return [Message.system("Be brief."), *MESSAGES, turn.as_message(), *results]


def test_a_call_that_extends_a_stored_response_sends_only_the_new_items_and_its_id():
    fake = stored_fake()
    model = make(fake, continue_stored_responses=True)
    first = model.complete([Message.system("Be brief."), *MESSAGES], TOOLS)
    model.complete(follow_up(first), TOOLS)
    sent = json.loads(fake.requests[1].content)
    assert sent["previous_response_id"] == "resp_1"
    assert sent["instructions"] == "Be brief."  # instructions are not carried over: sent again
    assert [i["type"] for i in sent["input"]] == ["function_call_output"] * 2
    sizes = [a.request_bytes for a in model.last_attempts]
    assert sizes == [len(fake.requests[1].content)]


def test_without_the_option_or_with_store_false_the_whole_conversation_goes():
    for options in ({}, {"continue_stored_responses": True, "extra_body": {"store": False}}):
        fake = stored_fake()
        model = make(fake, **options)
        first = model.complete([Message.system("Be brief."), *MESSAGES], TOOLS)
        model.complete(follow_up(first), TOOLS)
        sent = json.loads(fake.requests[1].content)
        assert "previous_response_id" not in sent and len(sent["input"]) == 6, options  # user, text, 2 calls, 2 results


def test_a_refused_continuation_is_sent_again_whole_at_once():
    fake = stored_fake()
    sleeps = Sleeps()
    model = make(fake, sleeps=sleeps, continue_stored_responses=True)
    first = model.complete([Message.system("Be brief."), *MESSAGES], TOOLS)
    fake.script = [error(400, "Previous response with id 'resp_1' not found.", code="previous_response_not_found")]
    assert model.complete(follow_up(first), TOOLS).tool_calls
    again = json.loads(fake.requests[-1].content)
    assert "previous_response_id" not in again and len(again["input"]) == 6
    assert [a.status for a in model.last_attempts] == [400, 200] and sleeps == []


def test_formats_that_store_nothing_ignore_the_option():
    fake = Fake("anthropic")
    model = make(fake, continue_stored_responses=True)
    assert model.continue_stored is False
    first = model.complete(MESSAGES, TOOLS)
    model.complete([*MESSAGES, first.as_message(), *[Message("tool", "ok", (), c.id, c.name)
                                                     for c in first.tool_calls]], TOOLS)
    assert len(json.loads(fake.requests[1].content)["messages"]) == 3


def test_a_changed_history_is_not_continued():
    fake = stored_fake()
    model = make(fake, continue_stored_responses=True)
    first = model.complete([Message.system("Be brief."), *MESSAGES], TOOLS)
    edited = follow_up(first)
    edited[1] = Message.user("What's the weather in Lyon?")  # not the conversation the server stored
    model.complete(edited, TOOLS)
    assert "previous_response_id" not in json.loads(fake.requests[1].content)

"""The simulator's HTTP side over real loopback HTTP: routes, auth, quirks, faults, limits, lifecycle.

These tests pin the *server's* behaviour, so most use a tiny stub `respond` (what the simulated
models decide is tested elsewhere); the real codecs write every body.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from agentkit import sim
from agentkit.core.types import ModelTurn, ToolCall, Usage
from agentkit.sim import faults as F
from agentkit.sim.app import UnknownModel
from agentkit.sim.wire.common import ChatRequest

ROOT = Path(__file__).resolve().parents[1]
FORMATS = ("openai-chat", "openai-responses", "anthropic", "gemini", "openrouter", "ollama")
STUB_MODELS = ("sim-reasoner", "gpt-4.1", "claude-sonnet-4-5", "gemini-2.5-flash")


def stub_respond(request: ChatRequest) -> ModelTurn:
    """Calls every offered tool on a fresh user turn, otherwise answers quoting the tool results."""
    if request.model.startswith("no-such-"):
        raise UnknownModel(request.model)
    if request.model == "sim-crash":
        raise RuntimeError("a bug in the decision logic")
    last = request.messages[-1]
    if request.tools and last.role == "user" and request.options.tool_choice != "none":
        calls = tuple(ToolCall.from_raw(f"call_{i}", t.name, {"city": "Tokyo"}) for i, t in enumerate(request.tools))
        return ModelTurn(None, calls, "tool_calls", usage=Usage(20, 8), model=request.model, id="turn1")
    results = [m.content for m in request.messages if m.role == "tool"]
    text = "Results: " + "; ".join(results) if results else "Hello from the stub."
    return ModelTurn(text, stop="stop", usage=Usage(20, 8), model=request.model, id="turn2")


# --- requests in each format -----------------------------------------------------------------------

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def body_for(fmt: str, model: str = "sim-reasoner", *, tools: bool = False, stream: bool = False,
             tool_choice: object = None, text: str = "東京の天気は？") -> dict:
    if fmt in ("openai-chat", "openrouter"):
        body: dict = {"model": model, "messages": [{"role": "user", "content": text}]}
        if tools:
            body["tools"] = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
    elif fmt == "openai-responses":
        body = {"model": model, "input": text}
        if tools:
            body["tools"] = [{"type": "function", "name": "get_weather", "parameters": WEATHER, "strict": False}]
    elif fmt == "anthropic":
        body = {"model": model, "max_tokens": 256, "messages": [{"role": "user", "content": text}]}
        if tools:
            body["tools"] = [{"name": "get_weather", "input_schema": WEATHER}]
    elif fmt == "ollama":  # streams unless told otherwise, so `stream` is always stated
        body = {"model": model, "messages": [{"role": "user", "content": text}], "stream": stream}
        if tools:
            body["tools"] = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
    else:
        body = {"contents": [{"role": "user", "parts": [{"text": text}]}]}
        if tools:
            body["tools"] = [{"functionDeclarations": [{"name": "get_weather", "parametersJsonSchema": WEATHER}]}]
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    if stream and fmt not in ("gemini", "ollama"):
        body["stream"] = True
    return body


def path_for(fmt: str, model: str = "sim-reasoner", *, stream: bool = False, sse: bool = True) -> str:
    if fmt == "gemini":
        if stream:
            return f"/v1beta/models/{model}:streamGenerateContent" + ("?alt=sse" if sse else "")
        return f"/v1beta/models/{model}:generateContent"
    return {"openai-chat": "/v1/chat/completions", "openai-responses": "/v1/responses",
            "anthropic": "/v1/messages", "openrouter": "/api/v1/chat/completions", "ollama": "/api/chat"}[fmt]


def headers_for(fmt: str, **extra: str) -> dict:
    headers = {"authorization": "Bearer sk-sim-test"}
    if fmt == "anthropic":
        headers["anthropic-version"] = "2023-06-01"
    return {**headers, **extra}


def assert_error_shape(fmt: str, response: httpx.Response, status: int) -> dict:
    """The body is that provider's own error shape, with the given status."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    if fmt in ("openai-chat", "openai-responses"):
        assert set(body) == {"error"} and {"message", "type", "param", "code"} <= set(body["error"])
    elif fmt == "openrouter":
        assert body["error"]["code"] == status and isinstance(body["error"]["message"], str)
    elif fmt == "anthropic":
        assert body["type"] == "error" and {"type", "message"} <= set(body["error"])
    elif fmt == "ollama":
        assert set(body) == {"error"} and isinstance(body["error"], str)
    else:
        assert body["error"]["code"] == status and {"message", "status"} <= set(body["error"])
    return body


def error_kind(fmt: str, body: dict) -> str | None:
    """The provider's machine-readable error word (type / status)."""
    if fmt == "gemini":
        return body["error"]["status"]
    if fmt in ("openrouter", "ollama"):
        return None
    return body["error"]["type"]


@pytest.fixture(scope="module")
def server():
    with sim.serve(respond=stub_respond, models=STUB_MODELS) as s:
        yield s


@pytest.fixture(scope="module")
def client(server):
    # One client for the module: building an httpx.Client (its SSL context) costs ~30 ms each time.
    with httpx.Client(base_url=server.url, timeout=10) as c:
        yield c


@pytest.fixture(scope="module")
def strict_client():
    """A simulator that wants a key (require_key=True), as the real APIs do; the default one needs none."""
    with sim.serve(respond=stub_respond, models=STUB_MODELS, require_key=True) as s:
        with httpx.Client(base_url=s.url, timeout=10) as c:
            yield c


def post(client: httpx.Client, fmt: str, model: str = "sim-reasoner", *, stream: bool = False, sse: bool = True,
         headers: dict | None = None, **body_options) -> httpx.Response:
    return client.post(path_for(fmt, model, stream=stream, sse=sse),
                       json=body_for(fmt, model, stream=stream, **body_options),
                       headers=headers if headers is not None else headers_for(fmt))


# --- every route -----------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_every_route_answers_a_tool_call_in_its_format(client, fmt):
    r = post(client, fmt, tools=True)
    assert r.status_code == 200, r.text
    text = r.text
    assert "get_weather" in text and "Tokyo" in text
    body = r.json()
    if fmt in ("openai-chat", "openrouter"):
        assert body["choices"][0]["finish_reason"] == "tool_calls"
    elif fmt == "openai-responses":
        assert body["output"][0]["type"] == "function_call"
    elif fmt == "anthropic":
        assert body["stop_reason"] == "tool_use"
    elif fmt == "ollama":
        assert body["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    else:
        assert body["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "get_weather"


#: What the end of each format's stream looks like on the wire.
STREAM_ENDS = {"openai-chat": "data: [DONE]", "openrouter": "data: [DONE]",
               "openai-responses": "event: response.completed", "anthropic": "event: message_stop"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_route_streams_in_its_framing(client, fmt):
    r = post(client, fmt, stream=True)
    assert r.status_code == 200, r.text
    assert "content-length" not in r.headers  # chunked: events arrive as they are written
    if fmt == "ollama":  # newline-delimited JSON, the last line says done
        assert r.headers["content-type"] == "application/x-ndjson"
        lines = r.text.splitlines()
        assert r.text.endswith("}\n") and json.loads(lines[-1])["done"] is True
        return
    assert r.headers["content-type"].startswith("text/event-stream")
    if fmt == "gemini":
        assert r.text.startswith("data: {") and '"finishReason":"STOP"' in r.text
    else:
        assert STREAM_ENDS[fmt] in r.text
    if fmt == "openrouter":
        assert r.text.startswith(": OPENROUTER PROCESSING")
    assert r.text.endswith("\n\n")


def test_gemini_stream_without_alt_sse_is_one_json_array(client):
    with client.stream("POST", path_for("gemini", stream=True, sse=False), json=body_for("gemini", tools=True),
                       headers=headers_for("gemini")) as r:
        pieces = list(r.iter_raw())
    assert r.headers["content-type"].startswith("application/json")
    whole = b"".join(pieces)
    chunks = json.loads(whole)
    assert isinstance(chunks, list) and chunks
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


def test_google_genai_default_v1_paths_are_served_too(client):
    r = client.post("/v1/models/gemini-2.5-flash:generateContent", json=body_for("gemini"),
                    headers={"x-goog-api-key": "k"})
    assert r.status_code == 200 and r.json()["candidates"]


@pytest.mark.parametrize("path,headers,fmt", [
    ("/v1/models", {"authorization": "Bearer k"}, "openai-chat"),
    ("/v1/models", {"x-api-key": "k", "anthropic-version": "2023-06-01"}, "anthropic"),
    ("/v1beta/models", {"x-goog-api-key": "k"}, "gemini"),
    ("/api/v1/models", {}, "openrouter"),  # OpenRouter's list is public
])
def test_model_lists_come_in_the_asking_clients_format(client, path, headers, fmt):
    r = client.get(path, headers=headers)
    assert r.status_code == 200, r.text
    body = r.json()
    if fmt == "gemini":
        assert body["models"][0]["name"] == "models/sim-reasoner"
    elif fmt == "anthropic":
        assert body["data"][0]["type"] == "model" and body["has_more"] is False
    else:
        assert [m["id"] for m in body["data"]] == list(STUB_MODELS)


def test_index_lists_routes_and_faults(client):
    body = client.get("/").json()
    assert "POST /v1/chat/completions" in body["routes"] and "429" in body["faults"]


# --- credentials and headers -----------------------------------------------------------------------

@pytest.mark.parametrize("fmt,headers,query", [
    ("openai-chat", {"authorization": "Bearer sk-x"}, ""),
    ("anthropic", {"x-api-key": "sk-ant-x", "anthropic-version": "2023-06-01"}, ""),
    ("anthropic", {"authorization": "Bearer sk-ant-x", "anthropic-version": "2026-10-21"}, ""),
    ("gemini", {"x-goog-api-key": "AIza-x"}, ""),
    ("gemini", {}, "?key=AIza-x"),
    ("openrouter", {"authorization": "Bearer sk-or-x", "http-referer": "https://x", "x-title": "kit"}, ""),
])
def test_every_auth_style_the_sdks_send_is_accepted(strict_client, fmt, headers, query):
    r = strict_client.post(path_for(fmt) + query, json=body_for(fmt), headers=headers)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_credentials_gets_the_providers_401_or_gemini_403_and_ollama_needs_none(strict_client, fmt):
    headers = {"anthropic-version": "2023-06-01"} if fmt == "anthropic" else {}
    r = post(strict_client, fmt, headers=headers)
    if fmt == "ollama":  # a local Ollama takes no key at all
        assert r.status_code == 200
        return
    status = 403 if fmt == "gemini" else 401
    body = assert_error_shape(fmt, r, status)
    expected = {"anthropic": "authentication_error", "gemini": "PERMISSION_DENIED"}.get(fmt)
    if expected:
        assert error_kind(fmt, body) == expected


def test_an_empty_bearer_token_is_no_credential(strict_client):
    r = post(strict_client, "openai-chat", headers={"authorization": "Bearer"})
    assert r.status_code == 401


def test_anthropic_requires_the_version_header(client):
    r = post(client, "anthropic", headers={"x-api-key": "k"})
    body = assert_error_shape("anthropic", r, 400)
    assert "anthropic-version" in body["error"]["message"]


def test_keys_are_never_echoed(client):
    secret = "sk-very-secret-1234567890"
    for fmt, model in (("openai-chat", "no-such-model"), ("anthropic", "sim-reasoner-429"), ("gemini", "sim-crash")):
        r = post(client, fmt, model, headers=headers_for(fmt, authorization=f"Bearer {secret}"))
        assert r.status_code >= 400
        assert secret not in r.text and all(secret not in v for v in r.headers.values())


def test_unknown_headers_are_ignored(client):
    r = post(client, "openai-chat", headers=headers_for("openai-chat", **{"x-stainless-retry-count": "0",
                                                                        "x-whatever": "1"}))
    assert r.status_code == 200


# --- the documented quirks -------------------------------------------------------------------------

def test_gpt6_with_tools_on_chat_completions_is_refused_like_the_migration_guide(client):
    r = post(client, "openai-chat", "gpt-6.1-sol", tools=True)
    body = assert_error_shape("openai-chat", r, 400)
    assert body["error"]["type"] == "invalid_request_error"
    assert "tool calling requires Responses" in body["error"]["message"]


@pytest.mark.parametrize("fmt,tools", [("openai-responses", True), ("openai-chat", False)])
def test_gpt6_works_on_responses_and_without_tools(client, fmt, tools):
    assert post(client, fmt, "gpt-6-astra", tools=tools).status_code == 200


@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-sonnet-5-5", "claude-fable-5-1", "claude-mythos-5-1",
                                   "claude-mythos-5-1-20261001"])
@pytest.mark.parametrize("choice", [{"type": "any"}, {"type": "tool", "name": "get_weather"}])
def test_claude_5x_refuses_forced_tool_choice_in_anthropics_words(client, model, choice):
    r = post(client, "anthropic", model, tools=True, tool_choice=choice)
    body = assert_error_shape("anthropic", r, 400)
    assert body["error"] == {"type": "invalid_request_error",
                             "message": 'tool_choice: type "tool" and "any" are not supported for this model.'}


def test_claude_5x_ids_with_dots_are_no_messages_api_model(client):
    body = assert_error_shape("anthropic", post(client, "anthropic", "claude-opus-5.5", tools=True), 404)
    assert body["error"] == {"type": "not_found_error", "message": "model: claude-opus-5.5"}


@pytest.mark.parametrize("choice", ["required", {"type": "function", "function": {"name": "get_weather"}}])
def test_openrouter_passes_the_claude_5x_refusal_on_and_auto_works(client, choice):
    model = "anthropic/claude-opus-5.5"
    body = assert_error_shape("openrouter", post(client, "openrouter", model, tools=True, tool_choice=choice), 400)
    assert body["error"]["message"] == 'tool_choice: type "tool" and "any" are not supported for this model.'
    assert post(client, "openrouter", model, tools=True, tool_choice="auto").status_code == 200


@pytest.mark.parametrize("model,choice", [("claude-opus-5-5", {"type": "auto"}),
                                          ("claude-sonnet-4-5", {"type": "any"})])
def test_auto_and_older_claude_models_are_fine(client, model, choice):
    assert post(client, "anthropic", model, tools=True, tool_choice=choice).status_code == 200


def test_quirks_see_through_fault_suffixes(client):
    r = post(client, "openai-chat", "gpt-6.1-sol-slow1", tools=True)
    assert r.status_code == 400


# --- faults --------------------------------------------------------------------------------------

RATE_LIMIT_KIND = {"openai-chat": "requests", "openai-responses": "requests", "anthropic": "rate_limit_error",
                   "gemini": "RESOURCE_EXHAUSTED", "openrouter": None, "ollama": None}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("how", ["suffix", "header"])
def test_429_has_retry_after_headers_and_the_providers_shape(client, fmt, how):
    if how == "suffix":
        r = post(client, fmt, "sim-reasoner-429")
    else:
        r = post(client, fmt, headers=headers_for(fmt, **{"x-sim-fault": "429=1500"}))
    body = assert_error_shape(fmt, r, 429)
    assert error_kind(fmt, body) == RATE_LIMIT_KIND[fmt]
    ms = "100" if how == "suffix" else "1500"
    assert r.headers["retry-after-ms"] == ms
    assert r.headers["retry-after"] == ("1" if how == "suffix" else "2")


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_instream_429_on_a_request_that_does_not_stream_is_a_whole_429_with_its_retry_after(client, fmt):
    r = post(client, fmt, headers=headers_for(fmt, **{"x-sim-fault": "instream=429"}))
    assert_error_shape(fmt, r, 429)
    assert r.headers["retry-after-ms"] == "100" and r.headers["retry-after"] == "1"


@pytest.mark.parametrize("fmt,status", [(f, s) for f in FORMATS for s in (500, 503)])
def test_server_errors_in_each_format(client, fmt, status):
    r = post(client, fmt, f"sim-reasoner-{status}")
    if fmt == "openrouter":  # a provider that fails reaches OpenRouter's client as 502 (its errors page)
        body = assert_error_shape(fmt, r, 502)
        assert body["error"]["message"].startswith("Your chosen model is down or we received an invalid response")
    else:
        assert_error_shape(fmt, r, status)


@pytest.mark.parametrize("fmt", FORMATS)
def test_529_is_anthropic_overloaded_and_503_elsewhere(client, fmt):
    r = post(client, fmt, "sim-reasoner-529")
    if fmt == "anthropic":
        body = assert_error_shape(fmt, r, 529)
        assert body["error"]["type"] == "overloaded_error"
    elif fmt == "openrouter":
        assert_error_shape(fmt, r, 502)
    else:
        body = assert_error_shape(fmt, r, 503)
        if fmt == "gemini":
            assert body["error"]["status"] == "UNAVAILABLE"


@pytest.mark.parametrize("fmt", FORMATS)
def test_request_ids_are_deterministic_headers(client, fmt):
    a, b = post(client, fmt), post(client, fmt)
    name = {"anthropic": "request-id", "gemini": None, "ollama": None}.get(fmt, "x-request-id")
    if name:
        assert a.headers[name] == b.headers[name] and a.headers[name].startswith("req_")
    assert a.content == b.content


@pytest.mark.parametrize("fmt", FORMATS)
def test_drop_closes_the_connection_without_a_response(client, fmt):
    with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
        post(client, fmt, "sim-reasoner-drop")
    assert post(client, fmt).status_code == 200  # the server is fine afterwards


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic", "gemini"])
def test_truncate_promises_more_body_than_it_sends(client, fmt):
    with pytest.raises(httpx.RemoteProtocolError, match="incomplete|complete message body"):
        post(client, fmt, headers=headers_for(fmt, **{"x-sim-fault": "truncate"}))


@pytest.mark.parametrize("fmt", FORMATS)
def test_badjson_is_200_with_a_body_that_does_not_parse(client, fmt):
    r = post(client, fmt, "sim-reasoner-badjson")
    assert r.status_code == 200 and int(r.headers["content-length"]) == len(r.content)
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.content)


def test_badjson_in_a_stream_corrupts_one_event_and_keeps_the_framing(client):
    r = post(client, "anthropic", stream=True, headers=headers_for("anthropic", **{"x-sim-fault": "badjson"}))
    assert r.status_code == 200 and r.text.endswith("\n\n")
    bad = 0
    for line in r.text.splitlines():
        if line.startswith("data: "):
            try:
                json.loads(line[6:])
            except json.JSONDecodeError:
                bad += 1
    assert bad == 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_cut_stream_delivers_some_events_then_breaks(client, fmt):
    received = bytearray()
    with pytest.raises(httpx.RemoteProtocolError), client.stream(
            "POST", path_for(fmt, "sim-reasoner-cut", stream=True),
            json=body_for(fmt, "sim-reasoner-cut", stream=True, tools=True), headers=headers_for(fmt)) as r:
        assert r.status_code == 200
        for piece in r.iter_raw():
            received += piece
    assert (b'{"model"' if fmt == "ollama" else b"data: {") in received
    if fmt in STREAM_ENDS:
        assert STREAM_ENDS[fmt].encode() not in received


def test_slow_and_latency_header_delay_the_answer(client):
    start = time.perf_counter()
    assert post(client, "openai-chat", "sim-reasoner-slow150").status_code == 200
    assert time.perf_counter() - start >= 0.15
    start = time.perf_counter()
    r = post(client, "anthropic", headers=headers_for("anthropic", **{"x-sim-latency-ms": "120"}))
    assert r.status_code == 200 and time.perf_counter() - start >= 0.12


def test_pace_spaces_stream_events(client):
    start = time.perf_counter()
    r = post(client, "openai-chat", stream=True, headers=headers_for("openai-chat", **{"x-sim-fault": "pace=10"}))
    events = r.text.count("data: ")
    assert time.perf_counter() - start >= (events - 1) * 0.01


def test_a_client_timeout_against_a_slow_model(client):
    with pytest.raises(httpx.ReadTimeout):
        client.post(path_for("openai-chat"), json=body_for("openai-chat", "sim-reasoner-slow2000"),
                    headers=headers_for("openai-chat"), timeout=0.2)


@pytest.mark.parametrize("value", ["teapot", "429,explode", "slow=fast"])
def test_unknown_fault_tokens_are_a_400_naming_the_known_ones(client, value):
    r = post(client, "openai-chat", headers=headers_for("openai-chat", **{"x-sim-fault": value}))
    body = assert_error_shape("openai-chat", r, 400)
    assert "x-sim-fault" in body["error"]["message"]


def test_bad_latency_header_is_a_400(client):
    r = post(client, "gemini", headers={"x-goog-api-key": "k", "x-sim-latency-ms": "soon"})
    assert_error_shape("gemini", r, 400)


# --- flaky: deterministic retries ---------------------------------------------------------------

def test_flaky_fails_the_first_n_attempts_of_the_same_request_then_succeeds(server, client):
    server.reset()
    body = body_for("openai-chat", "sim-reasoner-429-flaky2", text="flaky one")
    statuses = [client.post(path_for("openai-chat"), json=body, headers=headers_for("openai-chat")).status_code
                for _ in range(4)]
    assert statuses == [429, 429, 200, 200]
    # Another request has its own count; reset() forgets them all.
    other = body_for("openai-chat", "sim-reasoner-429-flaky2", text="flaky two")
    assert client.post(path_for("openai-chat"), json=other, headers=headers_for("openai-chat")).status_code == 429
    server.reset()
    assert client.post(path_for("openai-chat"), json=body, headers=headers_for("openai-chat")).status_code == 429


def test_flaky_alone_fails_once_with_503_and_combines_with_transport_faults(server, client):
    server.reset()
    headers = headers_for("anthropic", **{"x-sim-fault": "flaky"})
    assert post(client, "anthropic", text="once", headers=headers).status_code == 503
    assert post(client, "anthropic", text="once", headers=headers).status_code == 200
    headers = headers_for("anthropic", **{"x-sim-fault": "drop, flaky"})
    with pytest.raises(httpx.RemoteProtocolError):
        post(client, "anthropic", text="dropped once", headers=headers)
    assert post(client, "anthropic", text="dropped once", headers=headers).status_code == 200


def test_attempt_counter_is_bounded():
    counter = F.AttemptCounter(maxsize=3)
    for key in "abcd":
        counter.next(key)
    assert len(counter) == 3
    assert counter.next("a") == 1  # the oldest was forgotten
    assert counter.next("d") == 2


def test_fault_specs_parse_both_spellings():
    assert F.parse_spec("flaky=2, 429=250") == F.parse_spec("flaky2,429250") == F.FaultPlan(
        status=429, retry_after_ms=250, flaky=2)
    assert F.split_model("sim-reasoner-503-flaky3") == ("sim-reasoner", F.FaultPlan(status=503, flaky=3))
    assert F.split_model("gpt-4.1-mini") == ("gpt-4.1-mini", F.FaultPlan())
    assert F.split_model("slow") == ("slow", F.FaultPlan())  # a name is never all suffix


# --- OpenRouter's fallback list ------------------------------------------------------------------

def test_openrouter_falls_back_past_failing_and_unknown_models(client):
    body = body_for("openrouter", "sim-reasoner-503")
    body["models"] = ["sim-reasoner-503", "no-such-model", "gpt-4.1"]
    r = client.post(path_for("openrouter"), json=body, headers=headers_for("openrouter"))
    assert r.status_code == 200, r.text
    assert r.json()["model"] == "gpt-4.1"
    assert r.headers["x-generation-id"] == r.json()["id"]


def test_openrouter_header_fault_hits_the_first_model_only(client):
    body = {"models": ["sim-reasoner", "gpt-4.1"], "messages": [{"role": "user", "content": "hi"}]}
    r = client.post(path_for("openrouter"), json=body, headers=headers_for("openrouter", **{"x-sim-fault": "429"}))
    assert r.status_code == 200 and r.json()["model"] == "gpt-4.1"


def test_openrouter_answers_the_last_error_when_every_model_fails(client):
    body = body_for("openrouter", "sim-reasoner-500")
    body["models"] = ["sim-reasoner-500", "gpt-4.1-429"]
    r = client.post(path_for("openrouter"), json=body, headers=headers_for("openrouter"))
    assert_error_shape("openrouter", r, 429)


# --- bad input never gets a 500 ---------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_unknown_model_is_refused_in_the_providers_shape_and_status(client, fmt):
    # 404 everywhere but OpenRouter, which answers 400 "<model> is not a valid model ID"
    status = 400 if fmt == "openrouter" else 404
    body = assert_error_shape(fmt, post(client, fmt, "no-such-model"), status)
    assert "no-such-model" in json.dumps(body)


@pytest.mark.parametrize("fmt", FORMATS)
def test_body_over_the_limit_is_a_413_even_without_content_length(server, client, fmt):
    big = {"model": "sim-reasoner", "pad": "x" * (4 * 1024 * 1024)}
    r = client.post(path_for(fmt), content=json.dumps(big).encode(),
                    headers={**headers_for(fmt), "content-type": "application/json"})
    assert_error_shape(fmt, r, 413)

    def chunks():  # chunked transfer: the server counts while it reads
        for _ in range(5):
            yield b" " * (1024 * 1024)

    r = client.post(path_for(fmt), content=chunks(), headers={**headers_for(fmt), "content-type": "application/json"})
    assert "content-length" not in r.request.headers
    assert_error_shape(fmt, r, 413)
    assert post(client, fmt).status_code == 200


def test_size_limit_is_an_app_option():
    with sim.serve(respond=stub_respond, models=STUB_MODELS, max_body_bytes=100) as s:
        r = httpx.post(s.url + "/v1/chat/completions", json=body_for("openai-chat", text="x" * 200),
                       headers=headers_for("openai-chat"))
        assert r.status_code == 413


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("content,status", [(b"{not json", 400), (b"[1, 2]", 400), (b"", 400),
                                            (b"\xff\xfe", 400), (b"[" * 100_000, 400)])
def test_broken_json_is_a_400(client, fmt, content, status):
    r = client.post(path_for(fmt), content=content, headers={**headers_for(fmt), "content-type": "application/json"})
    assert_error_shape(fmt, r, status)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_non_json_content_type_is_a_415(client, fmt):
    r = client.post(path_for(fmt), content=json.dumps(body_for(fmt)),
                    headers={**headers_for(fmt), "content-type": "application/x-www-form-urlencoded"})
    assert_error_shape(fmt, r, 415)


@pytest.mark.parametrize("fmt", FORMATS)
def test_codec_validation_errors_are_4xx(client, fmt):
    r = client.post(path_for(fmt), json={"model": 42, "messages": "nope", "contents": 7},
                    headers=headers_for(fmt))
    assert 400 <= r.status_code < 500
    assert_error_shape(fmt, r, r.status_code)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_genuine_bug_is_a_500_still_in_the_providers_shape(client, fmt):
    assert_error_shape(fmt, post(client, fmt, "sim-crash"), 500)


@pytest.mark.parametrize("method,path,fmt,status", [
    ("POST", "/v1/nothing-here", "openai-chat", 404),
    ("GET", "/v1/chat/completions", "openai-chat", 405),
    ("POST", "/api/v1/nothing", "openrouter", 404),
    ("POST", "/v1beta/models/x:countEverything", "gemini", 404),
])
def test_unrouted_requests_get_the_providers_404_or_405(client, method, path, fmt, status):
    r = client.request(method, path, headers={"authorization": "Bearer k"})
    assert_error_shape(fmt, r, status)


# --- determinism -------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("stream", [False, True])
def test_same_request_gives_byte_identical_bodies(client, fmt, stream):
    a = post(client, fmt, tools=True, stream=stream)
    b = post(client, fmt, tools=True, stream=stream)
    assert a.status_code == 200 and a.content == b.content


# --- lifecycle ---------------------------------------------------------------------------------------

def _port_is_closed(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_serve_starts_and_stops_twice_without_leaking_threads():
    """Serving, stopping (twice: idempotent) and serving again leaves no thread and no open port. How
    fast it starts and stops is a matter of seconds, not asserted here (a busy machine is slower)."""
    before = set(threading.enumerate())
    for _ in range(2):
        s = sim.serve(respond=stub_respond, models=STUB_MODELS)
        assert s.url.startswith("http://127.0.0.1:") and s.running
        assert httpx.post(s.base_url("openai-chat") + "/chat/completions", json=body_for("openai-chat"),
                          headers=headers_for("openai-chat")).status_code == 200
        s.stop()
        s.stop()  # idempotent
        assert not s.running and _port_is_closed(s.port)
    assert set(threading.enumerate()) <= before


def test_stop_does_not_wait_for_a_request_in_flight():
    """Stopped while a slow answer (60 s) is pending, the server cuts the request instead of finishing it:
    the client sees its connection go, not a 200. The order of events shows it; no seconds are measured
    (the joins only guard against a hang)."""
    s = sim.serve(respond=stub_respond, models=STUB_MODELS)
    outcome: list[object] = []

    def slow_call():
        try:
            outcome.append(httpx.post(s.url + "/v1/chat/completions",
                                      json=body_for("openai-chat", "sim-reasoner-slow60000"),
                                      headers=headers_for("openai-chat"), timeout=120))
        except httpx.HTTPError as exc:
            outcome.append(exc)

    caller = threading.Thread(target=slow_call, daemon=True)
    caller.start()
    state = s._server.server_state
    for _ in range(3000):  # until uvicorn has read the request's headers: the request is in flight
        if state.total_requests:
            break
        time.sleep(0.01)
    assert state.total_requests == 1 and not outcome
    s.stop()
    caller.join(30)
    assert not caller.is_alive() and len(outcome) == 1
    assert isinstance(outcome[0], httpx.HTTPError), outcome  # cut off: the 60 s answer never came


def test_serve_works_as_context_manager_and_from_a_running_event_loop():
    import asyncio

    async def inside_a_loop():  # what a notebook cell does: the kernel's loop is running
        with sim.serve(respond=stub_respond, models=STUB_MODELS) as s:
            # A blocking call from inside the loop on purpose: with the server on this loop it would deadlock.
            sync = httpx.post(s.url + "/v1/messages", json=body_for("anthropic"),  # noqa: ASYNC210
                              headers=headers_for("anthropic"))
            async with httpx.AsyncClient() as c:
                r = await c.post(s.url + "/v1/messages", json=body_for("anthropic"),
                                 headers=headers_for("anthropic"))
            return sync.status_code, r.status_code

    assert asyncio.run(inside_a_loop()) == (200, 200)


def test_base_urls_for_each_client(server):
    u = server.url
    assert server.base_url("openai-chat") == u + "/v1"
    assert server.base_url("openrouter") == u + "/api/v1"
    assert server.base_url("gemini") == u + "/v1beta"
    assert server.sdk_base_url("anthropic") == u and server.sdk_base_url("gemini") == u


def test_serve_refuses_non_loopback_hosts():
    with pytest.raises(ValueError, match="loopback"):
        sim.serve(host="0.0.0.0", respond=stub_respond, models=STUB_MODELS)


def test_shared_is_one_server_per_process_until_stopped():
    a = sim.shared(respond=stub_respond, models=STUB_MODELS)
    try:
        assert sim.shared() is a and a.running
    finally:
        a.stop()
    b = sim.shared(respond=stub_respond, models=STUB_MODELS)
    try:
        assert b is not a and b.running
    finally:
        b.stop()


def test_the_app_also_runs_in_process_with_asgi_transport():
    import asyncio

    app = sim.create_app(respond=stub_respond, models=STUB_MODELS)

    async def calls():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://sim") as c:
            ok = await c.post(path_for("gemini"), json=body_for("gemini"), headers=headers_for("gemini"))
            assert ok.status_code == 200
            slow = await c.post(path_for("gemini", "sim-reasoner-slow20"), json=body_for("gemini"),
                                headers=headers_for("gemini"))
            assert slow.status_code == 200
            with pytest.raises(ConnectionAbortedError):  # no socket to close: the app raises instead
                await c.post(path_for("gemini", "sim-reasoner-drop"), json=body_for("gemini"),
                             headers=headers_for("gemini"))

    asyncio.run(calls())


def test_faults_can_be_switched_off_or_applied_to_everything():
    with sim.serve(respond=stub_respond, models=STUB_MODELS, faults=False) as s:
        r = httpx.post(s.url + "/v1/chat/completions", json=body_for("openai-chat"),
                       headers=headers_for("openai-chat", **{"x-sim-fault": "500"}))
        assert r.status_code == 200
    with sim.serve(respond=stub_respond, models=STUB_MODELS, faults="503") as s:
        r = httpx.post(s.url + "/v1/chat/completions", json=body_for("openai-chat"), headers=headers_for("openai-chat"))
        assert r.status_code == 503


def test_importing_agentkit_sim_does_not_import_the_server_stack():
    code = "import sys, agentkit.sim; print(sorted(m for m in ('uvicorn', 'starlette') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_python_dash_m_runs_the_server_in_the_foreground():
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "agentkit.sim", "--port", "0", "--log-level", "warning"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        first = proc.stdout.readline()
        assert first.startswith("agentkit.sim listening on http://127.0.0.1:")
        url = first.split()[-1]
        deadline = time.monotonic() + 10
        while True:
            try:
                r = httpx.get(url + "/", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert r.status_code == 200 and r.json()["simulator"] == "agentkit.sim"
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()


# --- why the reasoner left an argument out ---------------------------------------------------------

@pytest.fixture(scope="module")
def reasoner_client():
    with sim.serve() as s:
        with httpx.Client(base_url=s.url, timeout=10) as c:
            yield c


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_call_without_its_required_argument_says_why_in_a_header_and_the_log(reasoner_client, fmt, stream,
                                                                               caplog):
    caplog.set_level("INFO", logger="agentkit.sim")
    r = post(reasoner_client, fmt, tools=True, stream=stream, text="How is the weather today?")
    assert r.status_code == 200, r.text
    why = r.headers["x-sim-left-out"]
    assert why.startswith("get_weather.city: the request names no city") and why.endswith("city=...")
    assert any(why in record.getMessage() for record in caplog.records)
    # a call with all its arguments has no such header
    assert "x-sim-left-out" not in post(reasoner_client, fmt, tools=True, stream=stream).headers


def test_python_dash_m_prints_why_a_required_argument_was_left_out():
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "agentkit.sim", "--port", "0"],  # the default --log-level info
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        url = proc.stdout.readline().split()[-1]
        for _ in range(200):  # until it answers (a hang guard, not a measurement)
            try:
                r = httpx.post(url + path_for("openai-chat"), json=body_for("openai-chat", tools=True,
                                                                           text="How is the weather today?"),
                               headers=headers_for("openai-chat"), timeout=10)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        assert r.status_code == 200 and "x-sim-left-out" in r.headers
    finally:
        proc.terminate()
        proc.wait(10)
        err = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    assert "INFO:     sim-reasoner left a required argument out: get_weather.city: the request names no city" in err

"""Ollama's native API on the simulator, over real loopback HTTP: /api/chat (streamed and not), /api/tags,
the official `ollama` client running the seed's two-tool loop unchanged, HTTPModel, and the faults.

NDJSON streams are read here line by line with httpx and the codec's StreamAssembler (what HTTPModel
does for a codec whose STREAM_FRAMING is "ndjson"), through HTTPModel, and through the official client.
"""

from __future__ import annotations

import json

import httpx
import ollama
import pytest

import agentkit
from agentkit import HTTPModel, StopReason, tool
from agentkit.core.errors import BadRequestError, BadResponseError, ServerError, ToolsNotSupportedError
from agentkit.core.types import Message, ModelOptions
from agentkit.providers import ollama as codec
from agentkit.sim.behaviours import KNOWN_MODELS
from agentkit.sim.fidelity import ledger

QUESTION = "東京の天気と、1ドル何円か教えて"


def read_lines(response: httpx.Response, fmt: str):
    """A streamed response's NDJSON lines through the codec's assembler: feed(None, line) per line."""
    assembler = agentkit.providers.get_codec(fmt).StreamAssembler()
    for line in response.iter_lines():
        if line.strip():
            assembler.feed(None, line)
    return assembler.turn()


def get_weather(city: str) -> str:
    """指定した都市の現在の天気を返す。

    Args:
      city: 日本語の都市名
    """
    return f"{city}は晴れ、22度です。"


def get_exchange_rate(base: str, quote: str) -> str:
    """2通貨間の為替レートを返す。

    Args:
      base: 基準通貨のISO 4217コード（例: USD）
      quote: 相手通貨のISO 4217コード（例: JPY）
    """
    return f"1 {base} = 155.2 {quote}"


FUNCTIONS = {"get_weather": get_weather, "get_exchange_rate": get_exchange_rate}


@pytest.fixture(scope="module")
def sim():
    with agentkit.sim.serve() as server:
        yield server


@pytest.fixture(scope="module")
def http(sim):
    with httpx.Client(base_url=sim.url, timeout=10) as client:  # no key: a local Ollama needs none
        yield client


def chat_body(model="sim-reasoner", **extra) -> dict:
    wire = codec.build_request(model, [Message.user(QUESTION)], [tool(f).spec for f in FUNCTIONS.values()],
                               ModelOptions(stream=extra.pop("stream", False)))
    return {**wire.body, **extra}


# --- the official client, unchanged -----------------------------------------------------------------------

def test_the_official_client_runs_the_seed_two_tool_loop_unchanged(sim):
    client = ollama.Client(host=sim.sdk_base_url("ollama"))
    messages = [{"role": "user", "content": QUESTION}]
    tools = [get_weather, get_exchange_rate]  # the client turns functions into tool schemas itself
    response = client.chat(model="qwen3", messages=messages, tools=tools)
    messages.append(response.message)
    calls = response.message.tool_calls or []
    assert [c.function.name for c in calls] == ["get_weather", "get_exchange_rate"]  # both at once
    for call in calls:
        result = FUNCTIONS[call.function.name](**call.function.arguments)
        messages.append({"role": "tool", "tool_name": call.function.name, "content": result})
    final = client.chat(model="qwen3", messages=messages, tools=tools)
    assert not final.message.tool_calls and final.done_reason == "stop"
    assert "晴れ" in final.message.content and "155.2" in final.message.content
    assert final.prompt_eval_count > response.prompt_eval_count > 0 and final.eval_count > 0


def test_the_official_client_streams_whole_calls_line_by_line(sim):
    client = ollama.Client(host=sim.sdk_base_url("ollama"))
    chunks = list(client.chat(model="qwen3", messages=[{"role": "user", "content": QUESTION}],
                              tools=[get_weather, get_exchange_rate], stream=True))
    calls = [c for chunk in chunks for c in chunk.message.tool_calls or []]
    assert [c.function.arguments for c in calls] == [{"city": "東京"}, {"base": "USD", "quote": "JPY"}]
    assert [chunk.done for chunk in chunks] == [False] * (len(chunks) - 1) + [True]


def test_the_official_client_lists_models_and_sees_errors_as_response_errors(sim):
    client = ollama.Client(host=sim.sdk_base_url("ollama"))
    assert [m.model for m in client.list().models] == list(KNOWN_MODELS)
    with pytest.raises(ollama.ResponseError) as info:
        client.chat(model="no-such-model", messages=[{"role": "user", "content": "hi"}])
    assert info.value.status_code == 404 and info.value.error == "model 'no-such-model' not found"
    with pytest.raises(ollama.ResponseError, match="running the model"):  # an error line inside a 200 stream
        list(client.chat(model="sim-reasoner-instream500", messages=[{"role": "user", "content": QUESTION}],
                         tools=[get_weather], stream=True))


# --- the wire ---------------------------------------------------------------------------------------------

def test_api_chat_streams_ndjson_by_default_and_json_when_asked(http):
    plain = http.post("/api/chat", json=chat_body())
    assert plain.status_code == 200 and plain.headers["content-type"].startswith("application/json")
    body = {k: v for k, v in chat_body().items() if k != "stream"}  # Ollama streams unless told otherwise
    with http.stream("POST", "/api/chat", json=body) as streamed:
        assert streamed.headers["content-type"] == "application/x-ndjson"
        text = streamed.read().decode()
    lines = text.splitlines()
    assert text.endswith("}\n") and all(json.loads(line)["model"] == "sim-reasoner" for line in lines)
    assert json.loads(lines[-1])["done"] is True
    with http.stream("POST", "/api/chat", json=body) as again:
        assert read_lines(again, "ollama") == codec.parse_response(plain.json())  # the same answer


def test_api_tags_lists_the_models_without_a_key(http):
    r = http.get("/api/tags")
    assert r.status_code == 200 and [m["name"] for m in r.json()["models"]] == list(KNOWN_MODELS)


def test_httpmodel_runs_the_seed_request_on_ollama(sim):
    model = HTTPModel("sim-reasoner", "ollama", base_url=sim.base_url("ollama"), api_key="unused")
    run = agentkit.run(model, QUESTION, tools=[tool(get_weather), tool(get_exchange_rate)])
    model.close()
    assert run.stop_reason is StopReason.FINAL_ANSWER and run.steps == 2
    assert [(r.name, r.ok) for r in run.results] == [("get_weather", True), ("get_exchange_rate", True)]
    assert sim.base_url("ollama") == sim.url  # the paths are /api/chat and /api/tags, from the root


@pytest.mark.parametrize("fault, status, message", [
    ("429", 429, "rate limit exceeded"), ("500", 500, "running the model"),
    ("503", 503, "server busy"), ("529", 503, "server busy")])
def test_faults_answer_ollamas_status_and_error_body(http, fault, status, message):
    r = http.post("/api/chat", json=chat_body(f"sim-reasoner-{fault}"))
    assert r.status_code == status and set(r.json()) == {"error"} and message in r.json()["error"]


def test_an_in_stream_fault_sends_half_the_lines_then_an_error_line(http):
    with http.stream("POST", "/api/chat", json=chat_body("sim-reasoner-instream", stream=True)) as r:
        assert r.status_code == 200
        lines = [json.loads(line) for line in r.iter_lines() if line]
    assert "error" in lines[-1] and all("error" not in line for line in lines[:-1])
    assembler = codec.StreamAssembler()
    with pytest.raises(ServerError) as info:
        for line in lines:
            assembler.feed(None, json.dumps(line))
    assert info.value.retryable
    plain = http.post("/api/chat", json=chat_body("sim-reasoner-instream"))  # nothing to break: a 503
    assert plain.status_code == 503


def test_a_cut_or_corrupted_ndjson_stream_is_a_bad_response(http):
    with pytest.raises(httpx.RemoteProtocolError), http.stream(
            "POST", "/api/chat", json=chat_body("sim-reasoner-cut", stream=True)) as r:
        for _ in r.iter_lines():
            pass
    with http.stream("POST", "/api/chat", json=chat_body("sim-reasoner-badjson", stream=True)) as r:
        with pytest.raises(BadResponseError):
            read_lines(r, "ollama")


def test_go_type_errors_are_400s_in_ollamas_shape(http):
    body = chat_body()
    body["messages"][0]["content"] = [{"type": "text", "text": "hi"}]
    r = http.post("/api/chat", json=body)
    assert r.status_code == 400 and "cannot unmarshal array" in r.json()["error"]


# --- a model without tool support -------------------------------------------------------------------------
# The most reported Ollama tool error: tools for a model that lacks the "tools" capability. The simulator's
# llama2 and gemma3 (every tag) answer it as the server does; the ledger entry states the words.

NO_TOOLS = ledger()["ollama.model_without_tools"]


@pytest.mark.parametrize("model, named", [("llama2:13b", "registry.ollama.ai/library/llama2:13b"),
                                          ("gemma3", "registry.ollama.ai/library/gemma3:latest")])
def test_the_official_client_sees_the_400_of_a_model_without_tools(sim, model, named):
    client = ollama.Client(host=sim.sdk_base_url("ollama"))
    with pytest.raises(ollama.ResponseError) as info:
        client.chat(model=model, messages=[{"role": "user", "content": QUESTION}], tools=[get_weather])
    assert info.value.status_code == NO_TOOLS.status == 400
    assert info.value.error == f"{named} does not support tools" and NO_TOOLS.matches(info.value.error)
    # Without tools the same model answers; a model with tools takes them.
    plain = client.chat(model=model, messages=[{"role": "user", "content": "こんにちは"}])
    assert plain.done and not plain.message.tool_calls
    assert client.chat(model="qwen3", messages=[{"role": "user", "content": QUESTION}],
                       tools=[get_weather]).message.tool_calls


def test_httpmodel_raises_tools_not_supported_naming_the_model_without_retrying(sim):
    model = HTTPModel("llama2:13b", "ollama", base_url=sim.base_url("ollama"), max_retries=3)
    with pytest.raises(agentkit.ModelCallError) as info:
        agentkit.run(model, QUESTION, tools=[tool(get_weather)])
    error = info.value.__cause__
    assert isinstance(error, ToolsNotSupportedError) and isinstance(error, BadRequestError)
    assert error.model == "llama2:13b" and not error.retryable
    assert error.attempts == [("llama2:13b", 400)]  # one request: asking again cannot help


def test_a_fallback_list_moves_past_a_model_without_tools(sim):
    before = sim.rule_logs()[-1].number if sim.rule_logs() else 0
    model = HTTPModel("gemma3:4b", "ollama", base_url=sim.base_url("ollama"), fallback_models=["qwen3:4b"])
    result = agentkit.run(model, QUESTION, tools=[tool(get_weather), tool(get_exchange_rate)])
    assert result.stop_reason == StopReason.FINAL_ANSWER and "晴れ" in result.output
    # Each model call asks the first model, is refused once (no retry), then asks the next.
    assert [log.model for log in sim.rule_logs(after=before)] == ["gemma3:4b", "qwen3:4b"] * result.steps


def test_the_codec_reads_the_refusal_as_tools_not_supported():
    error = codec.parse_error(400, {"error": "registry.ollama.ai/library/Qwen3.5:0.8b does not support tools"})
    assert isinstance(error, ToolsNotSupportedError) and error.model == "Qwen3.5:0.8b"
    assert type(codec.parse_error(400, {"error": "model is required"})) is BadRequestError


def test_the_rule_log_records_the_tool_capability_check(sim, http):
    assert http.post("/api/chat", json=chat_body("llama2:7b")).status_code == 400
    assert http.post("/api/chat", json=chat_body("qwen3:8b")).status_code == 200
    outcomes = {log.model: [(f.rule, f.outcome) for f in log.findings] for log in sim.rule_logs()}
    assert ("ollama.model_without_tools", "refused") in outcomes["llama2:7b"]
    assert ("ollama.model_without_tools", "passed") in outcomes["qwen3:8b"]

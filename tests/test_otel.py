"""OpenTelemetry export: an agent span, a span per model call and per tool execution, named and attributed
as the GenAI semantic conventions say, checked with the SDK's in-memory exporter."""

from __future__ import annotations

import subprocess
import sys

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agentkit import ModelCallError, call, run, tool
from agentkit.core.types import ModelTurn, Usage
from agentkit.http import HTTPModel
from agentkit.long_running.otel import MISSING_EXTRA, export_run
from agentkit.models import FunctionModel, ScriptedModel


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def export(r, **kw):
        export_run(r, tracer_provider=provider, **kw)
        return {s.name: s for s in exporter.get_finished_spans()}, list(exporter.get_finished_spans())
    return export


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    if city == "Atlantis":
        raise LookupError("no such city")
    return f"{city}: sunny"


def test_a_simulator_run_gives_the_agent_model_and_tool_spans(server, spans):
    model = HTTPModel("claude-sonnet-4-5", "anthropic", base_url=server.base_url("anthropic"), api_key="sim-key")
    result = run(model, "What is the weather in Paris?", tools=[get_weather])
    by_name, every = spans(result, model=model, tools=[get_weather])
    assert sorted(s.name for s in every) == ["chat claude-sonnet-4-5", "chat claude-sonnet-4-5",
                                            "execute_tool get_weather", "invoke_agent agentkit"]
    agent, tool_span = by_name["invoke_agent agentkit"], by_name["execute_tool get_weather"]
    assert agent.kind is SpanKind.INTERNAL and agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert all(s.parent.span_id == agent.context.span_id for s in every if s is not agent)
    chats = [s for s in every if s.name.startswith("chat")]
    assert chats[0].kind is SpanKind.CLIENT and chats[0].attributes["gen_ai.provider.name"] == "anthropic"
    assert chats[0].attributes["gen_ai.operation.name"] == "chat"
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert chats[0].attributes["gen_ai.response.id"] == result.turns[0].id
    assert sum(s.attributes["gen_ai.usage.input_tokens"] for s in chats) == result.usage.input_tokens
    assert dict(tool_span.attributes) == {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                                          "gen_ai.tool.call.id": result.results[0].call_id,
                                          "gen_ai.tool.type": "function",
                                          "gen_ai.tool.description": "Current weather for a city."}
    assert chats[0].end_time <= tool_span.start_time <= tool_span.end_time <= chats[1].start_time


@pytest.mark.parametrize("fmt, provider", [("openai-chat", "openai"), ("openai-responses", "openai"),
                                           ("gemini", "gcp.gemini"), ("openrouter", "openrouter"),
                                           ("ollama", "ollama")])
def test_the_provider_name_is_the_conventions_well_known_value(server, spans, fmt, provider):
    model = HTTPModel("sim-reasoner", fmt, base_url=server.base_url(fmt), api_key="sim-key")
    by_name, _ = spans(run(model, "What is the weather in Paris?", tools=[get_weather]), model=model)
    assert by_name["chat sim-reasoner"].attributes["gen_ai.provider.name"] == provider


def test_reasoning_and_cached_tokens_and_a_failing_tool(spans):
    usage = Usage(100, 40, reasoning_tokens=25, cached_tokens=60)
    model = ScriptedModel([ModelTurn(tool_calls=(call("get_weather", {"city": "Atlantis"}, id="c1"),),
                                     usage=usage, model="m-1", id="resp_1", native_stop="tool_use"), "sorry"])
    by_name, _ = spans(run(model, "weather?", tools=[get_weather]), provider="anthropic")
    chat = next(s for n, s in by_name.items() if n.startswith("chat"))
    assert chat.name == "chat m-1" and chat.attributes["gen_ai.usage.cache_read.input_tokens"] == 60
    assert chat.attributes["gen_ai.usage.reasoning.output_tokens"] == 25
    failed = by_name["execute_tool get_weather"]
    assert failed.attributes["error.type"] == "LookupError" and failed.status.status_code is StatusCode.ERROR


def test_a_failed_model_call_is_an_error_span(spans):
    def broken(messages, tools, options):
        raise ConnectionError("down")
    with pytest.raises(ModelCallError) as raised:
        run(FunctionModel(broken), "hi")
    by_name, _ = spans(raised.value.run, provider="openai")
    chat = by_name["chat unknown"]
    assert chat.attributes["error.type"] == "ConnectionError" and chat.status.status_code is StatusCode.ERROR
    assert by_name["invoke_agent agentkit"].attributes["error.type"] == "ConnectionError"


def test_without_opentelemetry_import_agentkit_loads_nothing_and_export_names_the_extra():
    script = ("import sys; sys.modules['opentelemetry'] = None\n"
              "import agentkit, agentkit.long_running.otel\n"
              "try:\n    agentkit.long_running.otel.export_run(None)\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == MISSING_EXTRA
    loaded = subprocess.run([sys.executable, "-c", "import agentkit, sys; print('opentelemetry' in sys.modules)"],
                            capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "False"

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


def test_a_resumed_runs_model_spans_carry_the_ids_and_tokens_of_their_own_calls(spans):
    """Paused after 3 model calls and resumed: the resumed run's trace holds calls 4 to 6, and their spans
    carry the response ids and token counts of turns 4 to 6, not those of 1 to 3."""
    from agentkit.core.policies import Pause
    from agentkit.long_running.resume import resume

    def fn(messages, tools, options):
        step = sum(m.role == "assistant" for m in messages) + 1
        if step == 6:
            return ModelTurn(text="done", usage=Usage(10 * step, step), model="m", id=f"resp_{step}")
        return ModelTurn(tool_calls=(call("get_weather", {"city": f"c{step}"}, id=f"w{step}"),), stop="tool_calls",
                         usage=Usage(10 * step, step), model="m", id=f"resp_{step}")
    model = FunctionModel(fn)
    paused = run(model, "go", tools=[get_weather], approve=lambda c, ctx: Pause() if c.id == "w3" else True)
    done = resume(paused.to_json(), {"w3": "approve"}, model, tools=[get_weather])
    _, every = spans(done)
    chats = sorted((s for s in every if s.name.startswith("chat")), key=lambda s: s.start_time)
    assert [s.attributes["gen_ai.response.id"] for s in chats] == ["resp_4", "resp_5", "resp_6"]
    assert [s.attributes["gen_ai.usage.input_tokens"] for s in chats] == [40, 50, 60]


def test_a_secret_in_a_tools_exception_reaches_no_span_not_even_the_status_description(spans):
    from agentkit import ToolExecutionError

    @tool
    def charge(card: str) -> str:
        """Charge a card."""
        raise PermissionError("gateway refused key sk-live-51HxSECRET for card 4242")

    with pytest.raises(ToolExecutionError) as raised:
        run(ScriptedModel([[call("charge", {"card": "4242"})]]), "charge it", tools=[charge], on_tool_error="raise")
    _, every = spans(raised.value.run)
    for span in every:
        said = " ".join([str(span.status.description or ""), *map(str, span.attributes.values()),
                         *(str(e.attributes) for e in span.events)])
        assert "SECRET" not in said and "4242" not in said, span.name
    agent = next(s for s in every if s.name.startswith("invoke_agent"))
    assert agent.status.status_code is StatusCode.ERROR and "PermissionError" in agent.status.description

"""A run's trace as OpenTelemetry spans, named and attributed as the GenAI semantic conventions say.

    from agentkit.long_running.otel import export_run
    export_run(run, model=model)      # to the global tracer provider, or tracer_provider=...

One span for the agent (`invoke_agent {gen_ai.agent.name}`), one per model call
(`{gen_ai.operation.name} {gen_ai.request.model}`, operation "chat") and one per tool execution
(`execute_tool {gen_ai.tool.name}`), the last two children of the first, with the conventions'
attributes: `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.response.model`, `gen_ai.response.id`,
`gen_ai.response.finish_reasons`, `gen_ai.usage.input_tokens` / `output_tokens` /
`cache_read.input_tokens` / `reasoning.output_tokens`, `gen_ai.tool.name`, `gen_ai.tool.call.id`,
`gen_ai.tool.type`, `error.type`. Names as in open-telemetry/semantic-conventions-genai,
docs/gen-ai/gen-ai-spans.md and gen-ai-agent-spans.md (status: Development; read 2026-12-01).

The spans are built after the run from its trace (every event has its time), so the loop pays nothing
for them. Each model span takes its ids and token counts from the turn of its own step (`run.turns`,
one per model call): a resumed run's trace holds only the calls made after the pause, and they get the
turns of their steps, not those of the first calls. The agent span's status says that the run raised,
and the exception's type, never the exception's text (a tool's error can hold a key or a customer's
data; under on_tool_error="raise" it would otherwise reach every span exporter).

Needs the optional extra: `pip install 'agentkit-lab[otel]'` (opentelemetry-api and -sdk);
without it, `import agentkit.long_running.otel` still works and `export_run` says which extra to install.

Left out on purpose: message contents (the conventions make `gen_ai.input.messages` opt-in: they hold
user data), metrics, and spans for the HTTP attempts inside one model call.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

#: gen_ai.provider.name per wire format: the conventions' well-known values, else the format's own name.
PROVIDERS = {"openai-chat": "openai", "openai-responses": "openai", "anthropic": "anthropic",
             "gemini": "gcp.gemini", "openrouter": "openrouter", "ollama": "ollama"}

MISSING_EXTRA = "agentkit.long_running.otel needs OpenTelemetry: pip install 'agentkit-lab[otel]'"


def _api() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        raise ImportError(MISSING_EXTRA) from None
    return trace


def export_run(run: Any, *, model: Any = None, provider: str | None = None, agent_name: str = "agentkit",
               tools: Sequence[Any] = (), tracer_provider: Any = None) -> None:
    """Emit `run`'s spans. `model` (an HTTPModel, say) names the provider and the requested model;
    `provider` overrides the first; `tools` adds each tool's description."""
    trace = _api()
    tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer("agentkit")
    provider = provider or PROVIDERS.get(getattr(model, "format", None)) or "agentkit"
    requested = getattr(model, "model", None)
    events = run.trace.events
    origin = time.time_ns() - int(run.trace.now() * 1e9)  # trace times are seconds since the trace began

    def at(t: float) -> int:
        return origin + int(t * 1e9)

    start = at(events[0].t) if events else time.time_ns()
    agent = tracer.start_span(f"invoke_agent {agent_name}", kind=trace.SpanKind.INTERNAL, start_time=start,
                              attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": provider,
                                          "gen_ai.agent.name": agent_name,
                                          "gen_ai.usage.input_tokens": run.usage.input_tokens,
                                          "gen_ai.usage.output_tokens": run.usage.output_tokens,
                                          "agentkit.stop_reason": str(run.stop_reason),
                                          **({"gen_ai.request.model": requested} if requested else {})})
    parent = trace.set_span_in_context(agent)
    _model_spans(trace, tracer, parent, run, events, at, provider, requested)
    _tool_spans(trace, tracer, parent, events, at, {t.name: t.description for t in tools})
    if run.error is not None:
        agent.set_attribute("error.type", type(run.error).__name__)
        agent.set_status(trace.Status(trace.StatusCode.ERROR, f"the run raised {type(run.error).__name__}"))
    agent.end(end_time=at(events[-1].t) if events else time.time_ns())


def _model_spans(trace, tracer, parent, run, events, at, provider, requested) -> None:
    opened = None
    for event in events:
        if event.kind == "model_request":
            opened = event
        elif event.kind == "model_response" and opened is not None:  # (a resume retakes a turn: no request)
            step = event.data.get("step") or 0
            turn = run.turns[step - 1] if 0 < step <= len(run.turns) else None
            _model_span(trace, tracer, parent, opened, event, turn, at, provider, requested)
            opened = None
    if opened is not None:  # the last call never answered: it failed, or the run was stopped during it
        last = events[-1]
        span = _model_span(trace, tracer, parent, opened, last, None, at, provider, requested, end=False)
        error = run.error.__cause__ if run.error is not None and run.error.__cause__ is not None else run.error
        span.set_attribute("error.type", type(error).__name__ if error is not None else "_OTHER")
        span.set_status(trace.Status(trace.StatusCode.ERROR))
        span.end(end_time=at(last.t))


def _model_span(trace, tracer, parent, request, response, turn, at, provider, requested, end=True):
    model = requested or (turn.model if turn is not None else None) or "unknown"
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.request.model": model}
    if turn is not None:
        usage = turn.usage
        attributes.update({"gen_ai.usage.input_tokens": usage.input_tokens,
                           "gen_ai.usage.output_tokens": usage.output_tokens,
                           "gen_ai.response.finish_reasons": [turn.native_stop or turn.stop]})
        if usage.cached_tokens:
            attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cached_tokens
        if usage.reasoning_tokens:
            attributes["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
        if turn.model:
            attributes["gen_ai.response.model"] = turn.model
        if turn.id:
            attributes["gen_ai.response.id"] = turn.id
    span = tracer.start_span(f"chat {model}", context=parent, kind=trace.SpanKind.CLIENT,
                             start_time=at(request.t), attributes=attributes)
    if end:
        span.end(end_time=at(response.t))
    return span


def _tool_spans(trace, tracer, parent, events, at, descriptions) -> None:
    started = {}
    for event in events:
        key = (event.data.get("call_id"), event.data.get("attempt"))
        if event.kind == "tool_start":
            started[key] = event
        elif event.kind == "tool_end" and key in started:
            begin, name = started.pop(key), event.data["tool"]
            attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                          "gen_ai.tool.call.id": event.data["call_id"], "gen_ai.tool.type": "function"}
            if descriptions.get(name):
                attributes["gen_ai.tool.description"] = descriptions[name]
            span = tracer.start_span(f"execute_tool {name}", context=parent, kind=trace.SpanKind.INTERNAL,
                                     start_time=at(begin.t), attributes=attributes)
            if not event.data.get("ok"):
                span.set_attribute("error.type", event.data.get("error") or "_OTHER")
                span.set_status(trace.Status(trace.StatusCode.ERROR))
            span.end(end_time=at(event.t))

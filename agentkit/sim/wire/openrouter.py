"""OpenRouter: the server side, as the simulator speaks it (pure functions).

The client side (and what is special about the format) is `agentkit.providers.openrouter`; this half
is what only a server does: decode a request the way the real API validates it (refusing it in the
API's own words), and write its answers, streams, errors and model list.

OpenRouter is Chat Completions plus extras, so this half reuses `openai_chat`'s and adds only what
differs: the upstream `provider`, `native_finish_reason`, `gen-…` ids, keep-alive comments in streams,
its error body and in-stream error chunk, `reasoning_details`, and Claude 5.x's refusal of forced tools.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ...core.types import ModelTurn, ReasoningState
from ...providers.common import SSEvent, StreamEvent, dumps, stable_id
from ...providers.openrouter import NAME
from . import openai_chat, openai_common
from .common import (ChatRequest, RequestInvalid, degrades, holds, mint_signature, no_records, nothing_stored,
                     simulated_thought)
from .contract import Route, ServerFacts

CREATED = openai_common.CREATED
KEEPALIVE = "OPENROUTER PROCESSING"

#: What the real server does around the bodies (see contract.py).
SERVER = ServerFacts(
    routes=(Route("POST", "/api/v1/chat/completions"), Route("GET", "/api/v1/models", "models")),
    sdk_base_path="/api/v1",
    no_key=(401, "No auth credentials found (on the simulator any Bearer key works)"),
    key_headers=("authorization",),
    unknown_model="{model} is not a valid model ID",
    unknown_model_status=400,  # {"error": {"message": "... is not a valid model ID", "code": 400}}, as users report
    not_json="We could not parse the JSON body of your request. ({detail})",
    fault_messages={**openai_common.FAULT_MESSAGES,
                    429: "Rate limit exceeded for {model}. Please retry in {retry_ms}ms.",
                    502: "Your chosen model is down or we received an invalid response from it"},
    request_id_header="x-request-id",
    response_id_header="x-generation-id",
    # A provider that is down reaches the client as OpenRouter's 502; its own 503 means "no provider meets
    # your routing requirements", which the simulator does not produce (agentkit/sim/fidelity.toml).
    nearest_status={500: 502, 503: 502, 529: 502},
    public_model_list=True,
)

#: model prefix -> the `format` OpenRouter writes on a reasoning detail from that upstream.
DETAIL_FORMATS = {"anthropic": "anthropic-claude-v1", "google": "google-gemini-v1", "openai": "openai-responses-v1"}

#: model prefix -> the name OpenRouter gives the upstream provider in `provider`.
PROVIDERS = {"openai": "OpenAI", "anthropic": "Anthropic", "google": "Google AI Studio", "meta-llama": "Meta",
             "mistralai": "Mistral", "deepseek": "DeepSeek", "x-ai": "xAI", "qwen": "Alibaba"}
tool_from_wire = openai_chat.tool_from_wire
#: The fidelity ledger's ids of this half's own refusals (agentkit/sim/fidelity.toml).
MODELS_TYPE, PROVIDER_TYPE, FORCED_TOOL_USE = ("openrouter.models_type", "openrouter.provider_type",
                                               "openrouter.forced_tool_use")
#: Accepted, but worse (ledger kind "degradation"): an assistant turn sent back without its reasoning_details.
REASONING_DETAILS_DROPPED = "openrouter.reasoning_details_dropped"
REASONING_DETAILS_WORDS = ("An assistant message with tool calls came back without its reasoning_details: the model "
                           "continues without the reasoning that led to those calls.")
resolve_stored = nothing_stored
stored_records = no_records


# --- server side -----------------------------------------------------------------------------------

def parse_request(body: Any, model: str | None = None) -> ChatRequest:
    """Chat Completions decoding, plus `models` -> `fallback_models` (and `provider` kept in extras).

    `models` alone is enough: without `model`, the first of them leads.
    """
    if isinstance(body, dict) and body.get("model") is None and model is None:
        models = body.get("models")
        if isinstance(models, list) and models and isinstance(models[0], str):
            body = {**body, "model": models[0]}
    request = openai_chat.parse_request(body, model, fmt=NAME)
    extras = dict(request.extras)
    models = extras.pop("models", None)
    if models is not None and (not isinstance(models, list) or not all(isinstance(m, str) for m in models)):
        raise RequestInvalid("Invalid type for 'models': expected an array of strings.", "models",
                             code="invalid_type", rule=MODELS_TYPE)
    if extras.get("provider") is not None and not isinstance(extras["provider"], dict):
        raise RequestInvalid("Invalid type for 'provider': expected an object.", "provider",
                             code="invalid_type", rule=PROVIDER_TYPE)
    for rule, field in ((MODELS_TYPE, "models"), (PROVIDER_TYPE, "provider")):
        if field in body:
            holds(rule, field)
    if reasoning_on(extras.get("reasoning")):
        _check_reasoning_kept(request)
    return replace(request, fallback_models=tuple(models or ()), extras=extras)


def reasoning_on(reasoning: Any) -> bool:
    """Does this `reasoning` field ask for reasoning back (not excluded, not turned off)?"""
    return isinstance(reasoning, dict) and reasoning.get("exclude") is not True and \
        reasoning.get("enabled") is not False and reasoning.get("effort") != "none"


def _check_reasoning_kept(request: ChatRequest) -> None:
    """With reasoning on, each assistant message of the open tool cycle (after the last user message) that
    called tools should come back with its `reasoning_details` ("preserving reasoning blocks", OpenRouter's
    reasoning-tokens page, for tool-calling continuity): one without them is accepted, but the model goes on
    without that reasoning (a degradation). Earlier turns are not checked: reasoning of a finished turn
    "only matters within a turn during active tool loops" (a report on pruning it, zirkelc.dev)."""
    opened = max((i for i, m in enumerate(request.messages) if m.role == "user"), default=-1)
    turns = [(i, m) for i, m in enumerate(request.messages)
             if i > opened and m.role == "assistant" and m.tool_calls]
    dropped = [i for i, m in turns if m.reasoning is None or not any(
        "reasoning_details" in (item.get("message") or {}) for item in m.reasoning.items)]
    for i in dropped:
        degrades(REASONING_DETAILS_DROPPED, REASONING_DETAILS_WORDS, f"messages[{i}]")
    if turns and not dropped:
        holds(REASONING_DETAILS_DROPPED)


def response_id(turn: ModelTurn, request: ChatRequest) -> str:
    """A `gen-<time>-<id>` id: the turn's own when it already has that shape, else derived from it."""
    if turn.id and turn.id.startswith("gen-"):
        return turn.id
    return f"gen-{CREATED}-" + stable_id(openai_chat.response_id(turn, request), length=20)


def _upstream(model: str) -> str:
    """The upstream part of a model id: "anthropic/claude-sonnet-4.5" -> "anthropic" (no prefix: openai)."""
    return model.split("/", 1)[0] if "/" in model else "openai"


def upstream_provider(model: str) -> str:
    """"openai/gpt-4.1" -> "OpenAI": who OpenRouter says served the answer."""
    prefix = _upstream(model)
    return PROVIDERS.get(prefix, prefix.title())


def reasoning_for(turn: ModelTurn, request: ChatRequest) -> ReasoningState | None:
    """With `reasoning` asked for (and not `exclude`d), the message carries `reasoning` and one signed
    `reasoning.text` detail in the upstream's format."""
    if not reasoning_on(request.extras.get("reasoning")):
        return None
    thought = simulated_thought(turn, request)
    detail = {"type": "reasoning.text", "text": thought, "signature": mint_signature("openrouter", None, thought),
              "format": DETAIL_FORMATS.get(_upstream(request.model), "unknown"), "index": 0}
    return ReasoningState(NAME, turn.model or request.model,
                          ({"message": {"reasoning": thought, "reasoning_details": [detail]}},))


def build_response(turn: ModelTurn, request: ChatRequest) -> dict:
    """A Chat Completions body (OpenRouter's API reference) with a `gen-` id, `provider` and `native_finish_reason`."""
    body = openai_chat.build_response(turn, request, fmt=NAME)
    body["id"] = response_id(turn, request)
    body["provider"] = upstream_provider(body["model"])
    choice = body["choices"][0]
    choice["native_finish_reason"] = turn.native_stop or choice["finish_reason"]
    return body


def build_stream(turn: ModelTurn, request: ChatRequest) -> list[SSEvent]:
    """Chat Completions chunks with OpenRouter's ids and fields, after a `: OPENROUTER PROCESSING` comment."""
    body = build_response(turn, request)
    events = [SSEvent("", comment=KEEPALIVE)]  # sent while the upstream has not answered yet
    for event in openai_chat.build_stream(turn, request, fmt=NAME):
        if event.data == "[DONE]":
            events.append(event)
            continue
        chunk = json.loads(event.data)
        chunk["id"], chunk["provider"] = body["id"], body["provider"]
        for choice in chunk["choices"]:
            if choice["finish_reason"]:
                choice["native_finish_reason"] = body["choices"][0]["native_finish_reason"]
        events.append(SSEvent(dumps(chunk)))
    return events


def build_error(status: int, message: str, error_type: str | None = None, **kw: Any) -> dict:
    """OpenRouter's error body `{"error": {"code": status, "message", "metadata"}}` (OpenRouter's API reference).

    There is no error type on the wire; pass `metadata=` (e.g. `{"provider_name", "raw"}` for an
    upstream failure). `error_type` and `param`, when given, go into metadata.
    """
    metadata = dict(kw.get("metadata") or {})
    if error_type:
        metadata.setdefault("error_type", error_type)
    if kw.get("param"):
        metadata.setdefault("param", kw["param"])
    error: dict[str, Any] = {"code": status, "message": message}
    if metadata:
        error["metadata"] = metadata
    return {"error": error}


def build_stream_error(status: int, message: str, request: ChatRequest,
                       sent: Sequence[StreamEvent] = ()) -> SSEvent:
    """A failure after the stream started (OpenRouter's API reference): a chunk with the stream's id, a top-level
    `error`
    and `finish_reason: "error"`; the stream ends after it. OpenRouter documents `code: "server_error"`
    for a provider that failed mid-stream; other failures carry their status as the code."""
    head = next((json.loads(e.data) for e in sent if e.comment is None and e.data.startswith("{")), None)
    if head is None:
        model = request.model
        head = {"id": f"gen-{CREATED}-" + stable_id(model, len(request.messages), length=20), "model": model,
                "provider": upstream_provider(model)}
    code: str | int = "server_error" if status >= 500 else status
    chunk = {"id": head["id"], "object": "chat.completion.chunk", "created": CREATED, "model": head["model"],
             "provider": head.get("provider"), "error": {"code": code, "message": message},
             "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]}
    return SSEvent(dumps(chunk))


def build_model_list(names: Sequence[str]) -> dict:
    """GET /api/v1/models (public: no key needed); a model without tools lists none in supported_parameters."""
    return {"data": [{"id": n, "name": n, "created": CREATED, "context_length": 131072,
                      "supported_parameters": [] if takes_no_tools(n) else ["tools", "tool_choice",
                                                                             "parallel_tool_calls"]}
                     for n in names]}


#: Models none of whose endpoints take tools, as users report OpenRouter's 404 for them (any of their
#: variants: a ":free" or dated suffix counts too).
NO_TOOL_MODELS = ("google/gemma-3-27b-it", "qwen/qwen3.6-35b-a3b")
NO_TOOL_ENDPOINTS = "openrouter.no_tool_endpoints"


def takes_no_tools(model: str) -> bool:
    return any(model == m or model.startswith((m + ":", m + "-")) for m in NO_TOOL_MODELS)


#: Upstream models that refuse a forced tool choice, as OpenRouter names them (its Claude 5.x migration guides).
NO_FORCED_TOOL_USE = ("anthropic/claude-opus-5.5", "anthropic/claude-sonnet-5.5", "anthropic/claude-fable-5.1",
                      "anthropic/claude-mythos-5.1")


def model_refusal(request: ChatRequest) -> RequestInvalid | None:
    """A request with tools to a model that takes none is OpenRouter's 404, in the words users report:
    no endpoint of the model passes the routing step that filters by tool support. The Claude 5.x models
    refuse a forced tool choice through OpenRouter too (a 400). How OpenRouter words the upstream's refusal
    is not documented: the simulator passes Anthropic's sentence on."""
    if takes_no_tools(request.model):
        if request.tools:
            return RequestInvalid(f'No endpoints found that support tool use. Try disabling "{request.tools[0].name}". '
                                  "To learn more about provider routing, visit: "
                                  "https://openrouter.ai/docs/guides/routing/provider-selection", None, status=404,
                                  rule=NO_TOOL_ENDPOINTS)
        holds(NO_TOOL_ENDPOINTS)
    choice = request.options.tool_choice
    forced = choice == "required" or (isinstance(choice, dict) and
                                      ("name" in choice or choice.get("mode") == "required"))
    refuses = any(request.model == m or request.model.startswith(m + "-") for m in NO_FORCED_TOOL_USE)
    if forced and refuses:
        return RequestInvalid('tool_choice: type "tool" and "any" are not supported for this model.', "tool_choice",
                              rule=FORCED_TOOL_USE)
    if refuses and request.tools:
        holds(FORCED_TOOL_USE, "tool_choice")
    return None

"""OpenRouter (`POST /api/v1/chat/completions`): Chat Completions plus a few extras, as pure functions.

OpenRouter speaks the OpenAI Chat Completions format, so this module reuses `openai_chat` and adds
only what differs:

* A request may carry `models`, an ordered fallback list (tried in turn when the one before fails; the
  response's `model` says which answered), and `provider`, the routing preferences (`order`,
  `allow_fallbacks`, `require_parameters`, `data_collection`, `sort`, ...). Both are keyword arguments
  of `build_request`; on the server side they land in `ChatRequest.fallback_models` and `.extras`.
* A response names the upstream `provider` ("OpenAI"), keeps the upstream's own stop word in
  `choices[].native_finish_reason` (this codec's `ModelTurn.native_stop`), and has a `gen-…` id.
* A stream adds `: OPENROUTER PROCESSING` comment lines as keep-alives (SSE parsers skip them); an
  error after the stream started is a normal chunk with a top-level `error` and `finish_reason: "error"`.
* An error body is `{"error": {"code": <int, the HTTP status>, "message", "metadata"?}}`. A provider that
  is down (or answers nonsense) is a 502; OpenRouter's 503 means no provider meets the routing requirements.
* With `reasoning` asked for, the assistant message carries `reasoning` (text) and `reasoning_details`
  (typed items, `reasoning.text` with a `signature`, `reasoning.encrypted`, ...): the turn's
  ReasoningState, which goes back unchanged on the assistant message for tool-calling continuity (same
  model only), as OpenRouter's reasoning guide asks.

    from agentkit.providers import openrouter
    wire = openrouter.build_request("openai/gpt-4.1-mini", messages, tools, ModelOptions(),
                                    models=["anthropic/claude-sonnet-4.5"], provider={"sort": "throughput"})

Left out on purpose: usage accounting (`cost`), attribution headers (`HTTP-Referer`, `X-Title`: pass
them yourself), and everything `openai_chat` leaves out.

The server half (what the simulator answers) is `agentkit.sim.wire.openrouter`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..core.errors import ProviderError
from ..core.types import Message, ModelOptions, ModelTurn
from . import openai_chat, openai_common
from .common import WireRequest, no_stored_id

NAME = "openrouter"
DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
PATH = "/chat/completions"
API_KEY_ENVS = ("OPENROUTER_API_KEY",)
KEY_REQUIRED = True
DEFAULT_MODEL = "openai/gpt-4.1-mini"
STREAM_FRAMING = "sse"
#: OpenRouter walks a `models` list itself: HTTPModel sends it the remaining fallbacks, in order.
SERVER_SIDE_FALLBACK = True
CONTINUATION_FIELD = None

# The same as Chat Completions.
tool_to_wire = openai_chat.tool_to_wire
tool_choice_to_wire = openai_chat.tool_choice_to_wire
auth_headers = openai_chat.auth_headers


# --- client side -----------------------------------------------------------------------------------

def build_request(model: str, messages: list[Message] | tuple[Message, ...], tools=(),
                  options: ModelOptions | None = None, *, models: list[str] | None = None,
                  provider: dict | None = None, **extras: Any) -> WireRequest:
    """The Chat Completions body plus `models` (fallbacks) and `provider` (routing preferences)."""
    options = options or ModelOptions()
    wire = openai_chat.build_request(model, messages, tools, options, fmt=NAME, **extras)
    body = dict(wire.body)
    if options.max_tokens is not None and "max_tokens" not in extras:
        del body["max_completion_tokens"]
        body["max_tokens"] = options.max_tokens  # the name OpenRouter documents and maps for every upstream
    if models:
        body["models"] = list(models)
    if provider:
        body["provider"] = dict(provider)
    return WireRequest(wire.path, body, wire.headers, wire.stream)


def parse_response(body: Any) -> ModelTurn:
    """A completion -> ModelTurn, with `native_stop` = the upstream's `native_finish_reason`."""
    turn = openai_chat.parse_response(body, provider=NAME)
    native = body["choices"][0].get("native_finish_reason")
    return replace(turn, native_stop=native) if isinstance(native, str) else turn


class StreamAssembler(openai_chat.StreamAssembler):
    """Chat Completions reassembly; `native_stop` comes from the chunks' `native_finish_reason`."""

    provider = NAME

    def turn(self) -> ModelTurn:
        turn = super().turn()
        natives = [c["native_finish_reason"] for chunk in self.chunks
                   for c in (chunk.get("choices") if isinstance(chunk.get("choices"), list) else [])
                   if isinstance(c, dict) and isinstance(c.get("native_finish_reason"), str)]
        return replace(turn, native_stop=natives[-1]) if natives else turn


def parse_error(status: int, body: Any, headers: Any = None) -> ProviderError:
    """`{"error": {"code": 429, "message", "metadata"}}` -> ProviderError (error_type = the code, as text)."""
    return openai_common.parse_error(status, body, headers, provider=NAME)


#: OpenRouter keeps nothing between requests (contract: stored state).
stored_response_id = no_stored_id

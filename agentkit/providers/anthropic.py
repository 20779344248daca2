"""The Anthropic Messages format (`POST /v1/messages`), the client side, as pure functions.

What is special about tool calling here, compared with OpenAI's Chat Completions:

* `system` is a top-level field, never a message; `max_tokens` is required in every request.
* A tool call is a content block `{"type": "tool_use", "id": "toolu_…", "name", "input": {...}}` and its
  arguments are a JSON **object**, not a string.
* Results go back in the **next user message**, as `tool_result` blocks that come **first** in that
  message, one per `tool_use`, with `is_error: true` for a failed tool. The API answers 400 when a
  result is missing, misplaced, or answers an id the previous assistant turn did not use.
* `tool_choice` is an object (`auto` / `any` / `tool` / `none`) and the parallel switch lives inside it
  as `disable_parallel_tool_use`.
* Streams are named SSE events; the arguments of a call arrive as `input_json_delta.partial_json`
  string fragments that only parse once the block stops.
* With `thinking` enabled the answer starts with `thinking` blocks (`{"type": "thinking", "thinking",
  "signature"}`, or `{"type": "redacted_thinking", "data"}`), streamed as `thinking_delta` and
  `signature_delta`. They are the turn's ReasoningState here, sent back first in the assistant message,
  unmodified, for the same model only: while a tool cycle is open the API refuses an assistant turn that
  does not start with them (400 "Expected `thinking` or `redacted_thinking`, but found `tool_use`"), and
  with thinking on, `tool_choice` may only be auto or none.
* The Claude 5.x models (`claude-opus-5-5`, `claude-sonnet-5-5`, `claude-fable-5-1`, `claude-mythos-5-1`)
  always think: a request without `thinking` runs adaptive thinking, `{"type": "disabled"}` and a manual
  `budget_tokens` are refused (400, use `adaptive`), thinking blocks come back with empty text unless
  `display: "summarized"` asks for a summary, forced tool use (`any` / `tool`) is refused, and, except on
  Mythos 5.1, a kept thinking block is bound to its prefix (`system`, `tools` and the messages before it):
  change the prefix and the block and every later one are invalid (400, or dropped with
  `thinking.block_binding.prefix_mismatch_behavior: "drop_block"`). Sources: agentkit/sim/fidelity.toml.

    from agentkit.providers import anthropic
    wire = anthropic.build_request("claude-sonnet-4-5", messages, tools, ModelOptions())
    # POST DEFAULT_BASE_URL + wire.path with wire.headers | anthropic.auth_headers(key), json=wire.body
    turn = anthropic.parse_response(response_json)

* The server's own blocks (`server_tool_use`, `web_search_tool_result`, `tool_search_tool_result`, code
  execution results, `mcp_tool_use`, `compaction`, ...) are state of the same kind: the codec keeps every
  block that is neither text nor tool_use on the turn's ReasoningState, in order, and replays them as they
  came, after the thinking blocks and before the text. The API expands a `tool_reference` it finds there,
  and drops whatever came before a `compaction` block.
* `usage.input_tokens` excludes the prompt-cache reads and writes; the neutral Usage adds them back and
  keeps them apart (`cached_tokens`, `cache_write_tokens`, `cache_write_1h_tokens`), because each is
  billed at its own price (`agentkit.core.budgets`).

Left out on purpose: images and documents (skipped when received), block-level `cache_control`
breakpoints (the top-level one, `extra_body={"cache_control": {"type": "ephemeral"}}`, caches the
prefix up to the last block), citations (a text block's citations are
dropped, its text kept), the placement of text between server blocks (the texts of a turn are joined and
replayed after its kept blocks), interleaved thinking between tool_use blocks of one message (thinking
blocks are replayed first), the message-threads beta (the kit sends the whole history every turn), and
running server tools (their definitions go in `tools` through `extra_body`; the simulator keeps them in
`ChatRequest.extras["server_tools"]`).

The server half of the format (what the simulator answers) is `agentkit.sim.wire.anthropic`.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.errors import BadResponseError, ProviderError, error_for_status
from ..core.types import (
    Message,
    ModelOptions,
    ModelTurn,
    ReasoningDelta,
    ReasoningState,
    StreamDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolChoice,
    ToolSpec,
    Usage,
)
from .common import WireRequest, body_text, event_object, json_or_none, no_stored_id, own_reasoning, retry_after_seconds

NAME = "anthropic"
DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
PATH = "/messages"
API_KEY_ENVS = ("ANTHROPIC_API_KEY",)
KEY_REQUIRED = True
DEFAULT_MODEL = "claude-haiku-4-5"
STREAM_FRAMING = "sse"
SERVER_SIDE_FALLBACK = False
CONTINUATION_FIELD = None  # the API keeps no conversation: every request carries it whole
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024

#: Anthropic `stop_reason` -> the kit's neutral stop signal.
STOP_TO_NEUTRAL = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
    "pause_turn": "other",
}

#: HTTP status -> `error.type` in the error body (Anthropic's Messages API documentation).
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
#: The reverse, for an `event: error` inside a stream (the HTTP status was already 200).
STATUS_FOR_ERROR_TYPE = {error_type: status for status, error_type in ERROR_TYPES.items()}

#: Content blocks that are reasoning state: they precede text and tool_use, and go back unmodified.
THINKING_BLOCKS = ("thinking", "redacted_thinking")
#: Blocks whose `input` streams as `input_json_delta` fragments.
INPUT_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")


# ---------------------------------------------------------------------------------------------------
# Tool definitions
# ---------------------------------------------------------------------------------------------------

def tool_to_wire(spec: ToolSpec) -> dict:
    """A ToolSpec as an Anthropic tool: `{"name", "description", "input_schema"[, "strict"]}`."""
    tool: dict[str, Any] = {"name": spec.name}
    if spec.description:
        tool["description"] = spec.description
    tool["input_schema"] = spec.parameters
    if spec.strict:
        tool["strict"] = True
    return tool


# ---------------------------------------------------------------------------------------------------
# Client side: build a request, read a response, a stream, an error
# ---------------------------------------------------------------------------------------------------

def auth_headers(api_key: str) -> dict:
    """The documented raw-HTTP auth header (the SDK sends `Authorization: Bearer`, servers take both)."""
    return {"x-api-key": api_key}


def tool_choice_to_wire(choice: ToolChoice, parallel: bool | None = None) -> dict:
    """The kit's tool_choice + parallel switch as Anthropic's `tool_choice` object.

    "auto" -> auto, "required" -> any, {"name": x} -> tool x, "none" -> none. The parallel switch is a flag
    *inside* the choice, `disable_parallel_tool_use`, and the `none` choice has no such flag.
    """
    if isinstance(choice, dict) and "allowed" in choice:
        raise ValueError("tool_choice {'allowed': ...} is OpenAI's allowed_tools; the Messages API has no subset: "
                         "send only those tools")
    if isinstance(choice, dict):
        wire: dict[str, Any] = {"type": "tool", "name": choice["name"]}
    elif choice == "required":
        wire = {"type": "any"}
    elif choice == "none":
        return {"type": "none"}
    else:
        wire = {"type": "auto"}
    if parallel is not None:
        wire["disable_parallel_tool_use"] = not parallel
    return wire


def build_request(model: str, messages: list[Message] | tuple[Message, ...], tools=(),
                  options: ModelOptions | None = None, **extras: Any) -> WireRequest:
    """Encode a conversation as an Anthropic Messages request.

    System messages are joined into the top-level `system` field. An assistant turn is replayed as its
    text block plus one `tool_use` block per call. Consecutive tool messages become ONE user message that
    starts with all their `tool_result` blocks; a user message that directly follows them is added to
    that same message, after the results (the API wants the results first). `extras` are copied into the
    body last (e.g. `metadata`, `top_p`, `thinking`).
    """
    options = options or ModelOptions()
    body: dict[str, Any] = {"model": model, "max_tokens": options.max_tokens or DEFAULT_MAX_TOKENS}
    system = [m.content for m in messages if m.role == "system" and m.content]
    if system:
        body["system"] = "\n\n".join(system)
    body["messages"] = _messages_to_wire(messages, model)
    if tools:
        body["tools"] = [tool_to_wire(t) for t in tools]
        # The API only accepts tool_choice together with tools.
        body["tool_choice"] = tool_choice_to_wire(options.tool_choice, options.parallel_tool_calls)
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.stream:
        body["stream"] = True
    body.update(extras)
    headers = {"anthropic-version": API_VERSION, "content-type": "application/json"}
    return WireRequest(PATH, body, headers, stream=options.stream)


def _messages_to_wire(messages, model: str) -> list[dict]:
    wire: list[dict] = []
    results_open = False  # is wire[-1] a user message made of tool results, still open for more?
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id or "",
                                     "content": m.content or "", "is_error": m.is_error}
            if results_open:
                wire[-1]["content"].append(block)
            else:
                wire.append({"role": "user", "content": [block]})
                results_open = True
            continue
        if m.role == "user" and results_open:
            # Extra text rides along after the results, in the same message: the API would merge two
            # user turns in a row anyway. (An empty text block is refused, so none is sent.)
            if m.content:
                wire[-1]["content"].append({"type": "text", "text": m.content})
            results_open = False
            continue
        results_open = False
        # This model's own kept blocks (thinking, then the server's) go first, exactly as they came;
        # another model's are dropped.
        state = own_reasoning(m, NAME, model) if m.role == "assistant" else None
        kept = [dict(block) for block in state.items] if state else []
        if m.role == "user":
            wire.append({"role": "user", "content": m.content or ""})
        elif m.tool_calls or kept:
            blocks: list[dict] = kept + ([{"type": "text", "text": m.content}] if m.content else [])
            for call in m.tool_calls:
                # `input` must be an object: a call whose arguments never parsed is replayed as {}.
                blocks.append({"type": "tool_use", "id": call.id, "name": call.name,
                               "input": call.arguments_object()})
            wire.append({"role": "assistant", "content": blocks})
        else:
            wire.append({"role": "assistant", "content": m.content or ""})
    return wire


def parse_response(body: Any) -> ModelTurn:
    """A non-streamed Messages response (`{"type": "message", "content": [...]}`) as a ModelTurn.

    Text blocks are joined; each `tool_use` block becomes a ToolCall whose raw arguments are the
    `input` object itself; every other block (thinking, the server's) is kept, in order, on the turn's
    ReasoningState. `usage.input_tokens` excludes the prompt-cache reads and writes on this API, so they
    are added back: the neutral Usage counts the whole prompt, as other formats do.
    """
    if not isinstance(body, dict) or not isinstance(body.get("content"), list):
        raise BadResponseError("response is not an Anthropic message (no content list)",
                               provider=NAME, body=body)
    texts: list[str] = []
    calls: list[ToolCall] = []
    kept: list[dict] = []
    for block in body["content"]:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            continue
        if block["type"] == "text":
            texts.append(str(block.get("text", "")))
        elif block["type"] == "tool_use":
            calls.append(ToolCall.from_raw(str(block.get("id", "")), str(block.get("name", "")),
                                           block.get("input", {})))
        else:
            kept.append(dict(block))
    native = body.get("stop_reason") if isinstance(body.get("stop_reason"), str) else None
    stop = STOP_TO_NEUTRAL.get(native, "other") if native else "other"
    if calls and stop in ("stop", "other"):
        stop = "tool_calls"  # the loop's signal: there are calls to run
    model = body.get("model") if isinstance(body.get("model"), str) else None
    state = ReasoningState(NAME, model, tuple(kept)) if kept else None
    return ModelTurn(text="".join(texts) if texts else None, tool_calls=tuple(calls), stop=stop,
                     native_stop=native, usage=_usage_from_wire(body.get("usage")),
                     model=model, id=body.get("id"), raw=body, reasoning=state)


def _usage_from_wire(usage: Any) -> Usage:
    """The neutral Usage of a Messages `usage` block. `input_tokens` here excludes the prompt-cache reads
    (`cache_read_input_tokens`) and writes (`cache_creation_input_tokens`, split by lifetime in
    `cache_creation.ephemeral_5m_input_tokens` / `ephemeral_1h_input_tokens`): the neutral Usage adds them
    back, so it counts the whole prompt as other formats do, and keeps reads and writes apart."""
    if not isinstance(usage, dict):
        return Usage()

    def count(key: str, block: Any = usage) -> int:
        value = block.get(key) if isinstance(block, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    read, written = count("cache_read_input_tokens"), count("cache_creation_input_tokens")
    # thinking is billed as output and counted in output_tokens; only newer responses break it out
    thinking = count("thinking_tokens", usage.get("output_tokens_details"))
    written_1h = min(written, count("ephemeral_1h_input_tokens", usage.get("cache_creation")))
    return Usage(count("input_tokens") + written + read, count("output_tokens"), thinking, read, written, written_1h)


class StreamAssembler:
    """Rebuilds a streamed response, event by event, into the ModelTurn `parse_response` would give.

        assembler = StreamAssembler()
        for sse in events:                      # e.g. from httpx-sse
            assembler.feed(sse.event, sse.data)
        turn = assembler.turn()

    The events rebuild the very message body the non-streamed call returns (`message_start` gives the
    skeleton, content blocks fill in, `message_delta` adds the stop reason and final usage), and that
    body goes through `parse_response`: one decoder, so streaming and not streaming cannot disagree.
    `ping` and unknown event types are ignored (the API may add new ones); `event: error` raises.
    `feed` returns the event's pieces: `text_delta`, `thinking_delta` and `input_json_delta` as they come,
    and a `tool_use` block's id and name when it starts.
    """

    def __init__(self) -> None:
        self.message: dict | None = None
        self.blocks: dict[int, dict] = {}
        self.json_parts: dict[int, list[str]] = {}  # index -> partial_json fragments of a tool_use
        self.done = False
        self.pieces: list[StreamDelta] = []  # what the event being fed brought

    def feed(self, event: str | None, data: str) -> list[StreamDelta]:
        self.pieces = []
        if not data or not data.strip():
            return self.pieces
        payload = event_object(data, NAME)
        # The SDK needs the `event:` line; we also accept events that only carry their `type`.
        kind = event or payload.get("type")
        if kind == "error":
            error = payload.get("error")
            error_type = error.get("type") if isinstance(error, dict) else None
            raise parse_error(STATUS_FOR_ERROR_TYPE.get(error_type, 500), payload, {})
        if kind == "message_start":
            self.message = dict(payload.get("message") or {})
        elif kind == "content_block_start":
            index = payload.get("index", len(self.blocks))
            self.blocks[index] = block = dict(payload.get("content_block") or {})
            self.json_parts[index] = []
            self._started(index, block)
        elif kind == "content_block_delta":
            self._delta(payload.get("index", 0), payload.get("delta") or {})
        elif kind == "content_block_stop":
            self._finish_block(payload.get("index", 0))
        elif kind == "message_delta":
            self._message_delta(payload)
        elif kind == "message_stop":
            self.done = True
        return self.pieces

    def _call_place(self, index: int) -> int:
        """A tool_use block's place among the turn's calls (parse_response keeps the blocks' order)."""
        return sum(1 for i, block in self.blocks.items() if i < index and block.get("type") == "tool_use")

    def _started(self, index: int, block: dict) -> None:
        if block.get("type") == "tool_use":
            self.pieces.append(ToolCallDelta(self._call_place(index), "", block.get("id"), block.get("name")))
        elif block.get("type") == "text" and block.get("text"):
            self.pieces.append(TextDelta(str(block["text"])))
        elif block.get("type") == "thinking" and block.get("thinking"):
            self.pieces.append(ReasoningDelta(str(block["thinking"])))

    def _delta(self, index: int, delta: dict) -> None:
        block = self.blocks.setdefault(index, {"type": "text", "text": ""})
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta.get("text", "")
            if delta.get("text"):
                self.pieces.append(TextDelta(str(delta["text"])))
        elif kind == "input_json_delta":
            self.json_parts.setdefault(index, []).append(delta.get("partial_json", ""))
            if delta.get("partial_json"):
                self.pieces.append(ToolCallDelta(self._call_place(index), str(delta["partial_json"])))
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
            if delta.get("thinking"):
                self.pieces.append(ReasoningDelta(str(delta["thinking"])))
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + delta.get("signature", "")

    def _finish_block(self, index: int) -> None:
        block = self.blocks.get(index)
        if block is None or block.get("type") not in INPUT_BLOCKS:
            return
        text = "".join(self.json_parts.get(index, []))
        if not text.strip():
            block["input"] = block.get("input") or {}  # a call without arguments sends no fragments
            if block["input"]:  # a server that sent the arguments whole, in the block's start
                self.pieces.append(ToolCallDelta(self._call_place(index), json.dumps(block["input"],
                                                                                     ensure_ascii=False)))
            return
        try:
            block["input"] = json.loads(text)
        except ValueError:
            # Keep the broken text: gate 1 (parse) will report it with its position.
            block["input"] = text

    def _message_delta(self, payload: dict) -> None:
        if self.message is None:
            self.message = {}
        delta = payload.get("delta") or {}
        for key in ("stop_reason", "stop_sequence"):
            if key in delta:
                self.message[key] = delta[key]
        usage = dict(self.message.get("usage") or {})
        # message_delta counts are cumulative: the latest value replaces the earlier one.
        usage.update({k: v for k, v in (payload.get("usage") or {}).items() if v is not None})
        self.message["usage"] = usage

    def body(self) -> dict:
        """The non-streamed message body these events add up to."""
        message = dict(self.message or {})
        message["content"] = [self.blocks[i] for i in sorted(self.blocks)]
        return message

    def turn(self) -> ModelTurn:
        if self.message is None or not self.done:
            raise BadResponseError("stream ended before message_stop", provider=NAME, body=self.body())
        return parse_response(self.body())


def parse_error(status: int, body: Any, headers: Any = None) -> ProviderError:
    """An error response as the right ProviderError subclass (529 overloaded -> ServerError).

    Reads `{"type": "error", "error": {"type", "message"}}`; a body that is not JSON (a proxy's HTML
    page, say) is tolerated and quoted. `retry-after-ms` wins over `retry-after` (seconds), as in the SDK.
    """
    data = json_or_none(body)
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or f"HTTP {status}")
        error_type = error.get("type")
    else:
        message = body_text(body) or f"HTTP {status}"
        error_type = None
    cls = error_for_status(status)
    return cls(message, status=status, error_type=error_type, provider=NAME,
               retry_after=retry_after_seconds(headers), body=data if data is not None else body)


#: The API keeps nothing between requests (contract: stored state).
stored_response_id = no_stored_id


"""The OpenAI Chat Completions format (`POST /v1/chat/completions`): the client side, pure functions.

What is special about tool calling here:

* A tool is nested: `{"type": "function", "function": {"name", "description", "parameters", "strict"}}`.
* Calls come back in `choices[0].message.tool_calls[]` as `{"id": "call_…", "type": "function",
  "function": {"name", "arguments"}}`, and `arguments` is a JSON **string** (it may even be invalid JSON).
* Results go back as the assistant message, unchanged, followed directly by one
  `{"role": "tool", "tool_call_id", "content"}` message per call. There is no error flag: a failed tool
  says so in its `content`. The API answers 400 when a call is left unanswered or a result answers
  nothing.
* `finish_reason: "tool_calls"` says "run these tools and call me again".
* `tool_choice` can narrow the tools without resending fewer: allowed_tools, nested here
  (`{"type": "allowed_tools", "allowed_tools": {"mode": "auto" | "required", "tools": [{"type":
  "function", "function": {"name"}}]}}`); a caller asks for it with the kit's `{"allowed": [names],
  "mode": …}` (see `tool_choice_to_wire`).
* `strict: true` is opt-in here (non-strict by default) and the API refuses a strict function whose
  schema strict mode cannot take (every object closed with `additionalProperties: false`, every
  property in `required`): `@tool(strict=True)` writes such schemas. There is no `phase` on Chat
  Completions (a Responses field).
* A stream is `data:` lines only and ends with `data: [DONE]`; the arguments of call number `index`
  arrive as string fragments to concatenate; usage comes in one extra chunk, and only when the request
  asked for it with `stream_options.include_usage`.
* OpenAI's own Chat Completions hands back no reasoning state, but compatible servers do, and some
  refuse a tool-calling conversation without it: DeepSeek's `reasoning_content` (with `thinking`
  enabled), OpenRouter's `reasoning` and `reasoning_details`, and Google's OpenAI-compatible endpoint's
  `extra_content` on a tool call (its thought signature). Those fields are the turn's ReasoningState
  here, sent back as they came to the same format and model (REASONING_FIELDS).

    from agentkit.providers import openai_chat
    wire = openai_chat.build_request("gpt-4.1-mini", messages, tools, ModelOptions())
    # POST DEFAULT_BASE_URL + wire.path with wire.headers | openai_chat.auth_headers(key), json=wire.body
    turn = openai_chat.parse_response(response_json)

Left out on purpose: image, audio and file parts (skipped when received), `refusal` text (kept in `raw`),
`n > 1` (only the first choice is read), logprobs, structured outputs (`response_format` is kept in
`ChatRequest.extras`, like every field the kit does not model), and the legacy `functions` API (a
`role: "function"` message is read as a tool message without an id).

The server half of the format (what the simulator answers) is `agentkit.sim.wire.openai_chat`.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.errors import BadResponseError, ProviderError
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
    TurnStop,
    Usage,
)
from . import openai_common
from .common import WireRequest, event_object, no_stored_id, own_reasoning
from .openai_common import count, in_band_error, raw_arguments, token_details

NAME = "openai-chat"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
PATH = "/chat/completions"
API_KEY_ENVS = ("OPENAI_API_KEY",)
KEY_REQUIRED = True
DEFAULT_MODEL = "gpt-4.1-mini"
STREAM_FRAMING = "sse"
SERVER_SIDE_FALLBACK = False
CONTINUATION_FIELD = None  # Chat Completions keeps no conversation

#: Assistant-message fields that carry reasoning state on compatible servers, kept and sent back as they
#: came: DeepSeek / vLLM `reasoning_content`, OpenRouter `reasoning` (text) and `reasoning_details`.
REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")

#: finish_reason -> neutral stop. "function_call" is the legacy functions API; anything else
#: (OpenRouter's "error", a local server's invention) is "other".
FINISH_TO_STOP: dict[str, TurnStop] = {"stop": "stop", "tool_calls": "tool_calls", "length": "length",
                                       "content_filter": "content_filter", "function_call": "other"}


#: The platform's bearer header, the same on both OpenAI APIs.
auth_headers = openai_common.auth_headers


# --- tool definitions ------------------------------------------------------------------------------

def tool_to_wire(spec: ToolSpec) -> dict:
    """A ToolSpec as Chat Completions wants it: nested under "function"; `strict` only when on."""
    function: dict[str, Any] = {"name": spec.name}
    if spec.description:
        function["description"] = spec.description
    function["parameters"] = spec.parameters
    if spec.strict:
        function["strict"] = True
    return {"type": "function", "function": function}


# --- client side: the request ----------------------------------------------------------------------

def tool_choice_to_wire(choice: ToolChoice, parallel: bool | None = None) -> str | dict:
    """The neutral choice on the wire: the three words stay strings; {"name": X} forces that one function;
    {"allowed": [X, Y], "mode": "auto" | "required"} is OpenAI's allowed_tools, nested here:

        tool_choice_to_wire({"allowed": ["get_time"], "mode": "required"})
        -> {"type": "allowed_tools",
            "allowed_tools": {"mode": "required", "tools": [{"type": "function", "function": {"name": "get_time"}}]}}

    Every tool is still sent (and billed); the model may call only the allowed ones, and with "required"
    must call one. (The parallel switch is its own top-level field here, `parallel_tool_calls`.)
    """
    if isinstance(choice, dict) and "allowed" in choice:
        tools = [{"type": "function", "function": {"name": name}} for name in choice["allowed"]]
        return {"type": "allowed_tools", "allowed_tools": {"mode": choice.get("mode", "auto"), "tools": tools}}
    if isinstance(choice, dict):
        return {"type": "function", "function": {"name": choice["name"]}}
    return choice


def build_request(model: str, messages: list[Message] | tuple[Message, ...], tools=(),
                  options: ModelOptions | None = None, *, fmt: str = NAME, **extras: Any) -> WireRequest:
    """The POST body for one model call. `extras` are further body fields, sent as given (`seed=7`, ...).

    `tool_choice` and `parallel_tool_calls` go out only with tools: the API answers 400 to either one
    without `tools`. A stream asks for the usage chunk, so a streamed turn counts tokens like a plain one.
    `fmt` names the format whose reasoning state may go back (OpenRouter reuses this encoder).
    """
    options = options or ModelOptions()
    body: dict[str, Any] = {"model": model, "messages": [_message_to_wire(m, own_reasoning(m, fmt, model))
                                                         for m in messages]}
    if tools:
        body["tools"] = [tool_to_wire(t) for t in tools]
        body["tool_choice"] = tool_choice_to_wire(options.tool_choice)
        if options.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = options.parallel_tool_calls
    if options.max_tokens is not None:
        body["max_completion_tokens"] = options.max_tokens  # `max_tokens` is deprecated for OpenAI models
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    body.update(extras)
    return WireRequest(PATH, body, {}, stream=options.stream)


def _message_to_wire(m: Message, state: ReasoningState | None = None) -> dict:
    if m.role == "assistant":
        wire: dict[str, Any] = {"role": "assistant", "content": m.content}
        if m.tool_calls:
            wire["tool_calls"] = [_call_to_wire(c.id, c) for c in m.tool_calls]
        elif m.content is None:
            wire["content"] = ""  # an assistant message needs content or tool_calls
        _put_reasoning(wire, state)
        return wire
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content or ""}
    return {"role": m.role, "content": m.content or ""}


def _call_to_wire(call_id: str, call: ToolCall) -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": call.name, "arguments": call.arguments_json()}}


def _put_reasoning(message: dict, state: ReasoningState | None) -> None:
    """Write reasoning state onto an assistant message: its fields as they came, each call's extra_content."""
    for item in state.items if state is not None else ():
        if "message" in item:
            message.update(item["message"])
        elif isinstance(item.get("call"), int) and item["call"] < len(message.get("tool_calls") or []):
            message["tool_calls"][item["call"]]["extra_content"] = item["extra_content"]


def reasoning_of(message: dict, calls: list[dict], fmt: str, model: Any) -> ReasoningState | None:
    """The reasoning state on an assistant message (REASONING_FIELDS) and its calls (`extra_content`)."""
    fields = {k: message[k] for k in REASONING_FIELDS if message.get(k) is not None}
    items: list[dict] = [{"message": fields}] if fields else []
    items += [{"call": k, "extra_content": c["extra_content"]} for k, c in enumerate(calls)
              if isinstance(c, dict) and c.get("extra_content") is not None]
    return ReasoningState(fmt, model if isinstance(model, str) else None, tuple(items)) if items else None


# --- client side: the response ---------------------------------------------------------------------

def neutral_stop(finish_reason: Any, has_calls: bool) -> TurnStop:
    """finish_reason -> the kit's stop word; calls with "stop" (older Ollama, llama.cpp) are tool_calls."""
    if finish_reason is None:  # some compatible servers leave it out
        stop: TurnStop = "stop"
    else:
        stop = FINISH_TO_STOP.get(finish_reason, "other") if isinstance(finish_reason, str) else "other"
    return "tool_calls" if has_calls and stop == "stop" else stop


def parse_response(body: Any, provider: str = NAME) -> ModelTurn:
    """A non-streamed `chat.completion` body -> ModelTurn (first choice; arguments kept raw and parsed).

    A 2xx body that is not a completion (no choices, or a top-level `error`) raises BadResponseError.
    """
    if not isinstance(body, dict):
        raise BadResponseError("the response body is not a JSON object", provider=provider, body=body)
    if body.get("error"):
        raise in_band_error(body, provider)
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BadResponseError("the response has no choices", provider=provider, body=body)
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise BadResponseError("the first choice has no message", provider=provider, body=body)
    wire_calls = message.get("tool_calls") or []
    if not isinstance(wire_calls, list) or not all(isinstance(c, dict) for c in wire_calls):
        raise BadResponseError("message.tool_calls is not a list of objects", provider=provider, body=body)
    calls = [_call_from_wire(c) for c in wire_calls]
    return _turn(_text_of(message.get("content")), calls, choices[0].get("finish_reason"),
                 _usage_from_wire(body.get("usage")), body.get("model"), body.get("id"), body,
                 reasoning_of(message, wire_calls, provider, body.get("model")))


def _turn(text: str | None, calls: list[ToolCall], finish_reason: Any, usage: Usage, model: Any, id: Any,
          raw: dict, reasoning: ReasoningState | None = None) -> ModelTurn:
    # One constructor for the plain and the streamed path, so both give the same ModelTurn.
    return ModelTurn(text or None, tuple(calls), neutral_stop(finish_reason, bool(calls)),
                     finish_reason if isinstance(finish_reason, str) else None, usage,
                     model if isinstance(model, str) else None, id if isinstance(id, str) else None, raw,
                     reasoning)


def _call_from_wire(c: dict) -> ToolCall:
    if c.get("type") == "custom":  # a free-text tool: its `input` is the raw text
        custom = c.get("custom") if isinstance(c.get("custom"), dict) else {}
        return ToolCall.from_raw(str(c.get("id") or ""), str(custom.get("name") or ""),
                                 raw_arguments(custom.get("input")))
    function = c.get("function") if isinstance(c.get("function"), dict) else {}
    return ToolCall.from_raw(str(c.get("id") or ""), str(function.get("name") or ""),
                             raw_arguments(function.get("arguments")))


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content or None
    if isinstance(content, list):  # some compatible servers answer with text parts
        texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "".join(t for t in texts if isinstance(t, str)) or None
    return None


def _usage_from_wire(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    # cache reads and writes are part of prompt_tokens, reasoning tokens part of completion_tokens;
    # `cache_write_tokens` is OpenRouter's (its usage accounting), absent from OpenAI's own answers
    prompt = token_details(usage, "prompt_tokens_details")
    return Usage(count(usage.get("prompt_tokens")), count(usage.get("completion_tokens")),
                 count(token_details(usage, "completion_tokens_details").get("reasoning_tokens")),
                 count(prompt.get("cached_tokens")), count(prompt.get("cache_write_tokens")))



class StreamAssembler:
    """Rebuilds the ModelTurn of a streamed completion from its `data:` chunks.

        assembler = StreamAssembler()
        for sse in events:                     # any SSE parser: comments never need to reach feed()
            assembler.feed(sse.event, sse.data)
        turn = assembler.turn()                # == parse_response() of the same answer, except `raw`

    Calls are keyed by `index` (parallel calls may interleave); the text and argument fragments are
    concatenated. A chunk with a top-level `error` raises BadResponseError, and so does `turn()` when
    the stream stopped before `data: [DONE]`. `feed` returns the chunk's pieces as they came: text,
    reasoning text (`reasoning_content` / `reasoning`, else `reasoning_details` text) and argument fragments.
    """

    provider = NAME

    def __init__(self) -> None:
        self.id: str | None = None
        self.model: str | None = None
        self.text: list[str] = []
        self.calls: dict[int, dict] = {}  # index -> {"id", "name", "arguments": [fragments], "extra_content"?}
        self.reasoning: dict[str, Any] = {}  # REASONING_FIELDS: text fields joined, details merged by index
        self.finish_reason: str | None = None
        self.usage = Usage()
        self.done = False
        self.chunks: list[dict] = []
        self.pieces: list[StreamDelta] = []  # what the chunk being fed brought

    def feed(self, event: str | None, data: str) -> list[StreamDelta]:
        self.pieces = []
        text = (data or "").strip()
        if self.done or not text or text.startswith(":"):  # keep-alive comments carry nothing
            return self.pieces
        if text == "[DONE]":
            self.done = True
            return self.pieces
        chunk = event_object(text, self.provider)
        if chunk.get("error"):
            raise in_band_error(chunk, self.provider)
        self.chunks.append(chunk)
        self.id = self.id or (chunk.get("id") if isinstance(chunk.get("id"), str) else None)
        self.model = self.model or (chunk.get("model") if isinstance(chunk.get("model"), str) else None)
        if isinstance(chunk.get("usage"), dict):
            self.usage = _usage_from_wire(chunk["usage"])
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
            if isinstance(delta.get("content"), str):
                self.text.append(delta["content"])
                if delta["content"]:
                    self.pieces.append(TextDelta(delta["content"]))
            self._add_reasoning(delta)
            fragments = delta.get("tool_calls")
            for fragment in fragments if isinstance(fragments, list) else []:
                if isinstance(fragment, dict):
                    self._add_fragment(fragment)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return self.pieces

    def _add_fragment(self, fragment: dict) -> None:
        index, call_id = fragment.get("index"), fragment.get("id")
        call_id = call_id if isinstance(call_id, str) and call_id else None
        if not isinstance(index, int):  # a few compatible servers leave `index` out: a new id starts a call
            new = call_id is not None and call_id not in {c["id"] for c in self.calls.values()}
            index = len(self.calls) if new or not self.calls else max(self.calls)
        call = self.calls.setdefault(index, {"id": "", "name": "", "arguments": []})
        if call_id is not None:
            call["id"] = call_id
        if fragment.get("extra_content") is not None:
            call["extra_content"] = fragment["extra_content"]
        function = fragment.get("function") if isinstance(fragment.get("function"), dict) else {}
        if function.get("name"):
            call["name"] = str(function["name"])
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call["arguments"].append(arguments)
        elif isinstance(arguments, dict):  # whole-object arguments from a non-conforming server
            arguments = json.dumps(arguments)
            call["arguments"].append(arguments)
        else:
            arguments = ""
        # the call's place in the turn: turn() orders the calls by index
        place = sorted(self.calls).index(index)
        self.pieces.append(ToolCallDelta(place, arguments, call_id, str(function["name"]) if function.get("name")
                                         else None))

    def _add_reasoning(self, delta: dict) -> None:
        shown = False  # a server that sends the text twice (`reasoning` and its details) is shown it once
        for key in ("reasoning_content", "reasoning"):
            if isinstance(delta.get(key), str):
                self.reasoning[key] = self.reasoning.get(key, "") + delta[key]
                if delta[key] and not shown:
                    self.pieces.append(ReasoningDelta(delta[key]))
                    shown = True
        shown = shown or "reasoning_content" in self.reasoning or "reasoning" in self.reasoning
        details = delta.get("reasoning_details")
        for detail in details if isinstance(details, list) else []:
            if not isinstance(detail, dict):
                continue
            piece = detail.get("text") or detail.get("summary")
            if not shown and isinstance(piece, str) and piece:
                self.pieces.append(ReasoningDelta(piece))
            merged = self.reasoning.setdefault("reasoning_details", [])
            index = detail.get("index", len(merged))
            known = next((d for d in merged if d.get("index", -1) == index), None)
            if known is None:
                merged.append(dict(detail))
                continue
            for key, value in detail.items():  # text pieces join; everything else is the latest value
                joins = key in ("text", "summary", "data") and isinstance(value, str)
                known[key] = known.get(key, "") + value if joins and isinstance(known.get(key), str) else value

    def turn(self) -> ModelTurn:
        if not self.done:
            raise BadResponseError("the stream ended before `data: [DONE]`", provider=self.provider)
        ordered = [c for _, c in sorted(self.calls.items())]
        calls = [ToolCall.from_raw(c["id"], c["name"], "".join(c["arguments"])) for c in ordered]
        fields = {k: self.reasoning[k] for k in REASONING_FIELDS if k in self.reasoning}
        return _turn("".join(self.text), calls, self.finish_reason, self.usage, self.model, self.id,
                     {"chunks": self.chunks}, reasoning_of(fields, ordered, self.provider, self.model))


def parse_error(status: int, body: Any, headers: Any = None) -> ProviderError:
    """An error response -> the right ProviderError subclass (the platform's shape, see openai_common)."""
    return openai_common.parse_error(status, body, headers, provider=NAME)


#: Chat Completions keeps nothing between requests (contract: stored state).
stored_response_id = no_stored_id

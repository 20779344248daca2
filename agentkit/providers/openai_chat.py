"""The OpenAI Chat Completions format (`POST /v1/chat/completions`): both sides of the wire, pure functions.

What is special about tool calling here:

* A tool is nested: `{"type": "function", "function": {"name", "description", "parameters", "strict"}}`.
* Calls come back in `choices[0].message.tool_calls[]` as `{"id": "call_…", "type": "function",
  "function": {"name", "arguments"}}`, and `arguments` is a JSON **string** (it may even be invalid JSON).
* Results go back as the assistant message, unchanged, followed directly by one
  `{"role": "tool", "tool_call_id", "content"}` message per call. There is no error flag: a failed tool
  says so in its `content`. The API answers 400 when a call is left unanswered or a result answers
  nothing.
* `finish_reason: "tool_calls"` says "run these tools and call me again".
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
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..errors import BadResponseError, ProviderError
from ..types import Message, ModelOptions, ModelTurn, ReasoningState, ToolCall, ToolChoice, ToolSpec, TurnStop, Usage
from . import openai_common
from .common import (ChatRequest, RequestInvalid, SSEvent, StreamEvent, WireRequest, dumps, event_object,
                     no_records, no_stored_id, nothing_stored, own_reasoning, schema_problem, simulated_thought)
from .contract import Route
from .openai_common import (CREATED, NOT_JSON, build_error, call_ids, completion_id, count, token_details,
                            empty_array, in_band_error, invalid_schema, invalid_type, invalid_value, missing,
                            optional, out_of_range, pieces, raw_arguments, required, required_object,
                            required_str, temperature_field, tool_name)

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

#: What the real server does around the bodies (routes, key, request id, fault wording): see contract.py.
SERVER = openai_common.platform_server(Route("POST", "/v1/chat/completions"))

#: finish_reason -> neutral stop. "function_call" is the legacy functions API; anything else
#: (OpenRouter's "error", a local server's invention) is "other".
FINISH_TO_STOP: dict[str, TurnStop] = {"stop": "stop", "tool_calls": "tool_calls", "length": "length",
                                       "content_filter": "content_filter", "function_call": "other"}
#: neutral stop -> finish_reason. The SDK accepts only its five values, so "other" becomes "stop".
STOP_TO_FINISH = {"stop": "stop", "tool_calls": "tool_calls", "length": "length",
                  "content_filter": "content_filter", "other": "stop"}

ROLES = ("system", "assistant", "user", "function", "tool", "developer")

#: Models that call tools only through the Responses API (OpenAI's migration guide; seed 000, claim C13).
RESPONSES_ONLY_TOOLS = ("gpt-6",)


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


def tool_from_wire(d: Any, param: str = "tools[0]") -> ToolSpec:
    """Read one `{"type": "function", "function": {...}}`; raises RequestInvalid in the API's words.

    A Responses-style flat tool (`{"type": "function", "name": ...}`) is refused the way the API refuses
    it: "Missing required parameter: 'tools[0].function'."
    """
    if not isinstance(d, dict):
        raise invalid_type(param, "an object", d)
    kind = required(d, "type", param)
    if kind != "function":
        raise invalid_value(f"{param}.type", kind, ("function", "custom"))
    function = required_object(d, "function", param)
    where = f"{param}.function"
    name = tool_name(function, where)
    description = optional(function, "description", str, "a string", where) or ""
    parameters = optional(function, "parameters", dict, "an object", where)
    strict = optional(function, "strict", bool, "a boolean", where) or False
    problem = None if parameters is None else schema_problem(parameters)
    if problem is not None:
        raise invalid_schema(name, f"{where}.parameters", problem)
    if parameters is None:  # "Omitting parameters defines a function with an empty parameter list."
        return ToolSpec(name, description, strict=strict)
    return ToolSpec(name, description, parameters, strict)


# --- client side: the request ----------------------------------------------------------------------

def tool_choice_to_wire(choice: ToolChoice, parallel: bool | None = None) -> str | dict:
    """The neutral choice on the wire: the three words stay strings; {"name": X} forces that one function.

    (The parallel switch is its own top-level field here, `parallel_tool_calls`, so it is not used.)
    """
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
    # cached tokens are part of prompt_tokens, reasoning tokens part of completion_tokens
    return Usage(count(usage.get("prompt_tokens")), count(usage.get("completion_tokens")),
                 count(token_details(usage, "completion_tokens_details").get("reasoning_tokens")),
                 count(token_details(usage, "prompt_tokens_details").get("cached_tokens")))



class StreamAssembler:
    """Rebuilds the ModelTurn of a streamed completion from its `data:` chunks.

        assembler = StreamAssembler()
        for sse in events:                     # any SSE parser: comments never need to reach feed()
            assembler.feed(sse.event, sse.data)
        turn = assembler.turn()                # == parse_response() of the same answer, except `raw`

    Calls are keyed by `index` (parallel calls may interleave); the text and argument fragments are
    concatenated. A chunk with a top-level `error` raises BadResponseError, and so does `turn()` when
    the stream stopped before `data: [DONE]`.
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

    def feed(self, event: str | None, data: str) -> None:
        text = (data or "").strip()
        if self.done or not text or text.startswith(":"):  # keep-alive comments carry nothing
            return
        if text == "[DONE]":
            self.done = True
            return
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
            self._add_reasoning(delta)
            fragments = delta.get("tool_calls")
            for fragment in fragments if isinstance(fragments, list) else []:
                if isinstance(fragment, dict):
                    self._add_fragment(fragment)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]

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
            call["arguments"].append(json.dumps(arguments))

    def _add_reasoning(self, delta: dict) -> None:
        for key in ("reasoning_content", "reasoning"):
            if isinstance(delta.get(key), str):
                self.reasoning[key] = self.reasoning.get(key, "") + delta[key]
        details = delta.get("reasoning_details")
        for detail in details if isinstance(details, list) else []:
            if not isinstance(detail, dict):
                continue
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
resolve_stored = nothing_stored
stored_records = no_records


# --- server side: the request ----------------------------------------------------------------------
# The checks run in the API's order: model, messages (shape), tools, switches, then content and the
# pairing of calls with results. The wording and `param` paths are the API's, dots and all
# ("messages.[3].role" is what it really says for the pairing errors).

#: Body fields the kit models; everything else lands in ChatRequest.extras unchanged.
MODELLED = {"model", "messages", "tools", "tool_choice", "parallel_tool_calls", "stream", "max_tokens",
            "max_completion_tokens", "temperature"}
SKIPPED_PARTS = ("image_url", "input_audio", "refusal", "audio", "file")


def parse_request(body: Any, model: str | None = None, fmt: str = NAME) -> ChatRequest:
    """What a client sent -> ChatRequest, or RequestInvalid with the 400 the real API would give.

    An assistant message's reasoning fields become its ReasoningState (tagged `fmt`, this model's)."""
    if not isinstance(body, dict):
        raise RequestInvalid(NOT_JSON, None)
    model_name = body.get("model", model)
    if model_name is None:
        raise RequestInvalid("you must provide a model parameter", None)
    if not isinstance(model_name, str):
        raise invalid_type("model", "a string", model_name)
    if "messages" not in body:
        raise missing("messages")
    wire_messages = body["messages"]
    if not isinstance(wire_messages, list):
        raise invalid_type("messages", "an array of objects", wire_messages)
    if not wire_messages:
        raise empty_array("messages")
    messages = [_message_from_wire(i, m, fmt, model_name) for i, m in enumerate(wire_messages)]
    tools, has_tools = _tools_field(body.get("tools"))
    choice, unmodelled_choice = _tool_choice_field(body, [t.name for t in tools], has_tools)
    options = ModelOptions(choice, _parallel_field(body, has_tools), _stream_field(body),
                           _max_tokens_field(body), temperature_field(body))
    _check_content(messages, wire_messages)
    messages = _pair_results(messages)
    extras = {k: v for k, v in body.items() if k not in MODELLED}
    if unmodelled_choice is not None:
        extras["tool_choice"] = unmodelled_choice
    return ChatRequest(model_name, tuple(messages), tuple(tools), options, (), extras)


def _message_from_wire(i: int, m: Any, fmt: str = NAME, model: str | None = None) -> Message:
    at = f"messages[{i}]"
    if not isinstance(m, dict):
        raise invalid_type(at, "an object", m)
    role = required(m, "role", at)
    if role not in ROLES:
        raise invalid_value(f"{at}.role", role, ROLES)
    content = m.get("content")
    if role == "developer" and "content" not in m:  # developer has its own schema, and its own words
        raise missing(f"{at}.content")
    if (content is not None or role == "developer") and not isinstance(content, (str, list)):
        raise invalid_type(f"{at}.content", "one of a string or array of objects", content)
    text = _content_text(f"{at}.content", content)
    if role == "assistant":
        calls = _calls_from_wire(at, m["tool_calls"]) if m.get("tool_calls") is not None else ()
        state = reasoning_of(m, m.get("tool_calls") or [], fmt, model)
        return Message("assistant", text, calls, reasoning=state)
    if role == "tool":
        return Message("tool", text, (), required_str(m, "tool_call_id", at))
    if role == "function":  # the legacy functions API: a result matched by name only
        return Message("tool", text, (), None, required_str(m, "name", at))
    return Message("system" if role in ("system", "developer") else "user", text)


def _content_text(at: str, content: Any) -> str | None:
    """A string stays; an array of parts is reduced to its text parts (images etc. are skipped)."""
    if not isinstance(content, list):
        return content
    texts = []
    for j, part in enumerate(content):
        where = f"{at}[{j}]"
        if not isinstance(part, dict):
            raise invalid_type(where, "an object", part)
        kind = required(part, "type", where)
        if kind == "text":
            texts.append(required_str(part, "text", where))
        elif kind not in SKIPPED_PARTS:
            raise invalid_value(f"{where}.type", kind, ("text",) + SKIPPED_PARTS)
    return "".join(texts)


def _calls_from_wire(at: str, calls: Any) -> tuple[ToolCall, ...]:
    if not isinstance(calls, list):
        raise invalid_type(f"{at}.tool_calls", "an array of objects", calls)
    if not calls:
        raise empty_array(f"{at}.tool_calls")
    out = []
    for k, c in enumerate(calls):
        where = f"{at}.tool_calls[{k}]"
        if not isinstance(c, dict):
            raise invalid_type(where, "an object", c)
        call_id = required_str(c, "id", where)
        kind = required(c, "type", where)
        if kind == "custom":  # a free-text tool's call: keep its input as the raw arguments
            custom = required_object(c, "custom", where)
            out.append(ToolCall.from_raw(call_id, required_str(custom, "name", f"{where}.custom"),
                                         required_str(custom, "input", f"{where}.custom")))
            continue
        if kind != "function":
            raise invalid_value(f"{where}.type", kind, ("function", "custom"))
        function = required_object(c, "function", where)
        out.append(ToolCall.from_raw(call_id, required_str(function, "name", f"{where}.function"),
                                     required_str(function, "arguments", f"{where}.function")))
    return tuple(out)


def _tools_field(value: Any) -> tuple[list[ToolSpec], bool]:
    """The function tools, and whether any tool at all was sent (free-text `custom` tools are skipped)."""
    if value is None:
        return [], False
    if not isinstance(value, list):
        raise invalid_type("tools", "an array of objects", value)
    specs = [tool_from_wire(d, f"tools[{i}]") for i, d in enumerate(value)
             if not (isinstance(d, dict) and d.get("type") == "custom")]
    return specs, bool(value)


def _tool_choice_field(body: dict, names: list[str], has_tools: bool) -> tuple[ToolChoice, dict | None]:
    """The neutral tool_choice, plus the original when it is a form the kit does not model."""
    choice = body.get("tool_choice")
    if choice is None:
        return "auto", None
    only_with_tools = RequestInvalid("Invalid value for 'tool_choice': 'tool_choice' is only allowed when "
                                     "'tools' are specified.", "tool_choice")
    if isinstance(choice, str):
        if choice not in ("none", "auto", "required"):
            raise invalid_value("tool_choice", choice, ("none", "auto", "required"))
        if choice != "none" and not has_tools:
            raise only_with_tools
        return choice, None
    if not isinstance(choice, dict):
        raise invalid_type("tool_choice", "one of one of 'none', 'auto', or 'required' or object", choice)
    if not has_tools:
        raise only_with_tools
    if choice.get("type") == "allowed_tools":  # a subset of the tools, in "auto" or "required" mode
        allowed = required_object(choice, "allowed_tools", "tool_choice")
        mode = required(allowed, "mode", "tool_choice.allowed_tools")
        if mode not in ("auto", "required"):
            raise invalid_value("tool_choice.allowed_tools.mode", mode, ("auto", "required"))
        return mode, choice
    if choice.get("type") == "custom":  # forcing a free-text tool: the closest neutral word
        return "required", choice
    function = required_object(choice, "function", "tool_choice")
    name = required_str(function, "name", "tool_choice.function")
    if name not in names:  # (sic: the API still words this in terms of the legacy functions API)
        raise RequestInvalid(f"Invalid value for 'function_call': no function named '{name}' was specified "
                             "in the 'functions' parameter.", "function_call")
    return {"name": name}, None


def _parallel_field(body: dict, has_tools: bool) -> bool | None:
    value = body.get("parallel_tool_calls")
    if value is None:
        return None
    if not isinstance(value, bool):
        raise invalid_type("parallel_tool_calls", "a boolean", value)
    if not has_tools:
        raise RequestInvalid("Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed "
                             "when 'tools' are specified.", "parallel_tool_calls")
    return value


def _max_tokens_field(body: dict) -> int | None:
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise invalid_type(key, "an integer", value)
        if value < 1:
            raise out_of_range(key, value, ">=", 1, "integer")
        return value
    return None


def _stream_field(body: dict) -> bool:
    value = body.get("stream")
    if value is not None and not isinstance(value, bool):
        raise invalid_type("stream", "a boolean", value)
    return bool(value)


def _check_content(messages: list[Message], wire: list[dict]) -> None:
    """Null content is refused, except on an assistant message that carries something else instead."""
    for i, (m, w) in enumerate(zip(messages, wire)):
        substitutes = ("function_call", "refusal", "audio")
        stands_in = m.role == "assistant" and (m.tool_calls or any(w.get(k) is not None for k in substitutes))
        if m.content is None and not stands_in:
            raise RequestInvalid("Invalid value for 'content': expected a string, got null.",
                                 f"messages.[{i}].content")


def _pair_results(messages: list[Message]) -> list[Message]:
    """Every call needs a tool message right after its assistant turn, and every tool message a call.

    Returns the messages with each tool message's `name` filled in from the call it answers.
    """
    out: list[Message] = []
    names: dict[str, str] = {}  # ids of the assistant turn being answered -> tool name
    pending: list[str] = []     # of those, the ids still without an answer
    opened_at = 0
    for i, m in enumerate(messages):
        if m.role == "tool" and m.tool_call_id is not None:
            if m.tool_call_id not in names:  # (sic: "preceeding" is the API's spelling)
                raise RequestInvalid("Invalid parameter: messages with role 'tool' must be a response to a "
                                     "preceeding message with 'tool_calls'.", f"messages.[{i}].role")
            if m.tool_call_id in pending:
                pending.remove(m.tool_call_id)
            out.append(replace(m, name=names[m.tool_call_id]))
            continue
        if pending:
            raise _unanswered(opened_at, pending)
        names = {c.id: c.name for c in m.tool_calls} if m.role == "assistant" else {}
        pending, opened_at = list(names), i
        out.append(m)
    if pending:
        raise _unanswered(opened_at, pending)
    return out


def _unanswered(i: int, ids: list[str]) -> RequestInvalid:
    return RequestInvalid("An assistant message with 'tool_calls' must be followed by tool messages "
                          "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                          "response messages: " + ", ".join(ids), f"messages.[{i}].role")


# --- server side: the response ---------------------------------------------------------------------

def response_id(turn: ModelTurn, request: ChatRequest) -> str:
    """A `chatcmpl-…` id: the turn's own when it already has that shape, else derived from it."""
    return completion_id(turn, request)


def finish_reason(turn: ModelTurn) -> str:
    if turn.tool_calls and turn.stop in ("stop", "tool_calls"):
        return "tool_calls"
    if turn.stop == "tool_calls":  # no calls to run: the model simply stopped
        return "stop"
    return STOP_TO_FINISH.get(turn.stop, "stop")


def _usage_to_wire(usage: Usage) -> dict:
    return {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}


def reasoning_for(turn: ModelTurn, request: ChatRequest) -> ReasoningState | None:
    """OpenAI returns no reasoning on Chat Completions. With DeepSeek's switch, `thinking: {"type":
    "enabled"}`, the answer carries `reasoning_content` (DeepSeek refuses a tool-calling conversation
    that drops it); the simulator answers that switch the same way, whatever the model."""
    thinking = request.extras.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return None
    return ReasoningState(NAME, turn.model or request.model,
                          ({"message": {"reasoning_content": simulated_thought(turn, request)}},))


def build_response(turn: ModelTurn, request: ChatRequest, fmt: str = NAME) -> dict:
    """The JSON body a real server answers (§1.5); validates as `openai.types.chat.ChatCompletion`."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None, "refusal": None,
                               "annotations": []}
    if turn.tool_calls:
        ids = call_ids(turn, request)
        message["tool_calls"] = [_call_to_wire(i, c) for i, c in zip(ids, turn.tool_calls)]
    if turn.reasoning is not None and turn.reasoning.format == fmt:
        _put_reasoning(message, turn.reasoning)
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason(turn)}
    return {"id": response_id(turn, request), "object": "chat.completion", "created": CREATED,
            "model": turn.model or request.model, "choices": [choice],
            "usage": _usage_to_wire(turn.usage), "service_tier": "default", "system_fingerprint": "fp_sim"}


def build_stream(turn: ModelTurn, request: ChatRequest, fmt: str = NAME) -> list[SSEvent]:
    """The same answer as `data:` chunks (reference §1.8), ending with `data: [DONE]`.

    A role chunk, the reasoning fields (text in pieces, each reasoning detail whole), the text in pieces,
    per call a head chunk (index, id, name, arguments "", extra_content) and the arguments in at least
    two pieces, a closing chunk with `finish_reason`; then the usage chunk, but only when the request
    asked for it with `stream_options.include_usage`.
    """
    body = build_response(turn, request, fmt)
    stream_options = request.extras.get("stream_options")
    include_usage = isinstance(stream_options, dict) and stream_options.get("include_usage") is True
    head: dict[str, Any] = {"id": body["id"], "object": "chat.completion.chunk", "created": CREATED,
                            "model": body["model"], "service_tier": "default", "system_fingerprint": "fp_sim"}
    if include_usage:
        head["usage"] = None  # every chunk carries the key; only the extra last chunk fills it
    events: list[SSEvent] = []

    def emit(delta: dict, finish: str | None = None) -> None:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        events.append(SSEvent(dumps({**head, "choices": [choice]})))

    emit({"role": "assistant", "content": "" if turn.text else None, "refusal": None})
    message = body["choices"][0]["message"]
    for key in REASONING_FIELDS:
        value = message.get(key)
        if isinstance(value, str):
            for piece in pieces(value):
                emit({key: piece})
        elif isinstance(value, list):
            for detail in value:
                emit({key: [detail]})
    for piece in pieces(turn.text or ""):
        if piece:
            emit({"content": piece})
    for index, call in enumerate(message.get("tool_calls", [])):
        function = call["function"]
        opening = {"index": index, "id": call["id"], "type": "function",
                   "function": {"name": function["name"], "arguments": ""}}
        if "extra_content" in call:
            opening["extra_content"] = call["extra_content"]
        emit({"tool_calls": [opening]})
        for piece in pieces(function["arguments"]):
            if piece:
                emit({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    emit({}, body["choices"][0]["finish_reason"])
    if include_usage:
        events.append(SSEvent(dumps({**head, "choices": [], "usage": body["usage"]})))
    events.append(SSEvent("[DONE]"))
    return events


def build_stream_error(status: int, message: str, request: ChatRequest,
                       sent: Sequence[StreamEvent] = ()) -> SSEvent:
    """A failure after the stream started (status already 200): a bare chunk with a top-level `error`
    (reference §1.8); the SDK raises APIError on it. Its `type` says what kind of failure it was."""
    error = build_error(status, message)["error"]
    return SSEvent(dumps({"error": {**error, "code": None if status != 429 else error["code"]}}))


def build_model_list(names: list[str] | tuple[str, ...]) -> dict:
    """GET /v1/models."""
    return openai_common.model_list(names)


def model_refusal(request: ChatRequest) -> RequestInvalid | None:
    """GPT-6 models answer a Chat Completions request with tools with a 400: tools need Responses."""
    if request.tools and request.model.startswith(RESPONSES_ONLY_TOOLS):
        return RequestInvalid("GPT-6 Astra, GPT-6.1 Sol, and GPT-6.1 Terra support Chat Completions, but tool "
                              "calling requires Responses. Send this request to /v1/responses (model "
                              f"{request.model!r}), or remove `tools`.", "tools")
    return None

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
import re
from dataclasses import replace
from typing import Any

from ..errors import BadResponseError, ProviderError, error_for_status
from ..types import Message, ModelOptions, ModelTurn, ToolCall, ToolChoice, ToolSpec, TurnStop, Usage
from .common import (ChatRequest, RequestInvalid, SSEvent, WireRequest, body_text, dumps, event_object,
                     json_or_none, retry_after_seconds, stable_id)

NAME = "openai-chat"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
PATH = "/chat/completions"
API_KEY_ENVS = ("OPENAI_API_KEY",)
DEFAULT_MODEL = "gpt-4.1-mini"
#: 2026-01-01T00:00:00Z. A fixed `created` keeps the simulator's answers identical run after run.
CREATED = 1767225600

#: finish_reason -> neutral stop. "function_call" is the legacy functions API; anything else
#: (OpenRouter's "error", a local server's invention) is "other".
FINISH_TO_STOP: dict[str, TurnStop] = {"stop": "stop", "tool_calls": "tool_calls", "length": "length",
                                       "content_filter": "content_filter", "function_call": "other"}
#: neutral stop -> finish_reason. The SDK accepts only its five values, so "other" becomes "stop".
STOP_TO_FINISH = {"stop": "stop", "tool_calls": "tool_calls", "length": "length",
                  "content_filter": "content_filter", "other": "stop"}

ROLES = ("system", "assistant", "user", "function", "tool", "developer")
NOT_JSON = ("We could not parse the JSON body of your request. (HINT: This likely means you aren't using "
            "your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not "
            "valid JSON.)")
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]+")  # used with fullmatch: `$` would let "f\n" through


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
        raise _invalid_type(param, "an object", d)
    kind = _required(d, "type", param)
    if kind != "function":
        raise _invalid_value(f"{param}.type", kind, ("function", "custom"))
    function = _required_object(d, "function", param)
    where = f"{param}.function"
    name = _tool_name(function, where)
    description = _optional(function, "description", str, "a string", where) or ""
    parameters = _optional(function, "parameters", dict, "an object", where)
    strict = _optional(function, "strict", bool, "a boolean", where) or False
    if parameters is None:  # "Omitting parameters defines a function with an empty parameter list."
        return ToolSpec(name, description, strict=strict)
    return ToolSpec(name, description, parameters, strict)


# --- client side: the request ----------------------------------------------------------------------

def auth_headers(api_key: str) -> dict:
    """The key as a bearer token (kept out of WireRequest.headers, so requests can be logged safely)."""
    return {"Authorization": f"Bearer {api_key}"}


def tool_choice_to_wire(choice: ToolChoice) -> str | dict:
    """The neutral choice on the wire: the three words stay strings; {"name": X} forces that one function."""
    if isinstance(choice, dict):
        return {"type": "function", "function": {"name": choice["name"]}}
    return choice


def build_request(model: str, messages: list[Message] | tuple[Message, ...], tools=(),
                  options: ModelOptions | None = None, **extras: Any) -> WireRequest:
    """The POST body for one model call. `extras` are further body fields, sent as given (`seed=7`, ...).

    `tool_choice` and `parallel_tool_calls` go out only with tools: the API answers 400 to either one
    without `tools`. A stream asks for the usage chunk, so a streamed turn counts tokens like a plain one.
    """
    options = options or ModelOptions()
    body: dict[str, Any] = {"model": model, "messages": [_message_to_wire(m) for m in messages]}
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


def _message_to_wire(m: Message) -> dict:
    if m.role == "assistant":
        wire: dict[str, Any] = {"role": "assistant", "content": m.content}
        if m.tool_calls:
            wire["tool_calls"] = [_call_to_wire(c.id, c) for c in m.tool_calls]
        elif m.content is None:
            wire["content"] = ""  # an assistant message needs content or tool_calls
        return wire
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content or ""}
    return {"role": m.role, "content": m.content or ""}


def _call_to_wire(call_id: str, call: ToolCall) -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": call.name, "arguments": call.arguments_json()}}


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
        raise _in_band_error(body, provider)
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
                 _usage_from_wire(body.get("usage")), body.get("model"), body.get("id"), body)


def _turn(text: str | None, calls: list[ToolCall], finish_reason: Any, usage: Usage, model: Any, id: Any,
          raw: dict) -> ModelTurn:
    # One constructor for the plain and the streamed path, so both give the same ModelTurn.
    return ModelTurn(text or None, tuple(calls), neutral_stop(finish_reason, bool(calls)),
                     finish_reason if isinstance(finish_reason, str) else None, usage,
                     model if isinstance(model, str) else None, id if isinstance(id, str) else None, raw)


def _call_from_wire(c: dict) -> ToolCall:
    if c.get("type") == "custom":  # a free-text tool: its `input` is the raw text
        custom = c.get("custom") if isinstance(c.get("custom"), dict) else {}
        return ToolCall.from_raw(str(c.get("id") or ""), str(custom.get("name") or ""),
                                 _raw_text(custom.get("input")))
    function = c.get("function") if isinstance(c.get("function"), dict) else {}
    return ToolCall.from_raw(str(c.get("id") or ""), str(function.get("name") or ""),
                             _raw_text(function.get("arguments")))


def _raw_text(arguments: Any) -> str | dict:
    # Strings (the spec) and objects (some compatible servers) are kept as they came.
    if arguments is None or isinstance(arguments, (str, dict)):
        return "" if arguments is None else arguments
    return json.dumps(arguments)


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
    return Usage(_int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")))


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    try:
        return int(value)
    except (OverflowError, ValueError):  # Infinity and NaN parse as JSON numbers in Python
        return 0


def _in_band_error(body: dict, provider: str) -> BadResponseError:
    """A body or chunk whose top-level `error` is set (the SDK raises APIError on it too)."""
    error = body.get("error")
    if isinstance(error, dict):
        message = str(error.get("message") or "error in the response")
        kind = error.get("type") or error.get("code")
    else:
        message, kind = str(error), None
    return BadResponseError(message, error_type=None if kind is None else str(kind), provider=provider,
                            body=body)


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
        self.calls: dict[int, dict] = {}  # index -> {"id", "name", "arguments": [fragments]}
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
            raise _in_band_error(chunk, self.provider)
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
        function = fragment.get("function") if isinstance(fragment.get("function"), dict) else {}
        if function.get("name"):
            call["name"] = str(function["name"])
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call["arguments"].append(arguments)
        elif isinstance(arguments, dict):  # whole-object arguments from a non-conforming server
            call["arguments"].append(json.dumps(arguments))

    def turn(self) -> ModelTurn:
        if not self.done:
            raise BadResponseError("the stream ended before `data: [DONE]`", provider=self.provider)
        calls = [ToolCall.from_raw(c["id"], c["name"], "".join(c["arguments"]))
                 for _, c in sorted(self.calls.items())]
        return _turn("".join(self.text), calls, self.finish_reason, self.usage, self.model, self.id,
                     {"chunks": self.chunks})


def parse_error(status: int, body: Any, headers: Any = None, provider: str = NAME) -> ProviderError:
    """An error response -> the right ProviderError subclass, with the API's type, message and Retry-After.

    Tolerates bodies that are not JSON (a proxy's HTML page): the text becomes the message.
    A 429 with `insufficient_quota` is billing, not load: that one is marked not retryable.
    """
    data = json_or_none(body)
    error = data.get("error") if isinstance(data, dict) else None
    kind = None
    if isinstance(error, dict):
        message = str(error.get("message") or f"HTTP {status}")
        kind = error.get("type") or error.get("code")
    elif isinstance(error, str) and error:
        message = error
    else:
        message = body_text(body) or f"HTTP {status}"
    exc = error_for_status(status)(message, status=status, error_type=None if kind is None else str(kind),
                                   provider=provider, retry_after=retry_after_seconds(headers),
                                   body=data if data is not None else body)
    if isinstance(error, dict) and "insufficient_quota" in (error.get("type"), error.get("code")):
        exc.retryable = False
    return exc








# --- server side: the request ----------------------------------------------------------------------
# The checks run in the API's order: model, messages (shape), tools, switches, then content and the
# pairing of calls with results. The wording and `param` paths are the API's, dots and all
# ("messages.[3].role" is what it really says for the pairing errors).

#: Body fields the kit models; everything else lands in ChatRequest.extras unchanged.
MODELLED = {"model", "messages", "tools", "tool_choice", "parallel_tool_calls", "stream", "max_tokens",
            "max_completion_tokens", "temperature"}
SKIPPED_PARTS = ("image_url", "input_audio", "refusal", "audio", "file")


def parse_request(body: Any, model: str | None = None) -> ChatRequest:
    """What a client sent -> ChatRequest, or RequestInvalid with the 400 the real API would give."""
    if not isinstance(body, dict):
        raise RequestInvalid(NOT_JSON, None)
    model_name = body.get("model", model)
    if model_name is None:
        raise RequestInvalid("you must provide a model parameter", None)
    if not isinstance(model_name, str):
        raise _invalid_type("model", "a string", model_name)
    if "messages" not in body:
        raise _missing("messages")
    wire_messages = body["messages"]
    if not isinstance(wire_messages, list):
        raise _invalid_type("messages", "an array of objects", wire_messages)
    if not wire_messages:
        raise _empty_array("messages")
    messages = [_message_from_wire(i, m) for i, m in enumerate(wire_messages)]
    tools, has_tools = _tools_field(body.get("tools"))
    choice, unmodelled_choice = _tool_choice_field(body, [t.name for t in tools], has_tools)
    options = ModelOptions(choice, _parallel_field(body, has_tools), _stream_field(body),
                           _max_tokens_field(body), _temperature_field(body))
    _check_content(messages, wire_messages)
    messages = _pair_results(messages)
    extras = {k: v for k, v in body.items() if k not in MODELLED}
    if unmodelled_choice is not None:
        extras["tool_choice"] = unmodelled_choice
    return ChatRequest(model_name, tuple(messages), tuple(tools), options, (), extras)


def _message_from_wire(i: int, m: Any) -> Message:
    at = f"messages[{i}]"
    if not isinstance(m, dict):
        raise _invalid_type(at, "an object", m)
    role = _required(m, "role", at)
    if role not in ROLES:
        raise _invalid_value(f"{at}.role", role, ROLES)
    content = m.get("content")
    if role == "developer" and "content" not in m:  # developer has its own schema, and its own words
        raise _missing(f"{at}.content")
    if (content is not None or role == "developer") and not isinstance(content, (str, list)):
        raise _invalid_type(f"{at}.content", "one of a string or array of objects", content)
    text = _content_text(f"{at}.content", content)
    if role == "assistant":
        calls = _calls_from_wire(at, m["tool_calls"]) if m.get("tool_calls") is not None else ()
        return Message("assistant", text, calls)
    if role == "tool":
        return Message("tool", text, (), _required_str(m, "tool_call_id", at))
    if role == "function":  # the legacy functions API: a result matched by name only
        return Message("tool", text, (), None, _required_str(m, "name", at))
    return Message("system" if role in ("system", "developer") else "user", text)


def _content_text(at: str, content: Any) -> str | None:
    """A string stays; an array of parts is reduced to its text parts (images etc. are skipped)."""
    if not isinstance(content, list):
        return content
    texts = []
    for j, part in enumerate(content):
        where = f"{at}[{j}]"
        if not isinstance(part, dict):
            raise _invalid_type(where, "an object", part)
        kind = _required(part, "type", where)
        if kind == "text":
            texts.append(_required_str(part, "text", where))
        elif kind not in SKIPPED_PARTS:
            raise _invalid_value(f"{where}.type", kind, ("text",) + SKIPPED_PARTS)
    return "".join(texts)


def _calls_from_wire(at: str, calls: Any) -> tuple[ToolCall, ...]:
    if not isinstance(calls, list):
        raise _invalid_type(f"{at}.tool_calls", "an array of objects", calls)
    if not calls:
        raise _empty_array(f"{at}.tool_calls")
    out = []
    for k, c in enumerate(calls):
        where = f"{at}.tool_calls[{k}]"
        if not isinstance(c, dict):
            raise _invalid_type(where, "an object", c)
        call_id = _required_str(c, "id", where)
        kind = _required(c, "type", where)
        if kind == "custom":  # a free-text tool's call: keep its input as the raw arguments
            custom = _required_object(c, "custom", where)
            out.append(ToolCall.from_raw(call_id, _required_str(custom, "name", f"{where}.custom"),
                                         _required_str(custom, "input", f"{where}.custom")))
            continue
        if kind != "function":
            raise _invalid_value(f"{where}.type", kind, ("function", "custom"))
        function = _required_object(c, "function", where)
        out.append(ToolCall.from_raw(call_id, _required_str(function, "name", f"{where}.function"),
                                     _required_str(function, "arguments", f"{where}.function")))
    return tuple(out)


def _tools_field(value: Any) -> tuple[list[ToolSpec], bool]:
    """The function tools, and whether any tool at all was sent (free-text `custom` tools are skipped)."""
    if value is None:
        return [], False
    if not isinstance(value, list):
        raise _invalid_type("tools", "an array of objects", value)
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
            raise _invalid_value("tool_choice", choice, ("none", "auto", "required"))
        if choice != "none" and not has_tools:
            raise only_with_tools
        return choice, None
    if not isinstance(choice, dict):
        raise _invalid_type("tool_choice", "one of one of 'none', 'auto', or 'required' or object", choice)
    if not has_tools:
        raise only_with_tools
    if choice.get("type") == "allowed_tools":  # a subset of the tools, in "auto" or "required" mode
        allowed = _required_object(choice, "allowed_tools", "tool_choice")
        mode = _required(allowed, "mode", "tool_choice.allowed_tools")
        if mode not in ("auto", "required"):
            raise _invalid_value("tool_choice.allowed_tools.mode", mode, ("auto", "required"))
        return mode, choice
    if choice.get("type") == "custom":  # forcing a free-text tool: the closest neutral word
        return "required", choice
    function = _required_object(choice, "function", "tool_choice")
    name = _required_str(function, "name", "tool_choice.function")
    if name not in names:  # (sic: the API still words this in terms of the legacy functions API)
        raise RequestInvalid(f"Invalid value for 'function_call': no function named '{name}' was specified "
                             "in the 'functions' parameter.", "function_call")
    return {"name": name}, None


def _parallel_field(body: dict, has_tools: bool) -> bool | None:
    value = body.get("parallel_tool_calls")
    if value is None:
        return None
    if not isinstance(value, bool):
        raise _invalid_type("parallel_tool_calls", "a boolean", value)
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
            raise _invalid_type(key, "an integer", value)
        if value < 1:
            raise _out_of_range(key, value, ">=", 1, "integer")
        return value
    return None


def _temperature_field(body: dict) -> float | None:
    value = body.get("temperature")
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise _invalid_type("temperature", "a decimal", value)
    if not 0 <= value <= 2:
        op, bound = (">=", 0) if value < 0 else ("<=", 2)
        raise _out_of_range("temperature", value, op, bound, "decimal")
    return value


def _stream_field(body: dict) -> bool:
    value = body.get("stream")
    if value is not None and not isinstance(value, bool):
        raise _invalid_type("stream", "a boolean", value)
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


# The API's wording for schema faults, in one place.

def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _quoted(values: tuple[str, ...], last: str = "and") -> str:
    items = [f"'{v}'" for v in values]
    return f" {last} ".join(items) if len(items) < 3 else ", ".join(items[:-1]) + f", {last} " + items[-1]


def _missing(param: str) -> RequestInvalid:
    return RequestInvalid(f"Missing required parameter: '{param}'.", param, code="missing_required_parameter")


def _invalid_type(param: str, expected: str, value: Any) -> RequestInvalid:
    return RequestInvalid(f"Invalid type for '{param}': expected {expected}, but got {_kind(value)} instead.",
                          param, code="invalid_type")


def _invalid_value(param: str, value: Any, allowed: tuple[str, ...]) -> RequestInvalid:
    if not isinstance(value, str):
        return _invalid_type(param, "one of " + _quoted(allowed, "or"), value)
    return RequestInvalid(f"Invalid value: '{value}'. Supported values are: {_quoted(allowed)}.", param,
                          code="invalid_value")


def _empty_array(param: str) -> RequestInvalid:
    return RequestInvalid(f"Invalid '{param}': empty array. Expected an array with minimum length 1, but got "
                          "an empty array instead.", param, code="empty_array")


def _out_of_range(param: str, value: Any, op: str, bound: float, kind: str) -> RequestInvalid:
    """The API's words for a number out of bounds ("... Expected a value >= 1, but got 0 instead.")."""
    side, code = ("below minimum", "below_min") if op == ">=" else ("above maximum", "above_max")
    return RequestInvalid(f"Invalid '{param}': {kind} {side} value. Expected a value {op} {bound}, but got "
                          f"{value} instead.", param, code=f"{kind}_{code}_value")


def _tool_name(d: dict, at: str) -> str:
    """The API's refusals of a tool name: missing, empty, longer than 64, or outside [a-zA-Z0-9_-]."""
    name, param = _required_str(d, "name", at), f"{at}.name"
    if not name:
        raise RequestInvalid(f"Invalid '{param}': empty string. Expected a string with minimum length 1, but "
                             "got an empty string instead.", param, code="empty_string")
    if len(name) > 64:
        raise RequestInvalid(f"Invalid '{param}': string too long. Expected a string with maximum length 64, "
                             f"but got a string with length {len(name)} instead.", param,
                             code="string_above_max_length")
    if not TOOL_NAME.fullmatch(name):
        raise RequestInvalid(f"Invalid '{param}': string does not match pattern. Expected a string that "
                             "matches the pattern '^[a-zA-Z0-9_-]+$'.", param, code="invalid_value")
    return name


def _required(d: dict, key: str, at: str) -> Any:
    if d.get(key) is None:
        raise _missing(f"{at}.{key}")
    return d[key]


def _required_str(d: dict, key: str, at: str) -> str:
    value = _required(d, key, at)
    if not isinstance(value, str):
        raise _invalid_type(f"{at}.{key}", "a string", value)
    return value


def _required_object(d: dict, key: str, at: str) -> dict:
    value = _required(d, key, at)
    if not isinstance(value, dict):
        raise _invalid_type(f"{at}.{key}", "an object", value)
    return value


def _optional(d: dict, key: str, kind: type, expected: str, at: str) -> Any:
    value = d.get(key)
    if value is not None and (not isinstance(value, kind) or (kind is not bool and isinstance(value, bool))):
        raise _invalid_type(f"{at}.{key}", expected, value)
    return value


# --- server side: the response ---------------------------------------------------------------------

def response_id(turn: ModelTurn, request: ChatRequest) -> str:
    """A `chatcmpl-…` id: the turn's own when it already has that shape, else derived from it."""
    if turn.id and turn.id.startswith("chatcmpl-"):
        return turn.id
    # No id at all: derive one from what identifies this turn (same request -> same id).
    seed = turn.id or [request.model, len(request.messages), turn.text,
                        [c.to_dict() for c in turn.tool_calls]]
    return "chatcmpl-" + stable_id(seed, length=29)


def call_ids(turn: ModelTurn, request: ChatRequest) -> list[str]:
    """`call_…` ids for the turn's calls; neutral ids ("1", "c1") are made unique per response."""
    rid = response_id(turn, request)
    return [c.id if c.id.startswith("call_") else "call_" + stable_id(rid, i, c.id, length=24)
            for i, c in enumerate(turn.tool_calls)]


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


def build_response(turn: ModelTurn, request: ChatRequest) -> dict:
    """The JSON body a real server answers (§1.5); validates as `openai.types.chat.ChatCompletion`."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None, "refusal": None,
                               "annotations": []}
    if turn.tool_calls:
        ids = call_ids(turn, request)
        message["tool_calls"] = [_call_to_wire(i, c) for i, c in zip(ids, turn.tool_calls)]
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason(turn)}
    return {"id": response_id(turn, request), "object": "chat.completion", "created": CREATED,
            "model": turn.model or request.model, "choices": [choice],
            "usage": _usage_to_wire(turn.usage), "service_tier": "default", "system_fingerprint": "fp_sim"}


def pieces(text: str, parts: int = 3) -> list[str]:
    """`text` cut into up to `parts` pieces (two or more once it has two characters), as streams send it."""
    if len(text) < 2:
        return [text]
    size = -(-len(text) // min(parts, len(text)))
    return [text[i:i + size] for i in range(0, len(text), size)]


def build_stream(turn: ModelTurn, request: ChatRequest) -> list[SSEvent]:
    """The same answer as `data:` chunks (reference §1.8), ending with `data: [DONE]`.

    A role chunk, the text in pieces, per call a head chunk (index, id, name, arguments "") and the
    arguments in at least two pieces, a closing chunk with `finish_reason`; then the usage chunk, but
    only when the request asked for it with `stream_options.include_usage`.
    """
    body = build_response(turn, request)
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
    for piece in pieces(turn.text or ""):
        if piece:
            emit({"content": piece})
    for index, call in enumerate(body["choices"][0]["message"].get("tool_calls", [])):
        function = call["function"]
        emit({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                              "function": {"name": function["name"], "arguments": ""}}]})
        for piece in pieces(function["arguments"]):
            if piece:
                emit({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    emit({}, body["choices"][0]["finish_reason"])
    if include_usage:
        events.append(SSEvent(dumps({**head, "choices": [], "usage": body["usage"]})))
    events.append(SSEvent("[DONE]"))
    return events


#: Error `code` a status gets when the caller names none.
DEFAULT_CODES = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}


def build_error(status: int, message: str, error_type: str | None = None, **kw: Any) -> dict:
    """The API's error body `{"error": {"message", "type", "param", "code"}}` (reference §1.9).

    `error_type` defaults from the status (429 -> "requests", 5xx -> "server_error", else
    "invalid_request_error"); pass `param=` and `code=` as RequestInvalid carries them.
    """
    if error_type is None:
        error_type = ("requests" if status == 429 else "server_error" if status >= 500
                      else "invalid_request_error")
    return {"error": {"message": message, "type": error_type, "param": kw.get("param"),
                      "code": kw.get("code", DEFAULT_CODES.get(status))}}


def build_stream_error(message: str, error_type: str = "server_error") -> SSEvent:
    """A failure after the stream started (status already 200): a bare chunk with a top-level `error`."""
    return SSEvent(dumps({"error": {"message": message, "type": error_type, "param": None, "code": None}}))

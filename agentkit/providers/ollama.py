"""Ollama's native chat API (`POST /api/chat`): both sides of the wire, as pure functions.

The format people use to run open models locally, and a genuinely different wire from OpenAI's:

* Arguments are a JSON **object**: a call is `{"function": {"index", "name", "arguments": {...}}}`
  (recent servers add an `id`, `call_…`; the documented history examples leave it out).
* A result **names the tool** rather than answering an id: `{"role": "tool", "tool_name":
  "get_weather", "content": "…"}`. This codec also echoes `tool_call_id` when the call came with a real
  id (the server's Message type has the field); calls without one get made-up ids, marked with
  SYNTHETIC_ID_PREFIX and never sent back, exactly as the Gemini codec does.
* Streaming is **newline-delimited JSON** (`application/x-ndjson`), not SSE: one ChatResponse object per
  line, `"done": false` until the last, which carries `done_reason` and the counters. Tool calls arrive
  whole, one or more per line, never as argument fragments. And streaming is the **default**: a request
  without `"stream": false` streams, so `build_request` always states it.
* Usage is `prompt_eval_count` / `eval_count`; timings are nanoseconds (`total_duration`, ...).
* No `tool_choice` and no parallel switch: "none" is sent as no tools, a named tool as that one tool
  alone (the model may still answer in text), "required" cannot be expressed.
* Generation settings go in `options` (`temperature`, `num_predict` for the token cap).
* Errors are `{"error": "message"}` with the HTTP status (400, 404, 429, 500, 502, 503); an error after
  a stream started is one more line, `{"error": "..."}`, with the status already 200.
* A local Ollama needs no key; ollama.com (`https://ollama.com/api`) wants `Authorization: Bearer`.
  Models are listed at `GET /api/tags`.
* A thinking model (`"think": true`) answers with `message.thinking` beside `content` (streamed as
  `thinking` pieces first). It is the turn's ReasoningState here and goes back on the assistant message,
  as the docs' tool-calling loop does by appending the whole message; Ollama does not refuse a
  conversation without it (whether a model's template uses it is the model's business).

    from agentkit.providers import ollama
    wire = ollama.build_request("qwen3", messages, tools, ModelOptions())
    # POST http://localhost:11434 + wire.path, json=wire.body (no key needed locally)
    turn = ollama.parse_response(response_json)

Left out on purpose: images, `format` (structured output, kept in `extras`), `keep_alive`, logprobs,
the "load"/"unload" answers to an empty message list (the simulator answers those like any request),
and `/api/generate`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import BadResponseError, ProviderError, ServerError, error_for_status
from ..types import Message, ModelOptions, ModelTurn, ReasoningState, ToolCall, ToolChoice, ToolSpec, TurnStop, Usage
from .common import (ChatRequest, JSONLine, RequestInvalid, StreamEvent, WireRequest, body_text, dumps,
                     event_object, json_or_none, no_records, no_stored_id, nothing_stored, own_reasoning,
                     retry_after_seconds, simulated_thought, stable_id)
from .contract import Route, ServerFacts

NAME = "ollama"
DEFAULT_BASE_URL = "http://localhost:11434"
PATH = "/api/chat"
API_KEY_ENVS = ("OLLAMA_API_KEY",)
KEY_REQUIRED = False  # a local server takes none; ollama.com's cloud API wants OLLAMA_API_KEY
DEFAULT_MODEL = "qwen3"
STREAM_FRAMING = "ndjson"
SERVER_SIDE_FALLBACK = False
CONTINUATION_FIELD = None  # /api/chat keeps no conversation
#: 2026-01-01T00:00:00Z. A fixed `created_at` keeps the simulator's answers identical run after run.
CREATED_AT = "2026-01-01T00:00:00Z"

#: Ids this codec invents for calls that came without one; never sent back to the server.
SYNTHETIC_ID_PREFIX = "ollama_synth_"

#: done_reason -> neutral stop ("load"/"unload" answer an empty message list: no generation at all).
DONE_TO_STOP: dict[str, TurnStop] = {"stop": "stop", "length": "length", "load": "other", "unload": "other"}

#: What the real server does around the bodies (see contract.py). Wording from Ollama's server source.
SERVER = ServerFacts(
    routes=(Route("POST", "/api/chat"), Route("GET", "/api/tags", "models")),
    sdk_base_path="",
    no_key=None,
    key_headers=("authorization",),
    unknown_model="model '{model}' not found",
    not_json="invalid JSON in the request body: {detail}",
    fault_messages={429: "rate limit exceeded",
                    500: "an error was encountered while running the model",
                    503: "server busy, please try again.  maximum pending requests exceeded"},
    nearest_status={529: 503},
)


# --- tool definitions ------------------------------------------------------------------------------

def tool_to_wire(spec: ToolSpec) -> dict:
    """A ToolSpec as Ollama wants it: OpenAI Chat's nesting, `{"type": "function", "function": {...}}`."""
    function: dict[str, Any] = {"name": spec.name}
    if spec.description:
        function["description"] = spec.description
    function["parameters"] = spec.parameters
    return {"type": "function", "function": function}


def tool_from_wire(d: Any, param: str = "tools[0]") -> ToolSpec:
    """One tool back to a ToolSpec. The server decodes it into Go types: a field of the wrong JSON type
    is refused in Go's words; the JSON Schema vocabulary itself (e.g. `"type": "nope"`) is not checked."""
    tool = _go_object(d, "Tool", param)
    _go_str(tool.get("type"), "Tool", f"{param}.type")
    function = _go_object(tool.get("function"), "Tool", f"{param}.function", allow_null=True) or {}
    name = _go_str(function.get("name"), "ToolFunction", f"{param}.function.name")
    description = _go_str(function.get("description"), "ToolFunction", f"{param}.function.description")
    parameters = function.get("parameters")
    if parameters is None:
        return ToolSpec(name, description)
    _check_parameters(parameters, f"{param}.function.parameters")
    return ToolSpec(name, description, parameters)


# --- client side: the request ----------------------------------------------------------------------

def auth_headers(api_key: str) -> dict:
    """ollama.com's bearer header (a local Ollama ignores it)."""
    return {"Authorization": f"Bearer {api_key}"}


def tool_choice_to_wire(choice: ToolChoice, parallel: bool | None = None) -> None:
    """None: the API has no tool_choice field (see `build_request` for what is sent instead)."""
    return None


def is_synthetic_id(call_id: str | None) -> bool:
    """True for an id this codec made up (the server never saw it, so it must not be sent)."""
    return bool(call_id) and call_id.startswith(SYNTHETIC_ID_PREFIX)


def build_request(model: str, messages: Sequence[Message], tools: Sequence[ToolSpec] = (),
                  options: ModelOptions | None = None, **extras: Any) -> WireRequest:
    """The POST body for one model call. `stream` is always stated (the API streams by default).

    tool_choice "none" sends no tools; {"name": X} sends tool X alone; "required" and the parallel
    switch have no equivalent. `extras` are further body fields (`keep_alive`, `format`, `think`, ...).
    """
    options = options or ModelOptions()
    body: dict[str, Any] = {"model": model, "messages": _messages_to_wire(messages, model)}
    offered = list(tools)
    if options.tool_choice == "none":
        offered = []
    elif isinstance(options.tool_choice, dict):
        offered = [t for t in offered if t.name == options.tool_choice.get("name")] or offered
    if offered:
        body["tools"] = [tool_to_wire(t) for t in offered]
    generation: dict[str, Any] = {}
    if options.temperature is not None:
        generation["temperature"] = options.temperature
    if options.max_tokens is not None:
        generation["num_predict"] = options.max_tokens
    if generation:
        body["options"] = generation
    body["stream"] = bool(options.stream)
    body.update(extras)
    return WireRequest(PATH, body, {}, stream=bool(options.stream))


def _messages_to_wire(messages: Sequence[Message], model: str) -> list[dict]:
    names = {c.id: c.name for m in messages for c in m.tool_calls}  # for results that lack a name
    wire: list[dict] = []
    for m in messages:
        if m.role == "tool":
            result: dict[str, Any] = {"role": "tool", "content": m.content or "",
                                      "tool_name": m.name or names.get(m.tool_call_id or "", "")}
            if m.tool_call_id and not is_synthetic_id(m.tool_call_id):
                result["tool_call_id"] = m.tool_call_id
            wire.append(result)
        elif m.role == "assistant" and m.tool_calls:
            calls = []
            for index, call in enumerate(m.tool_calls):
                entry: dict[str, Any] = {"function": {"index": index, "name": call.name,
                                                      "arguments": call.arguments_object()}}
                if call.id and not is_synthetic_id(call.id):
                    entry = {"id": call.id, **entry}
                calls.append(entry)
            wire.append({"role": "assistant", "content": m.content or "", "tool_calls": calls})
        else:
            wire.append({"role": m.role, "content": m.content or ""})
        state = own_reasoning(m, NAME, model) if m.role == "assistant" else None
        for item in state.items if state else ():
            wire[-1].update(item)  # {"thinking": "..."}, as the model wrote it
    return wire


def reasoning_of(thinking: Any, model: Any) -> ReasoningState | None:
    """A message's `thinking` text as reasoning state (None when there is none)."""
    if not isinstance(thinking, str) or not thinking:
        return None
    return ReasoningState(NAME, model if isinstance(model, str) else None, ({"thinking": thinking},))


# --- client side: the response ---------------------------------------------------------------------

def synthetic_ids(seed: Any, calls: list[tuple[Any, Any]]) -> list[str]:
    """Stable made-up ids for id-less calls: same answer, same calls -> same ids (`…_0`, `…_1`)."""
    digest = stable_id(seed, calls, length=10)
    return [f"{SYNTHETIC_ID_PREFIX}{digest}_{i}" for i in range(len(calls))]


def parse_response(body: Any) -> ModelTurn:
    """A ChatResponse (`{"message": {...}, "done": true, ...}`) as a ModelTurn.

    Each `message.tool_calls[]` entry becomes a ToolCall whose raw arguments are the `arguments` object;
    calls without an `id` get synthetic ids. A 200 body that is `{"error": ...}` raises its error.
    """
    if not isinstance(body, dict):
        raise BadResponseError("the response is not an Ollama chat response (not an object)", provider=NAME,
                               body=body)
    if "error" in body:
        raise _in_stream_error(body)
    message = body.get("message")
    if not isinstance(message, dict):
        raise BadResponseError("the response has no message", provider=NAME, body=body)
    wire_calls = message.get("tool_calls") or []
    if not isinstance(wire_calls, list):
        raise BadResponseError("message.tool_calls is not a list", provider=NAME, body=body)
    return _turn(message.get("content"), [c for c in wire_calls if isinstance(c, dict)], body, body,
                 message.get("thinking"))


def _turn(content: Any, wire_calls: list[dict], final: dict, raw: dict, thinking: Any = None) -> ModelTurn:
    # One constructor for the plain and the streamed path, so both give the same ModelTurn.
    functions = [c.get("function") if isinstance(c.get("function"), dict) else {} for c in wire_calls]
    invented = synthetic_ids([final.get("model"), final.get("created_at")],
                             [(f.get("name"), f.get("arguments")) for f in functions])
    calls = []
    for k, (call, function) in enumerate(zip(wire_calls, functions)):
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else invented[k]
        arguments = function.get("arguments")
        raw_arguments = arguments if isinstance(arguments, (dict, str)) else {}
        calls.append(ToolCall.from_raw(call_id, str(function.get("name") or ""), raw_arguments))
    native = final.get("done_reason") if isinstance(final.get("done_reason"), str) else None
    stop: TurnStop = DONE_TO_STOP.get(native, "other") if native else "stop"
    if calls and stop == "stop":
        stop = "tool_calls"
    model = final.get("model")
    return ModelTurn(content if isinstance(content, str) and content else None, tuple(calls), stop, native,
                     Usage(_count(final.get("prompt_eval_count")), _count(final.get("eval_count"))),
                     model if isinstance(model, str) else None, None, raw, reasoning_of(thinking, model))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _in_stream_error(body: dict) -> ProviderError:
    """`{"error": "..."}` inside a 200 (a stream's last line): the model runner failed, a ServerError.

    The line carries no status; the docs' example is a failure while running the model, so it is
    treated as a 500, which is retryable.
    """
    return ServerError(str(body.get("error") or "error in the stream"), status=500, provider=NAME, body=body)


class StreamAssembler:
    """Rebuilds a streamed answer from its NDJSON lines into the ModelTurn `parse_response` would give.

        assembler = StreamAssembler()
        for line in response.iter_lines():        # one JSON object per line, no SSE framing
            if line:
                assembler.feed(None, line)
        turn = assembler.turn()

    Content pieces are joined; tool calls arrive whole and are collected in order; the `done: true`
    line brings done_reason and the counters. `{"error": ...}` raises a ServerError; `turn()` raises
    BadResponseError when the stream ended before its `done: true` line.
    """

    def __init__(self) -> None:
        self.content: list[str] = []
        self.thinking: list[str] = []
        self.calls: list[dict] = []
        self.final: dict | None = None
        self.lines: list[dict] = []

    def feed(self, event: str | None, data: str) -> None:
        if self.final is not None or not data or not data.strip():
            return
        line = event_object(data, NAME)
        if "error" in line:
            raise _in_stream_error(line)
        self.lines.append(line)
        message = line.get("message") if isinstance(line.get("message"), dict) else {}
        if isinstance(message.get("content"), str):
            self.content.append(message["content"])
        if isinstance(message.get("thinking"), str):
            self.thinking.append(message["thinking"])
        calls = message.get("tool_calls")
        self.calls += [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
        if line.get("done") is True:
            self.final = line

    def turn(self) -> ModelTurn:
        if self.final is None:
            raise BadResponseError("the stream ended before its `done: true` line", provider=NAME)
        return _turn("".join(self.content), self.calls, self.final, {"lines": self.lines},
                     "".join(self.thinking))


#: Ollama keeps nothing between requests (contract: stored state).
stored_response_id = no_stored_id
resolve_stored = nothing_stored
stored_records = no_records


def parse_error(status: int, body: Any, headers: Any = None) -> ProviderError:
    """`{"error": "message"}` -> the ProviderError subclass for the status; non-JSON bodies are quoted."""
    data = json_or_none(body)
    error = data.get("error") if isinstance(data, dict) else None
    message = str(error) if error else body_text(body) or f"HTTP {status}"
    return error_for_status(status)(message, status=status, provider=NAME, retry_after=retry_after_seconds(headers),
                                    body=data if data is not None else body)


# --- server side: the request ----------------------------------------------------------------------
# The server decodes the body into Go structs first (a wrong JSON type is a 400 in encoding/json's
# words; unknown fields are ignored; null leaves a field empty), then checks the model name.

ROLES = ("system", "user", "assistant", "tool")
#: Body fields the kit models; everything else (format, keep_alive, think, ...) lands in extras.
MODELLED = {"model", "messages", "tools", "stream", "options"}


def parse_request(body: Any, model: str | None = None) -> ChatRequest:
    """What a client sent -> ChatRequest, or RequestInvalid with the 400 Ollama would give."""
    if not isinstance(body, dict):
        raise _go_error(body, "", "api.ChatRequest", value_only=True)
    name = _go_str(body.get("model", model), "ChatRequest", "model")
    wire_messages = _go_list(body.get("messages"), "ChatRequest", "messages", "[]api.Message")
    wire_tools = _go_list(body.get("tools"), "ChatRequest", "tools", "api.Tools")
    stream = _go_bool(body.get("stream"), "ChatRequest", "stream")
    generation = _go_object(body.get("options"), "ChatRequest", "options", allow_null=True) or {}
    for key in ("truncate", "shift", "logprobs"):
        _go_bool(body.get(key), "ChatRequest", key)
    if not name:
        raise RequestInvalid("model is required", "model")
    tools = [tool_from_wire(t, f"tools[{i}]") for i, t in enumerate(wire_tools)]
    messages = _messages_from_wire(wire_messages, name)
    options = ModelOptions("auto", None, True if stream is None else stream, _max_tokens(generation),
                           _temperature(generation))
    extras = {k: v for k, v in body.items() if k not in MODELLED}
    if generation:
        extras["options"] = generation
    return ChatRequest(name, tuple(messages), tuple(tools), options, (), extras)


def _messages_from_wire(wire: list, model: str) -> list[Message]:
    """Wire messages -> neutral ones; a result finds its call by id when it has one, else by tool name,
    else by position (the documented way is the name alone)."""
    out: list[Message] = []
    open_calls: list[ToolCall] = []  # the calls of the last assistant turn not answered yet
    for i, m in enumerate(wire):
        at = f"messages[{i}]"
        m = _go_object(m, "Message", at)
        role = _go_str(m.get("role"), "Message", f"{at}.role").lower()  # the server lowercases roles
        content = _go_str(m.get("content"), "Message", f"{at}.content")
        for key in ("thinking", "tool_name", "tool_call_id"):
            _go_str(m.get(key), "Message", f"{at}.{key}")
        _go_list(m.get("images"), "Message", f"{at}.images", "[]api.ImageData")
        wire_calls = _go_list(m.get("tool_calls"), "Message", f"{at}.tool_calls", "[]api.ToolCall")
        # Ollama itself passes any role on to the model's template; the API documents these four, and
        # the conservative choice here is to refuse the rest, so a typo does not go unnoticed.
        if role not in ROLES:
            raise RequestInvalid(f"invalid role {role!r} in {at}: use one of {', '.join(ROLES)}", f"{at}.role")
        if role == "assistant":
            calls = _calls_from_wire(i, wire_calls)
            state = reasoning_of(m.get("thinking"), model)
            out.append(Message("assistant", content or None, calls, reasoning=state))
            open_calls = list(calls)
        elif role == "tool":
            name, call_id = m.get("tool_name") or "", m.get("tool_call_id") or ""
            call = _take_call(open_calls, call_id, name)
            out.append(Message("tool", content, (), call.id if call else (call_id or None),
                               name or (call.name if call else None)))
        else:
            out.append(Message(role, content))  # type: ignore[arg-type]
    return out


def _calls_from_wire(i: int, wire_calls: list) -> tuple[ToolCall, ...]:
    entries = []
    for k, c in enumerate(wire_calls):
        where = f"messages[{i}].tool_calls[{k}]"
        c = _go_object(c, "ToolCall", where)
        function = _go_object(c.get("function"), "ToolCall", f"{where}.function", allow_null=True) or {}
        name = _go_str(function.get("name"), "ToolCallFunction", f"{where}.function.name")
        arguments = _go_object(function.get("arguments"), "ToolCallFunction", f"{where}.function.arguments",
                               allow_null=True) or {}
        _go_int(function.get("index"), "ToolCallFunction", f"{where}.function.index")
        entries.append((_go_str(c.get("id"), "ToolCall", f"{where}.id"), name, arguments))
    invented = synthetic_ids(f"request:{i}", [(name, arguments) for _, name, arguments in entries])
    return tuple(ToolCall.from_raw(call_id or invented[k], name, arguments)
                 for k, (call_id, name, arguments) in enumerate(entries))


def _take_call(open_calls: list[ToolCall], call_id: str, name: str) -> ToolCall | None:
    for test in (lambda c: call_id and c.id == call_id, lambda c: name and c.name == name, lambda c: True):
        for k, call in enumerate(open_calls):
            if test(call):
                return open_calls.pop(k)
    return None


def _max_tokens(generation: dict) -> int | None:
    value = generation.get("num_predict")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _temperature(generation: dict) -> float | None:
    value = generation.get("temperature")
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# Go's encoding/json words, in one place. Go names JSON types "string", "number", "bool", "array" and
# "object", and a field by its struct type and JSON path ("Message.messages.content").

def _go_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "value")


def _go_error(value: Any, struct: str, path: str, go_type: str = "", *, value_only: bool = False) -> RequestInvalid:
    if value_only:  # the body itself is not an object
        return RequestInvalid(f"json: cannot unmarshal {_go_kind(value)} into Go value of type {struct}")
    return RequestInvalid(f"json: cannot unmarshal {_go_kind(value)} into Go struct field {struct}.{_dotted(path)} "
                          f"of type {go_type}", path)


def _dotted(path: str) -> str:
    """"messages[0].content" -> "messages.content": Go's errors name the field path without indices."""
    out, depth = [], 0
    for ch in path:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _go_str(value: Any, struct: str, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _go_error(value, struct, path, "string")
    return value


def _go_bool(value: Any, struct: str, path: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise _go_error(value, struct, path, "bool")
    return value


def _go_int(value: Any, struct: str, path: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer() \
            or abs(value) >= 2 ** 63:
        raise _go_error(value, struct, path, "int")
    return int(value)


def _go_list(value: Any, struct: str, path: str, go_type: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _go_error(value, struct, path, go_type)
    return value


def _go_object(value: Any, struct: str, path: str, *, allow_null: bool = False) -> dict:
    if value is None and allow_null:
        return {}
    if not isinstance(value, dict):
        raise _go_error(value, struct, path, f"api.{struct}" if struct[0].isupper() else struct)
    return value


def _check_parameters(schema: Any, path: str) -> None:
    """Decode `parameters` the way the server's Go types do (ToolFunctionParameters, ToolProperty)."""
    params = _go_object(schema, "ToolFunctionParameters", path)
    _go_str(params.get("type"), "ToolFunctionParameters", f"{path}.type")
    _go_list(params.get("required"), "ToolFunctionParameters", f"{path}.required", "[]string")
    for k, item in enumerate(params.get("required") or []):
        _go_str(item, "ToolFunctionParameters", f"{path}.required[{k}]")
    _check_properties(params.get("properties"), "ToolFunctionParameters", f"{path}.properties")


def _check_properties(properties: Any, struct: str, path: str) -> None:
    if properties is None:
        return
    if not isinstance(properties, dict):
        raise _go_error(properties, struct, path, "api.ToolPropertiesMap")
    for name, prop in properties.items():
        _check_property(prop, f"{path}.{name}")


def _check_property(prop: Any, path: str) -> None:
    if prop is None:
        return
    prop = _go_object(prop, "ToolProperty", path)
    kind = prop.get("type")
    if isinstance(kind, list):
        for k, item in enumerate(kind):
            _go_str(item, "ToolProperty", f"{path}.type[{k}]")
    elif kind is not None and not isinstance(kind, str):
        raise _go_error(kind, "ToolProperty", f"{path}.type", "api.PropertyType")
    _go_str(prop.get("description"), "ToolProperty", f"{path}.description")
    _go_list(prop.get("enum"), "ToolProperty", f"{path}.enum", "[]interface {}")
    _go_list(prop.get("required"), "ToolProperty", f"{path}.required", "[]string")
    for k, item in enumerate(prop.get("required") or []):
        _go_str(item, "ToolProperty", f"{path}.required[{k}]")
    for k, option in enumerate(_go_list(prop.get("anyOf"), "ToolProperty", f"{path}.anyOf", "[]api.ToolProperty")):
        _check_property(option, f"{path}.anyOf[{k}]")
    _check_properties(prop.get("properties"), "ToolProperty", f"{path}.properties")


def model_refusal(request: ChatRequest) -> RequestInvalid | None:
    """No per-model refusal is reproduced (a real server refuses tools for models without the tools
    capability; every simulated model has it)."""
    return None


# --- server side: the response ---------------------------------------------------------------------

def response_id(turn: ModelTurn, request: ChatRequest) -> str:
    """Ollama's answers carry no id; this one seeds the call ids (`call_` + 8 characters, as the server)."""
    return turn.id or stable_id(request.model, len(request.messages), turn.text,
                                [c.to_dict() for c in turn.tool_calls], length=16)


def call_ids(turn: ModelTurn, request: ChatRequest) -> list[str]:
    """`call_…` ids as a recent server writes them: eight lowercase letters or digits."""
    rid = response_id(turn, request)
    return [c.id if c.id.startswith("call_") and len(c.id) == 13 else "call_" + stable_id(rid, i, c.id, length=8)
            for i, c in enumerate(turn.tool_calls)]


def _done_reason(turn: ModelTurn) -> str:
    return "length" if turn.stop == "length" else "stop"


def _metrics(usage: Usage) -> dict:
    """The counters and (made-up, deterministic) nanosecond timings of the last line."""
    prompt_ns, eval_ns, load_ns = usage.input_tokens * 1_000_000, usage.output_tokens * 20_000_000, 2_000_000
    return {"total_duration": load_ns + prompt_ns + eval_ns, "load_duration": load_ns,
            "prompt_eval_count": usage.input_tokens, "prompt_eval_duration": prompt_ns,
            "eval_count": usage.output_tokens, "eval_duration": eval_ns}


def _wire_calls(turn: ModelTurn, request: ChatRequest) -> list[dict]:
    return [{"id": call_id, "function": {"index": i, "name": call.name, "arguments": call.arguments_object()}}
            for i, (call_id, call) in enumerate(zip(call_ids(turn, request), turn.tool_calls))]


def reasoning_for(turn: ModelTurn, request: ChatRequest) -> ReasoningState | None:
    """A request with `think` on (true, or a level such as "high") gets `message.thinking`."""
    think = request.extras.get("think")
    if think is None or think is False or think == "":
        return None
    return ReasoningState(NAME, turn.model or request.model, ({"thinking": simulated_thought(turn, request)},))


def _thinking(turn: ModelTurn) -> str:
    state = turn.reasoning
    if state is None or state.format != NAME:
        return ""
    return "".join(str(item.get("thinking") or "") for item in state.items)


def build_response(turn: ModelTurn, request: ChatRequest) -> dict:
    """The JSON a real server answers with `"stream": false`."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or ""}
    if _thinking(turn):
        message["thinking"] = _thinking(turn)
    if turn.tool_calls:
        message["tool_calls"] = _wire_calls(turn, request)
    return {"model": turn.model or request.model, "created_at": CREATED_AT, "message": message, "done": True,
            "done_reason": _done_reason(turn), **_metrics(turn.usage)}


def build_stream(turn: ModelTurn, request: ChatRequest) -> list[JSONLine]:
    """The same answer as NDJSON lines: the thinking and the text in pieces, one line per call, then the
    `done` line."""
    head = {"model": turn.model or request.model, "created_at": CREATED_AT}
    lines = []
    thinking = _thinking(turn)
    for piece in [thinking[i:i + 24] for i in range(0, len(thinking), 24)]:
        lines.append({**head, "message": {"role": "assistant", "content": "", "thinking": piece}, "done": False})
    text = turn.text or ""
    for piece in [text[i:i + 24] for i in range(0, len(text), 24)]:
        lines.append({**head, "message": {"role": "assistant", "content": piece}, "done": False})
    for call in _wire_calls(turn, request):
        lines.append({**head, "message": {"role": "assistant", "content": "", "tool_calls": [call]},
                      "done": False})
    lines.append({**head, "message": {"role": "assistant", "content": ""}, "done": True,
                  "done_reason": _done_reason(turn), **_metrics(turn.usage)})
    return [JSONLine(dumps(line)) for line in lines]


def build_error(status: int, message: str, error_type: str | None = None, **details: Any) -> dict:
    """Ollama's error body: `{"error": "message"}` (no type, no code: the status says it)."""
    return {"error": message}


def build_stream_error(status: int, message: str, request: ChatRequest,
                       sent: Sequence[StreamEvent] = ()) -> JSONLine:
    """A failure after the stream started: one more line, `{"error": "..."}` (the status stays 200)."""
    return JSONLine(dumps({"error": message}))


def build_model_list(names: Sequence[str]) -> dict:
    """GET /api/tags: the locally installed models."""
    return {"models": [{"name": n, "model": n, "modified_at": CREATED_AT, "size": 0,
                        "digest": stable_id(n, length=64),
                        "details": {"parent_model": "", "format": "gguf", "family": "sim", "families": ["sim"],
                                    "parameter_size": "0B", "quantization_level": "none"}} for n in names]}

"""Ollama's native chat API: the server side, as the simulator speaks it (pure functions).

The client side (and what is special about the format) is `agentkit.providers.ollama`; this half
is what only a server does: decode a request the way the real API validates it (refusing it in the
API's own words), and write its answers, streams, errors and model list.

Beyond the verbs: the Go server's own words for a mistyped field (`_go_error` and friends), NDJSON
streams (`build_stream` returns JSONLine), `message.thinking` for a model asked to think, and the models
without tool support (`TOOLLESS_FAMILIES`), which answer a request with tools as the server does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.types import Message, ModelOptions, ModelTurn, ReasoningState, ToolCall, ToolSpec, Usage
from ...providers.common import JSONLine, StreamEvent, dumps, stable_id
from ...providers.ollama import NAME, reasoning_of, synthetic_ids
from .common import ChatRequest, RequestInvalid, degrades, holds, no_records, nothing_stored, simulated_thought
from .contract import Route, ServerFacts

# -- the fidelity ledger's rules this half checks (agentkit/sim/fidelity.toml) -------------------------------
GO_TYPE_MISMATCH = "ollama.go_type_mismatch"    # "json: cannot unmarshal {kind} into Go {target}"
MODEL_REQUIRED = "ollama.model_required"
INVALID_ROLE = "ollama.invalid_role"
NO_TOOL_SUPPORT = "ollama.model_without_tools"
#: Accepted, but worse (ledger kind "degradation"): results sent back in another order than their calls.
RESULTS_OUT_OF_ORDER = "ollama.results_out_of_order"
RESULTS_OUT_OF_ORDER_WORDS = ("The results came back in another order than the calls: the model reads them by "
                              "position, so each is taken for the result of the call in its place.")
#: The shape refusals every request is checked against.
SHAPE_RULES = (GO_TYPE_MISMATCH, MODEL_REQUIRED, INVALID_ROLE)

#: Model families the simulator serves without the "tools" capability, as users report them from the real
#: server ("registry.ollama.ai/library/llama2:13b does not support tools", "…/gemma3:4b does not support
#: tools"): every tag of these names. Any other name has tools.
TOOLLESS_FAMILIES = ("llama2", "gemma3")
#: Where a bare model name lives, as the server spells it in its errors.
REGISTRY = "registry.ollama.ai"

#: 2026-01-01T00:00:00Z. A fixed `created_at` keeps the simulator's answers identical run after run.
CREATED_AT = "2026-01-01T00:00:00Z"

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
resolve_stored = nothing_stored
stored_records = no_records


# --- server side: the request ----------------------------------------------------------------------
# The server decodes the body into Go structs first (a wrong JSON type is a 400 in encoding/json's
# words; unknown fields are ignored; null leaves a field empty), then checks the model name.

ROLES = ("system", "user", "assistant", "tool")
#: Body fields the kit models; everything else (format, keep_alive, think, ...) lands in extras.
MODELLED = {"model", "messages", "tools", "stream", "options"}


def parse_request(body: Any, model: str | None = None) -> ChatRequest:
    """What a client sent -> ChatRequest, or RequestInvalid with the 400 Ollama would give."""
    if not isinstance(body, dict):
        raise _go_error(body, "api.ChatRequest", "", value_only=True)
    name = _go_str(body.get("model", model), "ChatRequest", "model")
    wire_messages = _go_list(body.get("messages"), "ChatRequest", "messages", "[]api.Message")
    wire_tools = _go_list(body.get("tools"), "ChatRequest", "tools", "api.Tools")
    stream = _go_bool(body.get("stream"), "ChatRequest", "stream")
    generation = _go_object(body.get("options"), "ChatRequest", "options", allow_null=True) or {}
    for key in ("truncate", "shift", "logprobs"):
        _go_bool(body.get(key), "ChatRequest", key)
    if not name:  # the server's words (server/routes.go, ChatHandler)
        raise RequestInvalid("model is required", "model", rule=MODEL_REQUIRED)
    tools = [tool_from_wire(t, f"tools[{i}]") for i, t in enumerate(wire_tools)]
    messages = _messages_from_wire(wire_messages, name)
    options = ModelOptions("auto", None, True if stream is None else stream, _max_tokens(generation),
                           _temperature(generation))
    extras = {k: v for k, v in body.items() if k not in MODELLED}
    if generation:
        extras["options"] = generation
    for rule in SHAPE_RULES:  # decoded whole: none of the shape refusals applied
        holds(rule)
    return ChatRequest(name, tuple(messages), tuple(tools), options, (), extras)


def _messages_from_wire(wire: list, model: str) -> list[Message]:
    """Wire messages -> neutral ones; a result finds its call by id when it has one, else by tool name,
    else by position (the documented way is the name alone). The model itself reads results in the order
    they come (its chat template lays them out one after the other, without the calls' ids): results sent
    in another order than the calls are accepted, and each is read as the result of the call in its place
    (a degradation, `RESULTS_OUT_OF_ORDER`)."""
    out: list[Message] = []
    open_calls: list[ToolCall] = []  # the calls of the last assistant turn not answered yet
    turn_calls: list[ToolCall] = []  # all of that turn's calls, in order, and how many results came so far
    answered = 0
    in_order: bool | None = None  # None: no turn with several calls was answered
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
            raise RequestInvalid(f"invalid role {role!r} in {at}: use one of {', '.join(ROLES)}", f"{at}.role",
                                 rule=INVALID_ROLE)
        if role == "assistant":
            calls = _calls_from_wire(i, wire_calls)
            state = reasoning_of(m.get("thinking"), model)
            out.append(Message("assistant", content or None, calls, reasoning=state))
            open_calls, turn_calls, answered = list(calls), list(calls), 0
        elif role == "tool":
            name, call_id = m.get("tool_name") or "", m.get("tool_call_id") or ""
            call = _take_call(open_calls, call_id, name)
            placed = turn_calls[answered] if answered < len(turn_calls) else None
            answered += 1
            if call is not None and placed is not None and len(turn_calls) > 1:
                if call is not placed and (call.name != placed.name or call.arguments != placed.arguments):
                    degrades(RESULTS_OUT_OF_ORDER, RESULTS_OUT_OF_ORDER_WORDS, at)
                    in_order, call, name = False, placed, placed.name  # read by position, as the model reads it
                elif in_order is None:
                    in_order = True
            out.append(Message("tool", content, (), call.id if call else (call_id or None),
                               name or (call.name if call else None)))
        else:
            out.append(Message(role, content))  # type: ignore[arg-type]
    if in_order:
        holds(RESULTS_OUT_OF_ORDER)
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
        return RequestInvalid(f"json: cannot unmarshal {_go_kind(value)} into Go value of type {struct}",
                              rule=GO_TYPE_MISMATCH)
    return RequestInvalid(f"json: cannot unmarshal {_go_kind(value)} into Go struct field {struct}.{_dotted(path)} "
                          f"of type {go_type}", path, rule=GO_TYPE_MISMATCH)


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


def registry_name(model: str) -> str:
    """A model name as the server spells it in its errors: host, namespace, name and tag.

        registry_name("llama2:13b")  ->  "registry.ollama.ai/library/llama2:13b"
        registry_name("gemma3")      ->  "registry.ollama.ai/library/gemma3:latest"
    """
    name, _, tag = model.partition(":")
    parts = name.split("/")
    if len(parts) == 1:
        parts = [REGISTRY, "library", *parts]
    elif len(parts) == 2:
        parts = [REGISTRY, *parts]
    return "/".join(parts) + ":" + (tag or "latest")


def has_tools(model: str) -> bool:
    """Whether the simulated model `model` has the "tools" capability (not one of TOOLLESS_FAMILIES)."""
    family = model.partition(":")[0].rsplit("/", 1)[-1].lower()
    return family not in TOOLLESS_FAMILIES


def model_refusal(request: ChatRequest) -> RequestInvalid | None:
    """Tools for a model without the "tools" capability: the server's 400, naming the model as it resolved it
    (server/routes.go asks for the capability whenever `tools` is not empty)."""
    if not request.tools:
        return None
    if has_tools(request.model):
        holds(NO_TOOL_SUPPORT)
        return None
    return RequestInvalid(f"{registry_name(request.model)} does not support tools", "tools", rule=NO_TOOL_SUPPORT)


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

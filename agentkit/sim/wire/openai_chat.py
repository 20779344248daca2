"""OpenAI Chat Completions: the server side, as the simulator speaks it (pure functions).

The client side (and what is special about the format) is `agentkit.providers.openai_chat`; this half
is what only a server does: decode a request the way the real API validates it (refusing it in the
API's own words), and write its answers, streams, errors and model list.

Beyond the verbs: `fmt=` on parse_request / build_response / build_stream, so OpenRouter's half reuses
them; `RESPONSES_ONLY_TOOLS`, the model family whose tools work only on Responses (`model_refusal`).

What it models of December 2026's API (each rule a fidelity-ledger entry): `tool_choice` allowed_tools
(nested; the subset reaches the model as `{"allowed": [...], "mode": ...}`), and a `strict: true`
function whose schema strict mode cannot take refused with the reported 400 (OpenAI's Chat Completions
only: OpenRouter passes the tool on). Not modelled: custom tools' grammars, structured outputs, and
`phase`, which Chat Completions does not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ...core.types import Message, ModelOptions, ModelTurn, ReasoningState, ToolCall, ToolChoice, ToolSpec, Usage
from ...providers.common import SSEvent, StreamEvent, dumps
from ...providers.openai_chat import NAME, REASONING_FIELDS, _call_to_wire, _put_reasoning, reasoning_of
from . import openai_common
from .common import (ChatRequest, RequestInvalid, breaks, holds, no_records, nothing_stored, schema_problem,
                     simulated_thought)
from .contract import Route
from .openai_common import (
    CREATED,
    NOT_JSON,
    build_error,
    call_ids,
    completion_id,
    empty_array,
    invalid_schema,
    invalid_type,
    invalid_value,
    missing,
    optional,
    out_of_range,
    pieces,
    required,
    required_object,
    required_str,
    temperature_field,
    tool_name,
)

#: What the real server does around the bodies (routes, key, request id, fault wording): see contract.py.
SERVER = openai_common.platform_server(Route("POST", "/v1/chat/completions"))
#: neutral stop -> finish_reason. The SDK accepts only its five values, so "other" becomes "stop".
STOP_TO_FINISH = {"stop": "stop", "tool_calls": "tool_calls", "length": "length",
                  "content_filter": "content_filter", "other": "stop"}

ROLES = ("system", "assistant", "user", "function", "tool", "developer")

#: Models that call tools only through the Responses API (OpenAI's migration guide; claim C13 in the README's
#: claims table).
RESPONSES_ONLY_TOOLS = ("gpt-6",)

#: The fidelity ledger's ids of this half's own refusals (agentkit/sim/fidelity.toml); the shared shape
#: refusals (missing, invalid type, ...) name theirs in openai_common.
NOT_JSON_RULE = "openai-chat.not_json"
NO_MODEL, NULL_CONTENT, RESPONSES_ONLY = ("openai-chat.model_missing", "openai-chat.null_content",
                                          "openai-chat.responses_only_tools")
#: The ledger's id of allowed_tools: only the listed subset reaches the model (a behaviour, not a refusal).
ALLOWED_TOOLS = "openai-chat.allowed_tools"
CHOICE_WITHOUT_TOOLS, PARALLEL_WITHOUT_TOOLS, UNKNOWN_FUNCTION = (
    "openai-chat.tool_choice_without_tools", "openai-chat.parallel_without_tools",
    "openai-chat.tool_choice_unknown_function")


def tool_from_wire(d: Any, param: str = "tools[0]", *, strict_checked: bool = False) -> ToolSpec:
    """Read one `{"type": "function", "function": {...}}`; raises RequestInvalid in the API's words.

    A Responses-style flat tool (`{"type": "function", "name": ...}`) is refused the way the API refuses
    it: "Missing required parameter: 'tools[0].function'." With `strict_checked`, a `strict: true` tool
    whose schema strict mode cannot take is refused too (`openai_common.check_strict_schema`; OpenAI's
    Chat Completions does it, OpenRouter passes the tool on to its upstream).
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
    if strict and strict_checked:
        openai_common.check_strict_schema(name, parameters, f"{where}.parameters")
    if parameters is None:  # "Omitting parameters defines a function with an empty parameter list."
        return ToolSpec(name, description, strict=strict)
    return ToolSpec(name, description, parameters, strict)
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
        raise RequestInvalid(NOT_JSON, None, rule=NOT_JSON_RULE)
    model_name = body.get("model", model)
    if model_name is None:
        raise RequestInvalid("you must provide a model parameter", None, rule=NO_MODEL)
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
    tools, has_tools = _tools_field(body.get("tools"), strict_checked=fmt == NAME)
    choice, unmodelled_choice = _tool_choice_field(body, [t.name for t in tools], has_tools)
    options = ModelOptions(choice, _parallel_field(body, has_tools), _stream_field(body),
                           _max_tokens_field(body), temperature_field(body))
    _check_content(messages, wire_messages)
    messages = _pair_results(messages)
    extras = {k: v for k, v in body.items() if k not in MODELLED}
    if unmodelled_choice is not None:
        extras["tool_choice"] = unmodelled_choice
    openai_common.shapes_held(bool(tools), (NO_MODEL, NOT_JSON_RULE) if fmt == NAME else (NO_MODEL,))
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


def _tools_field(value: Any, strict_checked: bool = True) -> tuple[list[ToolSpec], bool]:
    """The function tools, and whether any tool at all was sent (free-text `custom` tools are skipped)."""
    if value is None:
        return [], False
    if not isinstance(value, list):
        raise invalid_type("tools", "an array of objects", value)
    specs = [tool_from_wire(d, f"tools[{i}]", strict_checked=strict_checked) for i, d in enumerate(value)
             if not (isinstance(d, dict) and d.get("type") == "custom")]
    return specs, bool(value)


def _tool_choice_field(body: dict, names: list[str], has_tools: bool) -> tuple[ToolChoice, dict | None]:
    """The neutral tool_choice, plus the original when it is a form the kit does not model."""
    choice = body.get("tool_choice")
    if choice is None:
        return "auto", None
    only_with_tools = RequestInvalid("Invalid value for 'tool_choice': 'tool_choice' is only allowed when "
                                     "'tools' are specified.", "tool_choice", rule=CHOICE_WITHOUT_TOOLS)
    if isinstance(choice, str):
        if choice not in ("none", "auto", "required"):
            raise invalid_value("tool_choice", choice, ("none", "auto", "required"))
        if choice != "none" and not has_tools:
            raise only_with_tools
        holds(CHOICE_WITHOUT_TOOLS, "tool_choice")
        return choice, None
    if not isinstance(choice, dict):
        raise invalid_type("tool_choice", "one of one of 'none', 'auto', or 'required' or object", choice)
    if not has_tools:
        raise only_with_tools
    holds(CHOICE_WITHOUT_TOOLS, "tool_choice")
    if choice.get("type") == "allowed_tools":  # a subset of the tools, in "auto" or "required" mode
        allowed = required_object(choice, "allowed_tools", "tool_choice")
        mode = required(allowed, "mode", "tool_choice.allowed_tools")
        if mode not in ("auto", "required"):
            raise invalid_value("tool_choice.allowed_tools.mode", mode, ("auto", "required"))
        subset = required(allowed, "tools", "tool_choice.allowed_tools")
        if not isinstance(subset, list) or not all(isinstance(t, dict) for t in subset):
            raise invalid_type("tool_choice.allowed_tools.tools", "an array of objects", subset)
        holds(ALLOWED_TOOLS, "tool_choice")
        return {"allowed": _allowed_names(subset), "mode": mode}, None
    if choice.get("type") == "custom":  # forcing a free-text tool: the closest neutral word
        return "required", choice
    function = required_object(choice, "function", "tool_choice")
    name = required_str(function, "name", "tool_choice.function")
    if name not in names:  # (sic: the API still words this in terms of the legacy functions API)
        raise RequestInvalid(f"Invalid value for 'function_call': no function named '{name}' was specified "
                             "in the 'functions' parameter.", "function_call", rule=UNKNOWN_FUNCTION)
    holds(UNKNOWN_FUNCTION, "tool_choice")
    return {"name": name}, None


def _allowed_names(subset: list[dict]) -> list[str]:
    """The function names of an allowed_tools list (`{"type": "function", "function": {"name"}}`, or a custom
    tool's `{"type": "custom", "custom": {"name"}}`), in order."""
    names = []
    for tool in subset:
        inner = tool.get("function") if tool.get("type") == "function" else tool.get("custom")
        if isinstance(inner, dict) and isinstance(inner.get("name"), str):
            names.append(inner["name"])
    return names


def _parallel_field(body: dict, has_tools: bool) -> bool | None:
    value = body.get("parallel_tool_calls")
    if value is None:
        return None
    if not isinstance(value, bool):
        raise invalid_type("parallel_tool_calls", "a boolean", value)
    if not has_tools:
        raise RequestInvalid("Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed "
                             "when 'tools' are specified.", "parallel_tool_calls", rule=PARALLEL_WITHOUT_TOOLS)
    holds(PARALLEL_WITHOUT_TOOLS, "parallel_tool_calls")
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
                                 f"messages.[{i}].content", rule=NULL_CONTENT)
    holds(NULL_CONTENT)


#: The fidelity ledger's ids of the two pairing rules (agentkit/sim/fidelity.toml).
UNANSWERED, ORPHANED = "openai-chat.tool_calls_unanswered", "openai-chat.tool_without_call"


def _pair_results(messages: list[Message]) -> list[Message]:
    """Every call needs a tool message right after its assistant turn, and every tool message a call.

    Returns the messages with each tool message's `name` filled in from the call it answers. Both rules
    are checked on the whole history (each break is logged, the first is answered: see `breaks`).
    """
    out: list[Message] = []
    names: dict[str, str] = {}  # ids of the assistant turn being answered -> tool name
    pending: list[str] = []     # of those, the ids still without an answer
    opened_at = 0
    broken: set[str] = set()
    for i, m in enumerate(messages):
        if m.role == "tool" and m.tool_call_id is not None:
            if m.tool_call_id not in names:  # (sic: "preceeding" is the API's spelling)
                broken.add(ORPHANED)
                breaks(RequestInvalid("Invalid parameter: messages with role 'tool' must be a response to a "
                                      "preceeding message with 'tool_calls'.", f"messages.[{i}].role", rule=ORPHANED))
                out.append(m)
                continue
            if m.tool_call_id in pending:
                pending.remove(m.tool_call_id)
            out.append(replace(m, name=names[m.tool_call_id]))
            continue
        if pending:
            broken.add(UNANSWERED)
            breaks(_unanswered(opened_at, pending))
        names = {c.id: c.name for c in m.tool_calls} if m.role == "assistant" else {}
        pending, opened_at = list(names), i
        out.append(m)
    if pending:
        broken.add(UNANSWERED)
        breaks(_unanswered(opened_at, pending))
    if any(m.tool_calls for m in messages) or any(m.role == "tool" for m in messages):
        for rule in (UNANSWERED, ORPHANED):
            if rule not in broken:
                holds(rule)
    return out


def _unanswered(i: int, ids: list[str]) -> RequestInvalid:
    return RequestInvalid("An assistant message with 'tool_calls' must be followed by tool messages "
                          "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                          "response messages: " + ", ".join(ids), f"messages.[{i}].role", rule=UNANSWERED)


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
    """The JSON body a real server answers (OpenAI's Chat Completions API reference); validates as
    `openai.types.chat.ChatCompletion`."""
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
    """The same answer as `data:` chunks (OpenAI's Chat Completions API reference), ending with `data: [DONE]`.

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
    (OpenAI's Chat Completions API reference); the SDK raises APIError on it. Its `type` says what kind
    of failure it was."""
    error = build_error(status, message)["error"]
    return SSEvent(dumps({"error": {**error, "code": None if status != 429 else error["code"]}}))


def build_model_list(names: list[str] | tuple[str, ...]) -> dict:
    """GET /v1/models."""
    return openai_common.model_list(names)


def model_refusal(request: ChatRequest) -> RequestInvalid | None:
    """GPT-6 models answer a Chat Completions request with tools with a 400: tools need Responses."""
    if not request.tools and request.model.startswith(RESPONSES_ONLY_TOOLS):
        holds(RESPONSES_ONLY, "tools")
    if request.tools and request.model.startswith(RESPONSES_ONLY_TOOLS):
        return RequestInvalid("GPT-6 Astra, GPT-6.1 Sol, and GPT-6.1 Terra support Chat Completions, but tool "
                              "calling requires Responses. Send this request to /v1/responses (model "
                              f"{request.model!r}), or remove `tools`.", "tools", rule=RESPONSES_ONLY)
    return None

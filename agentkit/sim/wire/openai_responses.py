"""OpenAI Responses: the server side, as the simulator speaks it (pure functions).

The client side (and what is special about the format) is `agentkit.providers.openai_responses`; this half
is what only a server does: decode a request the way the real API validates it (refusing it in the
API's own words), and write its answers, streams, errors and model list.

Beyond the verbs: what the API stores (`resolve_stored` fills in `previous_response_id` and item
references, `stored_records` says what to keep) and encrypted reasoning items (`reasoning_for`, checked in
`parse_request`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ...core.types import Message, ModelOptions, ModelTurn, ReasoningState, ToolCall, ToolChoice, ToolSpec, Usage
from ...providers.common import SSEvent, StreamEvent, dumps, stable_id
from ...providers.openai_responses import NAME, reasoning_of, tool_choice_to_wire, tool_to_wire, turn_items
from . import openai_common
from .common import (
    ChatRequest,
    RequestInvalid,
    conversation_of,
    mint_signature,
    schema_problem,
    signature_valid,
    simulated_thought,
)
from .contract import Route
from .openai_common import (
    CREATED,
    NOT_JSON,
    build_error,
    call_ids,
    invalid_schema,
    invalid_type,
    invalid_value,
    missing,
    optional,
    out_of_range,
    pieces,
    required,
    required_str,
    temperature_field,
    tool_name,
    unsupported,
)

#: What the real server does around the bodies: the platform's, as on Chat Completions (contract.py).
SERVER = openai_common.platform_server(Route("POST", "/v1/responses"))

#: Models that reason (and emit reasoning items when the request asks for `reasoning`): GPT-6, o1, o3, o4...
REASONING_MODELS = re.compile(r"(?:[\w.-]+/)?(?:gpt-6|o\d)")
#: The kind the simulator's encrypted reasoning is minted for.
ENCRYPTED_KIND = "openai-reasoning"
STOP_TO_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter", "other": None}


def tool_from_wire(d: Any, param: str = "tools[0]") -> ToolSpec:
    """Read one flat function tool; raises RequestInvalid in the API's words.

    A Chat-style nested tool (`{"type": "function", "function": {...}}`) is refused the way the API
    refuses it: "Missing required parameter: 'tools[0].name'." A tool without `strict` is strict.
    """
    if not isinstance(d, dict):
        raise invalid_type(param, "an object", d)
    kind = required(d, "type", param)
    if kind != "function":
        raise invalid_value(f"{param}.type", kind, ("function",))
    name = tool_name(d, param)
    description = optional(d, "description", str, "a string", param) or ""
    parameters = optional(d, "parameters", dict, "an object", param)
    strict = optional(d, "strict", bool, "a boolean", param)
    strict = True if strict is None else strict
    problem = None if parameters is None else schema_problem(parameters)
    if problem is not None:
        raise invalid_schema(name, f"{param}.parameters", problem)
    if parameters is None:
        return ToolSpec(name, description, strict=strict)
    return ToolSpec(name, description, parameters, strict)


# --- server side: the request ----------------------------------------------------------------------
# Checks run in this order: model, input (shape), tools, switches, then the pairing of calls with
# outputs. Wording and `param` paths are the API's.

#: Body fields the kit models; everything else lands in ChatRequest.extras unchanged. (`instructions`
#: becomes the first system message and also stays in extras, so a response can echo it.)
MODELLED = {"model", "input", "tools", "tool_choice", "parallel_tool_calls", "stream", "max_output_tokens",
            "temperature"}
ITEM_ROLES = ("user", "assistant", "system", "developer")
TEXT_PARTS = ("input_text", "output_text")
SKIPPED_PARTS = ("input_image", "input_file", "input_audio", "refusal", "summary_text", "reasoning_text")
#: Input items the kit reads past: hosted-tool calls and their outputs, references. (Reasoning items are
#: read: they become the assistant turn's ReasoningState.)
SKIPPED_ITEMS = frozenset({
    "compaction", "compaction_trigger", "item_reference", "file_search_call", "web_search_call",
    "computer_call", "computer_call_output", "tool_search_call", "tool_search_output", "additional_tools",
    "configuration_update", "image_generation_call", "code_interpreter_call", "local_shell_call",
    "local_shell_call_output", "shell_call", "shell_call_output", "apply_patch_call",
    "apply_patch_call_output",
    "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "mcp_call", "custom_tool_call",
    "custom_tool_call_output", "program", "program_output"})


def parse_request(body: Any, model: str | None = None) -> ChatRequest:
    """What a client sent -> ChatRequest, or RequestInvalid with the 400 the real API would give.

    With `previous_response_id` (or a conversation) the calls may live on the server, so an output
    whose call is not in `input` is accepted; its tool message then has no `name`. (The simulator first
    fills in what it stored, `resolve_stored`, so a continued conversation arrives here whole.)
    """
    if not isinstance(body, dict):
        raise RequestInvalid(NOT_JSON, None)
    model_name = body.get("model", model)
    if model_name is None:
        raise missing("model")
    if not isinstance(model_name, str):
        raise invalid_type("model", "a string", model_name)
    for key in ("instructions", "previous_response_id"):
        if body.get(key) is not None and not isinstance(body[key], str):
            raise invalid_type(key, "a string", body[key])
    stateful = any(body.get(k) is not None for k in ("previous_response_id", "conversation", "prompt"))
    items = _input_field(body.get("input"), stateful)
    messages = [Message.system(body["instructions"])] if body.get("instructions") is not None else []
    messages += _messages_from_items(items, model_name)
    tools = _tools_field(body.get("tools"))
    choice, unmodelled_choice = _tool_choice_field(body.get("tool_choice"))
    parallel, stream = _bool_field(body, "parallel_tool_calls"), bool(_bool_field(body, "stream"))
    options = ModelOptions(choice, parallel, stream, _max_tokens_field(body), temperature_field(body))
    messages = _pair_outputs(messages, stateful)
    extras = {k: v for k, v in body.items() if k not in MODELLED}
    if unmodelled_choice is not None:
        extras["tool_choice"] = unmodelled_choice
    return ChatRequest(model_name, tuple(messages), tuple(tools), options, (), extras)


# --- server side: what the API remembers ------------------------------------------------------------

def resolve_stored(body: dict, recall: Callable[[str], Any]) -> dict:
    """The request with what the server stored filled in, or RequestInvalid in the API's words.

    * `previous_response_id`: the stored response's input and output come before the new `input`
      (instructions are not carried over: the request's own apply). An unknown id is refused:
      400 "Previous response with id '…' not found.", code `previous_response_not_found`.
    * A reasoning item sent without its `encrypted_content` is a reference to a stored item: unknown,
      it is refused (with `store: false` the message says that nothing was stored).
    * A function_call sent with the item id of a stored call that followed a reasoning item needs that
      reasoning item before it in `input`: "Item 'fc_…' of type 'function_call' was provided without its
      required 'reasoning' item: 'rs_…'." (Without `store` the server cannot know the pair.)
    """
    if not isinstance(body, dict):
        return body
    previous = body.get("previous_response_id")
    if isinstance(previous, str):
        record = recall(previous)
        if not isinstance(record, dict) or "output" not in record:
            raise RequestInvalid(f"Previous response with id '{previous}' not found.", "previous_response_id",
                                 code="previous_response_not_found")
        new = body.get("input")
        if isinstance(new, str):
            new = [{"role": "user", "content": new}]
        if new is None or isinstance(new, list):
            body = {**body, "input": [*record["input"], *record["output"], *(new or [])]}
    items = body.get("input")
    if not isinstance(items, list):
        return body
    sent_reasoning: set[str] = set()
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        if item.get("type") == "reasoning":
            sent_reasoning.add(item["id"])
            if item.get("encrypted_content") is None and recall(item["id"]) is None:
                unstored = (" Items are not persisted when `store` is set to false. Try again with `store` set to "
                            "true, or remove this item from your input.") if body.get("store") is False else ""
                raise RequestInvalid(f"Item with id '{item['id']}' not found.{unstored}", "input")
        elif item.get("type") == "function_call":
            record = recall(item["id"])
            needed = record.get("reasoning") if isinstance(record, dict) else None
            if needed and needed not in sent_reasoning:
                raise RequestInvalid(f"Item '{item['id']}' of type 'function_call' was provided without its "
                                     f"required 'reasoning' item: '{needed}'.", "input")
    return body


def stored_records(body: dict, response: dict) -> dict[str, Any]:
    """With `store` (the default): the response under its id (the whole input it answered, as resolved,
    and its output), and each of its reasoning and function_call items under theirs (a call's record
    names the reasoning item it followed)."""
    if not isinstance(body, dict) or body.get("store") is False or not isinstance(response.get("id"), str):
        return {}
    items = body.get("input")
    items = [{"role": "user", "content": items}] if isinstance(items, str) else list(items or [])
    output = list(response.get("output") or [])
    records: dict[str, Any] = {response["id"]: {"input": items, "output": output}}
    reasoning = None
    for item in output:
        if item.get("type") == "reasoning":
            reasoning = item["id"]
            records[item["id"]] = {"response": response["id"]}
        elif item.get("type") == "function_call":
            records[item["id"]] = {"response": response["id"], "reasoning": reasoning}
    return records


def _input_field(value: Any, stateful: bool) -> list:
    if value is None:
        if stateful:
            return []
        raise missing("input")
    if isinstance(value, str):  # the short form: one user message
        return [{"role": "user", "content": value}]
    if not isinstance(value, list):
        raise invalid_type("input", "one of a string or array of input items", value)
    return value


def _messages_from_items(items: list, model: str) -> list[Message]:
    """Input items -> neutral messages. Consecutive reasoning, assistant text and function_call items form
    one assistant turn, whose reasoning items (with the calls' item ids) are its ReasoningState."""
    out: list[Message] = []
    turn_items: list[dict] = []  # the reasoning and function_call items of the assistant turn being read

    def close_turn() -> None:
        if out and out[-1].role == "assistant" and turn_items:
            out[-1] = replace(out[-1], reasoning=reasoning_of(turn_items, model))
        turn_items.clear()

    for i, item in enumerate(items):
        at = f"input[{i}]"
        if not isinstance(item, dict):
            raise invalid_type(at, "an object", item)
        kind = item.get("type")
        if kind == "reasoning":
            _reasoning_item(at, item, items[i + 1] if i + 1 < len(items) else None)
            _check_encrypted_content(item, conversation_of(out))
            if not (out and out[-1].role == "assistant" and turn_items):
                close_turn()
                out.append(Message("assistant", None))
            turn_items.append(item)
        elif kind == "message" or (kind is None and "role" in item):
            message = _message_item(at, item)
            last = out[-1] if out else None
            if message.role == "assistant" and last is not None and last.role == "assistant" \
                    and last.content is None and not last.tool_calls and turn_items:
                out[-1] = replace(last, content=message.content)  # the text after the turn's reasoning
            else:
                close_turn()
                out.append(message)
        elif kind == "function_call":
            call = ToolCall.from_raw(required_str(item, "call_id", at), required_str(item, "name", at),
                                     required_str(item, "arguments", at))
            if out and out[-1].role == "assistant":
                out[-1] = replace(out[-1], tool_calls=out[-1].tool_calls + (call,))
            else:
                close_turn()
                out.append(Message("assistant", None, (call,)))
            turn_items.append(item)
        elif kind == "function_call_output":
            close_turn()
            call_id = required_str(item, "call_id", at)
            output = required(item, "output", at)
            if not isinstance(output, (str, list)):
                raise invalid_type(f"{at}.output", "one of a string or array of objects", output)
            out.append(Message("tool", _content_text(f"{at}.output", output), (), call_id))
        elif kind is None and "id" in item:  # an item_reference may leave out its type
            continue
        elif kind is None:
            raise missing(f"{at}.role")
        elif not isinstance(kind, str) or kind not in SKIPPED_ITEMS:
            raise invalid_value(f"{at}.type", kind, ("message", "function_call", "function_call_output",
                                                      "reasoning", "item_reference"))
    close_turn()
    return out


def _reasoning_item(at: str, item: dict, following: Any) -> None:
    """A reasoning item's shape, and the API's rule that the item it led to comes right after it."""
    rid = required_str(item, "id", at)
    summary = required(item, "summary", at)
    if not isinstance(summary, list):
        raise invalid_type(f"{at}.summary", "an array of objects", summary)
    if item.get("encrypted_content") is not None and not isinstance(item["encrypted_content"], str):
        raise invalid_type(f"{at}.encrypted_content", "a string", item["encrypted_content"])
    kind = following.get("type") if isinstance(following, dict) else None
    led_to = kind in ("reasoning", "function_call") or (isinstance(following, dict) and following.get("role")
                                                         == "assistant" and kind in (None, "message"))
    if not led_to:
        raise RequestInvalid(f"Item '{rid}' of type 'reasoning' was provided without its required following item.",
                             "input")


def _check_encrypted_content(item: dict, conversation: str) -> None:
    """A reasoning item's `encrypted_content` must be what this server issued for that item in this
    conversation (`common.signature_valid` over the item id), else the API's 400 invalid_request_error,
    code `invalid_encrypted_content`, `param` null, with the content elided to its first and last four
    characters (reported: https://github.com/openai/codex/issues/8145 "The encrypted content gAAA...DQ==
    could not be verified.", and with the reason since:
    https://github.com/caozhiyuan/copilot-api/issues/363). Content of eight characters or fewer is shown
    whole (wording ours)."""
    content = item.get("encrypted_content")
    if content is None or signature_valid(content, ENCRYPTED_KIND, item["id"], conversation):
        return
    shown = f"{content[:4]}...{content[-4:]}" if len(content) > 8 else content
    raise RequestInvalid(f"The encrypted content {shown} could not be verified. Reason: Encrypted content could "
                         "not be decrypted or parsed.", None, code="invalid_encrypted_content")


def _message_item(at: str, item: dict) -> Message:
    role = required(item, "role", at)
    if role not in ITEM_ROLES:
        raise invalid_value(f"{at}.role", role, ITEM_ROLES)
    content = required(item, "content", at)
    if not isinstance(content, (str, list)):
        raise invalid_type(f"{at}.content", "one of a string or array of objects", content)
    text = _content_text(f"{at}.content", content)
    return Message("system" if role == "developer" else role, text)


def _content_text(at: str, content: str | list) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for j, part in enumerate(content):
        where = f"{at}[{j}]"
        if not isinstance(part, dict):
            raise invalid_type(where, "an object", part)
        kind = required(part, "type", where)
        if kind in TEXT_PARTS:
            texts.append(required_str(part, "text", where))
        elif kind not in SKIPPED_PARTS:
            raise invalid_value(f"{where}.type", kind, TEXT_PARTS + SKIPPED_PARTS[:3])
    return "".join(texts)


def _tools_field(value: Any) -> list[ToolSpec]:
    """The function tools; hosted tools (web_search, mcp, custom, ...) are skipped, never fatal."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid_type("tools", "an array of objects", value)
    return [tool_from_wire(d, f"tools[{i}]") for i, d in enumerate(value)
            if not (isinstance(d, dict) and isinstance(d.get("type"), str) and d["type"] != "function")]


HOSTED_CHOICES = ("file_search", "web_search_preview", "computer_use_preview", "computer", "computer_use",
                  "web_search_preview_2025_03_11", "image_generation", "code_interpreter", "mcp", "custom",
                  "apply_patch", "shell", "programmatic_tool_calling")


def _tool_choice_field(choice: Any) -> tuple[ToolChoice, dict | None]:
    """The neutral tool_choice, plus the original when it is a form the kit does not model."""
    if choice is None:
        return "auto", None
    if isinstance(choice, str):
        if choice not in ("none", "auto", "required"):
            raise invalid_value("tool_choice", choice, ("none", "auto", "required"))
        return choice, None
    if not isinstance(choice, dict):
        raise invalid_type("tool_choice", "one of one of 'none', 'auto', or 'required' or object", choice)
    kind = required(choice, "type", "tool_choice")
    if kind == "function":  # flat here: a Chat-style {"function": {"name"}} has no `name` and is refused
        return {"name": required_str(choice, "name", "tool_choice")}, None
    if kind == "allowed_tools":
        mode = required(choice, "mode", "tool_choice")
        if mode not in ("auto", "required"):
            raise invalid_value("tool_choice.mode", mode, ("auto", "required"))
        tools = required(choice, "tools", "tool_choice")
        if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
            raise invalid_type("tool_choice.tools", "an array of objects", tools)
        return mode, choice
    if isinstance(kind, str) and kind in HOSTED_CHOICES:
        return "required", choice  # a hosted tool forced by type: some tool must be called
    raise invalid_value("tool_choice.type", kind, ("function", "allowed_tools") + HOSTED_CHOICES[:3])


def _bool_field(body: dict, key: str) -> bool | None:
    value = body.get(key)
    if value is not None and not isinstance(value, bool):
        raise invalid_type(key, "a boolean", value)
    return value


def _max_tokens_field(body: dict) -> int | None:
    for chat_name in ("max_tokens", "max_completion_tokens"):  # Chat's names, refused by name
        if chat_name in body:
            raise unsupported(chat_name, "max_output_tokens", "Responses API")
    value = body.get("max_output_tokens")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise invalid_type("max_output_tokens", "an integer", value)
    if value < 16:
        raise out_of_range("max_output_tokens", value, ">=", 16, "integer")
    return value


def _pair_outputs(messages: list[Message], stateful: bool) -> list[Message]:
    """Every output needs an earlier call with its call_id, and every call an output.

    Returns the messages with each tool message's `name` filled in from the call it answers.
    """
    calls: dict[str, str] = {}  # call_id -> tool name, for every call seen so far
    answered: set[str] = set()
    out: list[Message] = []
    for m in messages:
        if m.role == "assistant":
            calls.update({c.id: c.name for c in m.tool_calls})
        elif m.role == "tool":
            if m.tool_call_id not in calls and not stateful:
                raise RequestInvalid("No tool call found for function call output with call_id "
                                     f"{m.tool_call_id}.", "input")
            answered.add(m.tool_call_id or "")
            m = replace(m, name=calls.get(m.tool_call_id or ""))
        out.append(m)
    unanswered = [call_id for call_id in calls if call_id not in answered]
    if unanswered:
        raise RequestInvalid(f"No tool output found for function call {unanswered[0]}.", "input")
    return out


# --- server side: the response ---------------------------------------------------------------------

def response_id(turn: ModelTurn, request: ChatRequest) -> str:
    """A Responses id, `resp_` and 50 characters (openai_common.turn_id)."""
    return openai_common.turn_id("resp_", 50, turn, request)


def item_id(prefix: str, *parts: Any) -> str:
    """An output item id (`fc_…`, `msg_…`), derived so that the same response has the same ids."""
    return prefix + stable_id(*parts, length=50)


def _usage_to_wire(usage: Usage) -> dict:
    # With `usage` present the SDK wants every counter, `cache_write_tokens` included (OpenAI's Responses API
    # reference).
    return {"input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": usage.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.total_tokens}


def _status(turn: ModelTurn) -> tuple[str, str | None]:
    """(status, incomplete reason): a cut-off answer is "incomplete"; the rest, calls or not, "completed"."""
    if turn.stop in STOP_TO_INCOMPLETE:
        return "incomplete", STOP_TO_INCOMPLETE[turn.stop]
    return "completed", None


def reasoning_for(turn: ModelTurn, request: ChatRequest) -> ReasoningState | None:
    """A reasoning model (GPT-6, o-series) asked for `reasoning` leads its answer with one reasoning item:
    a summary when `reasoning.summary` asks for one, and its `encrypted_content` (which the current SDK
    documents as populated by default; sealed to the item's id and the user request it answers, so an
    altered or invented one is refused when sent back), then the calls, each with its item id."""
    reasoning = request.extras.get("reasoning")
    if not REASONING_MODELS.match(request.model) or not isinstance(reasoning, dict) or \
            reasoning.get("effort") == "none":
        return None
    rid = response_id(turn, request)
    thought = simulated_thought(turn, request)
    summary = [{"type": "summary_text", "text": thought}] if reasoning.get("summary") else []
    reasoning_id = item_id("rs_", rid, "reasoning")
    sealed = mint_signature(ENCRYPTED_KIND, request.model, reasoning_id, conversation_of(request.messages))
    item = {"type": "reasoning", "id": reasoning_id, "summary": summary, "encrypted_content": sealed}
    calls = [{"type": "function_call", "call_id": call_id, "id": item_id("fc_", rid, call_id)}
             for call_id in call_ids(turn, request)]
    return ReasoningState(NAME, turn.model or request.model, (item, *calls))


def _output(turn: ModelTurn, request: ChatRequest, status: str) -> list[dict]:
    """The output items: reasoning where the turn's state puts it, the text before the first call (turn_items)."""
    rid = response_id(turn, request)
    text: list[dict] = []
    if turn.text:
        part = {"type": "output_text", "text": turn.text, "annotations": [], "logprobs": []}
        text.append({"type": "message", "id": item_id("msg_", rid, "message"), "status": status,
                     "role": "assistant", "content": [part]})
    calls = [{"type": "function_call", "id": item_id("fc_", rid, call_id), "call_id": call_id,
              "name": call.name, "arguments": call.arguments_json(), "status": "completed"}
             for call_id, call in zip(call_ids(turn, request), turn.tool_calls)]
    state = turn.reasoning if turn.reasoning is not None and turn.reasoning.format == NAME else None
    return turn_items(state.items if state else (), text, calls)


def build_response(turn: ModelTurn, request: ChatRequest) -> dict:
    """The JSON body a real server answers (OpenAI's Responses API reference); validates as
    `openai.types.responses.Response`.

    Echoes the request's tools, tool_choice, parallel switch and reasoning settings, as the API does.
    """
    rid = response_id(turn, request)
    status, reason = _status(turn)
    output = _output(turn, request, status)
    extras, options = request.extras, request.options
    parallel = True if options.parallel_tool_calls is None else options.parallel_tool_calls
    # An allowed_tools subset is echoed as sent; anything else in the kit's own words.
    unmodelled = extras.get("tool_choice")
    allowed = isinstance(unmodelled, dict) and unmodelled.get("type") == "allowed_tools"
    choice = unmodelled if allowed else tool_choice_to_wire(options.tool_choice)
    return {"id": rid, "object": "response", "created_at": CREATED, "status": status, "error": None,
            "incomplete_details": {"reason": reason} if status == "incomplete" else None,
            "instructions": extras.get("instructions"), "max_output_tokens": options.max_tokens,
            "model": turn.model or request.model, "output": output,
            "parallel_tool_calls": parallel,
            "previous_response_id": extras.get("previous_response_id"),
            "reasoning": _reasoning_echo(extras.get("reasoning")),
            "store": extras["store"] if isinstance(extras.get("store"), bool) else True,
            "temperature": 1.0 if options.temperature is None else options.temperature,
            "text": {"format": {"type": "text"}}, "tool_choice": choice,
            "tools": [tool_to_wire(t) for t in request.tools], "top_p": 1.0, "truncation": "disabled",
            "usage": _usage_to_wire(turn.usage), "user": None, "metadata": {}}


def _reasoning_echo(reasoning: Any) -> dict:
    if not isinstance(reasoning, dict):
        return {"effort": None, "summary": None}
    return {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")}


def build_stream(turn: ModelTurn, request: ChatRequest) -> list[SSEvent]:
    """The same answer as named events (OpenAI's Responses API reference), each with its `sequence_number`.

    response.created, response.in_progress; per text item: output_item.added, content_part.added,
    output_text.delta × n, output_text.done, content_part.done, output_item.done; per call:
    output_item.added, function_call_arguments.delta × n (≥ 2 when the arguments allow),
    function_call_arguments.done, output_item.done; per reasoning item: output_item.added (without its
    encrypted_content), for each summary part reasoning_summary_part.added, reasoning_summary_text.delta
    × n, .done, reasoning_summary_part.done, then output_item.done with the whole item; then
    response.completed (or .incomplete).
    """
    final = build_response(turn, request)
    events: list[SSEvent] = []

    def emit(kind: str, **fields: Any) -> None:
        payload = {"type": kind, "sequence_number": len(events), **fields}
        events.append(SSEvent(dumps(payload), event=kind))

    start = {**final, "status": "in_progress", "output": [], "incomplete_details": None, "usage": None}
    emit("response.created", response=start)
    emit("response.in_progress", response=start)
    for index, item in enumerate(final["output"]):
        where = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            part = item["content"][0]
            emit("response.output_item.added", output_index=index,
                 item={**item, "status": "in_progress", "content": []})
            emit("response.content_part.added", **where, content_index=0, part={**part, "text": ""})
            for piece in pieces(part["text"]):
                emit("response.output_text.delta", **where, content_index=0, delta=piece, logprobs=[])
            emit("response.output_text.done", **where, content_index=0, text=part["text"], logprobs=[])
            emit("response.content_part.done", **where, content_index=0, part=part)
        elif item["type"] == "reasoning":
            emit("response.output_item.added", output_index=index,
                 item={"type": "reasoning", "id": item["id"], "summary": []})
            for k, summary in enumerate(item.get("summary") or []):
                at = {**where, "summary_index": k}
                emit("response.reasoning_summary_part.added", **at, part={"type": "summary_text", "text": ""})
                for piece in pieces(summary["text"]):
                    emit("response.reasoning_summary_text.delta", **at, delta=piece)
                emit("response.reasoning_summary_text.done", **at, text=summary["text"])
                emit("response.reasoning_summary_part.done", **at, part=summary)
        else:
            emit("response.output_item.added", output_index=index,
                 item={**item, "arguments": "", "status": "in_progress"})
            for piece in pieces(item["arguments"]):
                emit("response.function_call_arguments.delta", **where, delta=piece)
            emit("response.function_call_arguments.done", **where, arguments=item["arguments"])
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed" if final["status"] == "completed" else "response.incomplete", response=final)
    return events


def build_stream_error(status: int, message: str, request: ChatRequest,
                       sent: Sequence[StreamEvent] = ()) -> SSEvent:
    """A mid-stream failure as the API sends it (OpenAI's Responses API reference): an `error` event
    whose `code` names the kind (server_error, rate_limit_exceeded, ...) and whose `sequence_number`
    follows the events `sent`."""
    kind = build_error(status, message)["error"]
    code = "rate_limit_exceeded" if status == 429 else kind["type"]
    payload = {"type": "error", "code": code, "message": message, "param": None, "sequence_number": len(sent)}
    return SSEvent(dumps(payload), event="error")


def build_model_list(names: list[str] | tuple[str, ...]) -> dict:
    """GET /v1/models (the same list as Chat Completions)."""
    return openai_common.model_list(names)


model_refusal = openai_common.model_refusal

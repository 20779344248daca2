"""OpenAI Responses: the server side, as the simulator speaks it (pure functions).

The client side (and what is special about the format) is `agentkit.providers.openai_responses`; this half
is what only a server does: decode a request the way the real API validates it (refusing it in the
API's own words), and write its answers, streams, errors and model list.

Beyond the verbs: what the API stores (`resolve_stored` fills in `previous_response_id` and item
references, `stored_records` says what to keep) and encrypted reasoning items (`reasoning_for`, checked in
`parse_request`).

What it models of December 2026's API (each rule a fidelity-ledger entry): `tool_choice` allowed_tools
(flat; the subset reaches the model), strict function schemas (only an explicit `strict: true` is
refused), `phase` on the assistant messages of the PHASE_MODELS (emitted; a history without it is a
degradation the models answer by stopping early), tool search (`defer_loading` functions and
namespaces behind the hosted `tool_search` tool on TOOL_SEARCH_MODELS: hidden, uncounted, searched and
loaded; `search_items`), and the 404 for an item never stored. Not modelled: client-executed tool
search, the `namespace` field on calls, MCP servers behind tool search, custom (free-text) tools and
their grammars, background responses, server-side compaction.
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
    breaks,
    conversation_of,
    degrades,
    holds,
    mint_signature,
    schema_problem,
    signature_valid,
    simulated_thought,
)
from .contract import Route
from .openai_common import UNSUPPORTED as UNSUPPORTED_PARAMETER
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

#: Models that reason (and emit reasoning items when the request asks for `reasoning`): GPT-6, GPT-5 and its
#: point releases (the reasoning guide's "reasoning models ... like GPT-5"), o1, o3, o4...
REASONING_MODELS = re.compile(r"(?:[\w.-]+/)?(?:gpt-6|gpt-5(?![\w])|gpt-5[.-]|o\d)")
#: Models that mark each assistant message's `phase` and want it back: the ones OpenRouter's GPT-5.4
#: migration guide names (GPT-5.3 Codex, GPT-5.4 and GPT-5.5, with their Pro variants). The SDK says "models
#: like gpt-5.3-codex and beyond"; the simulator's GPT-6 models are left out until a source names them.
#: Chat Completions has no phase.
PHASE_MODELS = re.compile(r"(?:[\w.-]+/)?(?:gpt-5\.3-codex|gpt-5\.[45](?:-pro)?)(?:-\d{4}-\d{2}-\d{2})?(?:-|$)")
PHASES = ("commentary", "final_answer")
#: The kind the simulator's encrypted reasoning is minted for.
ENCRYPTED_KIND = "openai-reasoning"
STOP_TO_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter", "other": None}

#: The fidelity ledger's ids of this half's own rules (agentkit/sim/fidelity.toml); the shared shape
#: refusals (missing, invalid type, ...) name theirs in openai_common.
NOT_JSON_RULE = "openai-chat.not_json"
PREVIOUS_NOT_FOUND, ITEM_NOT_FOUND, CALL_WITHOUT_REASONING = (
    "openai-responses.previous_response_not_found", "openai-responses.item_not_found",
    "openai-responses.call_without_reasoning")
REASONING_ALONE, ENCRYPTED_INVALID = ("openai-responses.reasoning_without_following_item",
                                      "openai-responses.encrypted_content_invalid")
OUTPUT_WITHOUT_CALL, CALL_WITHOUT_OUTPUT = ("openai-responses.output_without_call",
                                            "openai-responses.call_without_output")
ALLOWED_TOOLS = "openai-responses.allowed_tools"
PHASE_EMITTED, PHASE_DROPPED = "openai-responses.phase_emitted", "openai-responses.phase_dropped"
#: Accepted, but worse (ledger kind "degradation"): a turn's calls sent back without the reasoning item before them.
REASONING_DROPPED = "openai-responses.reasoning_dropped"
REASONING_DROPPED_WORDS = ("By giving the model access to previous reasoning items, we can ensure it operates at "
                           "maximum intelligence and lowest cost.")
#: What a history without phase changes, in the source's words (ledger: openai-responses.phase_dropped).
PHASE_DROPPED_WORDS = ("If phase metadata is dropped when reconstructing conversation history, significant "
                       "performance degradation can occur — including early stopping on longer-running tasks.")


def tool_from_wire(d: Any, param: str = "tools[0]") -> ToolSpec:
    """Read one flat function tool; raises RequestInvalid in the API's words.

    A Chat-style nested tool (`{"type": "function", "function": {...}}`) is refused the way the API
    refuses it: "Missing required parameter: 'tools[0].name'." A tool without `strict` is strict: the API
    "attempts to use strict validation when the schema is compatible, and falls back to non-strict
    validation otherwise" (the SDK's FunctionTool), so only an explicit `strict: true` with a schema strict
    mode cannot take is refused (`openai_common.check_strict_schema`).
    """
    if not isinstance(d, dict):
        raise invalid_type(param, "an object", d)
    kind = required(d, "type", param)
    if kind != "function":
        raise invalid_value(f"{param}.type", kind, ("function",))
    name = tool_name(d, param)
    description = optional(d, "description", str, "a string", param) or ""
    parameters = optional(d, "parameters", dict, "an object", param)
    stated = optional(d, "strict", bool, "a boolean", param)
    strict = True if stated is None else stated
    problem = None if parameters is None else schema_problem(parameters)
    if problem is not None:
        raise invalid_schema(name, f"{param}.parameters", problem)
    if stated is True:  # left out, the API normalizes the schema or falls back to best effort: no 400
        openai_common.check_strict_schema(name, parameters, f"{param}.parameters")
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
        raise RequestInvalid(NOT_JSON, None, rule=NOT_JSON_RULE)
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
    tools, deferred = _searchable_tools(body.get("tools"), items, model_name)
    choice, unmodelled_choice = _tool_choice_field(body.get("tool_choice"))
    parallel, stream = _bool_field(body, "parallel_tool_calls"), bool(_bool_field(body, "stream"))
    options = ModelOptions(choice, parallel, stream, _max_tokens_field(body), temperature_field(body))
    messages = _pair_outputs(messages, stateful)
    extras = {k: v for k, v in body.items() if k not in MODELLED}
    if unmodelled_choice is not None:
        extras["tool_choice"] = unmodelled_choice
    if deferred:  # behind tool_search: the model sees their names and descriptions until a search loads them
        extras["deferred_tools"] = [t.to_dict() for t in deferred]
    reasoning = body.get("reasoning")
    if REASONING_MODELS.match(model_name) and isinstance(reasoning, dict) and reasoning.get("effort") != "none":
        _check_reasoning_kept(items)
    openai_common.shapes_held(bool(tools), (NOT_JSON_RULE,))
    return ChatRequest(model_name, tuple(messages), tuple(tools), options, (), extras)


def _check_reasoning_kept(items: list) -> None:
    """A reasoning model with reasoning on leads every turn that calls tools with a reasoning item; a history
    that sends a turn's calls back without it (and without the calls' item ids, which would let the server
    find it, or refuse the pair) is accepted, but the model reasons again from nothing: "By giving the model
    access to previous reasoning items, we can ensure it operates at maximum intelligence and lowest cost"
    (OpenAI's cookbook on reasoning items). A degradation, once per turn. Only the open tool cycle (after the
    last user message) is checked: reasoning of a finished turn "only matters within a turn during active tool
    loops" (a report on pruning it, zirkelc.dev), so a history whose earlier turns were compacted is not
    degraded."""
    opened = max((i for i, item in enumerate(items) if isinstance(item, dict) and item.get("role") == "user"
                  and item.get("type") in (None, "message")), default=-1)
    turns: list[list[tuple[int, dict]]] = [[]]
    for i, item in enumerate(items):
        if not isinstance(item, dict) or i <= opened:
            continue
        assistant_side = item.get("type") in ("reasoning", "function_call") or (
            item.get("type") in (None, "message") and item.get("role") == "assistant")
        if assistant_side:
            turns[-1].append((i, item))
        elif turns[-1]:
            turns.append([])
    calling = [turn for turn in turns if any(item.get("type") == "function_call" for _, item in turn)]
    dropped = [turn for turn in calling if not any(item.get("type") == "reasoning" for _, item in turn)
               and not any(isinstance(item.get("id"), str) for _, item in turn if item.get("type") == "function_call")]
    for turn in dropped:
        first = next(i for i, item in turn if item.get("type") == "function_call")
        degrades(REASONING_DROPPED, REASONING_DROPPED_WORDS, f"input[{first}]")
    if calling and not dropped:
        holds(REASONING_DROPPED)


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
                                 code="previous_response_not_found", rule=PREVIOUS_NOT_FOUND)
        holds(PREVIOUS_NOT_FOUND, "previous_response_id")
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
            if item.get("encrypted_content") is None:
                if recall(item["id"]) is None:
                    unstored = (" Items are not persisted when `store` is set to false. Try again with `store` set "
                                "to true, or remove this item from your input.") if body.get("store") is False else ""
                    # 404, as the API answers it (the SDKs raise NotFoundError), not a 400
                    breaks(RequestInvalid(f"Item with id '{item['id']}' not found.{unstored}", "input", status=404,
                                          rule=ITEM_NOT_FOUND))
                else:
                    holds(ITEM_NOT_FOUND, "input")
        elif item.get("type") == "function_call":
            record = recall(item["id"])
            needed = record.get("reasoning") if isinstance(record, dict) else None
            if needed and needed not in sent_reasoning:
                breaks(RequestInvalid(f"Item '{item['id']}' of type 'function_call' was provided without its "
                                      f"required 'reasoning' item: '{needed}'.", "input", rule=CALL_WITHOUT_REASONING))
            elif needed:
                holds(CALL_WITHOUT_REASONING, "input")
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
    turn_items: list[dict] = []  # the reasoning, phased message and function_call items of the assistant turn
    phased = PHASE_MODELS.match(model) is not None
    dropped = False

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
            if message.role == "assistant" and item.get("phase") is not None:
                turn_items.append(item)  # its phase rides with the turn, as the client keeps it
            elif message.role == "assistant" and phased:
                dropped = True
                degrades(PHASE_DROPPED, PHASE_DROPPED_WORDS, at)
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
    if phased and not dropped and any(m.role == "assistant" for m in out):
        holds(PHASE_DROPPED)
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
    led_to = kind in ("reasoning", "function_call", "tool_search_call") or (
        isinstance(following, dict) and following.get("role") == "assistant" and kind in (None, "message"))
    if not led_to:
        breaks(RequestInvalid(f"Item '{rid}' of type 'reasoning' was provided without its required following item.",
                              "input", rule=REASONING_ALONE))
    else:
        holds(REASONING_ALONE, "input")


def _check_encrypted_content(item: dict, conversation: str) -> None:
    """A reasoning item's `encrypted_content` must be what this server issued for that item in this
    conversation (`common.signature_valid` over the item id), else the API's 400 invalid_request_error,
    code `invalid_encrypted_content`, `param` null, with the content elided to its first and last four
    characters (reported: https://github.com/openai/codex/issues/8145 "The encrypted content gAAA...DQ==
    could not be verified.", and with the reason since:
    https://github.com/caozhiyuan/copilot-api/issues/363). Content of eight characters or fewer is shown
    whole (wording ours)."""
    content = item.get("encrypted_content")
    if content is None:
        return
    if signature_valid(content, ENCRYPTED_KIND, item["id"], conversation):
        holds(ENCRYPTED_INVALID, "input")
        return
    shown = f"{content[:4]}...{content[-4:]}" if len(content) > 8 else content
    breaks(RequestInvalid(f"The encrypted content {shown} could not be verified. Reason: Encrypted content could "
                          "not be decrypted or parsed.", None, code="invalid_encrypted_content",
                          rule=ENCRYPTED_INVALID))


def _message_item(at: str, item: dict) -> Message:
    role = required(item, "role", at)
    if role not in ITEM_ROLES:
        raise invalid_value(f"{at}.role", role, ITEM_ROLES)
    content = required(item, "content", at)
    if not isinstance(content, (str, list)):
        raise invalid_type(f"{at}.content", "one of a string or array of objects", content)
    if item.get("phase") is not None and item["phase"] not in PHASES:
        raise invalid_value(f"{at}.phase", item["phase"], PHASES)
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


def _tools_field(value: Any) -> list[tuple[ToolSpec, bool]]:
    """The function tools, each with its `defer_loading` flag, those inside a namespace included; other
    hosted tools (web_search, mcp, custom, tool_search, ...) are skipped, never fatal."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid_type("tools", "an array of objects", value)
    out = []
    for i, d in enumerate(value):
        if isinstance(d, dict) and d.get("type") == "namespace" and isinstance(d.get("tools"), list):
            out += [(tool_from_wire(f, f"tools[{i}].tools[{k}]"), f.get("defer_loading") is True)
                    for k, f in enumerate(d["tools"]) if isinstance(f, dict) and f.get("type") == "function"]
        elif not (isinstance(d, dict) and isinstance(d.get("type"), str) and d["type"] != "function"):
            out.append((tool_from_wire(d, f"tools[{i}]"), isinstance(d, dict) and d.get("defer_loading") is True))
    return out


#: Models that take the tool_search tool: "Only gpt-5.4 and later models support tool_search" (the guide).
TOOL_SEARCH_MODELS = re.compile(r"(?:[\w.-]+/)?(?:gpt-5\.(?:[4-9]|\d\d)|gpt-[6-9])(?:\b|$)")
DEFERRED_WITHOUT_SEARCH, TOOL_SEARCH_MODEL = ("openai-responses.deferred_without_tool_search",
                                              "openai-responses.tool_search_model")
DEFERRED_HIDDEN = "openai-responses.deferred_tool_hidden"


def _searchable_tools(value: Any, items: list, model: str) -> tuple[list[ToolSpec], list[ToolSpec]]:
    """(the tools the model sees whole, the deferred ones it sees by name and description only).

    Tool search (OpenAI's tool-search guide): a function (or a namespace's function) with `defer_loading:
    true` needs the `tool_search` tool beside it, which only gpt-5.4 and later models take; its schema
    stays out of the model's context until a search loads it. A `tool_search_output` item in `input` (a
    search the model made earlier, sent back) loads the tools it lists, by name.
    """
    tools = _tools_field(value)
    searching = isinstance(value, list) and any(isinstance(d, dict) and d.get("type") == "tool_search" for d in value)
    if searching and not TOOL_SEARCH_MODELS.match(model):
        breaks(RequestInvalid(f"Tool 'tool_search' is not supported with model '{model}'.", "tools",
                              rule=TOOL_SEARCH_MODEL))
    elif searching:
        holds(TOOL_SEARCH_MODEL, "tools")
    if any(defer for _, defer in tools):
        if searching:
            holds(DEFERRED_WITHOUT_SEARCH, "tools")
        else:
            breaks(RequestInvalid("Invalid Value: 'tools.defer_loading'. Deferred tools require tools.tool_search.",
                                  "tools", rule=DEFERRED_WITHOUT_SEARCH))
    loaded = _loaded_names(items)
    visible = [t for t, defer in tools if not defer or t.name in loaded]
    return visible, [t for t, defer in tools if defer and t.name not in loaded]


def _loaded_names(items: list) -> set[str]:
    """The function names the `tool_search_output` items of `input` loaded (namespaces: their functions)."""
    names: set[str] = set()
    for item in items:
        if isinstance(item, dict) and item.get("type") == "tool_search_output" and isinstance(item.get("tools"), list):
            for tool in item["tools"]:
                inner = tool.get("tools") if isinstance(tool, dict) and tool.get("type") == "namespace" else [tool]
                names |= {t["name"] for t in inner or () if isinstance(t, dict) and isinstance(t.get("name"), str)}
    return names


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
    if kind == "allowed_tools":  # flat here: {"type", "mode", "tools": [{"type": "function", "name"}]}
        mode = required(choice, "mode", "tool_choice")
        if mode not in ("auto", "required"):
            raise invalid_value("tool_choice.mode", mode, ("auto", "required"))
        tools = required(choice, "tools", "tool_choice")
        if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
            raise invalid_type("tool_choice.tools", "an array of objects", tools)
        holds(ALLOWED_TOOLS, "tool_choice")
        names = [t["name"] for t in tools if t.get("type") == "function" and isinstance(t.get("name"), str)]
        return {"allowed": names, "mode": mode}, choice
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
    holds(UNSUPPORTED_PARAMETER, "max_output_tokens")
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

    Returns the messages with each tool message's `name` filled in from the call it answers. Both rules
    are checked on the whole history (each break is logged, the first is answered: see `breaks`).
    """
    calls: dict[str, str] = {}  # call_id -> tool name, for every call seen so far
    answered: set[str] = set()
    out: list[Message] = []
    broken: set[str] = set()
    for m in messages:
        if m.role == "assistant":
            calls.update({c.id: c.name for c in m.tool_calls})
        elif m.role == "tool":
            if m.tool_call_id not in calls and not stateful:
                broken.add(OUTPUT_WITHOUT_CALL)
                breaks(RequestInvalid("No tool call found for function call output with call_id "
                                      f"{m.tool_call_id}.", "input", rule=OUTPUT_WITHOUT_CALL))
            answered.add(m.tool_call_id or "")
            m = replace(m, name=calls.get(m.tool_call_id or ""))
        out.append(m)
    unanswered = [call_id for call_id in calls if call_id not in answered]
    if unanswered:
        broken.add(CALL_WITHOUT_OUTPUT)
        breaks(RequestInvalid(f"No tool output found for function call {unanswered[0]}.", "input",
                              rule=CALL_WITHOUT_OUTPUT))
    if calls or answered:
        for rule in (OUTPUT_WITHOUT_CALL, CALL_WITHOUT_OUTPUT):
            if rule not in broken:
                holds(rule)
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
    """What goes back with the turn: a reasoning model (GPT-6, o-series) asked for `reasoning` leads its
    answer with one reasoning item (a summary when `reasoning.summary` asks for one, and its
    `encrypted_content`, which the current SDK documents as populated by default; sealed to the item's id
    and the user request it answers, so an altered or invented one is refused when sent back); a call of a
    deferred tool comes after the search that loaded it (`search_items`); then the calls, each with its
    item id. None when the turn has neither."""
    rid = response_id(turn, request)
    items = search_items(turn, request)
    reasoning = request.extras.get("reasoning")
    if REASONING_MODELS.match(request.model) and isinstance(reasoning, dict) and reasoning.get("effort") != "none":
        thought = simulated_thought(turn, request)
        summary = [{"type": "summary_text", "text": thought}] if reasoning.get("summary") else []
        reasoning_id = item_id("rs_", rid, "reasoning")
        sealed = mint_signature(ENCRYPTED_KIND, request.model, reasoning_id, conversation_of(request.messages))
        items = [{"type": "reasoning", "id": reasoning_id, "summary": summary, "encrypted_content": sealed}, *items]
    if not items:
        return None
    calls = [{"type": "function_call", "call_id": call_id, "id": item_id("fc_", rid, call_id)}
             for call_id in call_ids(turn, request)]
    return ReasoningState(NAME, turn.model or request.model, (*items, *calls))


def search_items(turn: ModelTurn, request: ChatRequest) -> list[dict]:
    """The hosted tool search a turn needed: when it calls a deferred tool, a `tool_search_call` (run by the
    server) and the `tool_search_output` that loaded those tools, whole, before the calls. The search's
    `arguments` are the simulator's own ({"query": the tools' names}); the guide does not show them."""
    deferred = {d["name"]: d for d in request.extras.get("deferred_tools") or () if isinstance(d, dict)}
    needed = list(dict.fromkeys(c.name for c in turn.tool_calls if c.name in deferred))
    if not needed:
        return []
    rid = response_id(turn, request)
    loaded = [{**tool_to_wire(ToolSpec.from_dict(deferred[name])), "defer_loading": True} for name in needed]
    common = {"execution": "server", "status": "completed", "call_id": None}
    return [{"type": "tool_search_call", "id": item_id("tsc_", rid, "search"), **common,
             "arguments": {"query": " ".join(needed)}},
            {"type": "tool_search_output", "id": item_id("tso_", rid, "search"), **common, "tools": loaded}]


def _output(turn: ModelTurn, request: ChatRequest, status: str) -> list[dict]:
    """The output items: reasoning where the turn's state puts it, the text before the first call (turn_items)."""
    rid = response_id(turn, request)
    text: list[dict] = []
    words, phase = turn.text, None
    if PHASE_MODELS.match(request.model):  # a calling turn says what it is doing first (its commentary)
        phase = "commentary" if turn.tool_calls else "final_answer"
        words = words or (commentary(turn) if turn.tool_calls else words)
    if words:
        part = {"type": "output_text", "text": words, "annotations": [], "logprobs": []}
        text.append({"type": "message", "id": item_id("msg_", rid, "message"), "status": status,
                     "role": "assistant", "content": [part], **({"phase": phase} if phase else {})})
    calls = [{"type": "function_call", "id": item_id("fc_", rid, call_id), "call_id": call_id,
              "name": call.name, "arguments": call.arguments_json(), "status": "completed"}
             for call_id, call in zip(call_ids(turn, request), turn.tool_calls)]
    state = turn.reasoning if turn.reasoning is not None and turn.reasoning.format == NAME else None
    return turn_items(state.items if state else (), text, calls)


def commentary(turn: ModelTurn) -> str:
    """The simulator's own preamble of a phase model's calling turn: "Calling get_weather, then I'll answer."
    (A real model writes its own; the sentence here only has to be honest and deterministic.)"""
    names = list(dict.fromkeys(c.name for c in turn.tool_calls))
    return f"Calling {' and '.join(names)}, then I'll answer."


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
    × n, .done, reasoning_summary_part.done, then output_item.done with the whole item; per tool search
    item: output_item.added and output_item.done, both whole; then response.completed (or .incomplete).
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
        elif item["type"] in ("tool_search_call", "tool_search_output"):  # hosted: whole, added then done
            emit("response.output_item.added", output_index=index, item=item)
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

"""Anthropic Messages: the server side, as the simulator speaks it (pure functions).

The client side (and what is special about the format) is `agentkit.providers.anthropic`; this half
is what only a server does: decode a request the way the real API validates it (refusing it in the
API's own words), and write its answers, streams, errors and model list. Every refusal names its rule
in the fidelity ledger (`agentkit/sim/fidelity.toml`), where its wording and source are.

What it models, beyond the verbs:

* the documented top-level fields: an unknown one is refused ("`<field>`: Extra inputs are not
  permitted"), every documented one accepted (`DOCUMENTED_FIELDS`), most of them not acted on;
* the blocks a history replays: text, tool_use / tool_result, thinking (signed, checked), and the server's
  own blocks (server_tool_use, web_search_tool_result, tool_search_tool_result, code execution results,
  MCP tool use, compaction, ...) accepted in their documented shapes; the API drops every block before a
  `compaction` block, and so does the simulator (its summary stands in for them);
* tool search (`tool_search_tool_regex_20251119` / `_bm25_20251119`): a tool with `defer_loading: true`
  is hidden from the model, and from the token count, until a `tool_reference` names it; `serve_turn`
  runs the search between two passes of the model (the search itself, and what the simulated model searches
  for, are the simulator's: `agentkit.sim.tool_search`, handed over by the app);
* prompt caching: `cache_control` breakpoints (and the top-level `cache_control`) become a `CachePlan`,
  settled by the app's `PromptCache` into `cache_creation_input_tokens` / `cache_read_input_tokens`;
* the message-threads beta (`thread`): a `create` keeps the conversation for 5 minutes under the
  response id, a `continue` sends only the new messages (`resolve_stored`), an unknown or expired id is
  the documented 404 `thread_not_found`, from which the SDK recovers by sending the whole history;
* `POST /v1/messages/count_tokens`: the same inputs (`parse_count_request`), counted as usage counts;
* the Claude 5.x model rules (`NO_FORCED_TOOL_USE`, `ALWAYS_THINKING`, thinking bound to its prefix,
  `prefix_digest`) and signed thinking blocks (`reasoning_for`, checked again in `parse_request`).

Left out on purpose: images and documents (accepted, not read), citations, web search and code execution
(accepted as server tools, never run), context editing (`context_management` is accepted and changes
nothing), the anthropic-beta header (a `thread` is honoured without it), the 4-breakpoint limit, a thread
being continued once only, and per-model limits on `max_tokens`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ...core.types import Message, ModelOptions, ModelTurn, ReasoningState, ToolCall, ToolChoice, ToolSpec, Usage
from ...providers.anthropic import ERROR_TYPES, NAME, STOP_TO_NEUTRAL, THINKING_BLOCKS
from ...providers.common import SSEvent, StreamEvent, dumps, stable_id
from .common import (
    CacheBreakpoint,
    CachePlan,
    ChatRequest,
    RequestInvalid,
    approx_tokens,
    breaks,
    conversation_of,
    degrades,
    holds,
    mint_signature,
    schema_problem,
    signature_valid,
    simulated_thought,
)
from .contract import Route, ServerFacts, SpendLimitAnswer

# -- the ledger's rules (agentkit/sim/fidelity.toml): every refusal below names one -----------------------
FIELD_REQUIRED = "anthropic.field_required"
INVALID_VALUE = "anthropic.invalid_value"
UNKNOWN_TAG = "anthropic.unknown_tag"
EXTRA_INPUTS = "anthropic.extra_inputs"
EMPTY_MESSAGES = "anthropic.empty_messages"
SYSTEM_ROLE = "anthropic.system_role_message"
BLOCK_ROLE = "anthropic.block_in_wrong_role"
TOOLS_REQUIRED = "anthropic.tool_blocks_need_tools"
SCHEMA_INVALID = "anthropic.input_schema_invalid"
BUDGET_OVER_MAX = "anthropic.thinking_budget_over_max_tokens"
RESULTS_FIRST = "anthropic.tool_results_first"
TOOL_USE_WITHOUT_RESULT = "anthropic.tool_use_without_result"
RESULT_WITHOUT_TOOL_USE = "anthropic.result_without_tool_use"
THINKING_DISABLED, THINKING_BUDGET, THINKING_OFF_5X = (
    "anthropic.thinking_disabled", "anthropic.thinking_budget", "anthropic.thinking_disabled_other_5x")
THINKING_WITH_FORCED_TOOL = "anthropic.thinking_with_forced_tool"
THINKING_MISSING = "anthropic.thinking_missing_in_open_cycle"
SIGNATURE_INVALID = "anthropic.thinking_signature_invalid"
REDACTED_INVALID = "anthropic.redacted_thinking_invalid"
PREFIX_BOUND = "anthropic.prefix_bound_thinking"
FORCED_TOOL = "anthropic.forced_tool_use"
DOTTED_ID = "anthropic.dotted_model_id"
ALL_DEFERRED = "anthropic.all_tools_deferred"
REFERENCE_UNKNOWN = "anthropic.tool_reference_unknown"
DEFERRED_CACHED = "anthropic.deferred_tool_cache_control"
THREAD_NOT_FOUND = "anthropic.thread_not_found"
THREAD_FIELDS = "anthropic.thread_fields_changed"
#: Accepted, but worse (ledger kind "degradation"): what each changes is the ledger's wording.
EARLIER_THINKING_DROPPED = "anthropic.earlier_thinking_dropped"
TOOL_LIST_CHANGED = "anthropic.tool_list_changed"
#: The generic shape refusals every request is checked against (pydantic's words, one entry per template).
SHAPE_RULES = (FIELD_REQUIRED, INVALID_VALUE, UNKNOWN_TAG, EXTRA_INPUTS, EMPTY_MESSAGES, SYSTEM_ROLE, BLOCK_ROLE)


def _count_tokens_request(body: Any, model: str | None = None) -> ChatRequest:
    return parse_count_request(body, model)


#: What the real server does around the bodies (see contract.py). The SDK sends `Authorization: Bearer`,
#: the documented raw-HTTP header is `x-api-key`: the API takes both (Anthropic's Messages API documentation).
SERVER = ServerFacts(
    routes=(Route("POST", "/v1/messages"), Route("POST", "/v1/messages/count_tokens", "count_tokens"),
            Route("GET", "/v1/models", "models")),
    sdk_base_path="",
    no_key=(401, "x-api-key header is required (on the simulator any key works; Authorization: Bearer is "
                 "accepted too)"),
    key_headers=("x-api-key", "authorization"),
    unknown_model="model: {model}",
    not_json="The request body is not valid JSON: {detail}",
    fault_messages={
        429: "This request would exceed your organization's rate limit of 60 requests per minute for {model}. "
             "Please try again in {retry_ms}ms.",
        500: "Internal server error",
        503: "Service unavailable",
        529: "Overloaded",
    },
    required_headers={"anthropic-version": "anthropic-version: header is required"},
    client_headers=("anthropic-version", "x-api-key"),
    request_id_header="request-id",
    rate_limit_headers={"anthropic-ratelimit-requests-limit": "60",
                        "anthropic-ratelimit-requests-remaining": "0"},
    # The usage tier's monthly spend cap (the `spend` fault; Anthropic's rate-limits page: 429, no
    # retry-after, error.details.error_code; ledger: anthropic.spend_limit). The simulator's clock stands
    # at 2026-01-01, so access comes back on the first of the next month.
    spend_limit=SpendLimitAnswer(
        "You have reached your API usage limits: your organization has crossed its monthly API usage threshold, "
        "set based on your organization's API tier. You will regain access on 2026-02-01 at 00:00 UTC.",
        "rate_limit_error", {"details": {"error_code": "enforced_spend_limit_reached"}}),
    serve_turn=lambda respond, search, request: serve_turn(respond, search, request),
    count_request=_count_tokens_request,
)

#: Every top-level field the Messages API documents (the beta surface included; `temperature`, `top_p` and
#: `top_k` for the models that still take them). Anything else is refused: "`<field>`: Extra inputs are not
#: permitted". (`betas`, `user_profile_id` and `workspace_id` are headers, not body fields.)
DOCUMENTED_FIELDS = frozenset({
    "model", "max_tokens", "messages", "system", "tools", "tool_choice", "stream", "temperature", "top_p",
    "top_k", "stop_sequences", "metadata", "thinking", "output_config", "output_format", "service_tier",
    "context_management", "container", "mcp_servers", "cache_control", "thread", "speed", "inference_geo",
    "diagnostics", "fallbacks", "fallback_credit_token", "billing_policy", "compaction"})
#: What `POST /v1/messages/count_tokens` takes: "the same structured list of inputs" as a message, without
#: what only generating needs (max_tokens, stream, sampling, thread, ...).
COUNT_FIELDS = frozenset({
    "model", "messages", "system", "tools", "tool_choice", "thinking", "output_config", "output_format",
    "cache_control", "speed", "context_management", "mcp_servers", "billing_policy", "compaction"})

# The Claude 5.x rules, per API model id (a dated or fault-suffixed name such as "claude-opus-5-5-20260922"
# counts as its family). Each rule's documented wording and source: agentkit/sim/fidelity.toml.
#: Models that refuse forced tool use (tool_choice any/tool), claim C14. Fable 5.2 and Mythos 5.2 keep the
#: rules of 5.1 that their page does not list as changed (forced tool use, the omitted thinking display).
NO_FORCED_TOOL_USE = ("claude-opus-5-5", "claude-sonnet-5-5", "claude-fable-5-1", "claude-mythos-5-1",
                      "claude-fable-5-2", "claude-mythos-5-2")
#: Models that think whatever the request says: no `thinking` means adaptive; disabled / budget_tokens -> 400.
ALWAYS_THINKING = NO_FORCED_TOOL_USE
#: Models whose kept thinking blocks are checked against their prefix (Mythos 5.1 records it, does not check).
#: The source names the 5.2 models and Haiku 5.5 too; the simulator serves none of them by default.
PREFIX_BOUND_THINKING = ("claude-opus-5-5", "claude-sonnet-5-5", "claude-fable-5-1", "claude-haiku-5-5",
                         "claude-fable-5-2", "claude-mythos-5-2")
#: Models that keep every earlier thinking block in context (the extended-thinking page: "Claude Opus 4.5 and
#: later Opus models keep all prior thinking blocks", Sonnet 4.6 and later too, and the Mythos models); the
#: prefix-bound ones among them check each kept block instead (`_check_prefix_binding`).
KEEPS_ALL_THINKING = ("claude-opus-4-5", "claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-8", "claude-opus-5",
                      "claude-sonnet-4-6", "claude-mythos", *NO_FORCED_TOOL_USE)
#: Models whose thinking text is empty unless `thinking.display` is "summarized" (the default is "omitted").
OMITTED_THINKING_BY_DEFAULT = NO_FORCED_TOOL_USE
#: Models whose lowest thinking setting is `{"type": "between_tools"}` (no thinking before the first call).
BETWEEN_TOOLS_THINKING = ("claude-sonnet-5-5",)
#: Anthropic's words for a forced tool choice on those models.
FORCED_TOOL_USE = 'tool_choice: type "tool" and "any" are not supported for this model.'
#: The spellings with dots are OpenRouter's (`anthropic/claude-opus-5.5`); the Messages API knows no such model.
DOTTED_IDS = {"claude-opus-5.5": "claude-opus-5-5", "claude-sonnet-5.5": "claude-sonnet-5-5",
              "claude-fable-5.1": "claude-fable-5-1", "claude-mythos-5.1": "claude-mythos-5-1",
              "claude-haiku-5.5": "claude-haiku-5-5", "claude-fable-5.2": "claude-fable-5-2",
              "claude-mythos-5.2": "claude-mythos-5-2"}
NEUTRAL_TO_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens",
                   "content_filter": "refusal", "other": "end_turn"}
#: `thinking.type` values that turn thinking on (`adaptive` is the newer models' mode).
THINKING_ON = ("enabled", "adaptive")
#: The kind the simulator's thinking signatures are minted for.
SIGNATURE_KIND = "anthropic-thinking"
#: The kind the simulator seals a redacted_thinking block's `data` as.
REDACTED_KIND = "anthropic-redacted-thinking"
#: The minimum cacheable prompt length per model (Anthropic's prompt-caching page and the models' what's-new
#: pages); a model not listed gets DEFAULT_CACHE_MINIMUM (the simulator's choice).
CACHE_MINIMUM = {"claude-opus-4-5": 4096, "claude-opus-4-6": 4096, "claude-opus-4-7": 4096,
                 "claude-haiku-4-5": 4096, "claude-sonnet-4-6": 2048, "claude-opus-4-8": 1024,
                 "claude-sonnet-4-5": 1024, "claude-opus-4-1": 1024, "claude-opus-4": 1024,
                 "claude-sonnet-4": 1024, "claude-opus-5": 512, "claude-fable-5": 512}
DEFAULT_CACHE_MINIMUM = 1024
#: How long the server keeps a thread after its last response ("It expires 5 minutes after its last request").
THREAD_SECONDS = 300.0

#: The two documented tool search tools: the variant each one is, and the field its query goes in.
TOOL_SEARCH = {"tool_search_tool_regex_20251119": ("regex", "pattern"),
               "tool_search_tool_bm25_20251119": ("bm25", "query")}

#: The server's own content blocks, as the API returns them and takes them back (the SDK's block params).
#: value: the fields each must carry.
SERVER_BLOCKS = {
    "server_tool_use": ("id", "name", "input"),
    "web_search_tool_result": ("tool_use_id", "content"),
    "web_fetch_tool_result": ("tool_use_id", "content"),
    "code_execution_tool_result": ("tool_use_id", "content"),
    "bash_code_execution_tool_result": ("tool_use_id", "content"),
    "text_editor_code_execution_tool_result": ("tool_use_id", "content"),
    "tool_search_tool_result": ("tool_use_id", "content"),
    "advisor_tool_result": ("tool_use_id", "content"),
    "mcp_tool_use": ("id", "name", "server_name", "input"),
    "mcp_tool_result": ("tool_use_id",),
    "container_upload": ("file_id",),
    "compaction": (),
}
#: Blocks that carry state for the server and go back with the assistant turn: thinking and the server's.
KEPT_BLOCKS = (*THINKING_BLOCKS, *SERVER_BLOCKS)
_SKIPPED_BLOCKS = {"image", "document", "search_result"}
_TAGS = ("text", "image", "document", "search_result", "tool_use", "tool_result", "thinking", "redacted_thinking",
         *SERVER_BLOCKS)


# ---------------------------------------------------------------------------------------------------
# Shapes: the API's generic refusals (pydantic's words), one ledger entry per template
# ---------------------------------------------------------------------------------------------------

def _required(path: str, param: str | None = None) -> RequestInvalid:
    return RequestInvalid(f"{path}: Field required", param or path, rule=FIELD_REQUIRED)


def _invalid(path: str, expected: str, param: str | None = None) -> RequestInvalid:
    """"<path>: Input should be <expected>" ("a valid dictionary", "'object'", "greater than or equal to 1")."""
    return RequestInvalid(f"{path}: Input should be {expected}", param or path, rule=INVALID_VALUE)


def _tag(path: str, kind: Any, tags: Sequence[str], param: str | None = None) -> RequestInvalid:
    expected = ", ".join(f"'{t}'" for t in tags)
    return RequestInvalid(f"{path}: Input tag '{kind}' found using 'type' does not match any of the expected "
                          f"tags: {expected}", param or path, rule=UNKNOWN_TAG)


def _extra_fields(body: dict, documented: frozenset) -> None:
    """The API refuses a top-level field it does not document, naming it (the first one)."""
    unknown = next((k for k in body if k not in documented), None)
    if unknown is not None:
        raise RequestInvalid(f"{unknown}: Extra inputs are not permitted", unknown, rule=EXTRA_INPUTS)


def tool_from_wire(d: Any, param: str = "tools.0") -> ToolSpec:
    """An Anthropic tool definition back to a ToolSpec; RequestInvalid names the bad field."""
    if not isinstance(d, dict):
        raise _invalid(param, "a valid dictionary")
    name, schema = d.get("name"), d.get("input_schema")
    if not isinstance(name, str) or not name:
        raise _required(f"{param}.custom.name", f"{param}.name")
    if not isinstance(schema, dict):
        raise _required(f"{param}.custom.input_schema", f"{param}.input_schema")
    if schema.get("type") != "object":
        # The API insists that the root of every input schema describes an object.
        raise _invalid(f"{param}.custom.input_schema.type", "'object'", f"{param}.input_schema.type")
    description = d.get("description", "")
    if not isinstance(description, str):
        raise _invalid(f"{param}.custom.description", "a valid string", f"{param}.description")
    if schema_problem(schema) is not None:
        raise RequestInvalid(f"{param}.custom.input_schema: JSON schema is invalid. It must match JSON Schema "
                             "draft 2020-12 (https://json-schema.org/draft/2020-12). Learn more about tool use at "
                             "https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview.",
                             f"{param}.input_schema", rule=SCHEMA_INVALID)
    holds(SCHEMA_INVALID, f"{param}.input_schema")
    return ToolSpec(name, description, schema, d.get("strict") is True)


# ---------------------------------------------------------------------------------------------------
# Server side: what the simulator reads
# ---------------------------------------------------------------------------------------------------

def parse_request(body: Any, model: str | None = None) -> ChatRequest:
    """Decode a Messages request the way the API validates it; RequestInvalid carries the API's wording.

    Checks the documented 400s: `model`, `max_tokens` and `messages` are required and no undocumented field
    is sent; `tool_result` blocks come first in their user message and answer the `tool_use` ids of the
    assistant turn right before it; every `tool_use` has its result in the next message; tool blocks need
    `tools`; a deferred tool needs another that is not, and a `tool_reference` a tool it names. With
    `thinking` on: a budget of at least 1024 tokens below `max_tokens`, tool_choice auto or none, the open
    tool cycle's assistant turn starting with its thinking block, and every thinking block's signature
    intact. On the Claude 5.x models thinking is always on, and a kept thinking block must still fit its
    prefix (see the module notes). (The `anthropic-version` header is the HTTP server's business.)
    """
    return _decode(body, model, counting=False)


def parse_count_request(body: Any, model: str | None = None) -> ChatRequest:
    """Decode a `POST /v1/messages/count_tokens` body: the same inputs as a message (and the same refusals),
    without `max_tokens` or anything else only generating takes (`COUNT_FIELDS`)."""
    return _decode(body, model, counting=True)


def _decode(body: Any, model: str | None, *, counting: bool) -> ChatRequest:
    if not isinstance(body, dict):
        raise _invalid("body", "a valid dictionary", None)
    _extra_fields(body, COUNT_FIELDS if counting else DOCUMENTED_FIELDS)
    model = _model_field(body, model)
    max_tokens = 1 if counting else _max_tokens_field(body)
    if not counting:
        _thread_field(body.get("thread"))
    wire_messages = body.get("messages")
    if "messages" not in body:
        raise _required("messages")
    if not isinstance(wire_messages, list):
        raise _invalid("messages", "a valid list")
    if not wire_messages:
        raise RequestInvalid("messages: at least one message is required", "messages", rule=EMPTY_MESSAGES)

    parsed = _after_compaction([_parse_wire_message(i, m) for i, m in enumerate(wire_messages)])
    _check_tool_pairing(parsed)
    thinking_on = _thinking_field(body.get("thinking"), max_tokens, model, counting)

    tools, server_tools, deferred, tool_defs = _tools_field(body.get("tools"))
    if any(kind in ("tool_use", "tool_result") for _, blocks in parsed for kind, _ in blocks):
        if not tools and not server_tools and not deferred:
            breaks(RequestInvalid("Requests which include `tool_use` or `tool_result` blocks must define tools.",
                                  "tools", rule=TOOLS_REQUIRED))
        else:
            holds(TOOLS_REQUIRED)
    discovered = _discovered_tools(parsed, tools, deferred)
    _check_tool_list(parsed, tools + discovered + deferred, server_tools)
    choice, parallel = _tool_choice_field(body.get("tool_choice"))
    if thinking_on:
        _check_thinking(parsed, choice, model)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _invalid("stream", "a valid boolean")
    temperature = body.get("temperature")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
                                    or not 0 <= temperature <= 1):
        raise _invalid("temperature", "a number between 0 and 1")

    system = _system_field(body.get("system"))
    if in_family(model, PREFIX_BOUND_THINKING):
        parsed = _check_prefix_binding(parsed, system, tools, server_tools, model, body.get("thinking"))
    messages = system + _neutral_messages(parsed, model)
    extras = {k: v for k, v in body.items() if k not in _MODELLED}
    if server_tools:
        extras["server_tools"] = server_tools
    if deferred:
        extras["unloaded_tools"] = tuple(deferred)  # seen once a search references them
        search = next((t for t in server_tools if t.get("type") in TOOL_SEARCH), None)
        if search is not None:
            variant, field = TOOL_SEARCH[search["type"]]
            extras["tool_search"] = {"variant": variant, "field": field, "name": search.get("name")}
    options = ModelOptions(tool_choice=choice, parallel_tool_calls=parallel, stream=stream,
                           max_tokens=max_tokens, temperature=temperature)
    cache = _cache_plan(model, tool_defs, body.get("system"), wire_messages, body.get("cache_control"))
    for rule in SHAPE_RULES:  # decoded whole: none of the shape refusals applied
        holds(rule)
    return ChatRequest(model, tuple(messages), tuple(tools + discovered), options, extras=extras,
                       prompt_cache=cache)


#: Fields the decoded request models itself (the rest are kept in `extras`).
_MODELLED = frozenset({"model", "max_tokens", "messages", "system", "tools", "tool_choice", "stream",
                       "temperature"})


def _model_field(body: dict, fallback: str | None) -> str:
    model = body.get("model", fallback)
    if model is None:
        raise _required("model")
    if not isinstance(model, str) or not model:
        raise _invalid("model", "a valid string")
    return model


def _max_tokens_field(body: dict) -> int:
    if "max_tokens" not in body:
        raise _required("max_tokens")
    value = body["max_tokens"]
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid("max_tokens", "a valid integer")
    if value < 1:
        raise _invalid("max_tokens", "greater than or equal to 1")
    return value


def _thread_field(thread: Any) -> None:
    """`thread` (the message-threads beta): {"type": "create"} or {"type": "continue", "previous_message_id"};
    what a `continue` resumes is filled in before decoding (`resolve_stored`)."""
    if thread is None:
        return
    if not isinstance(thread, dict):
        raise _invalid("thread", "a valid dictionary")
    kind = thread.get("type")
    if kind not in ("create", "continue"):
        raise _tag("thread", kind, ("create", "continue"), "thread.type")
    if kind == "continue" and (not isinstance(thread.get("previous_message_id"), str)
                               or not thread["previous_message_id"]):
        raise _required("thread.continue.previous_message_id", "thread.previous_message_id")


def _system_field(system: Any) -> list[Message]:
    if system is None:
        return []
    if isinstance(system, str):
        return [Message.system(system)] if system else []
    if isinstance(system, list):
        texts = []
        for j, block in enumerate(system):
            if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(
                    block.get("text"), str):
                raise _invalid(f"system.{j}", "a valid text block")
            texts.append(block["text"])
        return [Message.system("\n".join(texts))] if texts else []
    raise _invalid("system", "a valid string")


#: One decoded wire message: (role, [(block kind, block)]) with kinds "text", "tool_use", "tool_result",
#: "thinking", "redacted_thinking" and the server blocks (SERVER_BLOCKS).
_Parsed = tuple[str, list[tuple[str, dict]]]


def _parse_wire_message(i: int, m: Any) -> _Parsed:
    where = f"messages.{i}"
    if not isinstance(m, dict):
        raise _invalid(where, "a valid dictionary")
    role = m.get("role")
    if role == "system":
        raise RequestInvalid('messages: Unexpected role "system". The Messages API accepts a top-level `system` '
                             'parameter, not "system" as an input message role.', f"{where}.role", rule=SYSTEM_ROLE)
    if role not in ("user", "assistant"):
        raise _invalid(f"{where}.role", "'user' or 'assistant'")
    if "content" not in m:
        raise _required(f"{where}.content")
    content = m["content"]
    if isinstance(content, str):
        return role, [("text", {"type": "text", "text": content})]
    if not isinstance(content, list):
        raise _invalid(f"{where}.content", "a valid list")
    blocks = []
    for j, block in enumerate(content):
        kind = _check_block(f"{where}.content.{j}", role, block)
        if kind is not None:
            blocks.append((kind, block))
    return role, blocks


def _only_in(where: str, kind: str, role: str, wanted: str) -> None:
    if role != wanted:
        raise RequestInvalid(f"{where}: `{kind}` blocks can only appear in {wanted} messages", where, rule=BLOCK_ROLE)


def _check_block(where: str, role: str, block: Any) -> str | None:
    """The block's kind when its shape is the documented one (None for a block the simulator skips)."""
    if not isinstance(block, dict):
        raise _invalid(where, "a valid dictionary")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise _required(f"{where}.type")
    if kind in _SKIPPED_BLOCKS:
        return None
    if kind in THINKING_BLOCKS:
        _only_in(where, kind, role, "assistant")
        for field in ("thinking", "signature") if kind == "thinking" else ("data",):
            if not isinstance(block.get(field), str):
                raise _required(f"{where}.{kind}.{field}", f"{where}.{field}")
        return kind
    if kind == "text":
        if not isinstance(block.get("text"), str):
            raise _required(f"{where}.text.text", f"{where}.text")
        return kind
    if kind == "tool_use":
        _only_in(where, kind, role, "assistant")
        for field in ("id", "name"):
            if not isinstance(block.get(field), str) or not block[field]:
                raise _required(f"{where}.tool_use.{field}", f"{where}.{field}")
        if not isinstance(block.get("input"), dict):
            raise _invalid(f"{where}.tool_use.input", "a valid dictionary", f"{where}.input")
        return kind
    if kind == "tool_result":
        _only_in(where, kind, role, "user")
        if not isinstance(block.get("tool_use_id"), str) or not block["tool_use_id"]:
            raise _required(f"{where}.tool_result.tool_use_id", f"{where}.tool_use_id")
        content = block.get("content", "")
        if not isinstance(content, (str, list)) or (isinstance(content, list) and not all(
                isinstance(b, dict) for b in content)):
            raise _invalid(f"{where}.tool_result.content", "a valid string or list of blocks", f"{where}.content")
        if not isinstance(block.get("is_error", False), bool):
            raise _invalid(f"{where}.tool_result.is_error", "a valid boolean", f"{where}.is_error")
        return kind
    if kind in SERVER_BLOCKS:
        _check_server_block(where, kind, block)
        return kind
    raise _tag(where, kind, _TAGS)


def _check_server_block(where: str, kind: str, block: dict) -> None:
    """A server block in its documented shape (the SDK's block params): its required fields, a
    `server_tool_use`'s input an object, a tool search result's references each naming a tool, and a
    compaction's summary a non-empty string or null (a failed compaction, which the server ignores)."""
    for field in SERVER_BLOCKS[kind]:
        if field not in block:
            raise _required(f"{where}.{kind}.{field}", f"{where}.{field}")
        if field in ("id", "name", "tool_use_id", "server_name", "file_id") and not isinstance(block[field], str):
            raise _invalid(f"{where}.{kind}.{field}", "a valid string", f"{where}.{field}")
    if "input" in SERVER_BLOCKS[kind] and not isinstance(block["input"], dict):
        raise _invalid(f"{where}.{kind}.input", "a valid dictionary", f"{where}.input")
    if kind == "tool_search_tool_result":
        content = block["content"]
        if not isinstance(content, dict):
            raise _invalid(f"{where}.{kind}.content", "a valid dictionary", f"{where}.content")
        if content.get("type") == "tool_search_tool_search_result":
            references = content.get("tool_references")
            if not isinstance(references, list):
                raise _required(f"{where}.{kind}.content.tool_references", f"{where}.content")
            for k, ref in enumerate(references):
                if not isinstance(ref, dict) or ref.get("type") != "tool_reference" or not isinstance(
                        ref.get("tool_name"), str):
                    raise _invalid(f"{where}.{kind}.content.tool_references.{k}", "a valid tool_reference block",
                                   f"{where}.content")
        elif content.get("type") != "tool_search_tool_result_error":
            raise _tag(f"{where}.{kind}.content", content.get("type"),
                       ("tool_search_tool_search_result", "tool_search_tool_result_error"), f"{where}.content")
    if kind == "compaction" and block.get("content") is not None and (
            not isinstance(block["content"], str) or not block["content"]):
        raise _invalid(f"{where}.compaction.content", "a non-empty string or null", f"{where}.content")


def _after_compaction(parsed: list[_Parsed]) -> list[_Parsed]:
    """What the API reads of a history with a `compaction` block: "The API automatically drops all message
    blocks prior to the compaction block". The summary then stands for them, as a user message (the
    simulator's choice of where the model reads it). A compaction whose content is null failed, and is
    ignored."""
    at = None
    for i, (_, blocks) in enumerate(parsed):
        for j, (kind, block) in enumerate(blocks):
            if kind == "compaction" and block.get("content"):
                at = (i, j)
    if at is None:
        return parsed
    i, j = at
    role, blocks = parsed[i]
    summary = blocks[j][1]["content"]
    rest = [(role, blocks[j + 1:])] if blocks[j + 1:] else []
    return [("user", [("text", {"type": "text", "text": summary})]), *rest, *parsed[i + 1:]]


def in_family(model: str, ids: Sequence[str]) -> bool:
    """Is `model` one of these API ids, or a dated / suffixed name of one ("claude-opus-5-5-20260922")?"""
    short = model.rsplit("/", 1)[-1]
    return any(short == i or short.startswith(i + "-") for i in ids)


def _family_value(model: str, table: dict, default: Any) -> Any:
    """The table's value for the longest id `model` belongs to ("claude-opus-4-5-2025…" is claude-opus-4-5's,
    not claude-opus-4's)."""
    matches = [i for i in table if in_family(model, (i,))]
    return table[max(matches, key=len)] if matches else default


def _thinking_field(thinking: Any, max_tokens: int, model: str = "", counting: bool = False) -> bool:
    """Is thinking on? `thinking` checked as the API does (a budget of at least 1024, below max_tokens);
    on the Claude 5.x models thinking is always on, and turning it off or budgeting it is refused."""
    always = in_family(model, ALWAYS_THINKING)
    if thinking is None:
        return always
    if not isinstance(thinking, dict):
        raise _invalid("thinking", "a valid dictionary")
    kind = thinking.get("type")
    if kind == "between_tools" and in_family(model, BETWEEN_TOOLS_THINKING):
        return True
    if always and kind in ("disabled", "enabled"):
        refusal = _always_thinking(kind)
        if not in_family(model, ("claude-opus-5-5",)):  # documented for Opus 5.5, the same words reused
            refusal.rule = THINKING_OFF_5X
        raise refusal
    if always:  # a thinking setting the model takes (adaptive): neither refusal applies
        holds(THINKING_DISABLED if in_family(model, ("claude-opus-5-5",)) else THINKING_OFF_5X, "thinking.type")
        if in_family(model, ("claude-opus-5-5",)):
            holds(THINKING_BUDGET, "thinking.type")
    if kind not in ("enabled", "disabled", "adaptive"):
        raise _tag("thinking", kind, ("enabled", "disabled", "adaptive"), "thinking.type")
    if kind != "enabled":
        return kind == "adaptive"
    budget = thinking.get("budget_tokens")
    if budget is None:
        raise _required("thinking.enabled.budget_tokens", "thinking.budget_tokens")
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise _invalid("thinking.enabled.budget_tokens", "a valid integer", "thinking.budget_tokens")
    if budget < 1024:
        raise _invalid("thinking.enabled.budget_tokens", "greater than or equal to 1024", "thinking.budget_tokens")
    if budget >= max_tokens and not counting:
        raise RequestInvalid("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                             "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
                             "#max-tokens-and-context-window-size", "max_tokens", rule=BUDGET_OVER_MAX)
    holds(BUDGET_OVER_MAX, "thinking.budget_tokens")
    return True


def _always_thinking(kind: str) -> RequestInvalid:
    """Opus 5.5's words for turning its thinking off (disabled) or budgeting it (enabled)."""
    if kind == "disabled":
        return RequestInvalid('"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive" '
                              'and "output_config.effort" to control thinking behavior.', "thinking.type",
                              rule=THINKING_DISABLED)
    return RequestInvalid('"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" '
                          'and "output_config.effort" to control thinking behavior.', "thinking.type",
                          rule=THINKING_BUDGET)


def _check_thinking(parsed: list[_Parsed], choice: ToolChoice, model: str = "") -> None:
    """The API's rules while thinking is on, in its own words (see the module notes). A model that refuses
    forced tool use says so itself (`model_refusal`); a prefix-bound model's signatures are checked with
    their prefix (`_check_prefix_binding`)."""
    forced = choice == "required" or isinstance(choice, dict)
    if forced and not in_family(model, NO_FORCED_TOOL_USE):
        raise RequestInvalid("Thinking may not be enabled when tool_choice forces tool use.", "tool_choice",
                             rule=THINKING_WITH_FORCED_TOOL)
    if not in_family(model, NO_FORCED_TOOL_USE):
        holds(THINKING_WITH_FORCED_TOOL, "tool_choice")
    if not in_family(model, PREFIX_BOUND_THINKING):  # those are checked against their prefix instead
        _check_signed_thinking(parsed)
    last = max((i for i, (role, _) in enumerate(parsed) if role == "assistant"), default=None)
    if last is None:
        return
    if in_family(model, KEEPS_ALL_THINKING) and not in_family(model, PREFIX_BOUND_THINKING):
        _check_earlier_thinking(parsed, last)
    blocks = parsed[last][1]
    if not any(kind == "tool_use" for kind, _ in blocks):
        return
    if blocks[0][0] not in THINKING_BLOCKS:
        breaks(RequestInvalid(
            f"messages.{last}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
            f"`{blocks[0][0]}`. When `thinking` is enabled, a final `assistant` message must start with a "
            "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend "
            "you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. "
            "Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking",
            f"messages.{last}.content.0.type", rule=THINKING_MISSING))
    else:
        holds(THINKING_MISSING)


#: The words of the earlier-thinking degradation (ledger: anthropic.earlier_thinking_dropped), the source's own.
EARLIER_THINKING_WORDS = "This surfaced as the forgetfulness, repetition, and odd tool choices people reported."


def _check_earlier_thinking(parsed: list[_Parsed], last: int) -> None:
    """On a model that keeps every earlier thinking block in its context ("Claude Opus 4.5 and later Opus
    models keep all prior thinking blocks", the extended-thinking page), an earlier assistant message of the
    open tool cycle (after the last user message with text) that called tools without its thinking block is
    accepted (only the final assistant message must start with one), but the model has lost the reasoning of
    the task it is in: a degradation, recorded once per message. Turns before the last user message are not
    checked: once a history was edited Anthropic's documentation says to remove the thinking, which is what a
    compaction of earlier turns does, and the reported effect (forgetfulness, repetition) came from thinking
    cleared from the work in progress."""
    opened = max((i for i, (role, blocks) in enumerate(parsed)
                  if role == "user" and any(kind == "text" for kind, _ in blocks)), default=-1)
    earlier = [i for i, (role, blocks) in enumerate(parsed[:last]) if i > opened and role == "assistant"
               and any(kind == "tool_use" for kind, _ in blocks)]
    dropped = [i for i in earlier if parsed[i][1][0][0] not in THINKING_BLOCKS]
    for i in dropped:
        degrades(EARLIER_THINKING_DROPPED, EARLIER_THINKING_WORDS, f"messages.{i}.content.0")
    if earlier and not dropped:
        holds(EARLIER_THINKING_DROPPED)


#: The words of the tool-list degradation (ledger: anthropic.tool_list_changed): ours, from the source's rule.
TOOL_LIST_WORDS = ("The tools changed in the middle of a tool cycle: the prompt cache's prefix (tools, then "
                   "system, then messages) is invalidated from the tools on, and a call in the history names a "
                   "tool the request no longer defines.")


def _check_tool_list(parsed: list[_Parsed], tools: list[ToolSpec], server_tools: list[dict]) -> None:
    """A `tool_use` of the open tool cycle (after the last user message with text) naming a tool the request
    no longer defines: the tool list changed mid-cycle. Accepted, but "the cache follows a prefix hierarchy
    (tools → system → messages), so a change at one level invalidates that level" (tool use with prompt
    caching), and the model is left with a call it cannot make again: a degradation."""
    opened = max((i for i, (role, blocks) in enumerate(parsed)
                  if role == "user" and any(kind == "text" for kind, _ in blocks)), default=-1)
    names = {t.name for t in tools} | {str(t.get("name")) for t in server_tools}
    called = [(i, j, b["name"]) for i, (role, blocks) in enumerate(parsed) if i > opened and role == "assistant"
              for j, (kind, b) in enumerate(blocks) if kind == "tool_use"]
    missing = [(i, j) for i, j, name in called if name not in names]
    if missing:
        i, j = missing[0]
        degrades(TOOL_LIST_CHANGED, TOOL_LIST_WORDS, f"messages.{i}.content.{j}")
    elif called:
        holds(TOOL_LIST_CHANGED)


PREFIX_MISMATCH = ("Invalid `signature` in `thinking` block. The block is bound to a different conversation. "
                   "Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\".")


def prefix_digest(messages: Sequence[Message], tools: Sequence[ToolSpec], server_tools: Sequence[dict] = ()) -> str:
    """What a thinking block is bound to: the `system`, `tools` and messages that came before it. A deferred
    tool is no part of it, found or not: "the API excludes deferred tools from the system-prompt prefix"."""
    return stable_id([m.to_dict() for m in messages], [t.to_dict() for t in tools], list(server_tools), length=32)


def _check_prefix_binding(parsed: list[_Parsed], system: list[Message], tools: list[ToolSpec],
                          server_tools: list[dict], model: str, thinking: Any) -> list[_Parsed]:
    """Preserved thinking: every kept thinking block must have been made for exactly the prefix it now has.

    The first block whose prefix changed makes it and every later thinking block invalid: a 400, or with
    `thinking.block_binding.prefix_mismatch_behavior: "drop_block"` those blocks are left out (the model
    answers without them). Returns the messages to use."""
    checked = False
    for i, (_, blocks) in enumerate(parsed):
        for j, (kind, block) in enumerate(blocks):
            if kind not in THINKING_BLOCKS:
                continue
            checked = True
            binding = prefix_digest(system + _neutral_messages(parsed[:i], model), tools, server_tools)
            if (signature_valid(block["signature"], SIGNATURE_KIND, block["thinking"], binding) if kind == "thinking"
                    else signature_valid(block["data"], REDACTED_KIND, "", binding)):
                continue
            if _mismatch_behavior(thinking) != "drop_block":
                breaks(RequestInvalid(f"messages.{i}.content.{j}: {PREFIX_MISMATCH}", f"messages.{i}.content.{j}",
                                      rule=PREFIX_BOUND))
                return parsed
            return parsed[:i] + [(r, [(k, b) for k, b in bs if k not in THINKING_BLOCKS]) for r, bs in parsed[i:]]
    if checked:
        holds(PREFIX_BOUND)
    return parsed


def _mismatch_behavior(thinking: Any) -> Any:
    binding = thinking.get("block_binding") if isinstance(thinking, dict) else None
    return binding.get("prefix_mismatch_behavior") if isinstance(binding, dict) else None


def _check_signed_thinking(parsed: list[_Parsed]) -> None:
    """Every thinking block's signature, and every redacted block's data, must be one this server issued
    for that block in this conversation (`common.signature_valid`; binding the user request is the
    simulator's choice, the API's own binding is not documented); anything else is refused in the API's
    words (400 invalid_request_error), e.g. "messages.1.content.0: Invalid `signature` in `thinking`
    block" (reported: https://github.com/ding113/claude-code-hub/issues/518) and "messages.23.content.2:
    Invalid `data` in `redacted_thinking` block" (https://github.com/anthropics/claude-code/issues/56708)."""
    asked = ""  # the user request each assistant message answers (common.conversation_of, on the wire)
    broken: set[str] = set()
    seen: set[str] = set()
    for i, (role, blocks) in enumerate(parsed):
        if role == "user":
            texts = [b["text"] for kind, b in blocks if kind == "text"]
            asked = "\n".join(texts) or asked
            continue
        for j, (kind, block) in enumerate(blocks):
            if kind == "thinking":
                seen.add(SIGNATURE_INVALID)
                if not signature_valid(block["signature"], SIGNATURE_KIND, block["thinking"], asked):
                    broken.add(SIGNATURE_INVALID)
                    breaks(RequestInvalid(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block",
                                          f"messages.{i}.content.{j}", rule=SIGNATURE_INVALID))
            if kind == "redacted_thinking":
                seen.add(REDACTED_INVALID)
                if not signature_valid(block["data"], REDACTED_KIND, "", asked):
                    broken.add(REDACTED_INVALID)
                    breaks(RequestInvalid(f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block",
                                          f"messages.{i}.content.{j}", rule=REDACTED_INVALID))
    for rule in seen - broken:
        holds(rule)


def redacted_thinking(conversation: str) -> dict:
    """A `redacted_thinking` block as the simulator would issue one in `conversation` (the user request
    it answers): its `data` is sealed like a signature, so the block passes when sent back unchanged.
    The simulator's models never redact; this is for experiments and tests with the block."""
    return {"type": "redacted_thinking", "data": mint_signature(REDACTED_KIND, None, "", conversation)}


def _check_tool_pairing(parsed: list[_Parsed]) -> None:
    """The API's ordering rules for tool_use / tool_result, with its own error wording; every break is
    logged, the first answered (see `common.breaks`)."""
    broken: set[str] = set()
    used = False
    for i, (role, blocks) in enumerate(parsed):
        if role == "assistant":
            ids = [b["id"] for kind, b in blocks if kind == "tool_use"]
            if ids:
                used = True
                broken |= _check_results_follow(i, ids, parsed[i + 1] if i + 1 < len(parsed) else None)
            continue
        previous = parsed[i - 1] if i > 0 else ("user", [])
        allowed = {b["id"] for kind, b in previous[1] if kind == "tool_use"} if previous[0] == "assistant" else set()
        for j, (kind, block) in enumerate(blocks):
            if kind == "tool_result":
                used = True
                if block["tool_use_id"] not in allowed:
                    broken.add(RESULT_WITHOUT_TOOL_USE)
                    breaks(RequestInvalid(
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{block['tool_use_id']}. Each `tool_result` block must have a corresponding "
                        "`tool_use` block in the previous message.", f"messages.{i}.content.{j}",
                        rule=RESULT_WITHOUT_TOOL_USE))
    if used:
        for rule in {TOOL_USE_WITHOUT_RESULT, RESULTS_FIRST, RESULT_WITHOUT_TOOL_USE} - broken:
            holds(rule)


def _check_results_follow(i: int, ids: list[str], following: _Parsed | None) -> set[str]:
    if following is None or following[0] != "user":
        breaks(_unanswered(i, ids))
        return {TOOL_USE_WITHOUT_RESULT}
    kinds = [kind for kind, _ in following[1]]
    leading = 0
    while leading < len(kinds) and kinds[leading] == "tool_result":
        leading += 1
    if leading == 0 or "tool_result" in kinds[leading:]:
        breaks(RequestInvalid(
            f"messages.{i + 1}: Did not find {len(ids)} `tool_result` block(s) at the beginning of this "
            "message. Messages following `tool_use` blocks must begin with a matching number of "
            "`tool_result` blocks.", f"messages.{i + 1}", rule=RESULTS_FIRST))
        return {RESULTS_FIRST}
    answered = {b["tool_use_id"] for kind, b in following[1] if kind == "tool_result"}
    missing = [x for x in ids if x not in answered]
    if missing:
        breaks(_unanswered(i, missing))
        return {TOOL_USE_WITHOUT_RESULT}
    return set()


def _unanswered(i: int, ids: list[str]) -> RequestInvalid:
    return RequestInvalid(
        f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
        f"{', '.join(ids)}. Each `tool_use` block must have a corresponding `tool_result` block in the "
        "next message.", f"messages.{i}", rule=TOOL_USE_WITHOUT_RESULT)


def _neutral_messages(parsed: list[_Parsed], model: str) -> list[Message]:
    messages: list[Message] = []
    names: dict[str, str] = {}  # tool_use id -> tool name, so each result knows which tool it answers
    for role, blocks in parsed:
        if role == "assistant":
            text = "".join(b["text"] for kind, b in blocks if kind == "text")
            calls = []
            for kind, b in blocks:
                if kind == "tool_use":
                    names[b["id"]] = b["name"]
                    calls.append(ToolCall.from_raw(b["id"], b["name"], b["input"]))
            kept = tuple(dict(b) for kind, b in blocks if kind in KEPT_BLOCKS)
            state = ReasoningState(NAME, model, kept) if kept else None
            messages.append(Message.assistant(text or None, calls, state))
            continue
        texts = []
        for kind, b in blocks:
            if kind == "tool_result":
                call_id = b["tool_use_id"]
                messages.append(Message("tool", _result_text(b.get("content", "")), (), call_id,
                                        names.get(call_id), bool(b.get("is_error", False))))
            elif kind == "text":
                texts.append(b["text"])
        if texts or not blocks:
            messages.append(Message.user("\n".join(texts)))
    return messages


def _result_text(content: str | list) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content if b.get("type") == "text")


def _tools_field(tools: Any) -> tuple[list[ToolSpec], list[dict], list[ToolSpec], list[dict]]:
    """(the tools the model sees up front, the server's tools, the deferred tools, the definitions that form
    the prompt prefix), refusing what the tool-search page documents: every tool deferred, and a deferred
    tool that also carries `cache_control`."""
    if tools is None:
        return [], [], [], []
    if not isinstance(tools, list):
        raise _invalid("tools", "a valid list")
    specs, server_tools, deferred, prefix = [], [], [], []
    for k, tool in enumerate(tools):
        if isinstance(tool, dict) and tool.get("type") not in (None, "custom"):
            server_tools.append(tool)  # web search, code execution, tool search, ...: the server's own tools
            prefix.append(tool)
            continue
        spec = tool_from_wire(tool, f"tools.{k}")
        if tool.get("defer_loading") is True:
            if tool.get("cache_control") is not None:
                raise RequestInvalid(f"tools.{k}: a tool with `defer_loading: true` cannot also carry "
                                     "`cache_control`; put the cache breakpoint on a tool that is not deferred.",
                                     f"tools.{k}.cache_control", rule=DEFERRED_CACHED)
            holds(DEFERRED_CACHED, f"tools.{k}")
            deferred.append(spec)
        else:
            specs.append(spec)
            prefix.append(tool)
    if deferred:
        if all(isinstance(t, dict) and t.get("defer_loading") is True for t in tools):
            raise RequestInvalid("At least one tool must have defer_loading=false. All tools cannot be deferred.",
                                 "tools", rule=ALL_DEFERRED)
        holds(ALL_DEFERRED)
    return specs, server_tools, deferred, prefix


def _discovered_tools(parsed: list[_Parsed], tools: list[ToolSpec], deferred: list[ToolSpec]) -> list[ToolSpec]:
    """The deferred tools a `tool_reference` in the history names (a tool search result's, or one in a
    `tool_result` of the client's own search): the API expands them, so the model sees them. A reference to
    a tool the request does not define is refused, in the documented words."""
    named: list[str] = []
    for _, blocks in parsed:
        for kind, block in blocks:
            content = block.get("content")
            if kind == "tool_search_tool_result" and isinstance(content, dict):
                named += [r["tool_name"] for r in content.get("tool_references") or ()]
            elif kind == "tool_result" and isinstance(content, list):
                named += [b["tool_name"] for b in content if b.get("type") == "tool_reference"
                          and isinstance(b.get("tool_name"), str)]
    if not named:
        return []
    known = {t.name for t in tools} | {t.name for t in deferred}
    unknown = next((n for n in named if n not in known), None)
    if unknown is not None:
        breaks(RequestInvalid(f"Tool reference '{unknown}' not found in available tools", "messages",
                              rule=REFERENCE_UNKNOWN))
    else:
        holds(REFERENCE_UNKNOWN)
    return [t for t in deferred if t.name in set(named)]


def _tool_choice_field(choice: Any) -> tuple[ToolChoice, bool | None]:
    if choice is None:
        return "auto", None
    if not isinstance(choice, dict):
        raise _invalid("tool_choice", "a valid dictionary")
    kind = choice.get("type")
    if kind is None:
        raise _required("tool_choice.type")
    disable = choice.get("disable_parallel_tool_use")
    if disable is not None and not isinstance(disable, bool):
        raise _invalid(f"tool_choice.{kind}.disable_parallel_tool_use", "a valid boolean",
                       "tool_choice.disable_parallel_tool_use")
    parallel = None if disable is None else not disable
    if kind == "auto":
        return "auto", parallel
    if kind == "any":
        return "required", parallel
    if kind == "none":
        return "none", None
    if kind == "tool":
        if not isinstance(choice.get("name"), str) or not choice["name"]:
            raise _required("tool_choice.tool.name", "tool_choice.name")
        return {"name": choice["name"]}, parallel
    raise _tag("tool_choice", kind, ("auto", "any", "tool", "none"), "tool_choice.type")


# -- prompt caching: the request's breakpoints as a plan (settled by the app's PromptCache) ----------------

def _cache_plan(model: str, tool_defs: list[dict], system: Any, messages: list, top_level: Any) -> CachePlan | None:
    """The prompt prefix block by block (tools, then system, then each message's content blocks), with a
    digest and a token count at each block; a block with `cache_control` is a breakpoint (its `ttl`, "5m"
    by default). The top-level `cache_control` marks the last block. None when nothing is marked."""
    blocks: list[tuple[Any, Any]] = [(t, t.get("cache_control")) for t in tool_defs]
    if isinstance(system, str) and system:
        blocks.append(({"type": "text", "text": system}, None))
    elif isinstance(system, list):
        blocks += [(b, b.get("cache_control")) for b in system if isinstance(b, dict)]
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, str):
            blocks.append(({"role": m.get("role"), "text": content}, None))
        elif isinstance(content, list):
            blocks += [({"role": m.get("role"), **b}, b.get("cache_control")) for b in content if isinstance(b, dict)]
    if isinstance(top_level, dict) and blocks:
        blocks[-1] = (blocks[-1][0], top_level)
    marked = [i for i, (_, mark) in enumerate(blocks) if isinstance(mark, dict)]
    if not marked:
        return None
    # Each digest chains the one before it, so a long history is hashed once, not once per position.
    digest, tokens, positions = stable_id("prompt-cache", model.rsplit("/", 1)[-1], length=32), 0, []
    for block, mark in blocks[:marked[-1] + 1]:
        plain = {k: v for k, v in block.items() if k != "cache_control"}
        tokens += approx_tokens(plain)
        digest = stable_id(digest, plain, length=32)
        ttl = (mark.get("ttl") or "5m") if isinstance(mark, dict) else None
        positions.append(CacheBreakpoint(digest, tokens, ttl))
    return CachePlan(tuple(positions), _family_value(model, CACHE_MINIMUM, DEFAULT_CACHE_MINIMUM))


# -- the message-threads beta: what the server keeps between requests ---------------------------------------

def resolve_stored(body: dict, recall: Callable[[str], Any]) -> dict:
    """A `thread: {"type": "continue", "previous_message_id": id}` request with the thread filled in: the
    stored conversation (up to and with that response) before the new messages, and the thread's `system`
    and `tools`. An id the server does not hold (never created, expired 5 minutes after its last request,
    or let go of) is the documented 404 `thread_not_found`; the SDK then sends the whole history again
    under a new thread. A continue that changes `system` or `tools` is refused: the thread keeps its own."""
    thread = body.get("thread") if isinstance(body, dict) else None
    if not isinstance(thread, dict) or thread.get("type") != "continue":
        return body
    previous = thread.get("previous_message_id")
    if not isinstance(previous, str):
        return body  # decoding refuses it in the API's words
    record = recall("thread:" + previous)
    if not isinstance(record, dict) or record.get("expires", 0.0) <= time.monotonic():
        raise RequestInvalid(f"No usable thread state was found for `previous_message_id` {previous}. Send the "
                             'whole conversation again with `thread: {"type": "create"}`.',
                             "thread.previous_message_id", status=404, code="thread_not_found", rule=THREAD_NOT_FOUND)
    holds(THREAD_NOT_FOUND)
    changed = [f for f in ("system", "tools") if f in body and body[f] != record.get(f)]
    if not changed:
        holds(THREAD_FIELDS)
    if changed:
        raise RequestInvalid(f"{' and '.join(changed)}: a thread keeps the values it was created with; leave them "
                             'out of a continue request, or send the whole conversation with `thread: {"type": '
                             '"create"}` to change them.', changed[0], code="thread_fingerprint_mismatch",
                             rule=THREAD_FIELDS)
    new = body.get("messages", [])
    resolved = {k: v for k, v in body.items() if k not in ("system", "tools")}
    resolved.update({f: record[f] for f in ("system", "tools") if f in record})
    resolved["messages"] = [*record["messages"], *(new if isinstance(new, list) else [new])]
    return resolved


def stored_records(body: dict, response: dict) -> dict[str, Any]:
    """With a `thread`: the conversation up to and with this response, under the response id, for 5 minutes
    (`THREAD_SECONDS`; each response the server stores starts them again)."""
    thread = body.get("thread") if isinstance(body, dict) else None
    if not isinstance(thread, dict) or not isinstance(response.get("id"), str):
        return {}
    record = {"messages": [*body.get("messages", []), {"role": "assistant", "content": response["content"]}],
              "expires": time.monotonic() + THREAD_SECONDS}
    record.update({f: body[f] for f in ("system", "tools") if f in body})
    return {"thread:" + response["id"]: record}


# ---------------------------------------------------------------------------------------------------
# Server side: the answer
# ---------------------------------------------------------------------------------------------------

#: What the simulator's tool search is to a server half: (catalog, messages, variant) -> (query, found), or None
#: when the model would not search (`agentkit.sim.tool_search.run_search`, handed over by the app).
Search = Callable[[Sequence[ToolSpec], Sequence[Message], str], "tuple[str, list[ToolSpec]] | None"]


def serve_turn(respond: Callable[[ChatRequest], ModelTurn], search: Search, request: ChatRequest) -> ModelTurn:
    """The server's part of one answer: the model's turn, and with the tool search tool, the search.

    When deferred tools are still hidden and the model answers a new request without calling a tool, the
    simulated model searches (`search`: what it searches for, and what the server finds); the server answers
    `server_tool_use`, then `tool_search_tool_result` with up to 5 `tool_reference` blocks, the found tools
    become visible, and the model decides again with them. Both blocks go first in the answer, after any
    thinking, as the API returns them; a search that finds nothing says so and the first answer stands."""
    turn = respond(request)
    tool_search = request.extras.get("tool_search")
    hidden = [t for t in request.extras.get("unloaded_tools", ()) if t not in request.tools]
    if tool_search is None or not hidden or turn.tool_calls:
        return turn
    searched = search(hidden, request.messages, tool_search["variant"])
    if searched is None:
        return turn
    query, found = searched
    call_id = "srvtoolu_01" + stable_id(turn.id, request.model, query, length=22)
    blocks = ({"type": "server_tool_use", "id": call_id, "name": tool_search["name"],
               "input": {tool_search["field"]: query}},
              {"type": "tool_search_tool_result", "tool_use_id": call_id,
               "content": {"type": "tool_search_tool_search_result",
                           "tool_references": [{"type": "tool_reference", "tool_name": t.name} for t in found]}})
    after = respond(replace(request, tools=request.tools + tuple(found))) if found else turn
    own = after.reasoning if after.reasoning is not None else reasoning_for(after, request)
    items = (*(own.items if own is not None else ()), *blocks)
    return replace(after, reasoning=ReasoningState(NAME, after.model or request.model, items))


def response_id(turn: ModelTurn, request: ChatRequest) -> str:
    """A `msg_01…` id: the turn's own when it already has that shape, else derived from it."""
    if turn.id and turn.id.startswith("msg_"):
        return turn.id
    if turn.id:
        return "msg_01" + stable_id(turn.id, length=22)
    # No id at all: derive one from what identifies this turn (same request -> same id).
    return "msg_01" + stable_id(request.model, len(request.messages), turn.text,
                                [c.to_dict() for c in turn.tool_calls], length=22)


def call_ids(turn: ModelTurn, request: ChatRequest) -> list[str]:
    """`toolu_01…` ids for the turn's calls, unique per turn (neutral ids like "call_1" repeat)."""
    msg = response_id(turn, request)
    return [c.id if c.id.startswith("toolu_") else "toolu_01" + stable_id(msg, i, c.id, length=22)
            for i, c in enumerate(turn.tool_calls)]


def _stop_reason(turn: ModelTurn) -> str:
    # The turn's own Anthropic word wins when it agrees with the neutral signal ("stop_sequence", ...).
    if turn.native_stop in STOP_TO_NEUTRAL and STOP_TO_NEUTRAL[turn.native_stop] == turn.stop:
        return turn.native_stop
    if turn.tool_calls and turn.stop in ("stop", "tool_calls"):
        return "tool_use"
    return NEUTRAL_TO_STOP.get(turn.stop, "end_turn")


def _usage_to_wire(usage: Usage, output_tokens: int | None = None) -> dict:
    """Anthropic's usage: `input_tokens` are the tokens after the last cache breakpoint, apart from the cache
    reads and writes (the neutral Usage counts the whole prompt in its input_tokens)."""
    written_1h = min(usage.cache_write_1h_tokens, usage.cache_write_tokens)
    fresh = max(0, usage.input_tokens - usage.cached_tokens - usage.cache_write_tokens)
    wire = {"input_tokens": fresh,
            "output_tokens": usage.output_tokens if output_tokens is None else output_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens, "cache_read_input_tokens": usage.cached_tokens,
            "service_tier": "standard"}
    if usage.cache_write_tokens or usage.cached_tokens:  # the split by lifetime, when the cache was used
        wire["cache_creation"] = {"ephemeral_5m_input_tokens": usage.cache_write_tokens - written_1h,
                                  "ephemeral_1h_input_tokens": written_1h}
    return wire


def reasoning_for(turn: ModelTurn, request: ChatRequest) -> ReasoningState | None:
    """With thinking on, the answer starts with one signed thinking block (its text: the simulator's
    thought). The signature covers the thinking text and the user request it answers, so an altered block,
    or one moved to another conversation, is refused when sent back.

    On the Claude 5.x models thinking is on without asking, its text is empty unless `thinking.display`
    is "summarized", and (but on Mythos 5.1) the signature covers the block's whole prefix instead."""
    model = request.model
    thinking = request.extras.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, dict) else "adaptive" if in_family(
        model, ALWAYS_THINKING) else None
    if kind not in THINKING_ON:  # off, or between_tools (no thinking before the first call)
        return None
    default = "omitted" if in_family(model, OMITTED_THINKING_BY_DEFAULT) else "summarized"
    display = thinking.get("display", default) if isinstance(thinking, dict) else default
    thought = "" if display == "omitted" else simulated_thought(turn, request)
    if in_family(model, PREFIX_BOUND_THINKING):
        deferred = {t.name for t in request.extras.get("unloaded_tools", ())}
        prefix_tools = [t for t in request.tools if t.name not in deferred]
        bound_to = prefix_digest(request.messages, prefix_tools, request.extras.get("server_tools", ()))
    else:
        bound_to = conversation_of(request.messages)
    block = {"type": "thinking", "thinking": thought,
             "signature": mint_signature(SIGNATURE_KIND, None, thought, bound_to)}
    return ReasoningState(NAME, turn.model or model, (block,))


def _kept_blocks(turn: ModelTurn) -> list[dict]:
    state = turn.reasoning
    return [dict(block) for block in state.items] if state is not None and state.format == NAME else []


def build_response(turn: ModelTurn, request: ChatRequest) -> dict:
    """The JSON body a real server answers (Anthropic's Messages API documentation); validates as
    `anthropic.types.Message`. Thinking and server blocks first, then the text, then the calls."""
    content: list[dict] = _kept_blocks(turn)
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    for call, call_id in zip(turn.tool_calls, call_ids(turn, request), strict=True):
        content.append({"type": "tool_use", "id": call_id, "name": call.name,
                        "input": call.arguments_object()})
    return {"id": response_id(turn, request), "type": "message", "role": "assistant",
            "model": turn.model or request.model, "content": content,
            "stop_reason": _stop_reason(turn), "stop_sequence": None,
            "usage": _usage_to_wire(turn.usage)}


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def build_stream(turn: ModelTurn, request: ChatRequest) -> list[SSEvent]:
    """The same response as named SSE events (Anthropic's Messages API documentation), in the order the API sends them.

    message_start, then per block content_block_start / _delta* / _stop, then message_delta and
    message_stop. A `ping` follows the first block start. Arguments go out as `input_json_delta`
    fragments: first "", then the JSON in at least two pieces, as the API streams them (a
    `server_tool_use` block's input too); a thinking block as `thinking_delta` pieces, then its whole
    signature in one `signature_delta` before the block stops; a server result block whole, in its start.
    """
    message = build_response(turn, request)
    events: list[SSEvent] = []

    def emit(payload: dict) -> None:
        events.append(SSEvent(dumps(payload), event=payload["type"]))

    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": _usage_to_wire(turn.usage, output_tokens=1)}
    emit({"type": "message_start", "message": start})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            emit({"type": "content_block_start", "index": index,
                  "content_block": {"type": "text", "text": ""}})
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"], 24)]
        elif block["type"] == "thinking":
            emit({"type": "content_block_start", "index": index,
                  "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            deltas = [{"type": "thinking_delta", "thinking": piece} for piece in _pieces(block["thinking"], 24)]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif block["type"] in ("tool_use", "server_tool_use"):
            emit({"type": "content_block_start", "index": index,
                  "content_block": {**block, "input": {}}})
            arguments = json.dumps(block["input"], ensure_ascii=False)
            half = math.ceil(len(arguments) / 2)
            deltas = [{"type": "input_json_delta", "partial_json": piece}
                      for piece in ("", arguments[:half], arguments[half:])]
        else:  # redacted_thinking and the server's result blocks arrive whole, in their start event
            emit({"type": "content_block_start", "index": index, "content_block": block})
            deltas = []
        if index == 0:
            emit({"type": "ping"})
        for delta in deltas:
            emit({"type": "content_block_delta", "index": index, "delta": delta})
        emit({"type": "content_block_stop", "index": index})
    if not message["content"]:
        emit({"type": "ping"})
    emit({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
          "usage": {"output_tokens": turn.usage.output_tokens}})
    emit({"type": "message_stop"})
    return events


def build_error(status: int, message: str, error_type: str | None = None, **kw: Any) -> dict:
    """The API's error body: `{"type": "error", "error": {"type", "message"[, "details"]}, "request_id"}`.

    `error_type` defaults from the status (Anthropic's Messages API documentation: 529 ->
    overloaded_error, ...); a `code=` goes into `error.details.error_code`, where the SDK reads it
    (`thread_not_found`, ...); pass `request_id=` to choose the id, otherwise one is derived from the
    status and message.
    """
    if error_type is None:
        error_type = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    request_id = kw.get("request_id") or "req_011" + stable_id(status, error_type, message, length=21)
    error: dict[str, Any] = {"type": error_type, "message": message}
    if kw.get("details"):  # e.g. a spend limit's {"error_code": "enforced_spend_limit_reached"}
        error["details"] = kw["details"]
    if kw.get("code"):
        error["details"] = {"error_code": kw["code"]}
    return {"type": "error", "error": error, "request_id": request_id}


def build_stream_error(status: int, message: str, request: ChatRequest,
                       sent: Sequence[StreamEvent] = ()) -> SSEvent:
    """A failure after the stream started: `event: error` with the error's type (529 ->
    overloaded_error, 429 -> rate_limit_error, ...), inside a 200 stream; the SDK raises on it."""
    body = build_error(status, message)
    return SSEvent(dumps({"type": "error", "error": body["error"]}), event="error")


def build_model_list(names: Sequence[str]) -> dict:
    """GET /v1/models: `{"data": [{"type": "model", "id", "display_name", ...}], "has_more", ...}`."""
    data = [{"type": "model", "id": n, "display_name": n, "created_at": "2026-01-01T00:00:00Z",
             "lifecycle": "active", "deprecated_at": None, "retires_at": None,
             "max_input_tokens": 200000, "max_tokens": 64000} for n in names]
    return {"data": data, "has_more": False, "first_id": names[0] if names else None,
            "last_id": names[-1] if names else None}


def model_refusal(request: ChatRequest) -> RequestInvalid | None:
    """The Claude 5.x models answer a forced tool choice (any / tool) with a 400 (claim C14); a 5.x name
    spelled with dots (OpenRouter's spelling) is no Messages API model: 404."""
    short = request.model.rsplit("/", 1)[-1]
    dotted = next((d for d in DOTTED_IDS if short == d or short.startswith(d + "-")), None)
    if dotted is not None:
        return RequestInvalid(SERVER.unknown_model.format(model=request.model), "model", status=404, rule=DOTTED_ID)
    choice = request.options.tool_choice
    if not in_family(request.model, NO_FORCED_TOOL_USE):
        return None
    if not (choice == "required" or isinstance(choice, dict)):
        if request.tools:
            holds(FORCED_TOOL, "tool_choice")
        return None
    return RequestInvalid(FORCED_TOOL_USE, "tool_choice", rule=FORCED_TOOL)

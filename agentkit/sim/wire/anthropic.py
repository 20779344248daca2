"""Anthropic Messages: the server side, as the simulator speaks it (pure functions).

The client side (and what is special about the format) is `agentkit.providers.anthropic`; this half
is what only a server does: decode a request the way the real API validates it (refusing it in the
API's own words), and write its answers, streams, errors and model list.

Beyond the verbs: the Claude 5.x model rules (`NO_FORCED_TOOL_USE`, `ALWAYS_THINKING`, thinking bound to
its prefix, `prefix_digest`), and signed thinking blocks (`reasoning_for`, checked again in
`parse_request`: altered, moved or missing blocks are refused in the API's words).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from ...core.types import Message, ModelOptions, ModelTurn, ReasoningState, ToolCall, ToolChoice, ToolSpec, Usage
from ...providers.anthropic import ERROR_TYPES, NAME, STOP_TO_NEUTRAL, THINKING_BLOCKS
from ...providers.common import SSEvent, StreamEvent, dumps, stable_id
from .common import (
    ChatRequest,
    RequestInvalid,
    conversation_of,
    mint_signature,
    no_records,
    nothing_stored,
    schema_problem,
    signature_valid,
    simulated_thought,
)
from .contract import Route, ServerFacts, SpendLimitAnswer

#: What the real server does around the bodies (see contract.py). The SDK sends `Authorization: Bearer`,
#: the documented raw-HTTP header is `x-api-key`: the API takes both (Anthropic's Messages API documentation).
SERVER = ServerFacts(
    routes=(Route("POST", "/v1/messages"), Route("GET", "/v1/models", "models")),
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
)

# The Claude 5.x rules, per API model id (a dated or fault-suffixed name such as "claude-opus-5-5-20260922"
# counts as its family). Each rule's documented wording and source: agentkit/sim/fidelity.toml.
#: Models that refuse forced tool use (tool_choice any/tool), claim C14.
NO_FORCED_TOOL_USE = ("claude-opus-5-5", "claude-sonnet-5-5", "claude-fable-5-1", "claude-mythos-5-1")
#: Models that think whatever the request says: no `thinking` means adaptive; disabled / budget_tokens -> 400.
ALWAYS_THINKING = NO_FORCED_TOOL_USE
#: Models whose kept thinking blocks are checked against their prefix (Mythos 5.1 records it, does not check).
PREFIX_BOUND_THINKING = ("claude-opus-5-5", "claude-sonnet-5-5", "claude-fable-5-1")
#: Models whose thinking text is empty unless `thinking.display` is "summarized" (the default is "omitted").
OMITTED_THINKING_BY_DEFAULT = NO_FORCED_TOOL_USE
#: Models whose lowest thinking setting is `{"type": "between_tools"}` (no thinking before the first call).
BETWEEN_TOOLS_THINKING = ("claude-sonnet-5-5",)
#: Anthropic's words for a forced tool choice on those models.
FORCED_TOOL_USE = 'tool_choice: type "tool" and "any" are not supported for this model.'
#: The spellings with dots are OpenRouter's (`anthropic/claude-opus-5.5`); the Messages API knows no such model.
DOTTED_IDS = {"claude-opus-5.5": "claude-opus-5-5", "claude-sonnet-5.5": "claude-sonnet-5-5",
              "claude-fable-5.1": "claude-fable-5-1", "claude-mythos-5.1": "claude-mythos-5-1"}
NEUTRAL_TO_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens",
                   "content_filter": "refusal", "other": "end_turn"}
#: `thinking.type` values that turn thinking on (`adaptive` is the newer models' mode).
THINKING_ON = ("enabled", "adaptive")
#: The kind the simulator's thinking signatures are minted for.
SIGNATURE_KIND = "anthropic-thinking"
#: The kind the simulator seals a redacted_thinking block's `data` as.
REDACTED_KIND = "anthropic-redacted-thinking"


def tool_from_wire(d: Any, param: str = "tools.0") -> ToolSpec:
    """An Anthropic tool definition back to a ToolSpec; RequestInvalid names the bad field."""
    if not isinstance(d, dict):
        raise RequestInvalid(f"{param}: Input should be a valid dictionary", param)
    name, schema = d.get("name"), d.get("input_schema")
    if not isinstance(name, str) or not name:
        raise RequestInvalid(f"{param}.custom.name: Field required", f"{param}.name")
    if not isinstance(schema, dict):
        raise RequestInvalid(f"{param}.custom.input_schema: Field required", f"{param}.input_schema")
    if schema.get("type") != "object":
        # The API insists that the root of every input schema describes an object.
        raise RequestInvalid(f"{param}.custom.input_schema.type: Input should be 'object'",
                             f"{param}.input_schema.type")
    description = d.get("description", "")
    if not isinstance(description, str):
        raise RequestInvalid(f"{param}.custom.description: Input should be a valid string",
                             f"{param}.description")
    if schema_problem(schema) is not None:
        raise RequestInvalid(f"{param}.custom.input_schema: JSON schema is invalid. It must match JSON Schema "
                             "draft 2020-12", f"{param}.input_schema")
    return ToolSpec(name, description, schema, d.get("strict") is True)
resolve_stored = nothing_stored
stored_records = no_records



# ---------------------------------------------------------------------------------------------------
# Server side: what the simulator reads and writes
# ---------------------------------------------------------------------------------------------------

def parse_request(body: Any, model: str | None = None) -> ChatRequest:
    """Decode a Messages request the way the API validates it; RequestInvalid carries the API's wording.

    Checks the documented 400s: `model`, `max_tokens` and `messages` are required; `tool_result` blocks
    come first in their user message and answer the `tool_use` ids of the assistant turn right before it;
    every `tool_use` has its result in the next message; tool blocks need `tools`. With `thinking` on:
    a budget of at least 1024 tokens below `max_tokens`, tool_choice auto or none, the open tool cycle's
    assistant turn starting with its thinking block, and every thinking block's signature intact. On the
    Claude 5.x models thinking is always on, and a kept thinking block must still fit its prefix (see the
    module notes). (The `anthropic-version` header is the HTTP server's business, not the body's.)
    """
    if not isinstance(body, dict):
        raise RequestInvalid("Input should be a valid dictionary")
    known = {"model", "max_tokens", "messages", "system", "tools", "tool_choice", "stream", "temperature"}
    model = _model_field(body, model)
    max_tokens = _max_tokens_field(body)
    wire_messages = body.get("messages")
    if "messages" not in body:
        raise RequestInvalid("messages: Field required", "messages")
    if not isinstance(wire_messages, list):
        raise RequestInvalid("messages: Input should be a valid list", "messages")
    if not wire_messages:
        raise RequestInvalid("messages: at least one message is required", "messages")

    parsed = [_parse_wire_message(i, m) for i, m in enumerate(wire_messages)]
    _check_tool_pairing(parsed)
    thinking_on = _thinking_field(body.get("thinking"), max_tokens, model)

    tools, server_tools = _tools_field(body.get("tools"))
    if not tools and not server_tools and any(kind in ("tool_use", "tool_result")
                                              for _, blocks in parsed for kind, _ in blocks):
        raise RequestInvalid("Requests which include `tool_use` or `tool_result` blocks must define tools.",
                             "tools")
    choice, parallel = _tool_choice_field(body.get("tool_choice"))
    if thinking_on:
        _check_thinking(parsed, choice, model)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise RequestInvalid("stream: Input should be a valid boolean", "stream")
    temperature = body.get("temperature")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
                                    or not 0 <= temperature <= 1):
        raise RequestInvalid("temperature: Input should be a number between 0 and 1", "temperature")

    system = _system_field(body.get("system"))
    if in_family(model, PREFIX_BOUND_THINKING):
        parsed = _check_prefix_binding(parsed, system, tools, server_tools, model, body.get("thinking"))
    messages = system + _neutral_messages(parsed, model)
    extras = {k: v for k, v in body.items() if k not in known}
    if server_tools:
        extras["server_tools"] = server_tools
    options = ModelOptions(tool_choice=choice, parallel_tool_calls=parallel, stream=stream,
                           max_tokens=max_tokens, temperature=temperature)
    return ChatRequest(model, tuple(messages), tuple(tools), options, extras=extras)


def _model_field(body: dict, fallback: str | None) -> str:
    model = body.get("model", fallback)
    if model is None:
        raise RequestInvalid("model: Field required", "model")
    if not isinstance(model, str) or not model:
        raise RequestInvalid("model: Input should be a valid string", "model")
    return model


def _max_tokens_field(body: dict) -> int:
    if "max_tokens" not in body:
        raise RequestInvalid("max_tokens: Field required", "max_tokens")
    value = body["max_tokens"]
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestInvalid("max_tokens: Input should be a valid integer", "max_tokens")
    if value < 1:
        raise RequestInvalid("max_tokens: Input should be greater than or equal to 1", "max_tokens")
    return value


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
                raise RequestInvalid(f"system.{j}: Input should be a valid text block", f"system.{j}")
            texts.append(block["text"])
        return [Message.system("\n".join(texts))] if texts else []
    raise RequestInvalid("system: Input should be a valid string", "system")


#: One decoded wire message: (role, [(block kind, block)]) with kinds "text", "tool_use", "tool_result",
#: "thinking" and "redacted_thinking".
_Parsed = tuple[str, list[tuple[str, dict]]]
_SKIPPED_BLOCKS = {"image", "document", "search_result"}


def _parse_wire_message(i: int, m: Any) -> _Parsed:
    where = f"messages.{i}"
    if not isinstance(m, dict):
        raise RequestInvalid(f"{where}: Input should be a valid dictionary", where)
    role = m.get("role")
    if role == "system":
        raise RequestInvalid('Unexpected role "system". The Messages API accepts a top-level `system` '
                             'parameter, not "system" as an input message role.', f"{where}.role")
    if role not in ("user", "assistant"):
        raise RequestInvalid(f"{where}.role: Input should be 'user' or 'assistant'", f"{where}.role")
    if "content" not in m:
        raise RequestInvalid(f"{where}.content: Field required", f"{where}.content")
    content = m["content"]
    if isinstance(content, str):
        return role, [("text", {"type": "text", "text": content})]
    if not isinstance(content, list):
        raise RequestInvalid(f"{where}.content: Input should be a valid list", f"{where}.content")
    blocks = []
    for j, block in enumerate(content):
        kind = _check_block(f"{where}.content.{j}", role, block)
        if kind is not None:
            blocks.append((kind, block))
    return role, blocks


def _check_block(where: str, role: str, block: Any) -> str | None:
    if not isinstance(block, dict):
        raise RequestInvalid(f"{where}: Input should be a valid dictionary", where)
    kind = block.get("type")
    if not isinstance(kind, str):
        raise RequestInvalid(f"{where}.type: Field required", f"{where}.type")
    if kind in _SKIPPED_BLOCKS:
        return None
    if kind in THINKING_BLOCKS:
        if role != "assistant":
            raise RequestInvalid(f"{where}: `{kind}` blocks can only appear in assistant messages", where)
        for field in ("thinking", "signature") if kind == "thinking" else ("data",):
            if not isinstance(block.get(field), str):
                raise RequestInvalid(f"{where}.{field}: Field required", f"{where}.{field}")
        return kind
    if kind == "text":
        if not isinstance(block.get("text"), str):
            raise RequestInvalid(f"{where}.text: Field required", f"{where}.text")
        return kind
    if kind == "tool_use":
        if role != "assistant":
            raise RequestInvalid(f"{where}: `tool_use` blocks can only appear in assistant messages", where)
        for field in ("id", "name"):
            if not isinstance(block.get(field), str) or not block[field]:
                raise RequestInvalid(f"{where}.{field}: Field required", f"{where}.{field}")
        if not isinstance(block.get("input"), dict):
            raise RequestInvalid(f"{where}.input: Input should be a valid dictionary", f"{where}.input")
        return kind
    if kind == "tool_result":
        if role != "user":
            raise RequestInvalid(f"{where}: `tool_result` blocks can only appear in user messages", where)
        if not isinstance(block.get("tool_use_id"), str) or not block["tool_use_id"]:
            raise RequestInvalid(f"{where}.tool_use_id: Field required", f"{where}.tool_use_id")
        content = block.get("content", "")
        if not isinstance(content, (str, list)) or (isinstance(content, list) and not all(
                isinstance(b, dict) for b in content)):
            raise RequestInvalid(f"{where}.content: Input should be a valid string or list of blocks",
                                 f"{where}.content")
        if not isinstance(block.get("is_error", False), bool):
            raise RequestInvalid(f"{where}.is_error: Input should be a valid boolean", f"{where}.is_error")
        return kind
    raise RequestInvalid(f"{where}: Input tag '{kind}' found using 'type' does not match any of the expected "
                         "tags: 'text', 'image', 'document', 'tool_use', 'tool_result', 'thinking', "
                         "'redacted_thinking'", where)


def in_family(model: str, ids: Sequence[str]) -> bool:
    """Is `model` one of these API ids, or a dated / suffixed name of one ("claude-opus-5-5-20260922")?"""
    short = model.rsplit("/", 1)[-1]
    return any(short == i or short.startswith(i + "-") for i in ids)


def _thinking_field(thinking: Any, max_tokens: int, model: str = "") -> bool:
    """Is thinking on? `thinking` checked as the API does (a budget of at least 1024, below max_tokens);
    on the Claude 5.x models thinking is always on, and turning it off or budgeting it is refused."""
    always = in_family(model, ALWAYS_THINKING)
    if thinking is None:
        return always
    if not isinstance(thinking, dict):
        raise RequestInvalid("thinking: Input should be a valid dictionary", "thinking")
    kind = thinking.get("type")
    if kind == "between_tools" and in_family(model, BETWEEN_TOOLS_THINKING):
        return True
    if always and kind in ("disabled", "enabled"):
        raise RequestInvalid(f'"thinking.type.{kind}" is not supported for this model. Use "thinking.type.adaptive" '
                             'and "output_config.effort" to control thinking behavior.', "thinking.type")
    if kind not in ("enabled", "disabled", "adaptive"):
        raise RequestInvalid(f"thinking: Input tag '{kind}' found using 'type' does not match any of the expected "
                             "tags: 'enabled', 'disabled', 'adaptive'", "thinking.type")
    if kind != "enabled":
        return kind == "adaptive"
    budget = thinking.get("budget_tokens")
    if budget is None:
        raise RequestInvalid("thinking.enabled.budget_tokens: Field required", "thinking.budget_tokens")
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise RequestInvalid("thinking.enabled.budget_tokens: Input should be a valid integer",
                             "thinking.budget_tokens")
    if budget < 1024:
        raise RequestInvalid("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
                             "thinking.budget_tokens")
    if budget >= max_tokens:
        raise RequestInvalid("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                             "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
                             "#max-tokens-and-context-window-size", "max_tokens")
    return True


def _check_thinking(parsed: list[_Parsed], choice: ToolChoice, model: str = "") -> None:
    """The API's rules while thinking is on, in its own words (see the module notes). A model that refuses
    forced tool use says so itself (`model_refusal`); a prefix-bound model's signatures are checked with
    their prefix (`_check_prefix_binding`)."""
    forced = choice == "required" or isinstance(choice, dict)
    if forced and not in_family(model, NO_FORCED_TOOL_USE):
        raise RequestInvalid("Thinking may not be enabled when tool_choice forces tool use.", "tool_choice")
    if not in_family(model, PREFIX_BOUND_THINKING):  # those are checked against their prefix instead
        _check_signed_thinking(parsed)
    last = max((i for i, (role, _) in enumerate(parsed) if role == "assistant"), default=None)
    if last is None:
        return
    blocks = parsed[last][1]
    if any(kind == "tool_use" for kind, _ in blocks) and blocks[0][0] not in THINKING_BLOCKS:
        raise RequestInvalid(
            f"messages.{last}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
            f"`{blocks[0][0]}`. When `thinking` is enabled, a final `assistant` message must start with a "
            "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend "
            "you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. "
            "Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking",
            f"messages.{last}.content.0.type")


PREFIX_MISMATCH = ("Invalid `signature` in `thinking` block. The block is bound to a different conversation. "
                   "Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\".")


def prefix_digest(messages: Sequence[Message], tools: Sequence[ToolSpec], server_tools: Sequence[dict] = ()) -> str:
    """What a thinking block is bound to: the `system`, `tools` and messages that came before it."""
    return stable_id([m.to_dict() for m in messages], [t.to_dict() for t in tools], list(server_tools), length=32)


def _check_prefix_binding(parsed: list[_Parsed], system: list[Message], tools: list[ToolSpec],
                          server_tools: list[dict], model: str, thinking: Any) -> list[_Parsed]:
    """Preserved thinking: every kept thinking block must have been made for exactly the prefix it now has.

    The first block whose prefix changed makes it and every later thinking block invalid: a 400, or with
    `thinking.block_binding.prefix_mismatch_behavior: "drop_block"` those blocks are left out (the model
    answers without them). Returns the messages to use."""
    for i, (_, blocks) in enumerate(parsed):
        for j, (kind, block) in enumerate(blocks):
            if kind not in THINKING_BLOCKS:
                continue
            binding = prefix_digest(system + _neutral_messages(parsed[:i], model), tools, server_tools)
            if (signature_valid(block["signature"], SIGNATURE_KIND, block["thinking"], binding) if kind == "thinking"
                    else signature_valid(block["data"], REDACTED_KIND, "", binding)):
                continue
            if _mismatch_behavior(thinking) != "drop_block":
                raise RequestInvalid(f"messages.{i}.content.{j}: {PREFIX_MISMATCH}", f"messages.{i}.content.{j}")
            return parsed[:i] + [(r, [(k, b) for k, b in bs if k not in THINKING_BLOCKS]) for r, bs in parsed[i:]]
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
    for i, (role, blocks) in enumerate(parsed):
        if role == "user":
            texts = [b["text"] for kind, b in blocks if kind == "text"]
            asked = "\n".join(texts) or asked
            continue
        for j, (kind, block) in enumerate(blocks):
            if kind == "thinking" and not signature_valid(block["signature"], SIGNATURE_KIND, block["thinking"],
                                                          asked):
                raise RequestInvalid(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block",
                                     f"messages.{i}.content.{j}")
            if kind == "redacted_thinking" and not signature_valid(block["data"], REDACTED_KIND, "", asked):
                raise RequestInvalid(f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block",
                                     f"messages.{i}.content.{j}")


def redacted_thinking(conversation: str) -> dict:
    """A `redacted_thinking` block as the simulator would issue one in `conversation` (the user request
    it answers): its `data` is sealed like a signature, so the block passes when sent back unchanged.
    The simulator's models never redact; this is for experiments and tests with the block."""
    return {"type": "redacted_thinking", "data": mint_signature(REDACTED_KIND, None, "", conversation)}


def _check_tool_pairing(parsed: list[_Parsed]) -> None:
    """The API's ordering rules for tool_use / tool_result, with its own error wording."""
    for i, (role, blocks) in enumerate(parsed):
        if role == "assistant":
            ids = [b["id"] for kind, b in blocks if kind == "tool_use"]
            if ids:
                _check_results_follow(i, ids, parsed[i + 1] if i + 1 < len(parsed) else None)
        else:
            previous = parsed[i - 1] if i > 0 else ("user", [])
            allowed = {b["id"] for kind, b in previous[1] if kind == "tool_use"} if previous[0] == \
                "assistant" else set()
            for j, (kind, block) in enumerate(blocks):
                if kind == "tool_result" and block["tool_use_id"] not in allowed:
                    raise RequestInvalid(
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{block['tool_use_id']}. Each `tool_result` block must have a corresponding "
                        "`tool_use` block in the previous message.", f"messages.{i}.content.{j}")


def _check_results_follow(i: int, ids: list[str], following: _Parsed | None) -> None:
    if following is None or following[0] != "user":
        raise RequestInvalid(
            f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
            f"{', '.join(ids)}. Each `tool_use` block must have a corresponding `tool_result` block in the "
            "next message.", f"messages.{i}")
    kinds = [kind for kind, _ in following[1]]
    leading = 0
    while leading < len(kinds) and kinds[leading] == "tool_result":
        leading += 1
    if leading == 0 or "tool_result" in kinds[leading:]:
        raise RequestInvalid(
            f"messages.{i + 1}: Did not find {len(ids)} `tool_result` block(s) at the beginning of this "
            "message. Messages following `tool_use` blocks must begin with a matching number of "
            "`tool_result` blocks.", f"messages.{i + 1}")
    answered = {b["tool_use_id"] for kind, b in following[1] if kind == "tool_result"}
    missing = [x for x in ids if x not in answered]
    if missing:
        raise RequestInvalid(
            f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
            f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in "
            "the next message.", f"messages.{i}")


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
            thinking = tuple(dict(b) for kind, b in blocks if kind in THINKING_BLOCKS)
            state = ReasoningState(NAME, model, thinking) if thinking else None
            messages.append(Message.assistant(text or None, calls, state))
            continue
        texts = []
        for kind, b in blocks:
            if kind == "tool_result":
                call_id = b["tool_use_id"]
                messages.append(Message("tool", _result_text(b.get("content", "")), (), call_id,
                                        names.get(call_id), bool(b.get("is_error", False))))
            else:
                texts.append(b["text"])
        if texts or not blocks:
            messages.append(Message.user("\n".join(texts)))
    return messages


def _result_text(content: str | list) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content if b.get("type") == "text")


def _tools_field(tools: Any) -> tuple[list[ToolSpec], list[dict]]:
    if tools is None:
        return [], []
    if not isinstance(tools, list):
        raise RequestInvalid("tools: Input should be a valid list", "tools")
    specs, server_tools = [], []
    for k, tool in enumerate(tools):
        if isinstance(tool, dict) and tool.get("type") not in (None, "custom"):
            server_tools.append(tool)  # web search, code execution, ...: the server's own tools
        else:
            specs.append(tool_from_wire(tool, f"tools.{k}"))
    return specs, server_tools


def _tool_choice_field(choice: Any) -> tuple[ToolChoice, bool | None]:
    if choice is None:
        return "auto", None
    if not isinstance(choice, dict):
        raise RequestInvalid("tool_choice: Input should be a valid dictionary", "tool_choice")
    kind = choice.get("type")
    if kind is None:
        raise RequestInvalid("tool_choice.type: Field required", "tool_choice.type")
    disable = choice.get("disable_parallel_tool_use")
    if disable is not None and not isinstance(disable, bool):
        raise RequestInvalid(f"tool_choice.{kind}.disable_parallel_tool_use: Input should be a valid boolean",
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
            raise RequestInvalid("tool_choice.tool.name: Field required", "tool_choice.name")
        return {"name": choice["name"]}, parallel
    raise RequestInvalid(f"tool_choice: Input tag '{kind}' found using 'type' does not match any of the "
                         "expected tags: 'auto', 'any', 'tool', 'none'", "tool_choice.type")


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
    return {"input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens if output_tokens is None else output_tokens,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "service_tier": "standard"}


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
        bound_to = prefix_digest(request.messages, request.tools, request.extras.get("server_tools", ()))
    else:
        bound_to = conversation_of(request.messages)
    block = {"type": "thinking", "thinking": thought,
             "signature": mint_signature(SIGNATURE_KIND, None, thought, bound_to)}
    return ReasoningState(NAME, turn.model or model, (block,))


def _thinking_blocks(turn: ModelTurn) -> list[dict]:
    state = turn.reasoning
    return [dict(block) for block in state.items] if state is not None and state.format == NAME else []


def build_response(turn: ModelTurn, request: ChatRequest) -> dict:
    """The JSON body a real server answers (Anthropic's Messages API documentation); validates as
    `anthropic.types.Message`."""
    content: list[dict] = _thinking_blocks(turn)
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
    fragments: first "", then the JSON in at least two pieces, as the API streams them; a thinking block
    as `thinking_delta` pieces, then its whole signature in one `signature_delta` before the block stops.
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
        elif block["type"] == "redacted_thinking":  # arrives whole, in its start event
            emit({"type": "content_block_start", "index": index, "content_block": block})
            deltas = []
        else:
            emit({"type": "content_block_start", "index": index,
                  "content_block": {**block, "input": {}}})
            arguments = json.dumps(block["input"], ensure_ascii=False)
            half = math.ceil(len(arguments) / 2)
            deltas = [{"type": "input_json_delta", "partial_json": piece}
                      for piece in ("", arguments[:half], arguments[half:])]
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
    """The API's error body: `{"type": "error", "error": {"type", "message"}, "request_id"}`.

    `error_type` defaults from the status (Anthropic's Messages API documentation: 529 ->
    overloaded_error, ...); pass `request_id=` to choose the id, otherwise one is derived from the status
    and message.
    """
    if error_type is None:
        error_type = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    request_id = kw.get("request_id") or "req_011" + stable_id(status, error_type, message, length=21)
    error: dict[str, Any] = {"type": error_type, "message": message}
    if kw.get("details"):  # e.g. a spend limit's {"error_code": "enforced_spend_limit_reached"}
        error["details"] = kw["details"]
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
        return RequestInvalid(SERVER.unknown_model.format(model=request.model), "model", status=404)
    choice = request.options.tool_choice
    if not (choice == "required" or isinstance(choice, dict)) or not in_family(request.model, NO_FORCED_TOOL_USE):
        return None
    return RequestInvalid(FORCED_TOOL_USE, "tool_choice")

"""Gemini generateContent: the server side, as the simulator speaks it (pure functions).

The client side (and what is special about the format) is `agentkit.providers.gemini`; this half
is what only a server does: decode a request the way the real API validates it (refusing it in the
API's own words), and write its answers, streams, errors and model list.

Beyond the verbs: OpenAPI-style schemas read back to JSON Schema (`openapi_to_json_schema`), the
`google.rpc` error shapes (`STATUS_NAMES`), thought signatures (`reasoning_for` signs what `signed_content`
names; `parse_request` checks each step's signature as Gemini 3 and Gemini 4 do), and the models Google has
shut down (`RETIRED`, answered with the 404 the API gives for them).

Two surfaces serve the same models: the Gemini API (`/v1beta/models/{model}:generateContent`) and Vertex AI,
whose REST paths name the model as a resource (`/v1/projects/{project}/locations/{location}/publishers/
google/models/{model}:generateContent`, v1beta1 too, and express mode's `publishers/google/models/{model}`).
The simulator serves both; a request that came by a Vertex path is refused in Vertex's words where they are
known (a missing thought signature, a retired model) and in the Gemini API's elsewhere.

Left out on purpose: Vertex's own words for the other refusals (it says "Unable to submit request because at
least one contents field is required." where the Gemini API says "contents is not specified"), its model
list and its credentials (any bearer token or key will do, as for every format).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from typing import Any

from ...core.types import Message, ModelOptions, ModelTurn, ReasoningState, ToolCall, ToolChoice, ToolSpec, Usage
from ...providers.common import JSONLine, SSEvent, StreamEvent, dumps, stable_id
from ...providers.gemini import (
    FINISH_TO_NEUTRAL,
    NAME,
    THOUGHT_SIGNATURE_PLACEHOLDER,
    _bare_model,
    _get,
    call_part,
    reasoning_of,
    signed_text_parts,
    signs_calls,
    synthetic_ids,
)
from .common import (
    ChatRequest,
    RequestInvalid,
    breaks,
    conversation_of,
    degrades,
    holds,
    mint_signature,
    no_records,
    nothing_stored,
    schema_problem,
    signature_valid,
)
from .contract import Route, ServerFacts

# -- the fidelity ledger's rules this half checks (agentkit/sim/fidelity.toml) -------------------------------
# Shape refusals share one entry per wording template; the rules of the conversation each have their own.
BODY_NOT_OBJECT = "gemini.body_not_object"
UNKNOWN_FIELD = "gemini.unknown_field"
FIELD_INVALID = "gemini.request_field_invalid"      # "* GenerateContentRequest.{field}: {problem}"
VALUE_INVALID = "gemini.invalid_value"              # "Invalid value at '{field}' {detail}"
INVALID_ROLE = "gemini.invalid_role"
CALL_TURN_ORDER = "gemini.call_turn_order"
RESPONSE_TURN_ORDER = "gemini.response_turn_order"
RESPONSE_COUNT = "gemini.response_count"
RESPONSE_NAME = "gemini.response_names_its_call"
RESPONSE_ID = "gemini.response_id_matches_call"
MISSING_SIGNATURE = "gemini.missing_thought_signature"
VERTEX_MISSING_SIGNATURE = "gemini.vertex_missing_thought_signature"
CORRUPTED_SIGNATURE = "gemini.thought_signature_corrupted"
RETIRED_MODEL = "gemini.retired_model"
VERTEX_RETIRED_MODEL = "gemini.vertex_retired_model"
#: Accepted, but worse (ledger kind "degradation"): an earlier turn's call without its signature.
EARLIER_SIGNATURE_DROPPED = "gemini.earlier_signature_dropped"
#: The generic shape refusals every request is checked against (one entry per wording template).
SHAPE_RULES = (BODY_NOT_OBJECT, UNKNOWN_FIELD, FIELD_INVALID, VALUE_INVALID, INVALID_ROLE)

_GENERATE = "/models/{model}:generateContent"
_STREAM = "/models/{model}:streamGenerateContent"
# Vertex AI names the model as a resource in the path ("projects/p/locations/l/publishers/google/models/m",
# or express mode's "publishers/google/models/m"): the whole name goes to `parse_request` as `model`.
_VERTEX_GENERATE = "/{model:path}:generateContent"
_VERTEX_STREAM = "/{model:path}:streamGenerateContent"
#: What the real server does around the bodies (see contract.py). The REST docs use v1beta; google-genai
#: 3.x defaults to v1, so both are served; then Vertex AI's paths (v1, and v1beta1, the SDK's default
#: there). No 401 and no 529 on this API (the Gemini API reference).
SERVER = ServerFacts(
    routes=tuple(route for version in ("/v1beta", "/v1") for route in (
        Route("POST", version + _GENERATE, stream=False), Route("POST", version + _STREAM, stream=True),
        Route("GET", version + "/models", "models"))) + tuple(
        route for version in ("/v1", "/v1beta1") for route in (
            Route("POST", version + _VERTEX_GENERATE, stream=False),
            Route("POST", version + _VERTEX_STREAM, stream=True))),
    sdk_base_path="",
    no_key=(403, "Method doesn't allow unregistered callers (callers without established identity). Please use "
                 "API Key or other form of API consumer identity to call this API. (On the simulator any "
                 "x-goog-api-key or ?key= works.)"),
    key_headers=("x-goog-api-key", "authorization"),
    key_query_param="key",
    unknown_model="models/{model} is not found for API version v1beta, or is not supported for generateContent. "
                  "Call ListModels to see the list of available models and their supported methods.",
    not_json="Invalid JSON payload received. {detail}",
    fault_messages={
        429: "Resource has been exhausted (e.g. check quota).",
        500: "An internal error has occurred. Please retry or report in "
             "https://developers.generativeai.google/guide/troubleshooting",
        503: "The model is overloaded. Please try again later.",
    },
    client_headers=("x-goog-api-key",),
    nearest_status={529: 503},
    sse_query=("alt", "sse"),
)
#: `ChatRequest.extras` key the simulator sets to choose whether responses carry call ids.
CALL_IDS_OPTION = "gemini_call_ids"
#: `ChatRequest.extras` key holding the Vertex AI resource name of the model, when the request came by one of
#: Vertex's paths ("projects/p/locations/global/publishers/google/models/gemini-4-argon").
VERTEX_MODEL = "vertex_model"
_VERTEX_NAME = re.compile(r"(?:projects/[^/]+/locations/[^/]+/)?publishers/[^/]+/models/([^/]+)")

#: Models Google has shut down: the API answers them with its "not found" 404 (`model_refusal`). Each with the
#: date and the source that names the shutdown; Vertex AI retires the same ids (its model-versions page).
RETIRED: dict[str, tuple[str, str]] = {
    "gemini-3-pro-preview": ("2026-03-09", "https://ai.google.dev/gemini-api/docs/deprecations"),
    **dict.fromkeys(("gemini-2.5-pro-preview-03-25", "gemini-2.5-pro-preview-05-06", "gemini-2.5-pro-preview-06-05"),
                    ("2025-12-02", "https://ai.google.dev/gemini-api/docs/deprecations")),
    **dict.fromkeys(("gemini-2.0-flash", "gemini-2.0-flash-001"),
                    ("2026-06-01", "https://dev.to/akaranjkar08/gemini-api-shutdowns-30-sept-omni-flash-preview-"
                                   "migration-guide-2jae")),
    **dict.fromkeys(("gemini-1.5-flash", "gemini-1.5-flash-002", "gemini-1.5-flash-8b", "gemini-1.5-pro",
                     "gemini-1.5-pro-002"),
                    ("2025-09-24", "https://github.com/epam/ai-dial-adapter-vertexai/issues/298")),
}
#: The kind the simulator's thought signatures are minted for.
SIGNATURE_KIND = "gemini-thought"
NEUTRAL_TO_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS",
                     "content_filter": "SAFETY", "other": "OTHER"}
KNOWN_FINISH_REASONS = {
    "STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "LANGUAGE", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT",
    "SPII", "MALFORMED_FUNCTION_CALL", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_OTHER",
    "NO_IMAGE", "IMAGE_RECITATION", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS",
    "MISSING_THOUGHT_SIGNATURE", "MALFORMED_RESPONSE", "MODEL_ARMOR"}

#: HTTP status -> Google RPC status name in the error body (the Gemini API reference).
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_TYPE_URL = "type.googleapis.com/google.rpc."
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.:\-]{0,127}")
_GEMINI_ID_RE = re.compile(r"[a-z0-9]{8}")


def tool_from_wire(d: Any, param: str = "tools[0].function_declarations[0]") -> ToolSpec:
    """A function declaration back to a ToolSpec; `parameters` (OpenAPI style) becomes JSON Schema."""
    if not isinstance(d, dict):
        raise RequestInvalid(f"Invalid value at '{param}' (FunctionDeclaration)", param, rule=VALUE_INVALID)
    name = d.get("name")
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise RequestInvalid(
            f"* GenerateContentRequest.{param}.name: Invalid function name. Must start with a letter or an "
            "underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or "
            "dashes (-), with a maximum length of 128.", f"{param}.name", rule=FIELD_INVALID)
    description = d.get("description", "")
    if not isinstance(description, str):
        raise RequestInvalid(f"Invalid value at '{param}.description' (TYPE_STRING), {dumps(description)[:80]}",
                             f"{param}.description", rule=VALUE_INVALID)
    json_schema, openapi = _get(d, "parametersJsonSchema"), d.get("parameters")
    if json_schema is not None and openapi is not None:
        raise RequestInvalid(f"* GenerateContentRequest.{param}: parameters and parameters_json_schema are "
                             "mutually exclusive; specify only one.", param, rule=FIELD_INVALID)
    where = f"{param}.parameters"
    schema = json_schema if json_schema is not None else openapi_to_json_schema(openapi, where)
    if schema is None:  # no schema at all: a function without arguments
        schema = {"type": "object", "properties": {}}
    if not isinstance(schema, dict):
        raise RequestInvalid(f"Invalid value at '{param}.parameters_json_schema' (google.protobuf.Value)",
                             f"{param}.parameters_json_schema", rule=VALUE_INVALID)
    problem = schema_problem(schema)
    if problem is not None and json_schema is not None:
        # Google's docs do not say how an invalid `parametersJsonSchema` is answered (it is a free-form
        # protobuf Value on the wire). The conservative choice: refuse it with a 400, as the other
        # providers do, rather than let a learner build on a schema no validator accepts.
        raise RequestInvalid(f"* GenerateContentRequest.{param}.parameters_json_schema: not a valid JSON "
                             f"Schema: {problem}", f"{param}.parameters_json_schema", rule=FIELD_INVALID)
    if problem is not None:
        raise RequestInvalid(f"Invalid value at '{where}' (type.googleapis.com/google.ai.generativelanguage."
                             f"v1beta.Schema), {problem}", where, rule=VALUE_INVALID)
    return ToolSpec(name, description, schema)


#: The values of Gemini's `Type` enum (an OpenAPI-style `parameters` schema names one of these).
SCHEMA_TYPES = ("TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL")

#: OpenAPI Schema keys (either spelling) -> JSON Schema keys; values are converted recursively.
_SCHEMA_KEYS = {
    "any_of": "anyOf", "max_items": "maxItems", "min_items": "minItems", "max_length": "maxLength",
    "min_length": "minLength", "max_properties": "maxProperties", "min_properties": "minProperties",
    "additional_properties": "additionalProperties", "defs": "$defs", "ref": "$ref",
}


def openapi_to_json_schema(schema: Any, param: str = "parameters") -> Any:
    """Gemini's OpenAPI-style Schema (`{"type": "OBJECT", "nullable": true}`) as plain JSON Schema.

    Upper-case types become lower-case, `nullable` becomes a `"null"` type, snake_case keys become
    their camelCase JSON Schema names, and Gemini-only hints (`propertyOrdering`) are dropped.
    """
    if schema is None:
        return None
    if not isinstance(schema, dict):
        raise RequestInvalid(f"Invalid value at '{param}' (Schema)", param, rule=VALUE_INVALID)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        key = _SCHEMA_KEYS.get(key, key)
        if key in ("propertyOrdering", "property_ordering", "nullable"):
            continue
        if key == "type":
            if not isinstance(value, str) or value.upper() not in SCHEMA_TYPES:
                raise RequestInvalid(f"Invalid value at '{param}.type' (type.googleapis.com/"
                                     f"google.ai.generativelanguage.v1beta.Type), {dumps(value)[:80]}", param,
                                     rule=VALUE_INVALID)
            if value.upper() != "TYPE_UNSPECIFIED":
                out["type"] = value.lower()
        elif key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {k: openapi_to_json_schema(v, f"{param}.{k}") for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = openapi_to_json_schema(value, f"{param}.{key}")
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [openapi_to_json_schema(v, f"{param}.anyOf") for v in value]
        elif key == "example":
            out["examples"] = [value]
        else:
            out[key] = value
    if schema.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out
resolve_stored = nothing_stored
stored_records = no_records


# ---------------------------------------------------------------------------------------------------
# Server side: what the simulator reads and writes
# ---------------------------------------------------------------------------------------------------

#: The fields of a GenerateContentRequest this codec models; they do not land in `extras`.
MODELLED = {"contents", "systemInstruction", "system_instruction", "tools", "toolConfig", "tool_config",
            "generationConfig", "generation_config", "model"}
#: Every top-level field the API knows (both spellings, as Google's parser takes both); the ones the
#: kit does not model (safetySettings, cachedContent, ...) are kept in `extras`.
REQUEST_FIELDS = MODELLED | {
    "safetySettings", "safety_settings", "cachedContent", "cached_content", "labels", "serviceTier",
    "service_tier", "continuationToken", "continuation_token", "store"}


def parse_request(body: Any, model: str | None = None) -> ChatRequest:
    """Decode a generateContent request; `model` comes from the URL path (`/models/{model}:…`, or Vertex AI's
    resource name `projects/…/publishers/google/models/{model}`, kept in `extras[VERTEX_MODEL]`).

    Accepts camelCase and snake_case field names, `parametersJsonSchema` and OpenAPI-style `parameters`.
    Checks the documented 400s, with the API's wording: non-empty `contents` and `parts`, valid roles, a
    function-call turn follows a user turn, a function-response turn follows a function-call turn and
    answers every call (by id when given, else by name). For Gemini 3 and 4 models, the first call of every
    step of the current turn carries an intact thought signature (or the documented placeholder). The
    rules of the conversation are logged (`breaks`, `holds`): a history that breaks two has both recorded.
    Whether the request streams is in the URL, not the body, so `options.stream` is left False for the
    server to set.
    """
    if not isinstance(body, dict):
        raise RequestInvalid("Invalid JSON payload received. Expected an object (GenerateContentRequest).",
                             rule=BODY_NOT_OBJECT)
    model = model if model is not None else body.get("model")
    if not isinstance(model, str) or not model:
        raise RequestInvalid("* GenerateContentRequest.model: unexpected model name format", "model",
                             rule=FIELD_INVALID)
    vertex = _VERTEX_NAME.fullmatch(model)
    resource, model = (model, vertex.group(1)) if vertex else (None, _bare_model(model))
    if "/" in model:
        raise RequestInvalid("* GenerateContentRequest.model: unexpected model name format", "model",
                             rule=FIELD_INVALID)
    unknown = [k for k in body if k not in REQUEST_FIELDS]
    if unknown:  # proto JSON knows its fields: anything else is refused by name
        raise RequestInvalid(f'Invalid JSON payload received. Unknown name "{unknown[0]}": Cannot find field.',
                             unknown[0], rule=UNKNOWN_FIELD)
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise RequestInvalid("* GenerateContentRequest.contents: contents is not specified", "contents",
                             rule=FIELD_INVALID)

    messages: list[Message] = _system_field(_get(body, "systemInstruction"))
    checks = _ConversationChecks()
    previous_role: str | None = None
    previous_calls: list[ToolCall] = []  # the calls of the content just before, when it was a model turn
    for i, content in enumerate(contents):
        role, parts = _content_parts(i, content)
        if role == "model":
            assistant = _model_turn(i, parts, previous_role, model, checks)
            messages.append(assistant)
            previous_calls = list(assistant.tool_calls)
        else:
            messages.extend(_user_turn(i, parts, previous_calls if previous_role == "model" else [], checks))
            previous_calls = []
        previous_role = role
    checks.close()
    if signs_calls(model):
        _check_signatures(contents, vertex=resource is not None)

    tools, server_tools = _tools_field(body.get("tools"))
    choice, allowed = _tool_config_field(_get(body, "toolConfig"))
    max_tokens, temperature, other_generation = _generation_field(_get(body, "generationConfig"))
    extras = {k: v for k, v in body.items() if k not in MODELLED}
    if resource is not None:
        extras[VERTEX_MODEL] = resource
    if server_tools:
        extras["server_tools"] = server_tools
    if allowed is not None:
        extras["allowed_function_names"] = allowed
    if other_generation:
        extras["generationConfig"] = other_generation
    options = ModelOptions(tool_choice=choice, max_tokens=max_tokens, temperature=temperature)
    for rule in SHAPE_RULES:  # decoded whole: none of the shape refusals applied
        holds(rule)
    return ChatRequest(model, tuple(messages), tuple(tools), options, extras=extras)


def _system_field(system: Any) -> list[Message]:
    if system is None:
        return []
    # A Content object, like every entry of `contents`; proto JSON refuses anything else (a bare
    # string included), so a learner who writes `"systemInstruction": "Be brief."` sees the 400.
    if not isinstance(system, dict) or not isinstance(system.get("parts", []), list):
        raise RequestInvalid("Invalid value at 'system_instruction' (type.googleapis.com/"
                             f"google.ai.generativelanguage.v1beta.Content), {dumps(system)[:80]}",
                             "system_instruction", rule=VALUE_INVALID)
    for j, part in enumerate(system.get("parts", [])):
        _check_part(f"system_instruction.parts[{j}]", "user", part)
    texts = [p["text"] for p in system.get("parts", [])
             if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return [Message.system("\n".join(texts))] if texts else []


def _content_parts(i: int, content: Any) -> tuple[str, list[dict]]:
    where = f"contents[{i}]"
    if not isinstance(content, dict):
        raise RequestInvalid(f"Invalid value at '{where}' (type.googleapis.com/"
                             "google.ai.generativelanguage.v1beta.Content)", where, rule=VALUE_INVALID)
    role = content.get("role", "user")  # a lone prompt may omit the role
    if role == "function":
        role = "user"  # older examples send results with this role; the API still takes it
    if role not in ("user", "model"):
        raise RequestInvalid("Please use a valid role: user, model.", f"{where}.role", rule=INVALID_ROLE)
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        raise RequestInvalid(f"* GenerateContentRequest.{where}.parts: contents.parts must not be empty.",
                             f"{where}.parts", rule=FIELD_INVALID)
    for j, part in enumerate(parts):
        _check_part(f"{where}.parts[{j}]", role, part)
    return role, parts


_SKIPPED_PARTS = ("inlineData", "fileData", "executableCode", "codeExecutionResult", "videoMetadata")


def _check_part(where: str, role: str, part: Any) -> None:
    if not isinstance(part, dict):
        raise RequestInvalid(f"Invalid value at '{where}' (type.googleapis.com/"
                             "google.ai.generativelanguage.v1beta.Part)", where, rule=VALUE_INVALID)
    text, call, response = part.get("text"), _get(part, "functionCall"), _get(part, "functionResponse")
    signature = _get(part, "thoughtSignature")
    if signature is not None and not _is_base64(signature):
        raise RequestInvalid(f"Invalid value at '{where}.thought_signature' (TYPE_BYTES), Base64 decoding failed "
                             f"for {dumps(signature)[:80]}", f"{where}.thought_signature", rule=VALUE_INVALID)
    if text is None and call is None and response is None:
        if any(_get(part, k) is not None for k in _SKIPPED_PARTS):
            return
        raise RequestInvalid(f"* GenerateContentRequest.{where}.data: required oneof field 'data' must have "
                             "one initialized field", f"{where}.data", rule=FIELD_INVALID)
    if text is not None and not isinstance(text, str):
        raise RequestInvalid(f"Invalid value at '{where}.text' (TYPE_STRING), {dumps(text)[:80]}",
                             f"{where}.text", rule=VALUE_INVALID)
    for field, value in (("function_call", call), ("function_response", response)):
        if value is None:
            continue
        if not isinstance(value, dict):
            kind = "FunctionCall" if field == "function_call" else "FunctionResponse"
            raise RequestInvalid(f"Invalid value at '{where}.{field}' (type.googleapis.com/"
                                 f"google.ai.generativelanguage.v1beta.{kind})", f"{where}.{field}", rule=VALUE_INVALID)
        if not isinstance(value.get("name"), str) or not value["name"]:
            raise RequestInvalid(f"* GenerateContentRequest.{where}.{field}.name: Name cannot be empty.",
                                 f"{where}.{field}.name", rule=FIELD_INVALID)
        if "id" in value and not isinstance(value["id"], str):
            raise RequestInvalid(f"Invalid value at '{where}.{field}.id' (TYPE_STRING)",
                                 f"{where}.{field}.id", rule=VALUE_INVALID)
    if call is not None:
        if role != "model":
            raise RequestInvalid(f"* GenerateContentRequest.{where}.function_call: function calls can only "
                                 "appear in model turns.", f"{where}.function_call", rule=FIELD_INVALID)
        if not isinstance(call.get("args", {}), dict):
            raise RequestInvalid(f"Invalid value at '{where}.function_call.args' "
                                 "(type.googleapis.com/google.protobuf.Struct)",
                                 f"{where}.function_call.args", rule=VALUE_INVALID)
    if response is not None:
        if role != "user":
            raise RequestInvalid(f"* GenerateContentRequest.{where}.function_response: function responses "
                                 "can only appear in user turns.", f"{where}.function_response", rule=FIELD_INVALID)
        if not isinstance(response.get("response", {}), dict):
            raise RequestInvalid(f"Invalid value at '{where}.function_response.response' "
                                 "(type.googleapis.com/google.protobuf.Struct)",
                                 f"{where}.function_response.response", rule=VALUE_INVALID)


def _is_base64(value: Any) -> bool:
    """Proto JSON `bytes`: base64 text, in the standard or the URL-safe alphabet."""
    if not isinstance(value, str):
        return False
    text = value.replace("-", "+").replace("_", "/")
    try:
        base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


class _ConversationChecks:
    """The conversation's rules one request exercised, each logged once (`sim.wire.common`'s rule log): a
    break as soon as a turn breaks it (`breaks`, so the first break is the one answered), else a pass when
    decoding ends (`holds`)."""

    def __init__(self) -> None:
        self.broken: dict[str, bool] = {}

    def ok(self, rule: str) -> None:
        self.broken.setdefault(rule, False)

    def fail(self, error: RequestInvalid) -> None:
        self.broken[str(error.rule)] = True
        breaks(error)

    def close(self) -> None:
        for rule, broken in self.broken.items():
            if not broken:
                holds(rule)


def _model_turn(i: int, parts: list[dict], previous_role: str | None, model: str,
                checks: _ConversationChecks) -> Message:
    wire_calls = [_get(p, "functionCall") for p in parts if _get(p, "functionCall") is not None]
    if wire_calls and previous_role != "user":
        checks.fail(RequestInvalid("Please ensure that function call turn comes immediately after a user turn or "
                                   "after a function response turn.", f"contents[{i}]", rule=CALL_TURN_ORDER))
    elif wire_calls:
        checks.ok(CALL_TURN_ORDER)
    # Id-less calls in the history get ids here too, so the neutral results can point at them.
    invented = synthetic_ids(f"request:{i}", [(c["name"], c.get("args")) for c in wire_calls])
    calls = [ToolCall.from_raw(c.get("id") or invented[k], c["name"], c.get("args") or {})
             for k, c in enumerate(wire_calls)]
    texts = [p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")]
    return Message.assistant("".join(texts) or None, calls, reasoning_of(parts, model))


def _check_signatures(contents: list[dict], *, vertex: bool = False) -> None:
    """The thought-signature rules of Gemini 3 and 4, in the API's words (Vertex AI's on its paths).

    Every signature must be an intact Gemini signature (or the documented placeholder); one another
    Gemini model made passes, its thought is simply not used. In the current turn (everything after the
    last user content that is not only function responses) the first functionCall part of each model step
    must carry one; earlier turns are not checked. Each break is logged and the first is answered.
    """
    current, checked, corrupted = 0, False, False
    asked = ""  # the user request each model turn answers (common.conversation_of, on the wire)
    for i, content in enumerate(contents):
        parts = content.get("parts") or []
        for part in parts:
            signature = _get(part, "thoughtSignature")
            if signature is None or signature == THOUGHT_SIGNATURE_PLACEHOLDER:
                continue
            checked = True
            # 400 INVALID_ARGUMENT "Corrupted thought signature.", no field named (reported bodies:
            # https://github.com/lbjlaq/Antigravity-Manager/issues/970, https://github.com/massgen/MassGen/issues/665)
            if not signature_valid(signature, SIGNATURE_KIND, signed_content(part), asked):
                corrupted = True
                breaks(RequestInvalid("Corrupted thought signature.", rule=CORRUPTED_SIGNATURE))
        if content.get("role", "user") != "model":
            asked = "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str)) or asked
            if any(_get(p, "functionResponse") is None for p in parts):
                current = i + 1
    if checked and not corrupted:
        holds(CORRUPTED_SIGNATURE)
    rule = VERTEX_MISSING_SIGNATURE if vertex else MISSING_SIGNATURE
    steps = [(i, calls) for i in range(len(contents)) if contents[i].get("role") == "model"
             for calls in [[p for p in contents[i].get("parts") or [] if _get(p, "functionCall") is not None]]
             if calls]
    unsigned = [(i, calls[0]) for i, calls in steps if _get(calls[0], "thoughtSignature") is None]
    missing = [(i, call) for i, call in unsigned if i >= current]
    for i, call in missing:
        breaks(_missing_signature(i, _get(call, "functionCall")["name"], vertex))
    if any(i >= current for i, _ in steps) and not missing:
        holds(rule)
    # Earlier turns are not validated ("Only the current turn is required; we won't validate the previous
    # turns", the thought-signatures page), but the signature "preserves reasoning context": a degradation.
    earlier = [i for i, _ in unsigned if i < current]
    for i in earlier:
        degrades(EARLIER_SIGNATURE_DROPPED, EARLIER_SIGNATURE_WORDS, f"contents[{i}]")
    if any(i < current for i, _ in steps) and not earlier:
        holds(EARLIER_SIGNATURE_DROPPED)


#: What the earlier-signature degradation changes, in the API's own words (from its missing-signature 400).
EARLIER_SIGNATURE_WORDS = "missing thought_signature may lead to degraded model performance."


def _missing_signature(i: int, name: str, vertex: bool) -> RequestInvalid:
    """The refusal of contents[i]'s unsigned call: the Gemini API counts the content from 1 ("position 2"
    for contents[1], as reported); Vertex AI words it otherwise, and the reports' numbers fit a count from 0
    (the reports do not say which: the simulator's reading)."""
    if vertex:
        return RequestInvalid(
            f"Unable to submit request because function call `{name}` in the {i}. content block is missing a "
            "`thought_signature`. Learn more: https://docs.cloud.google.com/vertex-ai/generative-ai/docs/"
            "thought-signatures", f"contents[{i}]", rule=VERTEX_MISSING_SIGNATURE)
    return RequestInvalid(
        "Function call is missing a thought_signature in functionCall parts. This is required for tools "
        "to work correctly, and missing thought_signature may lead to degraded model performance. "
        f"Additional data, function call `default_api:{name}` , position {i + 1}. Please refer to "
        "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", f"contents[{i}]",
        rule=MISSING_SIGNATURE)


def _user_turn(i: int, parts: list[dict], calls: list[ToolCall], checks: _ConversationChecks) -> list[Message]:
    """Tool messages for the functionResponse parts (answering `calls`, the turn before), then the text."""
    responses = [_get(p, "functionResponse") for p in parts if _get(p, "functionResponse") is not None]
    texts = [p["text"] for p in parts if isinstance(p.get("text"), str)]
    messages: list[Message] = []
    if responses:
        _check_turn_answers(i, responses, calls, checks)
        unanswered = list(calls)
        for response in responses:
            call = _answered_call(response, unanswered)
            unanswered = [c for c in unanswered if c is not call]
            content, is_error = _response_content(response.get("response", {}))
            call_id = call.id if call is not None else response.get("id")
            messages.append(Message("tool", content, (), call_id, response["name"], is_error))
    if texts or not responses:
        messages.append(Message.user("\n".join(texts)))
    return messages


def _check_turn_answers(i: int, responses: list[dict], calls: list[ToolCall], checks: _ConversationChecks) -> None:
    """A function-response turn comes right after a function-call turn, answers as many calls as it made, each
    response naming its call (by id when it has one, else by name)."""
    where = f"contents[{i}]"
    if not calls:
        checks.fail(RequestInvalid("Please ensure that function response turn comes immediately after a function "
                                   "call turn.", where, rule=RESPONSE_TURN_ORDER))
        return
    checks.ok(RESPONSE_TURN_ORDER)
    if len(responses) != len(calls):
        checks.fail(RequestInvalid("Please ensure that the number of function response parts is equal to the "
                                   "number of function call parts of the function call turn.", where,
                                   rule=RESPONSE_COUNT))
    else:
        checks.ok(RESPONSE_COUNT)
    by_id, unanswered = {c.id for c in calls}, list(calls)
    for k, response in enumerate(responses):
        if "id" in response:
            if response["id"] not in by_id:
                checks.fail(RequestInvalid("functionResponse.id does not match functionCall.id",
                                           f"{where}.parts[{k}].function_response.id", rule=RESPONSE_ID))
                continue
            checks.ok(RESPONSE_ID)
        call = _answered_call(response, unanswered)
        if "id" not in response:
            if call is None:
                checks.fail(RequestInvalid(f"functionResponse.name {response['name']!r} matches no functionCall of "
                                           "the previous turn", f"{where}.parts[{k}].function_response.name",
                                           rule=RESPONSE_NAME))
            else:
                checks.ok(RESPONSE_NAME)
        unanswered = [c for c in unanswered if c is not call]


def _answered_call(response: dict, unanswered: list[ToolCall]) -> ToolCall | None:
    """The call a functionResponse answers: by id when it has one; else by name (FunctionResponse.name "matches
    FunctionCall.name"), the first not yet answered of that name (our choice: the docs say no more)."""
    if "id" in response:
        return next((c for c in unanswered if c.id == response["id"]), None)
    return next((c for c in unanswered if c.name == response["name"]), None)


def _response_content(response: dict) -> tuple[str, bool]:
    """`{"output": x}` / `{"error": x}` back to the tool message text (x re-serialised when not a str)."""
    if len(response) == 1 and ("output" in response or "error" in response):
        (key, value), = response.items()
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return text, key == "error"
    return json.dumps(response, ensure_ascii=False), "error" in response


def _tools_field(tools: Any) -> tuple[list[ToolSpec], list[dict]]:
    if tools is None:
        return [], []
    if not isinstance(tools, list):
        raise RequestInvalid("Invalid value at 'tools' (type.googleapis.com/google.ai.generativelanguage."
                             "v1beta.Tool)", "tools", rule=VALUE_INVALID)
    specs: list[ToolSpec] = []
    server_tools: list[dict] = []
    for t, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise RequestInvalid(f"Invalid value at 'tools[{t}]' (type.googleapis.com/"
                                 "google.ai.generativelanguage.v1beta.Tool)", f"tools[{t}]", rule=VALUE_INVALID)
        declarations = _get(tool, "functionDeclarations")
        if declarations is None:
            server_tools.append(tool)  # googleSearch, codeExecution, ...: the server's own tools
            continue
        if not isinstance(declarations, list):
            raise RequestInvalid(f"Invalid value at 'tools[{t}].function_declarations' (type.googleapis.com/"
                                 "google.ai.generativelanguage.v1beta.FunctionDeclaration), "
                                 f"{dumps(declarations)[:80]}", f"tools[{t}].function_declarations",
                                 rule=VALUE_INVALID)
        specs.extend(tool_from_wire(d, f"tools[{t}].function_declarations[{k}]")
                     for k, d in enumerate(declarations))
    return specs, server_tools


def _tool_config_field(config: Any) -> tuple[ToolChoice, list | None]:
    """`toolConfig` back to a tool_choice; ANY with several allowed names keeps them for `extras`."""
    if config is None:
        return "auto", None
    if not isinstance(config, dict):
        raise RequestInvalid("Invalid value at 'tool_config' (type.googleapis.com/google.ai.generativelanguage."
                             f"v1beta.ToolConfig), {dumps(config)[:80]}", "tool_config", rule=VALUE_INVALID)
    calling = _get(config, "functionCallingConfig")
    if calling is None:
        return "auto", None
    if not isinstance(calling, dict):
        raise RequestInvalid("Invalid value at 'tool_config.function_calling_config' (type.googleapis.com/"
                             "google.ai.generativelanguage.v1beta.FunctionCallingConfig), "
                             f"{dumps(calling)[:80]}",
                             "tool_config.function_calling_config", rule=VALUE_INVALID)
    mode = calling.get("mode", "AUTO")
    allowed = _get(calling, "allowedFunctionNames")
    if allowed is not None and not (isinstance(allowed, list) and all(isinstance(n, str) for n in allowed)):
        raise RequestInvalid("Invalid value at 'tool_config.function_calling_config.allowed_function_names' "
                             f"(TYPE_STRING), {dumps(allowed)[:80]}",
                             "tool_config.function_calling_config.allowed_function_names", rule=VALUE_INVALID)
    if mode in ("AUTO", "MODE_UNSPECIFIED", "VALIDATED"):
        return "auto", None
    if mode == "NONE":
        return "none", None
    if mode == "ANY":
        if allowed and len(allowed) == 1:
            return {"name": allowed[0]}, None
        return "required", allowed or None
    raise RequestInvalid("Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/"
                         "google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), "
                         f"{dumps(mode)[:80]}", "tool_config.function_calling_config.mode", rule=VALUE_INVALID)


def _generation_field(config: Any) -> tuple[int | None, float | None, dict]:
    if config is None:
        return None, None, {}
    if not isinstance(config, dict):
        raise RequestInvalid("Invalid value at 'generation_config' (type.googleapis.com/"
                             f"google.ai.generativelanguage.v1beta.GenerationConfig), {dumps(config)[:80]}",
                             "generation_config", rule=VALUE_INVALID)
    max_tokens, temperature = _get(config, "maxOutputTokens"), config.get("temperature")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)):
        raise RequestInvalid(f"Invalid value at 'generation_config.max_output_tokens' (TYPE_INT32), "
                             f"{dumps(max_tokens)[:80]}", "generation_config.max_output_tokens", rule=VALUE_INVALID)
    if temperature is not None and (isinstance(temperature, bool)
                                    or not isinstance(temperature, (int, float))):
        raise RequestInvalid(f"Invalid value at 'generation_config.temperature' (TYPE_FLOAT), "
                             f"{dumps(temperature)[:80]}", "generation_config.temperature", rule=VALUE_INVALID)
    other = {k: v for k, v in config.items()
             if k not in ("maxOutputTokens", "max_output_tokens", "temperature")}
    return max_tokens, temperature, other


def call_ids_enabled(request: ChatRequest) -> bool:
    """Whether responses carry `functionCall.id`: `extras[CALL_IDS_OPTION]` when set, else only for the
    Gemini 3 and 4 models, so the simulator shows both the old (id-less) and the new behaviour."""
    if CALL_IDS_OPTION in request.extras:
        return bool(request.extras[CALL_IDS_OPTION])
    return signs_calls(request.model)


def response_id(turn: ModelTurn, request: ChatRequest) -> str:
    """The turn's own id, or one derived from what identifies it (same request -> same id)."""
    if turn.id:
        return turn.id
    return stable_id(request.model, len(request.messages), turn.text,
                     [c.to_dict() for c in turn.tool_calls], length=22)


def call_ids(turn: ModelTurn, request: ChatRequest) -> list[str | None]:
    """Per call: a short Gemini-3-style id (kept when the call already has one), or None when ids are off."""
    if not call_ids_enabled(request):
        return [None] * len(turn.tool_calls)
    rid = response_id(turn, request)
    return [c.id if _GEMINI_ID_RE.fullmatch(c.id) else stable_id(rid, i, c.id, length=8)
            for i, c in enumerate(turn.tool_calls)]


def _finish_reason(turn: ModelTurn) -> str:
    if turn.native_stop in KNOWN_FINISH_REASONS:
        neutral = FINISH_TO_NEUTRAL.get(turn.native_stop, "other")
        if neutral == turn.stop or (turn.stop == "tool_calls" and neutral in ("stop", "other")):
            return turn.native_stop
    return NEUTRAL_TO_FINISH.get(turn.stop, "STOP")


def reasoning_for(turn: ModelTurn, request: ChatRequest) -> ReasoningState | None:
    """Gemini 3 and 4 sign every answer: the first functionCall part of a turn with calls (a parallel batch
    has one signature, on its first call), else the last part. The signature names the model it serves and
    covers the kind of part it rides on and the user request it answers (see `signed_content`)."""
    model = _bare_model(request.model)
    if not signs_calls(model):
        return None
    part: dict = {"functionCall": {}} if turn.tool_calls else {"text": turn.text or ""}
    signature = mint_signature(SIGNATURE_KIND, model, signed_content(part), conversation_of(request.messages))
    item = {"thoughtSignature": signature, "on": "functionCall", "index": 0} if turn.tool_calls else \
        {"thoughtSignature": signature, "on": "text"}
    return ReasoningState(NAME, turn.model or request.model, (item,))


def signed_content(part: dict) -> str:
    """What the simulator's thought signature covers, besides the model family and the conversation: the kind
    of part it rides on ("functionCall", "text" or "thought"). Only what Google says signatures are bound to:
    the page on thought signatures calls them "encrypted representations of the model's internal thought
    process", to be passed back "exactly as received" on the part they came with, never truncated, split or
    merged, and valid within "the same conversation history, model and Google Cloud project". It says nothing
    of the answer's text or the calls' arguments, so editing those is not refused here (nor, as far as any
    source shows, by Google); a signature moved onto another kind of part, into another conversation, cut,
    flipped or invented is ("Corrupted thought signature.")."""
    if _get(part, "functionCall") is not None:
        return "functionCall"
    return "thought" if part.get("thought") else "text"


def _parts(turn: ModelTurn, request: ChatRequest) -> tuple[list[dict], list[dict]]:
    """(thought and text parts, functionCall parts) of the response, signed as the turn's state says."""
    state = turn.reasoning if turn.reasoning is not None and turn.reasoning.format == NAME else None
    items = state.items if state else ()
    text, call_signatures = signed_text_parts(items, turn.text)
    calls = [call_part(call, call_id, call_signatures.get(k))
             for k, (call, call_id) in enumerate(zip(turn.tool_calls, call_ids(turn, request), strict=True))]
    return text, calls


def _usage_to_wire(usage: Usage) -> dict:
    return {"promptTokenCount": usage.input_tokens, "candidatesTokenCount": usage.output_tokens,
            "totalTokenCount": usage.total_tokens}


def build_response(turn: ModelTurn, request: ChatRequest) -> dict:
    """The JSON a real server answers (the Gemini API reference); validates as `GenerateContentResponse`."""
    text, calls = _parts(turn, request)
    return {"candidates": [{"content": {"role": "model", "parts": text + calls},
                            "finishReason": _finish_reason(turn), "index": 0}],
            "usageMetadata": _usage_to_wire(turn.usage),
            "modelVersion": turn.model or request.model, "responseId": response_id(turn, request)}


def build_stream(turn: ModelTurn, request: ChatRequest) -> list[SSEvent]:
    """The same response as `data:`-only SSE chunks (the Gemini API reference), each a full response.

    The text goes out in pieces (a signature on the last piece), then one call per chunk (with its
    signature); the last chunk carries `finishReason` and the final usage (earlier ones only count the
    prompt). No event names, no `[DONE]`.
    """
    text, calls = _parts(turn, request)
    pieces = [[part] for part in text if part.get("thought")]
    plain = [part for part in text if not part.get("thought")]
    if plain:  # the text in pieces; a signature comes with the last piece
        words = plain[0]["text"]
        chunks = [{"text": words[i:i + 24]} for i in range(0, len(words), 24)] or [{"text": ""}]
        if "thoughtSignature" in plain[0]:
            chunks[-1]["thoughtSignature"] = plain[0]["thoughtSignature"]
        pieces += [[chunk] for chunk in chunks]
    pieces += [[call] for call in calls]
    if not pieces:
        pieces = [[]]
    head = {"modelVersion": turn.model or request.model, "responseId": response_id(turn, request)}
    events = []
    for n, parts in enumerate(pieces):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        last = n == len(pieces) - 1
        if last:
            candidate["finishReason"] = _finish_reason(turn)
        usage = _usage_to_wire(turn.usage) if last else {
            "promptTokenCount": turn.usage.input_tokens, "totalTokenCount": turn.usage.input_tokens}
        events.append(SSEvent(dumps({"candidates": [candidate], "usageMetadata": usage, **head})))
    return events


def build_error(status: int, message: str, error_type: str | None = None, **kw: Any) -> dict:
    """Google's RPC error body: `{"error": {"code", "message", "status", "details"}}`.

    `error_type` is the RPC status name (defaults from the status, as the Gemini API reference lists
    them). Details follow the API: a 429 gets QuotaFailure + RetryInfo (`retry_after=` seconds, default
    1), a 400 with `param=` gets a BadRequest field violation, `reason=` adds an ErrorInfo (e.g.
    "API_KEY_INVALID"); `details=` replaces them all.
    """
    if error_type is None:
        error_type = STATUS_NAMES.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT")
    details = kw.get("details")
    if details is None:
        details = []
        if kw.get("reason"):
            details.append({"@type": _TYPE_URL + "ErrorInfo", "reason": kw["reason"],
                            "domain": "googleapis.com",
                            "metadata": {"service": "generativelanguage.googleapis.com"}})
        if status == 400 and kw.get("param"):
            details.append({"@type": _TYPE_URL + "BadRequest",
                            "fieldViolations": [{"field": kw["param"], "description": message}]})
        if status == 429:
            delay = kw.get("retry_after")
            delay = 1 if delay is None else delay
            details.append({"@type": _TYPE_URL + "QuotaFailure", "violations": [{
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]})
            details.append({"@type": _TYPE_URL + "RetryInfo", "retryDelay": f"{delay:g}s"})
    error: dict[str, Any] = {"code": status, "message": message, "status": error_type}
    if details:
        error["details"] = details
    return {"error": error}


def build_stream_error(status: int, message: str, request: ChatRequest,
                       sent: Sequence[StreamEvent] = ()) -> JSONLine:
    """A failure after the stream started, as Gemini sends it: the error body itself, pretty-printed,
    on plain lines between the `data:` events (not an event of its own). google-genai buffers such
    lines until the braces balance and raises the error's class (503 -> ServerError); an SSE parser
    that keeps only `data:` lines never sees it, and its stream just ends without a finishReason."""
    return JSONLine(json.dumps(build_error(status, message), indent=2, ensure_ascii=False))


def build_model_list(names: Sequence[str]) -> dict:
    """GET /v1beta/models: `{"models": [{"name": "models/…", "supportedGenerationMethods", ...}]}`."""
    methods = ["generateContent", "streamGenerateContent", "countTokens"]
    return {"models": [{"name": f"models/{n}", "displayName": n, "version": "sim", "inputTokenLimit": 1048576,
                        "outputTokenLimit": 65536, "supportedGenerationMethods": methods} for n in names]}


def model_refusal(request: ChatRequest) -> RequestInvalid | None:
    """A model Google has shut down (`RETIRED`) gets the API's 404, in the words users report for one: the
    Gemini API's "not found" sentence (the same as for a name it never had), or Vertex AI's "Publisher
    Model … was not found" naming the resource the path asked for."""
    model = _bare_model(request.model)
    if model not in RETIRED:
        return None
    resource = request.extras.get(VERTEX_MODEL)
    if resource is not None:
        return RequestInvalid(f"Publisher Model `{resource}` was not found or your project does not have access "
                              "to it. Please ensure you are using a valid model version. For more information, "
                              "see: https://cloud.google.com/vertex-ai/generative-ai/docs/learn/model-versions",
                              status=404, rule=VERTEX_RETIRED_MODEL)
    return RequestInvalid(SERVER.unknown_model.format(model=model), status=404, rule=RETIRED_MODEL)

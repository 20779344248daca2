"""What OpenAI's two APIs share on the server side: the platform's facts, error bodies and words.

Chat Completions and Responses are two formats on one platform: the same routes and key header, the same
`{"error": {"message", "type", "param", "code"}}` body, the same words for a missing or mistyped field
("Missing required parameter: 'tools[0].name'."), the same rules for a tool name. Those pieces live here,
public, so either server half can be read with only this module and `common` beside it.

    from agentkit.sim.wire import openai_common as oc
    raise oc.invalid_type("temperature", "a decimal", "hot")
    # RequestInvalid: Invalid type for 'temperature': expected a decimal, but got a string instead.

The client half (auth, reading error bodies) is `agentkit.providers.openai_common`.
"""

from __future__ import annotations

import re
from typing import Any

from ...core.types import ModelTurn
from ...providers.common import stable_id
from .common import ChatRequest, RequestInvalid, breaks, holds
from .contract import Route, ServerFacts, SpendLimitAnswer

#: 2026-01-01T00:00:00Z. A fixed timestamp keeps the simulator's answers identical run after run.
CREATED = 1767225600

NOT_JSON = ("We could not parse the JSON body of your request. (HINT: This likely means you aren't using "
            "your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not "
            "valid JSON.)")
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]+")  # used with fullmatch: `$` would let "f\n" through

#: Error `code` a status gets when the caller names none.
DEFAULT_CODES = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}

#: Fault wording, shared by both APIs (the simulator fills in {model} and {retry_ms}).
FAULT_MESSAGES = {
    429: "Rate limit reached for {model} on requests per min (RPM): Limit 60, Used 60, Requested 1. "
         "Please try again in {retry_ms}ms.",
    500: "The server had an error while processing your request. Sorry about that!",
    503: "The server is overloaded or not ready yet.",
}
NO_KEY = ("You didn't provide an API key. You need to provide your API key in an Authorization header using "
          "Bearer auth (i.e. Authorization: Bearer YOUR_KEY). On the simulator any key works.")
UNKNOWN_MODEL = "The model `{model}` does not exist or you do not have access to it."
RATE_LIMIT_HEADERS = {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0",
                      "x-ratelimit-reset-requests": "{retry_ms}ms"}
#: A hard spend limit reached (the `spend` fault): OpenAI's spend-limits guide gives the 429 and its codes,
#: its help centre the sentence and "billing-related errors can still use the broader error.type value
#: insufficient_quota" (ledger: openai-chat.spend_limit).
SPEND_LIMIT = SpendLimitAnswer("You exceeded your current quota, please check your plan and billing details.",
                               "insufficient_quota", {"code": "project_spend_limit_exceeded"})


def platform_server(endpoint: Route) -> ServerFacts:
    """What the platform does around a request body (contract.py), the same for Chat Completions and
    Responses: besides the endpoint's own route, the model list, the bearer key, the request id, the
    wording of faults and rate limits."""
    return ServerFacts(
        routes=(endpoint, Route("GET", "/v1/models", "models")),
        sdk_base_path="/v1",
        no_key=(401, NO_KEY),
        key_headers=("authorization",),
        unknown_model=UNKNOWN_MODEL,
        not_json=NOT_JSON,
        fault_messages=FAULT_MESSAGES,
        request_id_header="x-request-id",
        nearest_status={529: 503},
        rate_limit_headers=RATE_LIMIT_HEADERS,
        spend_limit=SPEND_LIMIT,
    )


# --- server side: the wording of request errors -------------------------------------------------------
# Each template is one fidelity-ledger entry (agentkit/sim/fidelity.toml), shared by both APIs and by
# OpenRouter, which passes OpenAI's shape on: the ids below are what every refusal here names.

MISSING, INVALID_TYPE, INVALID_VALUE = ("openai-chat.missing_required_parameter", "openai-chat.invalid_type",
                                        "openai-chat.invalid_value")
EMPTY_ARRAY, OUT_OF_RANGE, UNSUPPORTED = ("openai-chat.empty_array", "openai-chat.out_of_range",
                                          "openai-responses.unsupported_parameter")
INVALID_SCHEMA, NOT_JSON_RULE = "openai-chat.invalid_function_parameters", "openai-chat.not_json"
TOOL_NAME_EMPTY, TOOL_NAME_LONG, TOOL_NAME_PATTERN = ("openai-chat.tool_name_empty", "openai-chat.tool_name_too_long",
                                                      "openai-chat.tool_name_pattern")
#: The shape refusals every request is checked against (both APIs), and those of its tools (`TOOL_SHAPE_RULES`).
SHAPE_RULES = (MISSING, INVALID_TYPE, INVALID_VALUE, EMPTY_ARRAY, OUT_OF_RANGE)
TOOL_SHAPE_RULES = (INVALID_SCHEMA, TOOL_NAME_EMPTY, TOOL_NAME_LONG, TOOL_NAME_PATTERN)


def shapes_held(has_tools: bool, extra: tuple[str, ...] = ()) -> None:
    """A request decoded whole: none of the shape refusals applied (logged once each, `common.holds`)."""
    for rule in SHAPE_RULES + (TOOL_SHAPE_RULES if has_tools else ()) + extra:
        holds(rule)


def kind_of(value: Any) -> str:
    """The API's name for a JSON value's type, as its errors say it ("a string", "an array", ...)."""
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


def quoted(values: tuple[str, ...], last: str = "and") -> str:
    items = [f"'{v}'" for v in values]
    return f" {last} ".join(items) if len(items) < 3 else ", ".join(items[:-1]) + f", {last} " + items[-1]


def missing(param: str) -> RequestInvalid:
    return RequestInvalid(f"Missing required parameter: '{param}'.", param, code="missing_required_parameter",
                          rule=MISSING)


def invalid_type(param: str, expected: str, value: Any) -> RequestInvalid:
    return RequestInvalid(f"Invalid type for '{param}': expected {expected}, but got {kind_of(value)} instead.",
                          param, code="invalid_type", rule=INVALID_TYPE)


def invalid_value(param: str, value: Any, allowed: tuple[str, ...]) -> RequestInvalid:
    if not isinstance(value, str):
        return invalid_type(param, "one of " + quoted(allowed, "or"), value)
    return RequestInvalid(f"Invalid value: '{value}'. Supported values are: {quoted(allowed)}.", param,
                          code="invalid_value", rule=INVALID_VALUE)


def empty_array(param: str) -> RequestInvalid:
    return RequestInvalid(f"Invalid '{param}': empty array. Expected an array with minimum length 1, but got "
                          "an empty array instead.", param, code="empty_array", rule=EMPTY_ARRAY)


def out_of_range(param: str, value: Any, op: str, bound: float, kind: str) -> RequestInvalid:
    """The API's words for a number out of bounds ("... Expected a value >= 1, but got 0 instead.")."""
    side, code = ("below minimum", "below_min") if op == ">=" else ("above maximum", "above_max")
    return RequestInvalid(f"Invalid '{param}': {kind} {side} value. Expected a value {op} {bound}, but got "
                          f"{value} instead.", param, code=f"{kind}_{code}_value", rule=OUT_OF_RANGE)


def unsupported(param: str, moved_to: str, api: str) -> RequestInvalid:
    """A field this API does not take, with the one it uses instead (`max_tokens` on Responses)."""
    return RequestInvalid(f"Unsupported parameter: '{param}'. In the {api}, this parameter has moved to "
                          f"'{moved_to}'.", param, code="unsupported_parameter", rule=UNSUPPORTED)


def invalid_schema(name: str, param: str, problem: str) -> RequestInvalid:
    """A tool whose parameters are not valid JSON Schema: the API quotes the validator's complaint."""
    return RequestInvalid(f"Invalid schema for function '{name}': {problem}.", param,
                          code="invalid_function_parameters", rule=INVALID_SCHEMA)


#: The ledger ids of strict mode's two schema rules (both APIs).
STRICT_CLOSED, STRICT_REQUIRED = "openai-chat.strict_additional_properties", "openai-chat.strict_required"


def check_strict_schema(name: str, schema: dict | None, param: str) -> None:
    """A `strict: true` function's schema, checked as the API checks it before any model sees it.

    OpenAI's function-calling guide (strict mode): every object sets `additionalProperties: false` and
    lists every property in `required` ("optional" is a type that allows null); "if you send strict: true
    and your schema does not meet the requirements above, the request will be rejected". The first object
    that breaks a rule (parents first) is named by its path, as users report the 400:

        check_strict_schema("get_weather", {"type": "object", "properties": {"city": {"type": "string"}}},
                            "tools[0].function.parameters")
        # RequestInvalid: Invalid schema for function 'get_weather': In context=(), 'additionalProperties' is
        # required to be supplied and to be false.

    Left out on purpose: strict mode's other limits (unsupported keywords, sizes, formats), which
    `agentkit.core.strict.strict_problems` lists for a client; the simulator refuses only these two.
    """
    from ...core.strict import json_type, walk

    if schema is None:
        return
    broken: set[str] = set()
    for pointer, node in walk(schema):
        if json_type(node) != "object":
            continue
        context = tuple(pointer[2:].split("/")) if pointer != "#" else ()
        head = f"Invalid schema for function '{name}': In context={context!r}, "
        if node.get("additionalProperties") is not False and STRICT_CLOSED not in broken:
            broken.add(STRICT_CLOSED)
            breaks(RequestInvalid(head + "'additionalProperties' is required to be supplied and to be false.", param,
                                  code="invalid_function_parameters", rule=STRICT_CLOSED))
        listed = node.get("required") if isinstance(node.get("required"), list) else []
        absent = [key for key in node.get("properties") or {} if key not in listed]
        if absent and STRICT_REQUIRED not in broken:
            broken.add(STRICT_REQUIRED)
            breaks(RequestInvalid(head + "'required' is required to be supplied and to be an array including every "
                                  f"key in properties. Missing '{absent[0]}'.", param,
                                  code="invalid_function_parameters", rule=STRICT_REQUIRED))
    for rule in (STRICT_CLOSED, STRICT_REQUIRED):
        if rule not in broken:
            holds(rule, param)


def tool_name(d: dict, at: str) -> str:
    """The API's refusals of a tool name: missing, empty, longer than 64, or outside [a-zA-Z0-9_-]."""
    name, param = required_str(d, "name", at), f"{at}.name"
    if not name:
        raise RequestInvalid(f"Invalid '{param}': empty string. Expected a string with minimum length 1, but "
                             "got an empty string instead.", param, code="empty_string", rule=TOOL_NAME_EMPTY)
    if len(name) > 64:
        raise RequestInvalid(f"Invalid '{param}': string too long. Expected a string with maximum length 64, "
                             f"but got a string with length {len(name)} instead.", param,
                             code="string_above_max_length", rule=TOOL_NAME_LONG)
    if not TOOL_NAME.fullmatch(name):
        raise RequestInvalid(f"Invalid '{param}': string does not match pattern. Expected a string that "
                             "matches the pattern '^[a-zA-Z0-9_-]+$'.", param, code="invalid_value",
                             rule=TOOL_NAME_PATTERN)
    return name


def required(d: dict, key: str, at: str) -> Any:
    if d.get(key) is None:
        raise missing(f"{at}.{key}")
    return d[key]


def required_str(d: dict, key: str, at: str) -> str:
    value = required(d, key, at)
    if not isinstance(value, str):
        raise invalid_type(f"{at}.{key}", "a string", value)
    return value


def required_object(d: dict, key: str, at: str) -> dict:
    value = required(d, key, at)
    if not isinstance(value, dict):
        raise invalid_type(f"{at}.{key}", "an object", value)
    return value


def optional(d: dict, key: str, kind: type, expected: str, at: str) -> Any:
    value = d.get(key)
    if value is not None and (not isinstance(value, kind) or (kind is not bool and isinstance(value, bool))):
        raise invalid_type(f"{at}.{key}", expected, value)
    return value


def temperature_field(body: dict) -> float | None:
    value = body.get("temperature")
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise invalid_type("temperature", "a decimal", value)
    if not 0 <= value <= 2:
        op, bound = (">=", 0) if value < 0 else ("<=", 2)
        raise out_of_range("temperature", value, op, bound, "decimal")
    return value


def model_refusal(request: ChatRequest) -> RequestInvalid | None:
    """Neither API refuses a model family on its own (Chat's GPT-6 rule lives in openai_chat)."""
    return None


# --- server side: writing answers ---------------------------------------------------------------------

def build_error(status: int, message: str, error_type: str | None = None, **details: Any) -> dict:
    """The platform's error body `{"error": {"message", "type", "param", "code"}}` (OpenAI's Chat Completions API
    reference).

    `error_type` defaults from the status (429 -> "requests", 5xx -> "server_error", else
    "invalid_request_error"); pass `param=` and `code=` as RequestInvalid carries them.
    """
    if error_type is None:
        error_type = ("requests" if status == 429 else "server_error" if status >= 500
                      else "invalid_request_error")
    return {"error": {"message": message, "type": error_type, "param": details.get("param"),
                      "code": details.get("code", DEFAULT_CODES.get(status))}}


def turn_id(prefix: str, length: int, turn: ModelTurn, request: ChatRequest) -> str:
    """An id of the platform's shape (`chatcmpl-…`, `resp_…`): the turn's own when it already has that shape,
    else derived from the turn's own id or, without one, from what identifies the turn (same request -> same id)."""
    if turn.id and turn.id.startswith(prefix):
        return turn.id
    seed = turn.id or [request.model, len(request.messages), turn.text, [c.to_dict() for c in turn.tool_calls]]
    return prefix + stable_id(seed, length=length)


def completion_id(turn: ModelTurn, request: ChatRequest) -> str:
    """A Chat Completions id, `chatcmpl-` and 29 characters."""
    return turn_id("chatcmpl-", 29, turn, request)


def call_ids(turn: ModelTurn, request: ChatRequest) -> list[str]:
    """`call_…` ids for the turn's calls; neutral ids ("1", "c1") are made unique per response."""
    rid = completion_id(turn, request)
    return [c.id if c.id.startswith("call_") else "call_" + stable_id(rid, i, c.id, length=24)
            for i, c in enumerate(turn.tool_calls)]


def pieces(text: str, parts: int = 3) -> list[str]:
    """`text` cut into up to `parts` pieces (two or more once it has two characters), as streams send it."""
    if len(text) < 2:
        return [text]
    size = -(-len(text) // min(parts, len(text)))
    return [text[i:i + size] for i in range(0, len(text), size)]


def model_list(names: list[str] | tuple[str, ...]) -> dict:
    """GET /v1/models: `{"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}`."""
    return {"object": "list", "data": [{"id": n, "object": "model", "created": CREATED, "owned_by": "agentkit-sim"}
                                       for n in names]}

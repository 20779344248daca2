"""1,000 malformed requests across every route: each gets a 4xx in that provider's error shape.

A seeded generator (same cases every run) breaks a valid two-turn tool conversation of each format
in the ways clients actually break requests: wrong content types, bytes that are not JSON, JSON cut
short, JSON that is not an object, UTF-16 or BOM-prefixed bodies, nesting deep enough to blow a
recursive parser, huge strings, bodies over the size limit, a required field left out, and a wrong
JSON type put at every field of the body in turn, tool parameter schemas included. Gemini's cases
rotate over its four routes (plain, SSE stream, JSON-array stream, and the /v1 path google-genai
uses). After the barrage the server must still answer a valid request.

What counts as "malformed" is checked, not assumed: a wrong type is only generated where the
format's codec must refuse it (a field whose JSON type the API fixes; see `not_a_mistake` for the
places where another type is a legitimate alternative, such as a string or a list of parts for
`content`). Inside a tool's parameter schema a change is a mistake exactly when python-jsonschema
says the schema no longer is valid JSON Schema (a boolean subschema, say, still is). Ollama decodes
into Go types, where null is every field's empty value and the schema's vocabulary is not checked.

The last tests ask for more than a request can sensibly want (a 5,000-digit model suffix, a latency
of thirty digits): the answer is a 4xx or a normal answer, never a 500 and never a sleep without end.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import httpx
import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError


FORMATS = ("openai-chat", "openai-responses", "anthropic", "gemini", "openrouter", "ollama")
SEED = 20261130
CASES = 1000

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
RATE = {"type": "object", "properties": {"base": {"type": "string"}, "quote": {"type": "string"}},
        "required": ["base", "quote"]}
ASK = "東京の天気と、1ドル何円か教えて"

#: A valid request per format: a user ask, the model's two parallel calls, their results.
VALID: dict[str, dict] = {
    "openai-chat": {
        "model": "sim-reasoner", "temperature": 0.5, "parallel_tool_calls": True, "tool_choice": "auto",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": ASK},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\":\"東京\"}"}},
                {"id": "call_2", "type": "function",
                 "function": {"name": "get_exchange_rate", "arguments": "{\"base\":\"USD\",\"quote\":\"JPY\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "晴れ、22度"},
            {"role": "tool", "tool_call_id": "call_2", "content": "1 USD = 155.2 JPY"}],
        "tools": [{"type": "function",
                   "function": {"name": "get_weather", "description": "weather", "parameters": SCHEMA}},
                  {"type": "function", "function": {"name": "get_exchange_rate", "parameters": RATE}}]},
    "openai-responses": {
        "model": "sim-reasoner", "instructions": "Be brief.", "tool_choice": "auto", "parallel_tool_calls": True,
        "input": [
            {"role": "user", "content": ASK},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"東京\"}"},
            {"type": "function_call", "call_id": "call_2", "name": "get_exchange_rate",
             "arguments": "{\"base\":\"USD\",\"quote\":\"JPY\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "晴れ、22度"},
            {"type": "function_call_output", "call_id": "call_2", "output": "1 USD = 155.2 JPY"}],
        "tools": [{"type": "function", "name": "get_weather", "parameters": SCHEMA, "strict": False},
                  {"type": "function", "name": "get_exchange_rate", "parameters": RATE, "strict": False}]},
    "anthropic": {
        "model": "claude-sonnet-4-5", "max_tokens": 512, "system": "Be brief.", "tool_choice": {"type": "auto"},
        "messages": [
            {"role": "user", "content": ASK},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "東京"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_exchange_rate",
                 "input": {"base": "USD", "quote": "JPY"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "晴れ、22度"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "1 USD = 155.2 JPY"}]}],
        "tools": [{"name": "get_weather", "description": "weather", "input_schema": SCHEMA},
                  {"name": "get_exchange_rate", "input_schema": RATE}]},
    "gemini": {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "contents": [
            {"role": "user", "parts": [{"text": ASK}]},
            {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "東京"}}},
                                        {"functionCall": {"name": "get_exchange_rate",
                                                          "args": {"base": "USD", "quote": "JPY"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"result": "晴れ"}}},
                                       {"functionResponse": {"name": "get_exchange_rate",
                                                             "response": {"result": "155.2"}}}]}],
        "tools": [{"functionDeclarations": [{"name": "get_weather", "parametersJsonSchema": SCHEMA},
                                            {"name": "get_exchange_rate", "parametersJsonSchema": RATE}]}]},
}
VALID["openrouter"] = {**VALID["openai-chat"], "models": ["sim-reasoner", "gpt-4.1"]}
VALID["ollama"] = {
    "model": "sim-reasoner", "stream": False, "options": {"temperature": 0.5},
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": ASK},
        {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"index": 0, "name": "get_weather", "arguments": {"city": "東京"}}},
            {"function": {"index": 1, "name": "get_exchange_rate", "arguments": {"base": "USD", "quote": "JPY"}}}]},
        {"role": "tool", "tool_name": "get_weather", "content": "晴れ、22度"},
        {"role": "tool", "tool_name": "get_exchange_rate", "content": "1 USD = 155.2 JPY"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "weather", "parameters": SCHEMA}},
              {"type": "function", "function": {"name": "get_exchange_rate", "parameters": RATE}}]}

#: Fields every format requires (leaving one out is a 400).
REQUIRED = {"openai-chat": ("model", "messages"), "openrouter": ("messages",),
            "openai-responses": ("model", "input"), "anthropic": ("model", "max_tokens", "messages"),
            "gemini": ("contents",), "ollama": ("model",)}


GEMINI_PATHS = ("/v1beta/models/sim-reasoner:generateContent",
                "/v1beta/models/sim-reasoner:streamGenerateContent?alt=sse",
                "/v1beta/models/sim-reasoner:streamGenerateContent",
                "/v1/models/sim-reasoner:generateContent")


def path_of(fmt: str, i: int = 0) -> str:
    """The route for a format; Gemini's case `i` takes each of its four routes in turn."""
    return {"openai-chat": "/v1/chat/completions", "openai-responses": "/v1/responses",
            "anthropic": "/v1/messages", "openrouter": "/api/v1/chat/completions", "ollama": "/api/chat",
            "gemini": GEMINI_PATHS[i % len(GEMINI_PATHS)]}[fmt]


def headers_of(fmt: str) -> dict:
    headers = {"authorization": "Bearer sk-fuzz", "content-type": "application/json"}
    if fmt == "anthropic":
        headers["anthropic-version"] = "2023-06-01"
    return headers


# --- the generator -----------------------------------------------------------------------------------

def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(value)]


def wrong_values(rng: random.Random) -> list:
    return [None, True, 0, -1, 3.5, 10**30, "", "x", "x" * rng.randint(1000, 100_000), [], [1, "a"], {},
            {"type": "?"}, [[[[[[]]]]]]]


def paths(value: object, prefix: tuple = ()) -> list[tuple]:
    """Every location in a JSON value (dict keys and list indices), outermost first."""
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append(prefix + (k,))
            out += paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append(prefix + (i,))
            out += paths(v, prefix + (i,))
    return out


def get(value: object, path: tuple) -> object:
    for key in path:
        value = value[key]
    return value


def with_value(value: object, path: tuple, new: object, *, delete: bool = False) -> object:
    copy = json.loads(json.dumps(value))
    parent = get(copy, path[:-1])
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return copy


def type_mutations(fmt: str, rng: random.Random) -> list[tuple[str, bytes]]:
    """A wrong JSON type at every field whose type is fixed; (label, body) pairs."""
    body = VALID[fmt]
    out = []
    for path in paths(body):
        if is_free_form(fmt, path):
            continue
        old = get(body, path)
        for new in wrong_values(rng):
            if json_type(new) != json_type(old) and not not_a_mistake(fmt, path, old, new):
                changed = with_value(body, path, new)
                if still_a_valid_schema(changed, path):
                    continue  # e.g. a property's schema turned into `true`: still valid JSON Schema
                out.append((f"type {'.'.join(map(str, path))}={json_type(new)}", json.dumps(changed).encode()))
    return out


SCHEMA_KEYS = ("parameters", "input_schema", "parametersJsonSchema")


def is_free_form(fmt: str, path: tuple) -> bool:
    """Inside tool arguments or tool results any JSON is legal (the tools check it later); so is any
    value in Ollama's `options` (a map of anything) and, for Ollama, inside a parameter schema."""
    free = {"input", "args", "response", "arguments"} | ({"options", *SCHEMA_KEYS} if fmt == "ollama" else set())
    return any(isinstance(k, str) and k in free for k in path[:-1]) or (
        len(path) > 0 and path[-1] in ("input", "args", "response") and fmt in ("anthropic", "gemini")
        and len(path) > 3)


def still_a_valid_schema(body: object, path: tuple) -> bool:
    """For a change inside a tool's parameter schema: is the changed schema still valid JSON Schema?"""
    inside = [i for i, k in enumerate(path[:-1]) if isinstance(k, str) and k in SCHEMA_KEYS]
    if not inside:
        return False
    schema = get(body, path[: inside[0] + 1])
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return False
    return schema.get("type") == "object"  # every API also wants an object at the root


def not_a_mistake(fmt: str, path: tuple, old: object, new: object) -> bool:
    """Places where the API accepts more than one JSON type, so the "wrong" type is not wrong."""
    key = path[-1]
    t = json_type(new)
    # Go decodes null as the field's empty value; only an empty model name or role is then refused.
    if fmt == "ollama" and t == "null":
        return key not in ("model", "role")
    # Optional fields may be null (the API treats null as "not given").
    if t == "null" and key not in REQUIRED[fmt] and key not in ("role", "type", "name", "id", "call_id",
                                                                 "tool_call_id", "tool_use_id", "text"):
        return True
    # content / system / output / instructions: a string or a list of parts.
    if key in ("content", "system", "output", "instructions", "input") and t in ("array", "string"):
        return True
    # tool_choice: a string or an object (OpenAI formats).
    if key == "tool_choice" and fmt != "anthropic" and t in ("string", "object"):
        return True
    # Numbers: ints and floats are both "number" in JSON; extras the kit does not model are kept.
    return key in ("description",) and t == "string"


def structural_cases(fmt: str, rng: random.Random) -> list[tuple[str, bytes, dict]]:
    """Bytes that are not a request at all; (label, body, extra headers)."""
    valid = json.dumps(VALID[fmt], ensure_ascii=False).encode()
    cases = []
    for _ in range(6):
        cases.append(("garbage", rng.randbytes(rng.randint(1, 300)), {}))
    for _ in range(8):
        cases.append(("truncated", valid[: rng.randint(1, len(valid) - 2)], {}))
    for literal in (b"null", b"true", b"42", b'"text"', b"[]", b"[{}]", b"", b" ", b"{}"):
        cases.append(("not an object" if literal != b"{}" else "empty object", literal, {}))
    cases.append(("deep nesting", b"[" * 50_000 + b"]" * 50_000, {}))
    cases.append(("deep field", b'{"model": ' + b"[" * 20_000 + b"]" * 20_000 + b"}", {}))
    cases.append(("NaN model", b'{"model": NaN, "messages": []}', {}))
    cases.append(("invalid utf-8", valid.replace(ASK.encode(), b"\xff\xfe\xfd"), {}))
    # RFC 8259: JSON between systems is UTF-8, without a byte order mark; the APIs refuse the rest.
    cases.append(("BOM-prefixed", b"\xef\xbb\xbf" + valid, {}))
    cases.append(("UTF-16 with BOM", valid.decode().encode("utf-16"), {}))
    cases.append(("UTF-16-LE", valid.decode().encode("utf-16-le"), {}))
    cases.append(("lone surrogate", valid.replace(ASK.encode(), b"\\ud800"), {}))
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                  "application/xml", "image/png"):
        cases.append((f"content-type {ctype}", valid, {"content-type": ctype}))
    cases.append(("over the size limit", b'{"model": "' + b"x" * (4 * 1024 * 1024) + b'"}', {}))
    for field in REQUIRED[fmt]:
        cases.append((f"missing {field}", json.dumps(with_value(VALID[fmt], (field,), None, delete=True)).encode(), {}))
    return cases


def generate(seed: int = SEED, total: int = CASES) -> list[tuple[str, str, bytes, dict]]:
    """`total` cases (format, label, body, extra headers), spread evenly over the formats."""
    rng = random.Random(seed)
    cases = []
    for n, fmt in enumerate(FORMATS):
        per_format = total // len(FORMATS) + (n < total % len(FORMATS))  # the remainder to the first ones
        mine = [(fmt, label, body, headers) for label, body, headers in structural_cases(fmt, rng)]
        mutations = type_mutations(fmt, rng)
        rng.shuffle(mutations)
        mine += [(fmt, label, body, {}) for label, body in mutations[: per_format - len(mine)]]
        assert len(mine) == per_format, (fmt, len(mine))
        cases += mine
    return cases


# --- the test ------------------------------------------------------------------------------------

def provider_shaped(fmt: str, r: httpx.Response) -> bool:
    try:
        body = r.json()
    except ValueError:
        return False
    if fmt in ("openai-chat", "openai-responses"):
        return set(body) == {"error"} and {"message", "type", "param", "code"} <= set(body["error"])
    if fmt == "openrouter":
        return body["error"]["code"] == r.status_code and isinstance(body["error"]["message"], str)
    if fmt == "anthropic":
        return body.get("type") == "error" and {"type", "message"} <= set(body["error"])
    if fmt == "ollama":
        return set(body) == {"error"} and isinstance(body["error"], str)
    return body["error"]["code"] == r.status_code and {"message", "status"} <= set(body["error"])


def test_generator_is_seeded_and_sized():
    a, b = generate(), generate()
    assert len(a) == CASES and [c[2] for c in a] == [c[2] for c in b]


def test_the_valid_requests_are_valid(server):
    with httpx.Client(base_url=server.url) as client:
        for fmt in FORMATS:
            r = client.post(path_of(fmt), content=json.dumps(VALID[fmt]).encode(), headers=headers_of(fmt))
            assert r.status_code == 200, (fmt, r.text)


def test_a_thousand_malformed_requests_each_get_a_4xx_in_the_providers_shape(server):
    failures = []
    statuses: Counter = Counter()
    with httpx.Client(base_url=server.url, timeout=10) as client:
        for i, (fmt, label, body, extra) in enumerate(generate()):
            r = client.post(path_of(fmt, i), content=body, headers={**headers_of(fmt), **extra})
            statuses[r.status_code] += 1
            if not (400 <= r.status_code < 500 and provider_shaped(fmt, r)):
                failures.append(f"{fmt} {label}: {r.status_code} {r.text[:200]}")
        # The server survived: a valid request still works.
        for fmt in FORMATS:
            r = client.post(path_of(fmt), content=json.dumps(VALID[fmt]).encode(), headers=headers_of(fmt))
            assert r.status_code == 200, (fmt, r.text)
    assert not failures, f"{len(failures)} of {CASES} not a provider-shaped 4xx ({dict(statuses)}):\n" + \
        "\n".join(failures[:40])


# --- asking for too much: never a 500, never a sleep without end --------------------------------------

def with_model(fmt: str, model: str, i: int = 0) -> tuple[str, dict]:
    """(path, body) of the valid request of `fmt`, for another model name."""
    body = dict(VALID[fmt])
    if fmt == "gemini":
        return path_of(fmt, i).replace("sim-reasoner", model), body
    return path_of(fmt), {**body, "model": model}


@pytest.mark.parametrize("fmt", FORMATS)
def test_five_thousand_digit_model_names_are_answered_not_500(server, fmt):
    digits = "7" * 5000  # int() refuses more than 4,300 digits: the simulator must never hand it one
    with httpx.Client(base_url=server.url, timeout=10) as client:
        for model in (f"sim-noisy-{digits}", f"sim-parallel-{digits}"):
            path, body = with_model(fmt, model)
            r = client.post(path, json=body, headers=headers_of(fmt))
            assert r.status_code == 200, (model[:20], r.text[:200])
        for model in (f"sim-reasoner-slow{digits}", "sim-reasoner-slow60001", f"sim-reasoner-flaky{digits}",
                      f"sim-reasoner-pace{digits}"):
            path, body = with_model(fmt, model)
            r = client.post(path, json=body, headers=headers_of(fmt))
            assert 400 <= r.status_code < 500 and provider_shaped(fmt, r), (model[:24], r.status_code, r.text[:200])


@pytest.mark.parametrize("headers", [
    {"x-sim-latency-ms": "9" * 30}, {"x-sim-latency-ms": "60001"}, {"x-sim-fault": "slow=99999999999"},
    {"x-sim-fault": "pace=60001"}, {"x-sim-fault": "429=" + "1" * 20}, {"x-sim-fault": "instream=418"},
])
def test_delays_past_the_cap_are_a_400_at_once(server, headers):
    with httpx.Client(base_url=server.url, timeout=5) as client:  # a sleep would time out, not pass
        for fmt in FORMATS:
            r = client.post(path_of(fmt), json=VALID[fmt], headers={**headers_of(fmt), **headers})
            assert r.status_code == 400 and provider_shaped(fmt, r), (fmt, r.text[:200])
            assert "x-sim-fault" in r.text


# --- as strict as the real APIs ---------------------------------------------------------------------------

def tool_schema_paths(fmt: str) -> list[tuple]:
    """Where each format's first tool keeps its parameter schema."""
    return {"openai-chat": ("tools", 0, "function", "parameters"), "openrouter": ("tools", 0, "function", "parameters"),
            "openai-responses": ("tools", 0, "parameters"), "anthropic": ("tools", 0, "input_schema"),
            "gemini": ("tools", 0, "functionDeclarations", 0, "parametersJsonSchema"),
            "ollama": ("tools", 0, "function", "parameters")}[fmt]


#: The first words of each API's refusal of a schema that is not JSON Schema.
SCHEMA_REFUSALS = {"openai-chat": "Invalid schema for function 'get_weather'", "openrouter": "Invalid schema",
                   "openai-responses": "Invalid schema for function 'get_weather'",
                   "anthropic": "tools.0.custom.input_schema: JSON schema is invalid",
                   "gemini": "parameters_json_schema: not a valid JSON Schema"}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("change", [{"properties": -1}, {"properties": {"city": {"type": "nope"}}},
                                    {"required": "city"}])
def test_a_tool_schema_that_is_not_json_schema_gets_the_providers_400(server, fmt, change):
    body = with_value(VALID[fmt], tool_schema_paths(fmt), {**SCHEMA, **change})
    r = httpx.post(server.url + path_of(fmt), json=body, headers=headers_of(fmt))
    if fmt == "ollama" and change == {"properties": {"city": {"type": "nope"}}}:
        assert r.status_code == 200  # Ollama decodes into Go types: "nope" is a string, nothing checks more
        return
    assert r.status_code == 400 and provider_shaped(fmt, r), r.text
    assert SCHEMA_REFUSALS.get(fmt, "cannot unmarshal") in r.text


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
def test_chat_token_caps_on_the_responses_api_are_refused_by_name(server, field):
    r = httpx.post(server.url + "/v1/responses", json={**VALID["openai-responses"], field: 100},
                   headers=headers_of("openai-responses"))
    error = r.json()["error"]
    assert r.status_code == 400 and error["code"] == "unsupported_parameter" and error["param"] == field
    assert error["message"] == (f"Unsupported parameter: '{field}'. In the Responses API, this parameter has moved "
                                "to 'max_output_tokens'.")


def test_gemini_refuses_unknown_fields_and_a_system_instruction_that_is_not_content(server):
    url = server.url + path_of("gemini")
    unknown = httpx.post(url, json={**VALID["gemini"], "temperature": 0.2}, headers=headers_of("gemini"))
    assert unknown.status_code == 400 and unknown.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert unknown.json()["error"]["message"] == 'Invalid JSON payload received. Unknown name "temperature": ' \
                                                 'Cannot find field.'
    text = httpx.post(url, json={**VALID["gemini"], "systemInstruction": "Be brief."}, headers=headers_of("gemini"))
    assert text.status_code == 400 and "system_instruction" in text.json()["error"]["message"]
    known = {**VALID["gemini"], "safetySettings": [], "generationConfig": {"temperature": 0.2}}
    assert httpx.post(url, json=known, headers=headers_of("gemini")).status_code == 200


@pytest.mark.parametrize("fmt", FORMATS)
def test_bom_and_utf16_bodies_get_the_providers_not_json_400(server, fmt):
    valid = json.dumps(VALID[fmt], ensure_ascii=False).encode()
    for body in (b"\xef\xbb\xbf" + valid, valid.decode().encode("utf-16")):
        r = httpx.post(server.url + path_of(fmt), content=body, headers=headers_of(fmt))
        assert r.status_code == 400 and provider_shaped(fmt, r), r.text
    if fmt == "anthropic":  # Anthropic's own words, as its API answers a BOM
        r = httpx.post(server.url + path_of(fmt), content=b"\xef\xbb\xbf" + valid, headers=headers_of(fmt))
        assert r.json()["error"]["message"] == ("The request body is not valid JSON: byte order mark (BOM) is not "
                                                "supported: line 1 column 1 (char 0)")

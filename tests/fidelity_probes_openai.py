"""Probes for the fidelity ledger's OpenAI and OpenRouter entries (and the spend limits): each makes the
simulator show one entry over HTTP and answers (status, the text the ledger states).

`tests/test_fidelity_ledger.py` merges `OPENAI_PROBES` into its `PROBES`; a probe takes its `Sim` (one
httpx client for the module's simulator) and uses only `sim.post`.
"""

from __future__ import annotations

from typing import Callable

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TIME = {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}
USER = [{"role": "user", "content": "What is the weather in Paris?"}]
KEY = {"authorization": "Bearer k"}
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
              {"type": "function", "function": {"name": "get_time", "parameters": TIME}}]
RESPONSES_TOOLS = [{"type": "function", "name": "get_weather", "parameters": WEATHER, "strict": False},
                   {"type": "function", "name": "get_time", "parameters": TIME, "strict": False}]
#: A request that must search before it can call: get_weather is deferred behind tool_search.
DEFERRED_TOOLS = [{"type": "function", "name": "get_weather", "description": "Current weather for a city",
                   "parameters": WEATHER, "strict": False, "defer_loading": True},
                  {"type": "tool_search"}]


def error_of(r) -> tuple[int, str]:
    return r.status_code, r.json()["error"]["message"]


def chat(sim, **body) -> tuple[int, str]:
    return error_of(sim.post("openai-chat", "/chat/completions", {"model": "gpt-4.1-mini", **body}, KEY))


def chat_tool(sim, function: dict, **body) -> tuple[int, str]:
    return chat(sim, messages=USER, tools=[{"type": "function", "function": function}], **body)


def responses(sim, **body):
    return sim.post("openai-responses", "/responses", {"model": "gpt-4.1-mini", **body}, KEY)


def openrouter(sim, **body) -> tuple[int, str]:
    return error_of(sim.post("openrouter", "/chat/completions", {"model": "openai/gpt-4.1-mini", "messages": USER,
                                                                  **body}, KEY))


def without_mark(status_text: tuple[int, str]) -> tuple[int, str]:
    status, text = status_text
    return status, text.removesuffix(" (simulated fault)")


def chat_allowed(sim) -> tuple[int, str]:
    r = sim.post("openai-chat", "/chat/completions", {
        "model": "gpt-4.1-mini", "messages": USER, "tools": CHAT_TOOLS,
        "tool_choice": {"type": "allowed_tools", "allowed_tools": {
            "mode": "required", "tools": [{"type": "function", "function": {"name": "get_time"}}]}}}, KEY)
    return r.status_code, " ".join(c["function"]["name"] for c in r.json()["choices"][0]["message"]["tool_calls"])


def responses_allowed(sim) -> tuple[int, str]:
    r = responses(sim, input=USER, tools=RESPONSES_TOOLS,
                  tool_choice={"type": "allowed_tools", "mode": "required",
                               "tools": [{"type": "function", "name": "get_time"}]})
    return r.status_code, " ".join(o["name"] for o in r.json()["output"] if o["type"] == "function_call")


def phases(sim) -> tuple[int, str]:
    """The phase of each assistant message: the turn that calls, then the answer after the result."""
    first = responses(sim, model="gpt-5.4", input=USER, tools=RESPONSES_TOOLS).json()["output"]
    outputs = [{"type": "function_call_output", "call_id": o["call_id"], "output": "sunny"}
               for o in first if o["type"] == "function_call"]
    second = responses(sim, model="gpt-5.4", input=[*USER, *first, *outputs], tools=RESPONSES_TOOLS).json()["output"]
    return 200, " ".join(o["phase"] for o in [*first, *second] if o["type"] == "message")


def phase_dropped(sim) -> tuple[int, str]:
    """The words the rule log records when a history sends a commentary message back without its phase."""
    first = responses(sim, model="gpt-5.4", input=USER, tools=RESPONSES_TOOLS).json()["output"]
    dropped = [{k: v for k, v in o.items() if k != "phase"} for o in first]
    outputs = [{"type": "function_call_output", "call_id": o["call_id"], "output": "sunny"}
               for o in first if o["type"] == "function_call"]
    r = responses(sim, model="gpt-5.4", input=[*USER, *dropped, *outputs], tools=RESPONSES_TOOLS)
    findings = [f for f in sim.server.rule_logs()[-1].findings if f.rule == "openai-responses.phase_dropped"]
    return r.status_code, findings[0].words if findings else ""


def deferred_search(sim) -> tuple[int, str]:
    r = responses(sim, model="gpt-6.1-sol", input=USER, tools=DEFERRED_TOOLS)  # no phase: items alone
    return r.status_code, " ".join(o["type"] for o in r.json()["output"])


def item_not_found(sim) -> tuple[int, str]:
    referenced = {"type": "reasoning", "id": "rs_gone", "summary": []}  # sent without its encrypted_content
    answer = {"role": "assistant", "content": "It is sunny."}
    return error_of(responses(sim, store=False, input=[*USER, referenced, answer]))


CALL = {"type": "function_call", "call_id": "call_A", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}

#: entry id -> how to make the simulator show it: (status, text).
OPENAI_PROBES: dict[str, Callable] = {
    "openai-chat.missing_required_parameter": lambda sim: chat_tool(sim, {"parameters": WEATHER}),
    "openai-chat.invalid_type": lambda sim: chat(sim, messages=USER, temperature="hot"),
    "openai-chat.invalid_value": lambda sim: chat(sim, messages=USER, tools=CHAT_TOOLS, tool_choice="sometimes"),
    "openai-chat.empty_array": lambda sim: chat(sim, messages=[]),
    "openai-chat.out_of_range": lambda sim: chat(sim, messages=USER, temperature=3),
    "openai-responses.unsupported_parameter": lambda sim: error_of(responses(sim, input="hi", max_tokens=10)),
    "openai-chat.invalid_function_parameters": lambda sim: chat_tool(
        sim, {"name": "f", "parameters": {"type": "nope"}}),
    "openai-chat.tool_name_empty": lambda sim: chat_tool(sim, {"name": ""}),
    "openai-chat.tool_name_too_long": lambda sim: chat_tool(sim, {"name": "f" * 65}),
    "openai-chat.tool_name_pattern": lambda sim: chat_tool(sim, {"name": "get weather"}),
    "openai-chat.not_json": lambda sim: error_of(sim.client.post(
        sim.server.base_url("openai-chat") + "/chat/completions", json=[1], headers=KEY)),
    "openai-chat.model_missing": lambda sim: error_of(sim.post("openai-chat", "/chat/completions", {"messages": USER},
                                                               KEY)),
    "openai-chat.null_content": lambda sim: chat(sim, messages=[{"role": "user", "content": None}]),
    "openai-chat.tool_choice_without_tools": lambda sim: chat(sim, messages=USER, tool_choice="required"),
    "openai-chat.parallel_without_tools": lambda sim: chat(sim, messages=USER, parallel_tool_calls=True),
    "openai-chat.tool_choice_unknown_function": lambda sim: chat(
        sim, messages=USER, tools=CHAT_TOOLS, tool_choice={"type": "function", "function": {"name": "get_news"}}),
    "openai-chat.allowed_tools": chat_allowed,
    "openai-responses.allowed_tools": responses_allowed,
    "openai-chat.strict_additional_properties": lambda sim: chat_tool(
        sim, {"name": "get_weather", "parameters": WEATHER, "strict": True}),
    "openai-chat.strict_required": lambda sim: chat_tool(sim, {
        "name": "get_weather", "strict": True, "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"], "additionalProperties": False}}),
    "openai-responses.call_without_output": lambda sim: error_of(responses(sim, input=[*USER, CALL])),
    "openai-responses.output_without_call": lambda sim: error_of(responses(
        sim, input=[*USER, {"type": "function_call_output", "call_id": "call_A", "output": "sunny"}])),
    "openai-responses.item_not_found": item_not_found,
    "openai-responses.phase_emitted": phases,
    "openai-responses.phase_dropped": phase_dropped,
    "openai-responses.deferred_tool_hidden": deferred_search,
    "openai-responses.deferred_without_tool_search": lambda sim: error_of(responses(
        sim, model="gpt-5.4", input=USER, tools=DEFERRED_TOOLS[:1])),
    "openai-responses.tool_search_model": lambda sim: error_of(responses(
        sim, model="gpt-5.2", input=USER, tools=DEFERRED_TOOLS)),
    "openrouter.models_type": lambda sim: openrouter(sim, models="openai/gpt-4.1"),
    "openrouter.provider_type": lambda sim: openrouter(sim, provider="fastest"),
    "openrouter.no_tool_endpoints": lambda sim: openrouter(
        sim, model="google/gemma-3-27b-it:free", tools=CHAT_TOOLS),
    "openai-chat.spend_limit": lambda sim: without_mark(chat(sim, model="gpt-4.1-mini-spend", messages=USER)),
    "anthropic.spend_limit": lambda sim: without_mark(error_of(sim.post(
        "anthropic", "/messages", {"model": "claude-sonnet-4-5-spend", "max_tokens": 64, "messages": USER},
        {"x-api-key": "k", "anthropic-version": "2023-06-01"}))),
}

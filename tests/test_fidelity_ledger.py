"""The fidelity ledger (agentkit/sim/fidelity.toml) says what the simulator answers; this drives the simulator
to produce every entry and asserts its status and text are the ledger's, so neither can drift alone."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Callable

import httpx
import pytest

from agentkit.providers import FORMATS
from agentkit.sim.__main__ import main as sim_main
from agentkit.sim.fidelity import WORDING_KINDS, Entry, currency, ledger, ledger_table, parse_ledger, rules_as_of
from agentkit.sim.wire import openai_responses as openai_responses_server
from fidelity_probes_conform import CONFORM_PROBES
from fidelity_probes_openai import OPENAI_PROBES

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
ASK = "Weather in Paris and in Tokyo?"
USER = [{"role": "user", "content": ASK}]
CLAUDE_TOOLS = [{"name": "get_weather", "input_schema": WEATHER}]
CALLS = [{"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}},
         {"type": "tool_use", "id": "toolu_01B", "name": "get_weather", "input": {"city": "Tokyo"}}]
RESULTS = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": "sunny"}
                                       for i in ("toolu_01A", "toolu_01B")]}
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
CHAT_CALLS = [{"id": f"call_{x}", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
              for x in "AB"]
GEMINI_TOOLS = [{"functionDeclarations": [{"name": "get_weather", "parametersJsonSchema": WEATHER}]}]
VERTEX_MODELS = "projects/sim-project/locations/global/publishers/google/models"
OLLAMA_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
RESPONSES_TOOLS = [{"type": "function", "name": "get_weather", "parameters": WEATHER, "strict": False}]


class Sim:
    """One client for the module's simulator; each method answers (status, the text the ledger states)."""

    def __init__(self, server, client: httpx.Client):
        self.server, self.client = server, client

    def post(self, fmt: str, path: str, body: dict, headers: dict) -> httpx.Response:
        return self.client.post(self.server.base_url(fmt) + path, json=body, headers=headers)

    def chat(self, messages: list) -> httpx.Response:
        return self.post("openai-chat", "/chat/completions",
                         {"model": "gpt-4.1-mini", "messages": messages, "tools": CHAT_TOOLS},
                         {"authorization": "Bearer k"})

    def claude(self, body: dict) -> httpx.Response:
        return self.post("anthropic", "/messages", {"max_tokens": 2048, "tools": CLAUDE_TOOLS, **body},
                         {"x-api-key": "k", "anthropic-version": "2023-06-01"})

    def claude_error(self, body: dict) -> tuple[int, str]:
        r = self.claude(body)
        return r.status_code, r.json()["error"]["message"]

    def responses(self, body: dict) -> httpx.Response:
        return self.post("openai-responses", "/responses", {"model": "gpt-6.1-sol", "tools": RESPONSES_TOOLS, **body},
                         {"authorization": "Bearer k"})

    def gemini(self, model: str, contents: list, **fields) -> httpx.Response:
        return self.post("gemini", f"/models/{model}:generateContent",
                         {"contents": contents, "tools": GEMINI_TOOLS, **fields}, {"x-goog-api-key": "k"})

    def vertex(self, model: str, contents: list) -> httpx.Response:
        """The same request by Vertex AI's path, which names the model as a resource."""
        return self.client.post(f"{self.server.url}/v1/{VERTEX_MODELS}/{model}:generateContent",
                                json={"contents": contents, "tools": GEMINI_TOOLS},
                                headers={"authorization": "Bearer ya29.sim"})

    def ollama(self, body: dict) -> httpx.Response:
        return self.post("ollama", "/api/chat", {"stream": False, **body}, {})


def error_of(r: httpx.Response) -> tuple[int, str]:
    return r.status_code, r.json()["error"]["message"]


def ollama_error(r: httpx.Response) -> tuple[int, str]:
    """Ollama's error body is `{"error": "the message"}`."""
    return r.status_code, r.json()["error"]


def thinking_turn(sim: Sim, model: str, **fields) -> list:
    """The question, a 5.x model's first answer (thinking + calls), and the results: a history to replay."""
    answer = sim.claude({"model": model, "messages": USER, **fields}).json()
    results = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": b["id"], "content": "sunny"}
                                           for b in answer["content"] if b["type"] == "tool_use"]}
    return [*USER, {"role": "assistant", "content": answer["content"]}, results]


def first_thinking_block(sim: Sim, **fields) -> tuple[int, dict]:
    r = sim.claude({"model": "claude-opus-5-5", "messages": USER, **fields})
    return r.status_code, r.json()["content"][0]


def changed_prefix(sim: Sim) -> tuple[int, str]:
    return sim.claude_error({"model": "claude-opus-5-5", "messages": thinking_turn(sim, "claude-opus-5-5"),
                             "system": "Answer in French."})


def responses_first(sim: Sim) -> list[dict]:
    return sim.responses({"input": ASK, "reasoning": {"effort": "low"}}).json()["output"]


def reasoning_alone(sim: Sim) -> tuple[int, str]:
    reasoning = [o for o in responses_first(sim) if o["type"] == "reasoning"]
    return error_of(sim.responses({"input": [*USER, *reasoning]}))


def call_without_reasoning(sim: Sim) -> tuple[int, str]:
    calls = [o for o in responses_first(sim) if o["type"] == "function_call"]
    outputs = [{"type": "function_call_output", "call_id": c["call_id"], "output": "sunny"} for c in calls]
    return error_of(sim.responses({"input": [*USER, *calls, *outputs]}))


def gemini_answer(model: str, parts: list) -> list:
    return [{"role": "user", "parts": [{"text": ASK}]}, {"role": "model", "parts": parts}]


def gemini_unsigned(sim: Sim, model: str = "gemini-3-flash-preview", vertex: bool = False) -> tuple[int, str]:
    answer = sim.gemini(model, gemini_answer("", [])[:1]).json()
    parts = answer["candidates"][0]["content"]["parts"]
    unsigned = [{k: v for k, v in p.items() if k != "thoughtSignature"} for p in parts]
    results = [{"functionResponse": {"name": p["functionCall"]["name"], "id": p["functionCall"].get("id"),
                                     "response": {"output": "sunny"}}} for p in parts]
    send = sim.vertex if vertex else sim.gemini
    return error_of(send(model, [*gemini_answer("", unsigned), {"role": "user", "parts": results}]))


TWO_CALLS = [{"functionCall": {"name": "get_weather", "args": {"city": c}}} for c in ("Paris", "Tokyo")]


def gemini_results(*names: str) -> dict:
    return {"role": "user", "parts": [{"functionResponse": {"name": n, "response": {"output": "sunny"}}}
                                      for n in names]}


def gemini_forged_signature(sim: Sim) -> tuple[int, str]:
    parts = sim.gemini("gemini-3-flash-preview", gemini_answer("", [])[:1]).json()["candidates"][0]["content"]["parts"]
    forged = [dict(p, thoughtSignature="Zm9yZ2Vk") if "thoughtSignature" in p else p for p in parts]
    results = [{"functionResponse": {"name": p["functionCall"]["name"], "id": p["functionCall"].get("id"),
                                     "response": {"output": "sunny"}}} for p in parts if "functionCall" in p]
    return error_of(sim.gemini("gemini-3-flash-preview",
                               [*gemini_answer("", forged), {"role": "user", "parts": results}]))


def responses_invented_reasoning(sim: Sim) -> tuple[int, str]:
    first = responses_first(sim)
    items = [dict(o, encrypted_content="gAAAAinventedDQ==") if o["type"] == "reasoning" else o for o in first]
    outputs = [{"type": "function_call_output", "call_id": o["call_id"], "output": "sunny"}
               for o in first if o["type"] == "function_call"]
    return error_of(sim.responses({"input": [*USER, *items, *outputs]}))


def openrouter_down(sim: Sim) -> tuple[int, str]:
    r = sim.post("openrouter", "/chat/completions", {"model": "sim-reasoner-503", "messages": USER},
                 {"authorization": "Bearer k"})
    status, message = error_of(r)
    return status, message.removesuffix(" (simulated fault)")


# -- Anthropic: shapes, server blocks, tool search, counting, caching, threads ------------------------------

SERVER_HISTORY = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "srvtoolu_01A", "name": "web_search", "input": {"query": "Paris weather"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01A", "content": [
            {"type": "web_search_result", "url": "https://example.com", "title": "Paris", "encrypted_content": "e1"}]},
        {"type": "server_tool_use", "id": "srvtoolu_01B", "name": "code_execution", "input": {"code": "print(1)"}},
        {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_01B",
         "content": {"type": "code_execution_result", "stdout": "1\n", "stderr": "", "return_code": 0, "content": []}},
        {"type": "server_tool_use", "id": "srvtoolu_01C", "name": "tool_search_tool_regex",
         "input": {"pattern": "weather"}},
        {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_01C", "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}]}},
        {"type": "mcp_tool_use", "id": "mcptoolu_01D", "name": "lookup", "server_name": "docs", "input": {}},
        {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_01D", "content": [{"type": "text", "text": "ok"}]},
        {"type": "text", "text": "It is sunny in Paris."}]},
    {"role": "user", "content": "Thanks!"},
]
SEARCH_TOOLS = [{"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
                {"name": "get_weather", "description": "Current weather for a city", "input_schema": WEATHER,
                 "defer_loading": True}]


def server_blocks_replayed(sim: Sim) -> tuple[int, str]:
    r = sim.claude({"model": "claude-sonnet-4-5", "messages": SERVER_HISTORY, "tools": SEARCH_TOOLS})
    return r.status_code, r.json().get("stop_reason") or r.json()["error"]["message"]


def compaction_summary(sim: Sim) -> tuple[int, str]:
    # a tool_use left unanswered before the compaction block: dropped with it, so no pairing 400
    history = [{"role": "user", "content": "Something else first."},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01Z", "name": "get_weather",
                                                  "input": {"city": "Rome"}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01Z", "content": "rain"}]},
               {"role": "assistant", "content": [
                   {"type": "compaction", "content": "The user asked for the weather in Paris."}]}]
    r = sim.claude({"model": "claude-sonnet-4-5", "messages": history})
    body = r.json()
    return r.status_code, next((b["name"] for b in body.get("content", ()) if b["type"] == "tool_use"),
                               body.get("error", {}).get("message", ""))


def deferred_then_found(sim: Sim) -> tuple[int, str]:
    r = sim.claude({"model": "claude-sonnet-4-5", "messages": USER, "tools": SEARCH_TOOLS})
    return r.status_code, ", ".join(dict.fromkeys(b["type"] for b in r.json()["content"]))


def counted(sim: Sim) -> tuple[int, str]:
    r = sim.post("anthropic", "/messages/count_tokens", {"model": "claude-sonnet-4-5", "messages": USER,
                                                         "tools": CLAUDE_TOOLS},
                 {"x-api-key": "k", "anthropic-version": "2023-06-01"})
    return r.status_code, ", ".join(sorted(r.json()))


def cached_twice(sim: Sim) -> tuple[int, str]:
    system = [{"type": "text", "text": "You answer questions about the weather. " * 200,
               "cache_control": {"type": "ephemeral"}}]
    body = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "Weather in Oslo?"}],
            "system": system}
    fields = ("cache_creation_input_tokens", "cache_read_input_tokens")
    first, second = (sim.claude(body).json()["usage"] for _ in range(2))
    return 200, ", then ".join(next(f for f in fields if usage[f]) for usage in (first, second))


def thread_continued(sim: Sim) -> tuple[int, str]:
    first = sim.claude({"model": "claude-sonnet-4-5", "messages": USER, "thread": {"type": "create"}}).json()
    results = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": b["id"], "content": "sunny"}
                                           for b in first["content"] if b["type"] == "tool_use"]}
    # only the new message, and no system or tools: the thread keeps them
    r = sim.post("anthropic", "/messages", {"model": "claude-sonnet-4-5", "max_tokens": 2048, "messages": [results],
                                            "thread": {"type": "continue", "previous_message_id": first["id"]}},
                 {"x-api-key": "k", "anthropic-version": "2023-06-01"})
    return r.status_code, r.json().get("stop_reason") or r.json()["error"]["message"]


def thread_fields_changed(sim: Sim) -> tuple[int, str]:
    first = sim.claude({"model": "claude-sonnet-4-5", "messages": USER, "thread": {"type": "create"}}).json()
    return sim.claude_error({"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "And Rome?"}],
                             "system": "Answer in French.",
                             "thread": {"type": "continue", "previous_message_id": first["id"]}})


#: entry id -> how to make the simulator show it: (status, text).
PROBES: dict[str, Callable[[Sim], tuple[int, str]]] = {
    "anthropic.forced_tool_use": lambda sim: sim.claude_error(
        {"model": "claude-opus-5-5", "messages": USER, "tool_choice": {"type": "any"}}),
    "anthropic.thinking_disabled": lambda sim: sim.claude_error(
        {"model": "claude-opus-5-5", "messages": USER, "thinking": {"type": "disabled"}}),
    "anthropic.thinking_budget": lambda sim: sim.claude_error(
        {"model": "claude-opus-5-5", "messages": USER, "thinking": {"type": "enabled", "budget_tokens": 1024}}),
    "anthropic.thinking_disabled_other_5x": lambda sim: sim.claude_error(
        {"model": "claude-fable-5-1", "messages": USER, "thinking": {"type": "disabled"}}),
    "anthropic.thinking_always_on": lambda sim: (lambda s, b: (s, b["type"]))(*first_thinking_block(sim)),
    "anthropic.thinking_display_omitted": lambda sim: (lambda s, b: (s, b["thinking"]))(*first_thinking_block(sim)),
    "anthropic.prefix_bound_thinking": changed_prefix,
    "anthropic.dotted_model_id": lambda sim: sim.claude_error({"model": "claude-opus-5.5", "messages": USER}),
    "anthropic.thinking_missing_in_open_cycle": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "thinking": {"type": "enabled", "budget_tokens": 1024},
         "messages": [*USER, {"role": "assistant", "content": CALLS}, RESULTS]}),
    "anthropic.thinking_signature_invalid": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "thinking": {"type": "enabled", "budget_tokens": 1024},
         "messages": [*USER, {"role": "assistant", "content": [
             {"type": "thinking", "thinking": "I made this up.", "signature": "c2lnbmF0dXJl"}, *CALLS]}, RESULTS]}),
    "anthropic.redacted_thinking_invalid": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "thinking": {"type": "enabled", "budget_tokens": 1024},
         "messages": [*USER, {"role": "assistant", "content": [
             {"type": "redacted_thinking", "data": "aW52ZW50ZWQ="}, *CALLS]}, RESULTS]}),
    "anthropic.field_required": lambda sim: error_of(sim.post(
        "anthropic", "/messages", {"model": "claude-sonnet-4-5", "messages": USER},
        {"x-api-key": "k", "anthropic-version": "2023-06-01"})),
    "anthropic.invalid_value": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "messages": [*USER, {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": "Paris"}]}, RESULTS]}),
    "anthropic.unknown_tag": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "messages": USER, "tool_choice": {"type": "sometimes"}}),
    "anthropic.extra_inputs": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "messages": USER, "no_such_field": 1}),
    "anthropic.empty_messages": lambda sim: sim.claude_error({"model": "claude-sonnet-4-5", "messages": []}),
    "anthropic.system_role_message": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "messages": [{"role": "system", "content": "Be brief."}, *USER]}),
    "anthropic.block_in_wrong_role": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": CALLS}]}),
    "anthropic.tool_blocks_need_tools": lambda sim: error_of(sim.post(
        "anthropic", "/messages", {"model": "claude-sonnet-4-5", "max_tokens": 64,
                                   "messages": [*USER, {"role": "assistant", "content": CALLS}, RESULTS]},
        {"x-api-key": "k", "anthropic-version": "2023-06-01"})),
    "anthropic.input_schema_invalid": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "messages": USER,
         "tools": [{"name": "get_weather",
                    "input_schema": {"type": "object", "properties": {"city": {"type": "nope"}}}}]}),
    "anthropic.thinking_budget_over_max_tokens": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "messages": USER, "max_tokens": 1024,
         "thinking": {"type": "enabled", "budget_tokens": 1024}}),
    "anthropic.tool_results_first": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "messages": [*USER, {"role": "assistant", "content": CALLS},
                                                  {"role": "user", "content": [{"type": "text", "text": "Here:"},
                                                                               *RESULTS["content"]]}]}),
    "anthropic.server_blocks_replayed": server_blocks_replayed,
    "anthropic.compaction_drops_earlier_blocks": compaction_summary,
    "anthropic.all_tools_deferred": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "messages": USER,
         "tools": [{**t, "defer_loading": True} for t in SEARCH_TOOLS]}),
    "anthropic.tool_reference_unknown": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "tools": SEARCH_TOOLS, "messages": [*USER, {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "srvtoolu_01C", "name": "tool_search_tool_regex",
             "input": {"pattern": "x"}},
            {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_01C", "content": {
                "type": "tool_search_tool_search_result",
                "tool_references": [{"type": "tool_reference", "tool_name": "get_news"}]}}]},
            {"role": "user", "content": "Go on."}]}),
    "anthropic.deferred_tool_cache_control": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "messages": USER,
         "tools": [SEARCH_TOOLS[0], {**SEARCH_TOOLS[1], "cache_control": {"type": "ephemeral"}}]}),
    "anthropic.deferred_tools_hidden": deferred_then_found,
    "anthropic.count_tokens": counted,
    "anthropic.prompt_cache": cached_twice,
    "anthropic.message_threads": thread_continued,
    "anthropic.thread_not_found": lambda sim: error_of(sim.post(
        "anthropic", "/messages", {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": USER,
                                   "thread": {"type": "continue", "previous_message_id": "msg_01gone"}},
        {"x-api-key": "k", "anthropic-version": "2023-06-01"})),
    "anthropic.thread_fields_changed": thread_fields_changed,
    "gemini.thought_signature_corrupted": gemini_forged_signature,
    "openai-responses.encrypted_content_invalid": responses_invented_reasoning,
    "anthropic.thinking_with_forced_tool": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "thinking": {"type": "enabled", "budget_tokens": 1024}, "messages": USER,
         "tool_choice": {"type": "any"}}),
    "anthropic.tool_use_without_result": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "messages": [*USER, {"role": "assistant", "content": CALLS}]}),
    "anthropic.result_without_tool_use": lambda sim: sim.claude_error(
        {"model": "claude-sonnet-4-5", "messages": [*USER, RESULTS]}),
    "openai-chat.tool_calls_unanswered": lambda sim: error_of(sim.chat(
        [*USER, {"role": "assistant", "content": None, "tool_calls": CHAT_CALLS}])),
    "openai-chat.tool_without_call": lambda sim: error_of(sim.chat(
        [*USER, {"role": "tool", "tool_call_id": "call_A", "content": "sunny"}])),
    "openai-chat.responses_only_tools": lambda sim: error_of(sim.post(
        "openai-chat", "/chat/completions",
        {"model": "gpt-6.1-sol", "messages": USER,
         "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]},
        {"authorization": "Bearer k"})),
    "openai-responses.strict_by_default": lambda sim: (200, str(openai_responses_server.tool_from_wire(
        {"type": "function", "name": "get_weather", "parameters": WEATHER}).strict)),
    "openai-responses.reasoning_without_following_item": reasoning_alone,
    "openai-responses.call_without_reasoning": call_without_reasoning,
    "openai-responses.previous_response_not_found": lambda sim: error_of(
        sim.responses({"input": "hi", "previous_response_id": "resp_gone"})),
    "gemini.response_count": lambda sim: error_of(sim.gemini(
        "gemini-2.5-flash", [*gemini_answer("", TWO_CALLS), gemini_results("get_weather")])),
    "gemini.response_names_its_call": lambda sim: error_of(sim.gemini(
        "gemini-2.5-flash", [*gemini_answer("", TWO_CALLS), gemini_results("get_news", "get_weather")])),
    "gemini.missing_thought_signature": gemini_unsigned,
    "gemini.vertex_missing_thought_signature": lambda sim: gemini_unsigned(sim, "gemini-4-argon", vertex=True),
    "gemini.call_turn_order": lambda sim: error_of(sim.gemini(
        "gemini-2.5-flash", [{"role": "model", "parts": TWO_CALLS}, gemini_results("get_weather", "get_weather")])),
    "gemini.response_turn_order": lambda sim: error_of(sim.gemini(
        "gemini-2.5-flash", [*gemini_answer("", [])[:1], gemini_results("get_weather")])),
    "gemini.response_id_matches_call": lambda sim: error_of(sim.gemini("gemini-2.5-flash", [
        *gemini_answer("", [{"functionCall": {"id": "aaaaaaaa", "name": "get_weather", "args": {}}}]),
        {"role": "user", "parts": [{"functionResponse": {"id": "bbbbbbbb", "name": "get_weather",
                                                         "response": {"output": "sunny"}}}]}])),
    "gemini.retired_model": lambda sim: error_of(sim.gemini("gemini-3-pro-preview", gemini_answer("", [])[:1])),
    "gemini.vertex_retired_model": lambda sim: error_of(sim.vertex("gemini-3-pro-preview", gemini_answer("", [])[:1])),
    "gemini.unknown_field": lambda sim: error_of(sim.gemini("gemini-2.5-flash", gemini_answer("", [])[:1],
                                                            stream=True)),
    "gemini.request_field_invalid": lambda sim: error_of(sim.gemini("gemini-2.5-flash", [])),
    "gemini.invalid_value": lambda sim: error_of(sim.gemini("gemini-2.5-flash", [{"role": "user",
                                                                                  "parts": [{"text": 5}]}])),
    "gemini.invalid_role": lambda sim: error_of(sim.gemini("gemini-2.5-flash", [{"role": "assistant",
                                                                                 "parts": [{"text": "hi"}]}])),
    "gemini.body_not_object": lambda sim: error_of(sim.client.post(
        sim.server.base_url("gemini") + "/models/gemini-2.5-flash:generateContent", json=[{"contents": []}],
        headers={"x-goog-api-key": "k"})),
    "ollama.model_without_tools": lambda sim: ollama_error(sim.ollama(
        {"model": "llama2:13b", "messages": USER, "tools": OLLAMA_TOOLS})),
    "ollama.model_required": lambda sim: ollama_error(sim.ollama({"model": "", "messages": USER})),
    "ollama.go_type_mismatch": lambda sim: ollama_error(sim.ollama({"model": "qwen3", "messages": "hi"})),
    "ollama.invalid_role": lambda sim: ollama_error(sim.ollama(
        {"model": "qwen3", "messages": [{"role": "robot", "content": "hi"}]})),
    "openrouter.provider_down": openrouter_down,
    "openrouter.forced_tool_use": lambda sim: error_of(sim.post(
        "openrouter", "/chat/completions",
        {"model": "anthropic/claude-opus-5.5", "messages": USER, "tool_choice": "required",
         "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]},
        {"authorization": "Bearer k"})),
}


FAULT_PATHS = {"openai-chat": "/chat/completions", "openai-responses": "/responses", "anthropic": "/messages",
               "openrouter": "/chat/completions", "ollama": "/api/chat"}


def fault(fmt: str, status: int) -> Callable[[Sim], tuple[int, str]]:
    """Ask the simulator for a fault of `status` in `fmt`; the message without its " (simulated fault)" mark."""
    def probe(sim: Sim) -> tuple[int, str]:
        model = f"sim-reasoner-{status}"
        if fmt == "gemini":
            r = sim.gemini(model, gemini_answer("", [])[:1])
        else:
            body = {"model": model, "messages": USER, "input": ASK, "max_tokens": 64, "stream": False}
            keep = {"openai-responses": ("model", "input")}.get(fmt, ("model", "messages", "max_tokens", "stream"))
            r = sim.post(fmt, FAULT_PATHS[fmt], {k: v for k, v in body.items() if k in keep},
                         {"authorization": "Bearer k", "x-api-key": "k", "anthropic-version": "2023-06-01"})
        error = r.json()["error"]
        message = error if isinstance(error, str) else error["message"]
        return r.status_code, message.removesuffix(" (simulated fault)")
    return probe


PROBES.update({entry_id: fault(entry.format, entry.status) for entry_id, entry in ledger().items()
               if ".fault_" in entry_id})
PROBES.update(OPENAI_PROBES)
PROBES.update(CONFORM_PROBES)


@pytest.fixture(scope="module")
def sim(server):
    with httpx.Client(timeout=10) as client:
        yield Sim(server, client)


def test_every_entry_has_a_probe_and_every_probe_an_entry():
    assert set(PROBES) == set(ledger())


@pytest.mark.parametrize("entry", list(ledger().values()), ids=list(ledger()))
def test_the_simulator_says_what_the_ledger_says(sim, entry: Entry):
    status, text = PROBES[entry.id](sim)
    assert status == entry.status
    assert entry.matches(text) is not None, f"simulator: {text!r}\nledger:    {entry.wording!r}"


def test_the_ledger_is_well_formed():
    for entry in ledger().values():
        assert entry.wording_is in WORDING_KINDS and entry.source.startswith("https://")


def test_the_table_marks_the_simulators_own_words():
    table = ledger_table("anthropic")
    rows = table.splitlines()[2:]
    assert len(rows) == sum("anthropic" in e.applies_to for e in ledger().values())  # its own and the shared
    ours = [e for e in ledger().values() if "anthropic" in e.applies_to and e.wording_is == "ours"]
    literal = lambda text: re.sub(r"([\\`*<|])", r"\\\1", text)  # noqa: E731 - as the table writes a cell
    assert ours and all(literal(f"{e.wording} (wording ours)") in table for e in ours)
    with pytest.raises(ValueError, match="no ledger entries"):
        ledger_table("no-such-format")


def test_a_placeholder_matches_what_the_request_decided():
    entry = ledger()["anthropic.prefix_bound_thinking"]
    assert entry.matches(entry.wording.format(i=3, j=0)) == {"i": "3", "j": "0"}
    assert entry.matches("messages.3.content.0: something else") is None


# --- currency: every rule has a source and a date, and each format says when its rules were checked ----------

GOOD = '''
[[entry]]
id = "gemini.example"
format = "gemini"
rule = "An example rule"
kind = "error"
status = 400
wording = "No."
wording_is = "ours"
source = "https://example.com/docs (the page the rule is read in)"
checked = "2026-12-01"
'''


def without(field: str) -> str:
    return "\n".join(line for line in GOOD.splitlines() if not line.startswith(field + " "))


def test_an_entry_without_a_source_or_a_date_is_refused():
    assert list(parse_ledger(GOOD)) == ["gemini.example"]
    for broken, why in [(without("source"), "source"), (without("checked"), "checked"),
                        (GOOD.replace('"https://example.com/docs (the page the rule is read in)"', '""'), "source"),
                        (GOOD.replace("https://example.com/docs", "the docs"), "source must name a page"),
                        (GOOD.replace('"2026-12-01"', '"last week"'), "checked must be a date"),
                        (GOOD.replace('"2026-12-01"', '"2026-02-30"'), "checked must be a date"),
                        (GOOD + GOOD, "duplicate ids")]:
        with pytest.raises(ValueError, match=why):
            parse_ledger(broken)


def test_every_entry_of_the_ledger_has_a_source_and_a_date():
    for entry in ledger().values():
        assert "https://" in entry.source and re.fullmatch(r"\d{4}-\d{2}-\d{2}", entry.checked), entry.id


def test_every_format_says_when_its_rules_were_checked():
    rows = {fmt: (date, count, ours) for fmt, date, count, ours in currency(FORMATS)}
    assert set(rows) == set(FORMATS)
    for fmt, (date, count, ours) in rows.items():
        assert count and date == rules_as_of(fmt) == max(e.checked for e in ledger().values() if fmt in e.applies_to)
        assert ours == sum(e.wording_is == "ours" for e in ledger().values() if fmt in e.applies_to)


def test_the_simulators_help_says_rules_as_of_for_every_format(capsys):
    with pytest.raises(SystemExit):
        sim_main(["--help"])
    help_text = capsys.readouterr().out
    for fmt in FORMATS:
        assert re.search(rf"^  {re.escape(fmt)} +rules as of {rules_as_of(fmt)} \(", help_text, re.M), fmt


def test_the_sites_simulator_page_shows_the_currency_and_marks_the_simulators_own_words():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs"))
    from _pages import ledger_section

    page = ledger_section()
    for fmt, date, count, _ in currency(FORMATS):
        assert f"| {fmt} | {date} | {count} |" in page and f"### {fmt}: rules as of {date}" in page
    ours = [e for e in ledger().values() if e.wording_is == "ours"]
    marked = sum(line.count("(wording ours)") for line in page.splitlines() if line.startswith("| "))
    assert marked == sum(len(e.applies_to) for e in ours)


def test_a_table_asked_for_the_plain_wording_still_marks_the_simulators_own_words():
    table = ledger_table("gemini", columns=("rule", "wording"))
    ours = [e for e in ledger().values() if "gemini" in e.applies_to and e.wording_is == "ours"]
    assert ours and table.count("(wording ours)") == len(ours)

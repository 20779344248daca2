"""Probes for the fidelity ledger's HTTP-layer refusals and its degradations: each makes the simulator show one
entry over HTTP and answers (status, the text the ledger states). A degradation is accepted (200), so its text
is the words the rule log recorded for the request (`SimServer.rule_logs`).

`tests/test_fidelity_ledger.py` merges `CONFORM_PROBES` into its `PROBES`; a probe takes its `Sim` (one httpx
client for the module's simulator).
"""

from __future__ import annotations

import json
from typing import Callable

import httpx

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
NEWS = {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}
ASK = "Weather in Paris and in Tokyo?"
USER = [{"role": "user", "content": ASK}]
CHAT_KEY = {"authorization": "Bearer k"}
CLAUDE_KEY = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
CLAUDE_TOOLS = [{"name": "get_weather", "input_schema": WEATHER}]
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
RESPONSES_TOOLS = [{"type": "function", "name": "get_weather", "parameters": WEATHER, "strict": False}]
GEMINI_TOOLS = [{"functionDeclarations": [{"name": "get_weather", "parametersJsonSchema": WEATHER}]}]
#: Where each format takes a chat request, under its base URL (Gemini's names the model in the path).
CHAT_PATHS = {"anthropic": "/messages", "openrouter": "/chat/completions", "ollama": "/api/chat",
              "gemini": "/models/gemini-2.5-flash:generateContent", "openai-chat": "/chat/completions"}


def logged(sim, rule: str, r: httpx.Response) -> tuple[int, str]:
    """The answer's status and the words the last request's log recorded for `rule` ("" when none)."""
    findings = [f for f in sim.server.rule_logs()[-1].findings if f.rule == rule]
    return r.status_code, (findings[0].words or "") if findings else ""


def message_of(r: httpx.Response) -> tuple[int, str]:
    error = r.json()["error"]
    return r.status_code, error if isinstance(error, str) else error["message"]


def raw_post(sim, fmt: str, content: bytes, content_type: str = "application/json") -> httpx.Response:
    headers = {**CHAT_KEY, **CLAUDE_KEY, "x-goog-api-key": "k", "content-type": content_type}
    return sim.client.post(sim.server.base_url(fmt) + CHAT_PATHS[fmt], content=content, headers=headers)


# -- the HTTP layer --------------------------------------------------------------------------------------

def body_too_large(sim) -> tuple[int, str]:
    limit = sim.server.app.state.sim.max_body_bytes
    return message_of(raw_post(sim, "openai-chat", b" " * (limit + 1)))


def nested_too_deeply(sim) -> tuple[int, str]:
    """A body JSON can still read but the request's decoding cannot: the depth between the two depends on
    the server's stack, so the probe walks up to it."""
    for depth in range(880, 1000, 8):
        args = '{"a":' * depth + "1" + "}" * depth
        raw = ('{"model":"qwen3","stream":false,"messages":[{"role":"user","content":"hi"},{"role":"assistant",'
               '"content":"","tool_calls":[{"function":{"name":"f","arguments":{"x":%s}}}]}]}' % args)
        status, message = message_of(raw_post(sim, "ollama", raw.encode()))
        if message == "The request is nested too deeply." or "JSON" in message:
            return status, message
    return 0, "no depth between JSON's limit and the decoder's"


def not_json(fmt: str) -> Callable:
    return lambda sim: message_of(raw_post(sim, fmt, b'{"model": '))


# -- degradations: accepted, the log says what changes ----------------------------------------------------

def claude(sim, body: dict) -> httpx.Response:
    return sim.client.post(sim.server.base_url("anthropic") + "/messages",
                           json={"max_tokens": 2048, "tools": CLAUDE_TOOLS, **body}, headers=CLAUDE_KEY)


def claude_results(content: list) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": b["id"], "content": "sunny"}
                                        for b in content if b["type"] == "tool_use"]}


def earlier_thinking_dropped(sim) -> tuple[int, str]:
    """Two steps on a model that keeps all earlier thinking; the first step sent back without its thinking."""
    fields = {"model": "claude-opus-4-5-conform-sequential", "thinking": {"type": "enabled", "budget_tokens": 1024}}
    history = list(USER)
    for _ in range(2):
        content = claude(sim, {**fields, "messages": history}).json()["content"]
        history += [{"role": "assistant", "content": content}, claude_results(content)]
    history[1] = {"role": "assistant", "content": [b for b in history[1]["content"] if "thinking" not in b["type"]]}
    return logged(sim, "anthropic.earlier_thinking_dropped", claude(sim, {**fields, "messages": history}))


def tool_list_changed(sim) -> tuple[int, str]:
    content = [{"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}}]
    history = [*USER, {"role": "assistant", "content": content}, claude_results(content)]
    r = claude(sim, {"model": "claude-sonnet-4-5", "messages": history,
                     "tools": [{"name": "get_news", "input_schema": NEWS}]})
    return logged(sim, "anthropic.tool_list_changed", r)


def responses(sim, body: dict) -> httpx.Response:
    return sim.client.post(sim.server.base_url("openai-responses") + "/responses",
                           json={"model": "gpt-6.1-sol", "tools": RESPONSES_TOOLS, "reasoning": {"effort": "low"},
                                 **body}, headers=CHAT_KEY)


def reasoning_dropped(sim) -> tuple[int, str]:
    """The calls sent back without the reasoning item before them, and without their item ids."""
    first = responses(sim, {"input": ASK}).json()["output"]
    calls = [{k: v for k, v in o.items() if k != "id"} for o in first if o["type"] == "function_call"]
    outputs = [{"type": "function_call_output", "call_id": c["call_id"], "output": "sunny"} for c in calls]
    r = responses(sim, {"input": [*USER, *calls, *outputs]})
    return logged(sim, "openai-responses.reasoning_dropped", r)


def gemini(sim, model: str, contents: list) -> httpx.Response:
    return sim.client.post(sim.server.base_url("gemini") + f"/models/{model}:generateContent",
                           json={"contents": contents, "tools": GEMINI_TOOLS}, headers={"x-goog-api-key": "k"})


def earlier_signature_dropped(sim) -> tuple[int, str]:
    """A turn of calls and its answer, then a new question: the first turn's calls sent back unsigned (only
    the current turn, from the last question on, is validated)."""
    model = "gemini-3-flash-preview"
    contents = [{"role": "user", "parts": [{"text": ASK}]}]
    for question in ("And in Rome?", None):
        parts = gemini(sim, model, contents).json()["candidates"][0]["content"]["parts"]
        results = [{"functionResponse": {"name": p["functionCall"]["name"], "response": {"output": "sunny"}}}
                   for p in parts if "functionCall" in p]
        contents += [{"role": "model", "parts": parts}, {"role": "user", "parts": results}]
        if question:
            answer = gemini(sim, model, contents).json()["candidates"][0]["content"]["parts"]
            contents += [{"role": "model", "parts": answer}, {"role": "user", "parts": [{"text": question}]}]
    contents[1] = {"role": "model", "parts": [{k: v for k, v in p.items() if k != "thoughtSignature"}
                                              for p in contents[1]["parts"]]}
    return logged(sim, "gemini.earlier_signature_dropped", gemini(sim, model, contents))


def reasoning_details_dropped(sim) -> tuple[int, str]:
    def post(messages: list) -> httpx.Response:
        return sim.client.post(sim.server.base_url("openrouter") + "/chat/completions",
                               json={"model": "sim-reasoner", "messages": messages, "tools": CHAT_TOOLS,
                                     "reasoning": {"enabled": True}}, headers=CHAT_KEY)
    message = post(USER).json()["choices"][0]["message"]
    kept = {"role": "assistant", "content": message.get("content"), "tool_calls": message["tool_calls"]}
    results = [{"role": "tool", "tool_call_id": c["id"], "content": "sunny"} for c in message["tool_calls"]]
    return logged(sim, "openrouter.reasoning_details_dropped", post([*USER, kept, *results]))


def results_out_of_order(sim) -> tuple[int, str]:
    def post(messages: list) -> httpx.Response:
        return sim.client.post(sim.server.base_url("ollama") + "/api/chat",
                               json={"model": "qwen3", "stream": False, "messages": messages,
                                     "tools": CHAT_TOOLS}, headers={})
    message = post(USER).json()["message"]
    results = [{"role": "tool", "tool_name": c["function"]["name"], "content": json.dumps(c["function"]["arguments"])}
               | ({"tool_call_id": c["id"]} if c.get("id") else {}) for c in message["tool_calls"]]
    return logged(sim, "ollama.results_out_of_order", post([*USER, message, *reversed(results)]))


CONFORM_PROBES: dict[str, Callable] = {
    "sim.unsupported_media_type": lambda sim: message_of(raw_post(sim, "openai-chat", b"{}", "text/plain")),
    "sim.body_too_large": body_too_large,
    "sim.nested_too_deeply": nested_too_deeply,
    **{f"{fmt}.not_json": not_json(fmt) for fmt in ("anthropic", "gemini", "openrouter", "ollama")},
    "anthropic.earlier_thinking_dropped": earlier_thinking_dropped,
    "anthropic.tool_list_changed": tool_list_changed,
    "openai-responses.reasoning_dropped": reasoning_dropped,
    "gemini.earlier_signature_dropped": earlier_signature_dropped,
    "openrouter.reasoning_details_dropped": reasoning_details_dropped,
    "ollama.results_out_of_order": results_out_of_order,
}

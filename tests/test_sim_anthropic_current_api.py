"""The simulator's Anthropic Messages API as the provider documents it today, driven over HTTP with the official
`anthropic` SDK (and the kit's own client where the kit is what is tested).

Each test names the fidelity-ledger entry it checks (agentkit/sim/fidelity.toml): the server's blocks replayed
and compaction (`anthropic.server_blocks_replayed`, `anthropic.compaction_drops_earlier_blocks`), unknown and
documented top-level fields (`anthropic.extra_inputs`), token counting (`anthropic.count_tokens`), tool search
(`anthropic.deferred_tools_hidden`, `anthropic.all_tools_deferred`, `anthropic.tool_reference_unknown`), prompt
caching (`anthropic.prompt_cache`) and the message-threads beta (`anthropic.message_threads`,
`anthropic.thread_not_found`), with the SDK's own tool runner on every Claude model the simulator serves.
"""

from __future__ import annotations

import anthropic
import httpx
import pytest

from agentkit import HTTPModel, sim, tool
from agentkit.core.budgets import DEFAULT_PRICES, cost
from agentkit.core.types import Message, Usage
from agentkit.providers import anthropic as codec
from agentkit.sim.behaviours import KNOWN_MODELS, respond
from agentkit.sim.prompt_cache import PromptCache
from agentkit.sim.store import ResponseStore
from agentkit.sim.wire.common import CacheBreakpoint, CachePlan

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "description": "the city"}},
           "required": ["city"]}
GET_WEATHER = {"name": "get_weather", "description": "Current weather for a city", "input_schema": WEATHER}
SEARCH_FILES = {"name": "search_files", "description": "Search through files in the workspace",
                "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}}
REGEX_SEARCH = {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}
ASK = [{"role": "user", "content": "Weather in Paris?"}]
#: Every Claude model the simulator serves by name (GET /v1/models).
CLAUDE_MODELS = sorted(name for name in KNOWN_MODELS if name.startswith("claude-"))


@pytest.fixture(scope="module")
def client(server):
    return anthropic.Anthropic(base_url=server.sdk_base_url("anthropic"), api_key="sk-sim", max_retries=0,
                               _strict_response_validation=True)


def findings(server, rule: str) -> list[str]:
    """The outcomes the simulator's rule logs recorded for `rule`, oldest first."""
    return [f.outcome for log in server.app.state.sim.rule_logs for f in log.findings if f.rule == rule]


# -- the server's blocks, replayed as the API returned them (anthropic.server_blocks_replayed) ----------------

SERVER_TURN = [
    {"type": "text", "text": "Let me look that up."},
    {"type": "server_tool_use", "id": "srvtoolu_01A", "name": "web_search", "input": {"query": "Paris weather"}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01A", "content": [
        {"type": "web_search_result", "url": "https://example.com/paris", "title": "Paris",
         "encrypted_content": "e1"}]},
    {"type": "server_tool_use", "id": "srvtoolu_01B", "name": "code_execution", "input": {"code": "print(21 + 1)"}},
    {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_01B", "content": {
        "type": "code_execution_result", "stdout": "22\n", "stderr": "", "return_code": 0, "content": []}},
    {"type": "server_tool_use", "id": "srvtoolu_01C", "name": "bash_code_execution", "input": {"command": "ls"}},
    {"type": "bash_code_execution_tool_result", "tool_use_id": "srvtoolu_01C", "content": {
        "type": "bash_code_execution_result", "stdout": "a.txt\n", "stderr": "", "return_code": 0, "content": []}},
    {"type": "server_tool_use", "id": "srvtoolu_01D", "name": "tool_search_tool_regex",
     "input": {"pattern": "weather"}},
    {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_01D", "content": {
        "type": "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference",
                                                                         "tool_name": "get_weather"}]}},
    {"type": "text", "text": "It is 22 degrees in Paris."},
]


def test_a_history_with_the_servers_blocks_is_accepted_as_the_api_accepts_it(client):
    answer = client.beta.messages.create(
        model="claude-sonnet-4-5", max_tokens=512, tools=[REGEX_SEARCH, {**GET_WEATHER, "defer_loading": True}],
        messages=[*ASK, {"role": "assistant", "content": SERVER_TURN}, {"role": "user", "content": "Thanks!"}])
    assert answer.stop_reason == "end_turn"


def test_a_server_block_in_the_wrong_shape_is_refused_in_the_apis_words(client):
    broken = [{**SERVER_TURN[1], "input": "Paris weather"}]  # the input of a server_tool_use is an object
    with pytest.raises(anthropic.BadRequestError, match=r"messages\.1\.content\.0\.server_tool_use\.input: Input "
                                                        r"should be a valid dictionary"):
        client.messages.create(model="claude-sonnet-4-5", max_tokens=64, extra_body={"messages": [
            *ASK, {"role": "assistant", "content": broken}, {"role": "user", "content": "Go on."}]}, messages=[])


def test_the_kits_client_keeps_the_servers_blocks_and_sends_them_back_unchanged():
    body = {"id": "msg_01A", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "thinking", "thinking": "", "signature": "c2ln"}, *SERVER_TURN,
                        {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}
    turn = codec.parse_response(body)
    kept = [b for b in body["content"] if b["type"] not in ("text", "tool_use")]
    assert [dict(b) for b in turn.reasoning.items] == kept  # in order, whole
    history = [Message.user("Weather in Paris?"), turn.as_message(),
               Message("tool", "sunny", (), "toolu_01A", "get_weather")]
    sent = codec.build_request("claude-sonnet-4-5", history).body["messages"][1]["content"]
    assert sent[:len(kept)] == kept and [b["type"] for b in sent[len(kept):]] == ["text", "tool_use"]


def test_a_compaction_block_stands_for_everything_before_it(client):
    # the unanswered tool_use would be a 400; the API drops it with the rest before the compaction block
    history = [{"role": "user", "content": "Something else first."},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01Z", "name": "get_weather",
                                                  "input": {"city": "Rome"}}]},
               {"role": "assistant", "content": [{"type": "compaction",
                                                  "content": "The user asked for the weather in Paris."}]}]
    answer = client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=512, tools=[GET_WEATHER],
                                         messages=history)
    assert [(b.type, b.input) for b in answer.content if b.type == "tool_use"] == [("tool_use", {"city": "Paris"})]
    # a failed compaction (content null) is no compaction: the history before it counts again
    failed = [*history[:2], {"role": "assistant", "content": [{"type": "compaction", "content": None}]}]
    with pytest.raises(anthropic.BadRequestError, match="`tool_use` ids were found without `tool_result`"):
        client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=512, tools=[GET_WEATHER], messages=failed)


# -- top-level fields (anthropic.extra_inputs) -------------------------------------------------------------------

def test_an_unknown_top_level_field_is_refused_naming_it(client):
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=ASK, extra_body={"no_such_field": 1})
    assert caught.value.body["error"]["message"] == "no_such_field: Extra inputs are not permitted"


@pytest.mark.parametrize("field, value", [
    ("context_management", {"edits": [{"type": "clear_tool_uses_20250919"}]}),
    ("container", "container_01"), ("mcp_servers", [{"type": "url", "url": "https://example.com/mcp", "name": "docs"}]),
    ("service_tier", "auto"), ("thread", {"type": "create"}), ("output_config", {"effort": "low"}),
    ("metadata", {"user_id": "u-1"}), ("cache_control", {"type": "ephemeral"}), ("stop_sequences", ["END"]),
    ("top_p", 0.9), ("top_k", 5), ("inference_geo", "us"), ("speed", "standard"), ("diagnostics", {}),
])
def test_every_documented_field_is_accepted(client, field, value):
    answer = client.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=ASK, extra_body={field: value})
    assert answer.type == "message"


# -- token counting (anthropic.count_tokens) ------------------------------------------------------------------------

def test_count_tokens_takes_the_inputs_of_a_message_and_counts_what_its_usage_counts(client):
    for tools in ([], [GET_WEATHER], [GET_WEATHER, SEARCH_FILES]):
        inputs = {"model": "claude-sonnet-4-5", "system": "Be brief.", "messages": ASK, "tools": tools}
        counted = client.messages.count_tokens(**inputs).input_tokens
        usage = client.messages.create(max_tokens=256, **inputs).usage
        assert counted == usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    # the tool definitions are counted: each tool adds its tokens
    counts = [client.messages.count_tokens(model="claude-sonnet-4-5", messages=ASK, tools=tools).input_tokens
              for tools in ([], [GET_WEATHER], [GET_WEATHER, SEARCH_FILES])]
    assert counts[0] < counts[1] < counts[2]


def test_count_tokens_leaves_a_deferred_tool_out_until_it_is_found(client):
    plain = client.beta.messages.count_tokens(model="claude-sonnet-4-5", messages=ASK, tools=[REGEX_SEARCH])
    deferred = client.beta.messages.count_tokens(
        model="claude-sonnet-4-5", messages=ASK, tools=[REGEX_SEARCH, {**SEARCH_FILES, "defer_loading": True}])
    loaded = client.beta.messages.count_tokens(model="claude-sonnet-4-5", messages=ASK,
                                               tools=[REGEX_SEARCH, SEARCH_FILES])
    assert plain.input_tokens == deferred.input_tokens < loaded.input_tokens


def test_count_tokens_refuses_what_a_message_would_and_what_only_generating_takes(client):
    with pytest.raises(anthropic.BadRequestError, match="max_tokens: Extra inputs are not permitted"):
        client.messages.count_tokens(model="claude-sonnet-4-5", messages=ASK, extra_body={"max_tokens": 64})
    with pytest.raises(anthropic.BadRequestError, match="`tool_use` ids were found without `tool_result`"):
        client.messages.count_tokens(model="claude-sonnet-4-5", tools=[GET_WEATHER], messages=[*ASK, {
            "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01A", "name": "get_weather",
                                              "input": {"city": "Paris"}}]}])
    with pytest.raises(anthropic.NotFoundError):
        client.messages.count_tokens(model="no-such-model", messages=ASK)


# -- tool search (anthropic.deferred_tools_hidden and its two 400s) --------------------------------------------------

@pytest.fixture(scope="module")
def seen_tools():
    """A simulator whose model records the tool names of every request it is asked (then answers as usual)."""
    asked: list[tuple[str, ...]] = []

    def recording(request):
        asked.append(tuple(t.name for t in request.tools))
        return respond(request)

    with sim.serve(respond=recording) as running:
        yield running, asked


def test_a_deferred_tool_is_hidden_until_a_search_finds_it_then_it_is_called(seen_tools):
    server, asked = seen_tools
    client = anthropic.Anthropic(base_url=server.sdk_base_url("anthropic"), api_key="k", max_retries=0,
                                 _strict_response_validation=True)
    asked.clear()
    tools = [REGEX_SEARCH, {**GET_WEATHER, "defer_loading": True}, SEARCH_FILES]
    answer = client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=ASK, tools=tools)
    assert [b.type for b in answer.content] == ["server_tool_use", "tool_search_tool_result", "tool_use"]
    search, found, call = answer.content
    assert search.name == "tool_search_tool_regex" and "weather" in search.input["pattern"]
    assert [r.tool_name for r in found.content.tool_references] == ["get_weather"] and found.tool_use_id == search.id
    assert (call.name, call.input) == ("get_weather", {"city": "Paris"}) and answer.stop_reason == "tool_use"
    # the model was asked twice: first without the deferred tool, then with it, found
    assert asked == [("search_files",), ("search_files", "get_weather")]
    # the next turn replays the blocks unchanged; the found tool stays visible, and no new search runs
    asked.clear()
    results = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "22 degrees"}]}
    final = client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=512, tools=tools,
                                        messages=[*ASK, {"role": "assistant", "content": answer.content}, results])
    assert final.stop_reason == "end_turn" and "22" in final.content[-1].text
    assert asked == [("search_files", "get_weather")]


def test_an_unneeded_deferred_tool_costs_no_input_tokens_and_a_search_that_finds_nothing_says_so(client):
    hello = [{"role": "user", "content": "Hello there!"}]
    with_deferred = client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=128, messages=hello,
                                                tools=[REGEX_SEARCH, {**GET_WEATHER, "defer_loading": True}])
    without = client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=128, messages=hello,
                                          tools=[REGEX_SEARCH])
    assert with_deferred.usage.input_tokens == without.usage.input_tokens
    blocks = {b.type: b for b in with_deferred.content}
    assert blocks["tool_search_tool_result"].content.tool_references == [] and "text" in blocks


def test_the_documented_tool_search_errors(client):
    with pytest.raises(anthropic.BadRequestError) as every:
        client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=ASK,
                                    tools=[{**REGEX_SEARCH, "defer_loading": True},
                                           {**GET_WEATHER, "defer_loading": True}])
    assert every.value.body["error"]["message"] == ("At least one tool must have defer_loading=false. "
                                                    "All tools cannot be deferred.")
    referenced = [*ASK, {"role": "assistant", "content": [
        SERVER_TURN[7], {**SERVER_TURN[8], "content": {"type": "tool_search_tool_search_result", "tool_references": [
            {"type": "tool_reference", "tool_name": "get_news"}]}}]}, {"role": "user", "content": "Go on."}]
    with pytest.raises(anthropic.BadRequestError, match="Tool reference 'get_news' not found in available tools"):
        client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=referenced,
                                    tools=[REGEX_SEARCH, {**GET_WEATHER, "defer_loading": True}])


def test_a_client_side_search_returns_tool_references_in_a_tool_result(client):
    # "Custom tool search implementation": a tool_result whose content is tool_reference blocks
    finder = {"name": "find_tools", "description": "Find tools", "input_schema": {"type": "object", "properties": {}}}
    history = [*ASK, {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01F", "name": "find_tools",
                                                        "input": {}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01F", "content": [
                   {"type": "tool_reference", "tool_name": "get_weather"}]}]},
               {"role": "assistant", "content": "I can look it up now."},
               {"role": "user", "content": "Weather in Oslo?"}]
    answer = client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=256, messages=history,
                                         tools=[finder, {**GET_WEATHER, "defer_loading": True}])
    assert [(b.name, b.input) for b in answer.content if b.type == "tool_use"] == [("get_weather", {"city": "Oslo"})]


# -- prompt caching (anthropic.prompt_cache) --------------------------------------------------------------------------

LONG_SYSTEM = "You answer questions about the weather, briefly and politely. " * 100  # ~1,500 tokens


def test_a_breakpoint_writes_the_prefix_once_and_a_later_request_reads_it(client):
    system = [{"type": "text", "text": LONG_SYSTEM + "Unique A.", "cache_control": {"type": "ephemeral"}}]
    inputs = {"model": "claude-sonnet-4-5", "system": system, "messages": ASK, "tools": [GET_WEATHER]}
    first = client.messages.create(max_tokens=256, **inputs).usage
    second = client.messages.create(max_tokens=256, **inputs).usage
    assert first.cache_creation_input_tokens > 0 and first.cache_read_input_tokens == 0
    assert first.cache_creation.ephemeral_5m_input_tokens == first.cache_creation_input_tokens
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0
    total = client.messages.count_tokens(**inputs).input_tokens
    for usage in (first, second):
        assert usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens == total
    # another question after the same prefix reads it too: the prefix is the tools and the system prompt
    other = client.messages.create(max_tokens=256, **{**inputs, "messages": [{"role": "user", "content": "And Rome?"}]})
    assert other.usage.cache_read_input_tokens == first.cache_creation_input_tokens


def test_a_one_hour_breakpoint_and_a_prefix_below_the_minimum(client):
    system = [{"type": "text", "text": LONG_SYSTEM + "Unique B.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    usage = client.messages.create(model="claude-sonnet-4-5", max_tokens=64, system=system, messages=ASK).usage
    assert usage.cache_creation.ephemeral_1h_input_tokens == usage.cache_creation_input_tokens > 0
    short = [{"type": "text", "text": "Be brief. Unique C.", "cache_control": {"type": "ephemeral"}}]
    for _ in range(2):  # under claude-sonnet-4-5's 1,024-token minimum: never written, never read
        small = client.messages.create(model="claude-sonnet-4-5", max_tokens=64, system=short, messages=ASK).usage
        assert (small.cache_creation_input_tokens, small.cache_read_input_tokens) == (0, 0)


def test_a_cache_entry_expires_five_minutes_after_its_last_use():
    now = [0.0]
    cache = PromptCache(clock=lambda: now[0])
    plan = CachePlan((CacheBreakpoint("a", 600), CacheBreakpoint("b", 2000, "5m")), minimum=1024)
    assert cache.settle(plan, Usage(2500, 10)) == Usage(2500, 10, cache_write_tokens=2000)
    now[0] = 299.0
    assert cache.settle(plan, Usage(2500, 10)).cached_tokens == 2000  # read: kept for 5 more minutes
    now[0] = 299.0 + 301.0
    assert cache.settle(plan, Usage(2500, 10)) == Usage(2500, 10, cache_write_tokens=2000)  # gone: written again


def test_a_cost_with_cache_writes_and_reads_is_priced_as_billed(server):
    # the kit's own client: the top-level cache_control caches the prefix up to the last block
    model = HTTPModel("claude-sonnet-4-5", "anthropic", base_url=server.base_url("anthropic"), api_key="k",
                      max_retries=0, extra_body={"cache_control": {"type": "ephemeral"}})
    history = [Message.system(LONG_SYSTEM + "Unique D."), Message.user("Weather in Paris?")]
    first, second = model.complete(history, []), model.complete(history, [])
    assert first.usage.cache_write_tokens > 0 and second.usage.cached_tokens == first.usage.cache_write_tokens
    price = DEFAULT_PRICES["claude-sonnet-4-5"]
    written = cost({"claude-sonnet-4-5": first.usage}).usd
    read = cost({"claude-sonnet-4-5": second.usage}).usd
    fresh = first.usage.input_tokens - first.usage.cache_write_tokens
    assert written == pytest.approx((fresh * price.input + first.usage.cache_write_tokens * price.cache_write
                                     + first.usage.output_tokens * price.output) / 1e6)
    assert read < price.usd(Usage(second.usage.input_tokens, second.usage.output_tokens)) < written


# -- the message-threads beta (anthropic.message_threads, anthropic.thread_not_found) -------------------------------

@tool
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: the city
    """
    return f"{city}: sunny, 22 degrees"


@anthropic.beta_tool
def weather_tool(city: str) -> str:
    """Current weather for a city.

    Args:
        city: the city
    """
    return f"{city}: sunny, 22 degrees"


@pytest.mark.parametrize("model", CLAUDE_MODELS)
def test_the_sdks_tool_runner_works_in_its_default_settings_on_every_claude_model(server, client, model):
    continued = findings(server, "anthropic.thread_not_found").count("passed")
    runner = client.beta.messages.tool_runner(model=model, max_tokens=2048, tools=[weather_tool],
                                              messages=[{"role": "user", "content": "Weather in Paris?"}])
    messages = list(runner)
    assert [m.stop_reason for m in messages] == ["tool_use", "end_turn"]
    assert "22" in messages[-1].content[-1].text
    # the runner threads by default: its second request was a continue that found its thread
    assert findings(server, "anthropic.thread_not_found").count("passed") == continued + 1


def test_a_thread_the_server_lost_is_a_404_and_the_sdk_replays_the_whole_history(server, client):
    thread = client.beta.messages.thread(model="claude-sonnet-4-5", max_tokens=512, tools=[GET_WEATHER])
    first = thread.send({"role": "user", "content": "Weather in Paris?"})
    call = next(b for b in first.content if b.type == "tool_use")
    server.app.state.sim.stored = ResponseStore()  # the server forgets every thread (as when one expires)
    refused = findings(server, "anthropic.thread_not_found").count("refused")
    final = thread.send({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                                      "content": "22 degrees"}]})
    assert final.stop_reason == "end_turn" and "22" in final.content[-1].text
    assert findings(server, "anthropic.thread_not_found").count("refused") == refused + 1


def test_a_continue_sends_only_the_new_messages_and_is_refused_for_an_unknown_id(client):
    first = client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=512, tools=[GET_WEATHER],
                                        system="Be brief.", messages=ASK, thread={"type": "create"},
                                        betas=["message-threads-2026-08-12"])
    call = next(b for b in first.content if b.type == "tool_use")
    results = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "22 degrees"}]}
    second = client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[results],
                                         thread={"type": "continue", "previous_message_id": first.id},
                                         betas=["message-threads-2026-08-12"])
    assert second.stop_reason == "end_turn" and "22" in second.content[-1].text
    with pytest.raises(anthropic.NotFoundError) as lost:
        client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[results],
                                    thread={"type": "continue", "previous_message_id": "msg_01NeverIssued"},
                                    betas=["message-threads-2026-08-12"])
    assert lost.value.error_code == "thread_not_found"
    with pytest.raises(anthropic.BadRequestError) as changed:
        client.beta.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[results],
                                    system="Answer in French.",
                                    thread={"type": "continue", "previous_message_id": first.id},
                                    betas=["message-threads-2026-08-12"])
    assert changed.value.error_code == "thread_fingerprint_mismatch"


def test_the_kits_codec_carries_a_tool_search_through_two_turns_on_the_simulator(server):
    # the kit has no word for a deferred tool: its request gets the search tool and a deferred definition
    tools = [REGEX_SEARCH, {**GET_WEATHER, "defer_loading": True}]
    headers = {"x-api-key": "k", "anthropic-version": codec.API_VERSION}

    def post(messages):
        wire = codec.build_request("claude-sonnet-4-5", messages, [get_weather.spec])
        body = {**wire.body, "tools": tools}
        with httpx.Client(timeout=10) as http:
            answer = http.post(server.base_url("anthropic") + wire.path, json=body, headers=headers)
        assert answer.status_code == 200, answer.text
        return answer.json(), codec.parse_response(answer.json())

    raw, turn = post([Message.user("Weather in Paris?")])
    assert [b["type"] for b in turn.reasoning.items] == ["server_tool_use", "tool_search_tool_result"]
    call = turn.tool_calls[0]
    history = [Message.user("Weather in Paris?"), turn.as_message(),
               Message("tool", get_weather.fn(**call.arguments), (), call.id, call.name)]
    _, final = post(history)
    assert final.stop in ("stop",) and "22" in final.text
    sent = codec.build_request("claude-sonnet-4-5", history).body["messages"][1]["content"]
    assert sent[:2] == raw["content"][:2]  # the server's blocks went back as they came


# -- the current models in the rules that list models (anthropic.prefix_bound_thinking, forced_tool_use) ----------

@pytest.mark.parametrize("model", ["claude-haiku-5-5", "claude-fable-5-2", "claude-mythos-5-2"])
def test_the_newer_models_bind_a_kept_thinking_block_to_its_prefix(client, model):
    thinking = {"type": "adaptive", "display": "summarized"}
    first = client.messages.create(model=model, max_tokens=512, tools=[GET_WEATHER], messages=ASK, thinking=thinking)
    assert first.content[0].type == "thinking"
    results = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": b.id, "content": "sunny"}
                                           for b in first.content if b.type == "tool_use"]}
    history = [*ASK, {"role": "assistant", "content": first.content}, results]
    assert client.messages.create(model=model, max_tokens=512, tools=[GET_WEATHER], messages=history,
                                  thinking=thinking).stop_reason == "end_turn"
    with pytest.raises(anthropic.BadRequestError, match="The block is bound to a different conversation"):
        client.messages.create(model=model, max_tokens=512, tools=[GET_WEATHER], messages=history,
                               thinking=thinking, system="Answer in French.")


@pytest.mark.parametrize("model", ["claude-fable-5-2", "claude-mythos-5-2"])
def test_fable_and_mythos_5_2_always_think_and_refuse_a_forced_tool_choice(client, model):
    answer = client.messages.create(model=model, max_tokens=512, tools=[GET_WEATHER], messages=ASK)
    assert answer.content[0].type == "thinking"
    with pytest.raises(anthropic.BadRequestError, match='tool_choice: type "tool" and "any" are not supported'):
        client.messages.create(model=model, max_tokens=512, tools=[GET_WEATHER], messages=ASK,
                               tool_choice={"type": "any"})

"""agentkit.lab: showing JSON compactly, and reading facts off JSON documents and SSE streams."""

import httpx
import pytest

from agentkit import lab, sim
from agentkit.lab import connecting

CHAT_REQUEST = {
    "model": "gpt-4.1",
    "messages": [{"role": "user", "content": "東京の天気は？"}],
    "tools": [
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "get_exchange_rate", "parameters": {"type": "object", "x": 1}}},
    ],
    "max_completion_tokens": 512,
    "parallel_tool_calls": True,
}

TURN_2 = {
    "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "result one"},
        {"role": "tool", "tool_call_id": "call_2", "content": "result two"},
    ],
}


def sse_response(text: str) -> httpx.Response:
    return httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})


# -- connecting --

KEY = "-".join(["sk", "test", "SECRET", "0123456789abcdef"])  # built at run time: no key-shaped literal


def test_from_env_without_anything_uses_the_simulator(clean_env):
    model = lab.from_env(sim_url="http://127.0.0.1:9999")
    assert (model.model, model.format, model.base_url) == ("sim-reasoner", "openai-chat",
                                                           "http://127.0.0.1:9999/v1")
    anthropic = lab.from_env("anthropic", sim_url="http://127.0.0.1:9999/")
    assert anthropic.base_url == "http://127.0.0.1:9999/v1"


def test_from_env_without_anything_and_no_simulator_says_what_to_do(clean_env):
    with pytest.raises(ValueError, match="AGENTKIT_PROVIDER"):
        lab.from_env()


def test_from_env_a_key_alone_switches_nothing(clean_env):
    # A key left in the shell must never turn the tutorials or `make test` into a paid run.
    clean_env.setenv("OPENAI_API_KEY", KEY)
    clean_env.setenv("ANTHROPIC_API_KEY", KEY)
    model = lab.from_env("anthropic", sim_url="http://127.0.0.1:9999")
    assert model.model == "sim-reasoner" and model.base_url.startswith("http://127.0.0.1:9999")
    assert model.api_key == "sim-key" and KEY not in repr(model)


def test_from_env_provider_takes_its_key_from_the_environment(clean_env):
    clean_env.setenv("ANTHROPIC_API_KEY", KEY)
    clean_env.setenv("AGENTKIT_PROVIDER", "anthropic")
    model = lab.from_env(sim_url="http://127.0.0.1:9999")
    assert model.format == "anthropic" and model.base_url.startswith("https://api.anthropic.com")
    assert KEY not in repr(model)


def test_from_env_agentkit_provider_wins_and_sim_forces_the_simulator(clean_env):
    clean_env.setenv("OPENAI_API_KEY", KEY)
    clean_env.setenv("ANTHROPIC_API_KEY", KEY)
    clean_env.setenv("AGENTKIT_PROVIDER", "claude")
    clean_env.setenv("AGENTKIT_MODEL", "claude-x")
    assert (lab.from_env().format, lab.from_env().model) == ("anthropic", "claude-x")
    clean_env.setenv("AGENTKIT_PROVIDER", "sim")
    model = lab.from_env(sim_url="http://127.0.0.1:9999")
    assert model.model == "sim-reasoner" and model.base_url.startswith("http://127.0.0.1:9999")
    assert model.api_key == "sim-key"  # a real key is never sent to the simulator


def test_from_env_takes_the_simulators_handle_and_knows_where_each_format_lives(clean_env, server):
    model = lab.from_env("openrouter", sim_url=server, sim_model="sim-always-tool")
    assert (model.model, model.base_url) == ("sim-always-tool", server.base_url("openrouter"))
    assert model.base_url.endswith("/api/v1")

def test_connect_without_configuration_gives_the_simulator(clean_env):
    model = lab.connect("anthropic")
    assert lab.simulated(model) and model.format == "anthropic" and model.model == "sim-reasoner"


def test_connect_to_a_base_url_uses_the_named_model_there(clean_env):
    clean_env.setenv("AGENTKIT_BASE_URL", "http://127.0.0.1:9/v1")
    clean_env.setenv("AGENTKIT_MODEL", "qwen3")
    model = lab.connect("openai-chat", "gpt-4.1")
    assert (model.base_url, model.model, model.format) == ("http://127.0.0.1:9/v1", "qwen3", "openai-chat")
    assert lab.describe(model) == "http://127.0.0.1:9/v1: qwen3 in openai-chat format"
    # formats the variables do not name, and simulator presets, stay on the simulator
    assert lab.simulated(lab.connect("anthropic")) and lab.simulated(lab.connect("openai-chat", "sim-repeat"))


def test_describing_a_configured_provider_model_starts_no_simulator(clean_env):
    clean_env.setenv("AGENTKIT_BASE_URL", "http://127.0.0.1:9/v1")
    clean_env.setenv("AGENTKIT_MODEL", "qwen3")
    model = lab.connect("openai-chat")
    clean_env.setattr(sim.server, "_shared", None)  # as in a process that never needed the simulator
    clean_env.setattr(sim.server, "serve", lambda **options: pytest.fail("lab started a simulator"))
    assert not lab.simulated(model)
    assert lab.describe(model) == "http://127.0.0.1:9/v1: qwen3 in openai-chat format"


def test_connect_to_a_base_url_without_a_model_name_says_which_variable_is_missing(clean_env):
    clean_env.setenv("AGENTKIT_BASE_URL", "http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="AGENTKIT_MODEL is not"):
        lab.connect("openai-chat")
    assert lab.simulated(lab.connect("gemini"))  # a format the base URL does not serve needs no name


def test_connect_refuses_a_provider_name_it_does_not_know(clean_env):
    clean_env.setenv("AGENTKIT_PROVIDER", "opnai-chat")
    with pytest.raises(ValueError, match="AGENTKIT_PROVIDER='opnai-chat'"):
        lab.connect("openai-chat")


@pytest.mark.parametrize("configured", [False, True])
def test_connect_loads_the_schema_validator_on_every_path(clean_env, configured):
    if configured:
        clean_env.setenv("AGENTKIT_BASE_URL", "http://127.0.0.1:9/v1")
        clean_env.setenv("AGENTKIT_MODEL", "qwen3")
    warmed = []
    clean_env.setattr(connecting, "_warm_up", lambda: warmed.append(True))
    model = lab.connect("openai-chat")
    assert warmed and lab.simulated(model) is not configured


# -- showing JSON --

def test_compact_json_keeps_short_objects_on_one_line_and_breaks_long_ones():
    assert lab.compact_json({"a": 1, "b": [1, 2]}) == '{"a": 1, "b": [1, 2]}'
    text = lab.compact_json({"first": "x" * 30, "second": "y" * 30}, max_str=100)
    assert text.splitlines() == ["{", f'  "first": "{"x" * 30}",', f'  "second": "{"y" * 30}"', "}"]


def test_compact_json_cuts_long_strings_and_hides_given_values():
    assert lab.compact_json({"s": "abcdefgh"}, max_str=4) == '{"s": "abc…"}'
    assert lab.compact_json({"schema": {"type": "object"}}, hide=[{"type": "object"}]) == '{"schema": "‹schema›"}'


def test_side_by_side_titles_each_document_and_clips_long_ones():
    shown = lab.SideBySide({"a": 1}, list(range(200)), titles=("left", "right"), max_lines=5)
    text = repr(shown)
    assert text.startswith('── left ──\n{"a": 1}\n\n── right ──\n[')
    assert text.endswith("more lines)")
    assert "<table>" in shown._repr_html_() and "<b>right</b>" in shown._repr_html_()


def test_find_paths_lists_every_matching_value_depth_first():
    found = lab.find_paths(CHAT_REQUEST, lambda v: isinstance(v, str) and v.startswith("get_"))
    assert found == [("tools[0].function.name", "get_weather"), ("tools[1].function.name", "get_exchange_rate")]
    assert lab.find_paths([{"a": 1}], lambda v: v == 1) == [("[0].a", 1)]


# -- reading facts off JSON --

def test_where_gives_the_path_of_one_value():
    assert lab.where(CHAT_REQUEST, "get_weather") == "tools[0].function.name"
    assert lab.where(CHAT_REQUEST, 512) == "max_completion_tokens"


def test_where_writes_the_index_in_which_several_values_differ_as_i():
    assert lab.where(CHAT_REQUEST, "get_weather", "get_exchange_rate") == "tools[i].function.name"
    schemas = [t["function"]["parameters"] for t in CHAT_REQUEST["tools"]]
    assert lab.where(CHAT_REQUEST, *schemas) == "tools[i].function.parameters"


def test_where_returns_none_when_a_value_is_absent():
    assert lab.where(CHAT_REQUEST, "get_time") is None
    assert lab.where(CHAT_REQUEST, "get_weather", "get_time") is None


def test_where_matches_only_values_of_the_same_type():
    assert lab.where({"n": 1, "flag": True}, True) == "flag"
    assert lab.where({"flag": True}, 1) is None


def test_where_prefers_the_place_nearest_the_top_then_document_order():
    doc = {"content": [{"type": "tool_use"}], "stop_reason": "tool_use", "again": "tool_use"}
    assert lab.where(doc, "tool_use") == "stop_reason"


def test_where_with_tags_names_the_kind_of_each_list_item():
    assert lab.where(TURN_2, "result one", "result two", tags=True) == "messages[i](role=tool).content"


def test_where_needs_a_value():
    with pytest.raises(TypeError):
        lab.where(CHAT_REQUEST)


def test_generalise_keeps_equal_paths_and_rejects_paths_that_differ_outside_an_index():
    assert lab.generalise("a[0].b[1].c", "a[0].b[2].c") == "a[0].b[i].c"
    assert lab.generalise("a[1].b", "a[2].b", "a[3].b") == "a[i].b"
    assert lab.generalise("x.y") == "x.y"
    with pytest.raises(ValueError):
        lab.generalise("a[0].b", "a[1].c")
    with pytest.raises(ValueError):
        lab.generalise("a[0].b", "a[0].b[1]")


def test_tagged_marks_list_items_by_role_or_type_and_leaves_other_objects_alone():
    assert lab.tagged(TURN_2, "messages[2].content") == "messages[2](role=tool).content"
    assert lab.tagged(TURN_2, "messages[1].tool_calls[0].id") == \
        "messages[1](role=assistant).tool_calls[0](type=function).id"
    assert lab.tagged({"a": {"type": "x", "b": [1]}}, "a.b[0]") == "a.b[0]"














# -- reading facts off SSE streams --

CHAT_STREAM = (': OPENROUTER PROCESSING\n\n'
               'data: {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": ""}}]}}]}\n\n'
               'data: {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\\"c"}}]}}]}\n\n'
               'data: [DONE]\n\n')
NAMED_STREAM = ('event: ping\ndata: {"type": "ping"}\n\n'
                'event: content_block_delta\ndata: {"type": "content_block_delta", '
                '"delta": {"partial_json": "{\\"city\\""}}\n\n')


def test_sse_events_parses_json_data_keeps_other_text_and_skips_comments():
    events = lab.sse_events(sse_response(CHAT_STREAM))
    assert len(events) == 3
    assert events[0][0] is None and events[0][1]["choices"][0]["delta"]["tool_calls"][0]["index"] == 0
    assert events[-1] == (None, "[DONE]")
    assert [name for name, _ in lab.sse_events(sse_response(NAMED_STREAM))] == ["ping", "content_block_delta"]




def test_sse_framing_says_which_lines_a_stream_uses_and_how_it_ends():
    assert lab.sse_framing(CHAT_STREAM) == "data: lines only · 1 comment line · ends with data: [DONE]"
    assert lab.sse_framing(NAMED_STREAM.replace("\n", "\r\n")) == "event: + data: lines · no [DONE]"


def test_the_prompts_are_japanese_unless_agentkit_lang_asks_for_english(monkeypatch):
    monkeypatch.delenv("AGENTKIT_LANG", raising=False)
    assert lab.prompt(ja="東京の天気は？", en="Weather in Tokyo?") == "東京の天気は？"
    monkeypatch.setenv("AGENTKIT_LANG", "EN ")
    assert lab.prompt(ja="東京の天気は？", en="Weather in Tokyo?") == "Weather in Tokyo?"


def test_an_unknown_language_is_refused_in_one_line_naming_the_choices(monkeypatch):
    monkeypatch.setenv("AGENTKIT_LANG", "fr")
    with pytest.raises(ValueError, match=r"^AGENTKIT_LANG='fr' is not a language of the tutorials: use one of ja, en$"):
        lab.prompt(ja="はい", en="yes")


def test_how_shown_says_by_construction_for_the_simulator_and_scripts_and_measured_for_your_model():
    from agentkit import HTTPModel, ScriptedModel

    assert lab.how_shown(lab.simulator("openai-chat", "sim-noisy")) == \
        "by construction (the simulator's sim-noisy, a rule-based model)"
    assert lab.how_shown(ScriptedModel(["hi"])) == "by construction (a scripted model)"
    yours = HTTPModel("llama3.1", "openai-chat", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert lab.how_shown(yours) == "measured (your model, llama3.1)"

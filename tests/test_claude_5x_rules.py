"""The Claude 5.x rules the simulator reproduces on the Anthropic format (sources: agentkit/sim/fidelity.toml).

Opus 5.5, Sonnet 5.5, Fable 5.1 and Mythos 5.1 always think; thinking text is empty at the default display;
forced tool use is refused; and a kept thinking block is bound to its prefix (system, tools, earlier
messages), except on Mythos 5.1, which records the binding but does not check it.
"""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentkit
from agentkit import HTTPModel, StopReason
from agentkit.sim.wire import anthropic as anthropic_server

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"name": "get_weather", "description": "Weather in a city.", "input_schema": WEATHER}]
ASK = "Weather in Paris and in Tokyo?"
HEADERS = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
PREFIX_MODELS = ("claude-opus-5-5", "claude-sonnet-5-5", "claude-fable-5-1")


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.base_url("anthropic"), headers=HEADERS, timeout=10) as c:
        yield c


def ask(model: str, messages: list, **fields) -> dict:
    return {"model": model, "max_tokens": 2048, "tools": TOOLS, "messages": messages, **fields}


def first_turn(client: httpx.Client, model: str, **fields) -> tuple[list, dict]:
    """The question, the model's answer (thinking + calls), and the request that will carry the results."""
    user = [{"role": "user", "content": ASK}]
    answer = client.post("/messages", json=ask(model, user, **fields)).json()
    results = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": b["id"], "content": "sunny"}
                                           for b in answer["content"] if b["type"] == "tool_use"]}
    return [*user, {"role": "assistant", "content": answer["content"]}, results], answer


@pytest.mark.parametrize("model", anthropic_server.ALWAYS_THINKING)
@pytest.mark.parametrize("thinking", [{"type": "disabled"}, {"type": "enabled", "budget_tokens": 1024}])
def test_thinking_cannot_be_turned_off_or_budgeted(client, model, thinking):
    r = client.post("/messages", json=ask(model, [{"role": "user", "content": ASK}], thinking=thinking))
    assert r.status_code == 400
    assert r.json()["error"]["message"] == (
        f'"thinking.type.{thinking["type"]}" is not supported for this model. Use "thinking.type.adaptive" and '
        '"output_config.effort" to control thinking behavior.')


@pytest.mark.parametrize("model", anthropic_server.ALWAYS_THINKING)
def test_they_think_unasked_and_the_text_is_empty_unless_summarized(client, model):
    _, plain = first_turn(client, model)
    assert plain["content"][0]["type"] == "thinking" and plain["content"][0]["thinking"] == ""
    _, summarized = first_turn(client, model, thinking={"type": "adaptive", "display": "summarized"})
    assert summarized["content"][0]["thinking"].startswith("The user asks")


def test_older_models_still_think_only_when_asked(client):
    _, answer = first_turn(client, "claude-sonnet-4-5")
    assert [b["type"] for b in answer["content"]] == ["tool_use", "tool_use"]


def test_sonnet_5_5_between_tools_skips_the_thinking_before_the_first_call(client):
    _, answer = first_turn(client, "claude-sonnet-5-5", thinking={"type": "between_tools"})
    assert answer["content"][0]["type"] == "tool_use"


@pytest.mark.parametrize("model", PREFIX_MODELS)
def test_an_unchanged_history_passes(client, model):
    history, _ = first_turn(client, model)
    r = client.post("/messages", json=ask(model, history))
    assert r.status_code == 200 and r.json()["stop_reason"] == "end_turn"


CHANGES = {
    "system": lambda body: body | {"system": "Answer in French."},
    "tools": lambda body: body | {"tools": [*TOOLS, {"name": "get_time", "input_schema": {"type": "object"}}]},
    "an earlier message": lambda body: body | {"messages": [{"role": "user", "content": ASK + " Please."},
                                                           *body["messages"][1:]]},
}


@pytest.mark.parametrize("model", PREFIX_MODELS)
@pytest.mark.parametrize("change", list(CHANGES))
def test_changing_the_prefix_invalidates_the_kept_thinking_block(client, model, change):
    history, _ = first_turn(client, model)
    r = client.post("/messages", json=CHANGES[change](ask(model, history)))
    assert r.status_code == 400
    assert r.json()["error"] == {"type": "invalid_request_error", "message": (
        "messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different "
        "conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "
        '"drop_block".')}


@pytest.mark.parametrize("change", list(CHANGES))
def test_drop_block_answers_without_the_invalid_blocks(client, change):
    history, _ = first_turn(client, "claude-opus-5-5")
    thinking = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
    r = client.post("/messages", json=CHANGES[change](ask("claude-opus-5-5", history, thinking=thinking)))
    assert r.status_code == 200, r.text


def test_mythos_5_1_records_the_prefix_but_does_not_check_it(client):
    history, _ = first_turn(client, "claude-mythos-5-1")
    assert client.post("/messages", json=CHANGES["system"](ask("claude-mythos-5-1", history))).status_code == 200


@given(st.text(min_size=1, max_size=30))
def test_any_new_system_prompt_invalidates_the_block(server, system):
    with httpx.Client(base_url=server.base_url("anthropic"), headers=HEADERS, timeout=10) as c:
        history, _ = first_turn(c, "claude-fable-5-1")
        assert c.post("/messages", json=ask("claude-fable-5-1", history)).status_code == 200
        assert c.post("/messages", json=ask("claude-fable-5-1", history, system=system)).status_code == 400


@pytest.mark.parametrize("model", anthropic_server.NO_FORCED_TOOL_USE)
def test_the_loop_runs_on_every_5x_model_and_a_forced_choice_is_refused(server, model):
    llm = HTTPModel(model, "anthropic", base_url=server.base_url("anthropic"), api_key="k")

    @agentkit.tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return "sunny"

    result = agentkit.run(llm, ASK, tools=[get_weather])
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert result.messages[1].reasoning is not None  # the thinking block, kept and sent back
    with pytest.raises(agentkit.ModelCallError) as info:
        agentkit.run(llm, ASK, tools=[get_weather], tool_choice="required")
    assert info.value.__cause__.status == 400
    llm.close()

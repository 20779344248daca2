"""What LangChain v1's `create_agent` does with a tool call whose arguments do not parse, measured on the simulator.

`sim-bad-json` cuts the JSON of each tool's first call short (and repairs it after reading the error). LangChain's
ChatOpenAI, pointed at the simulator's OpenAI Chat base URL, puts such a call in `invalid_tool_calls`, and the
agent's graph routes a turn with no valid `tool_calls` to its end: no tool message, no exception, one model call
(langchain-ai/langchain#33504). agentkit's loop answers the same call with a `bad_json` error and goes on.
Tutorial 04 shows the two side by side.
"""

import pytest

import agentkit
from agentkit.experiments import error_strategies

QUESTION = "What's the forecast for Tokyo?"


def get_forecast(city: str, days: int = 1) -> dict:
    """Weather forecast for a city."""
    return {"city": city, "days": days, "sky": error_strategies.FORECASTS.get(city, "unknown")}


def test_langchain_create_agent_ends_silently_on_a_call_whose_json_does_not_parse(server):
    # LangChain is imported here, not when the file is collected: importing it (and langsmith, which pytest
    # rewrites as a plugin's package) costs every pytest worker seconds, and only this test needs it.
    langchain_agents = pytest.importorskip("langchain.agents", reason="LangChain v1 is a dev dependency")
    langchain_openai = pytest.importorskip("langchain_openai")
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool as langchain_tool

    llm = langchain_openai.ChatOpenAI(model="sim-bad-json", base_url=server.base_url("openai-chat"),
                                      api_key="sim-key", max_retries=0)
    agent = langchain_agents.create_agent(llm, [langchain_tool(get_forecast)])

    messages = agent.invoke({"messages": [("user", QUESTION)]})["messages"]  # no exception

    answers = [m for m in messages if isinstance(m, AIMessage)]
    assert len(answers) == 1                                    # one model call, then the graph ended
    assert answers[0].tool_calls == [] and len(answers[0].invalid_tool_calls) == 1
    assert answers[0].invalid_tool_calls[0]["name"] == "get_forecast"
    assert not any(isinstance(m, ToolMessage) for m in messages)  # the model never read an error
    assert answers[0].content == ""                             # and the user got no answer


def test_agentkit_reports_the_same_call_and_the_model_repairs_it(server):
    model = agentkit.HTTPModel("sim-bad-json", "openai-chat", base_url=server.base_url("openai-chat"),
                               api_key="sim-key")

    r = agentkit.run(model, QUESTION, tools=[error_strategies.forecast_tool()])

    assert [res.error_kind if not res.ok else "ok" for res in r.results] == ["bad_json", "ok"]
    assert r.stop_reason == "final_answer" and r.steps == 3 and r.output

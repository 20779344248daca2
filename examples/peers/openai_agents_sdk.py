"""The OpenAI Agents SDK's Agent and Runner with two tools, configured from the conformance check's
environment, through the SDK's own models (Chat Completions and Responses).

    AGENTKIT_PROVIDER=openai-responses AGENTKIT_BASE_URL=http://127.0.0.1:8123/v1 \
        AGENTKIT_MODEL=gpt-5.4-conform-parallel python examples/peers/openai_agents_sdk.py

Reads only AGENTKIT_PROVIDER, AGENTKIT_BASE_URL and AGENTKIT_MODEL; the key is a dummy and tracing is off (it
would export to OpenAI). Prints the answer and exits 0; a format the SDK cannot speak without another package
(Anthropic, Gemini and Ollama need its LiteLLM extension) exits 3 with one line saying so.
"""

from __future__ import annotations

import os
import sys

PROMPT = "Weather in Paris and the time in Tokyo?"


def main() -> int:
    fmt, url, name = (os.environ[k] for k in ("AGENTKIT_PROVIDER", "AGENTKIT_BASE_URL", "AGENTKIT_MODEL"))
    if fmt not in ("openai-chat", "openai-responses", "openrouter"):
        print(f"the OpenAI Agents SDK speaks {fmt} only through its LiteLLM extension (not installed here)")
        return 3
    from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool
    from agents import set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)

    @function_tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"sunny in {city}"

    @function_tool
    def get_time(zone: str) -> str:
        """Current time in a time zone."""
        return f"12:00 in {zone}"

    client = AsyncOpenAI(base_url=url, api_key="sim")
    kind = OpenAIResponsesModel if fmt == "openai-responses" else OpenAIChatCompletionsModel
    agent = Agent(name="assistant", instructions="Use the tools to answer.", tools=[get_weather, get_time],
                  model=kind(model=name, openai_client=client))
    print(Runner.run_sync(agent, PROMPT).final_output)
    return 0


if __name__ == "__main__":
    sys.exit(main())

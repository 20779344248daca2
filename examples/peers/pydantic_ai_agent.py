"""pydantic-ai's Agent with two tools, configured from the conformance check's environment, through the
framework's own provider clients.

    AGENTKIT_PROVIDER=anthropic AGENTKIT_BASE_URL=http://127.0.0.1:8123/v1 \
        AGENTKIT_MODEL=claude-opus-5-5-conform-parallel python examples/peers/pydantic_ai_agent.py

Reads only AGENTKIT_PROVIDER (a format name of `agentkit.providers.FORMATS`), AGENTKIT_BASE_URL (the
simulator's URL for that format) and AGENTKIT_MODEL; the keys are dummies. Prints the answer and exits 0; a
format pydantic-ai cannot speak exits 3 with one line saying so. Install: `pip install 'agentkit-lab[peers]'`.
"""

from __future__ import annotations

import os
import sys

PROMPT = "Weather in Paris and the time in Tokyo?"


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


def get_time(zone: str) -> str:
    """Current time in a time zone."""
    return f"12:00 in {zone}"


def root(url: str, suffix: str) -> str:
    """The base URL without the API's own path part (an SDK that appends it itself wants it off)."""
    return url[: -len(suffix)] if url.endswith(suffix) else url


def model_for(fmt: str, url: str, name: str):
    if fmt in ("openai-chat", "openai-responses"):
        from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        kind = OpenAIChatModel if fmt == "openai-chat" else OpenAIResponsesModel
        return kind(name, provider=OpenAIProvider(base_url=url, api_key="sim"))
    if fmt == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicModel(name, provider=AnthropicProvider(base_url=root(url, "/v1"), api_key="sim"))
    if fmt == "gemini":
        from google.genai import Client
        from google.genai.types import HttpOptions
        from pydantic_ai.models.google import GoogleModel
        from pydantic_ai.providers.google import GoogleProvider

        client = Client(api_key="sim", http_options=HttpOptions(base_url=root(url, "/v1beta")))
        return GoogleModel(name, provider=GoogleProvider(client=client))
    if fmt == "openrouter":
        from openai import AsyncOpenAI
        from pydantic_ai.models.openrouter import OpenRouterModel
        from pydantic_ai.providers.openrouter import OpenRouterProvider

        client = AsyncOpenAI(base_url=url, api_key="sim")
        return OpenRouterModel(name, provider=OpenRouterProvider(openai_client=client))
    return None  # ollama: pydantic-ai's OllamaModel speaks Ollama's OpenAI-compatible /v1, not /api/chat


def main() -> int:
    fmt, url, name = (os.environ[k] for k in ("AGENTKIT_PROVIDER", "AGENTKIT_BASE_URL", "AGENTKIT_MODEL"))
    model = model_for(fmt, url, name)
    if model is None:
        print(f"pydantic-ai cannot speak {fmt}'s native API (its Ollama model uses the OpenAI-compatible one)")
        return 3
    from pydantic_ai import Agent

    agent = Agent(model, tools=[get_weather, get_time])
    print(agent.run_sync(PROMPT).output)
    return 0


if __name__ == "__main__":
    sys.exit(main())

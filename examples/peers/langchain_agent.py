"""LangChain v1's `create_agent` with two tools, configured from the conformance check's environment,
through LangChain's own chat models (langchain-openai, langchain-anthropic, langchain-ollama).

    AGENTKIT_PROVIDER=ollama AGENTKIT_BASE_URL=http://127.0.0.1:8123 \
        AGENTKIT_MODEL=qwen3-conform-parallel python examples/peers/langchain_agent.py

Reads only AGENTKIT_PROVIDER, AGENTKIT_BASE_URL and AGENTKIT_MODEL; the keys are dummies. Prints the answer and
exits 0; a format without its LangChain package installed (Gemini: langchain-google-genai, which wants an
older google-genai than the kit's) exits 3 with one line saying so. OpenRouter goes through ChatOpenAI, as
OpenRouter's own LangChain guide shows.
"""

from __future__ import annotations

import os
import sys

PROMPT = "Weather in Paris and the time in Tokyo?"


def root(url: str, suffix: str) -> str:
    return url[: -len(suffix)] if url.endswith(suffix) else url


def chat_model(fmt: str, url: str, name: str):
    if fmt in ("openai-chat", "openai-responses", "openrouter"):
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model=name, base_url=url, api_key="sim", use_responses_api=fmt == "openai-responses")
    if fmt == "anthropic":
        from langchain_anthropic import ChatAnthropic

        return ChatAnthropic(model=name, base_url=root(url, "/v1"), api_key="sim")
    if fmt == "ollama":
        from langchain_ollama import ChatOllama

        return ChatOllama(model=name, base_url=url)
    if fmt == "gemini":
        try:
            from langchain_google_genai import ChatGoogleGenerativeAI
        except ImportError:
            return None
        return ChatGoogleGenerativeAI(model=name, google_api_key="sim", base_url=root(url, "/v1beta"))
    return None


def main() -> int:
    fmt, url, name = (os.environ[k] for k in ("AGENTKIT_PROVIDER", "AGENTKIT_BASE_URL", "AGENTKIT_MODEL"))
    model = chat_model(fmt, url, name)
    if model is None:
        print(f"LangChain speaks {fmt} through a package not installed here (langchain-google-genai)")
        return 3
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"sunny in {city}"

    @tool
    def get_time(zone: str) -> str:
        """Current time in a time zone."""
        return f"12:00 in {zone}"

    agent = create_agent(model, tools=[get_weather, get_time])
    result = agent.invoke({"messages": [{"role": "user", "content": PROMPT}]})
    print(result["messages"][-1].content)
    return 0


if __name__ == "__main__":
    sys.exit(main())

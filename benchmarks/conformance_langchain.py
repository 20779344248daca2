"""LangChain v1's `create_agent` through the conformance check: which provider rules does its loop keep?

    python benchmarks/conformance_langchain.py                    # Chat Completions, Responses, OpenRouter
    python benchmarks/conformance_langchain.py --json lc.json     # also the records

The agent is LangChain's own (`langchain.agents.create_agent` with `langchain_openai.ChatOpenAI`, the
package installed with the kit's dev dependencies), pointed at the simulator the way any user points it
at a server: by the OpenAI SDK's `OPENAI_BASE_URL` and `OPENAI_API_KEY`, which the check sets for each run.
`ChatOpenAI(use_responses_api=True)` speaks the Responses API; OpenRouter is Chat Completions at its own base
URL. The other formats need LangChain's other integration packages (langchain-anthropic,
langchain-google-genai, langchain-ollama), not installed here: the script says so and leaves them out.

Each (format, scenario) runs this file again as a command (`--agent`), so what is measured is exactly what
`python -m agentkit.conformance run -- python my_agent.py` would report for a LangChain user. Prints the
versions, the check's table, and its exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FORMATS = ["openai-chat", "openai-responses", "openrouter"]
QUESTION = "What's the weather in Tokyo, and how many yen is one dollar?"


def agent() -> None:
    """One run of LangChain's agent on the environment the check set (the command the check runs)."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    def get_weather(city: str) -> str:
        """Returns the current weather for a city."""
        return f"{city}: sunny, 22 degrees."

    @tool
    def get_exchange_rate(base: str, quote: str) -> str:
        """Returns the exchange rate between two currencies, given as ISO codes."""
        return f"1 {base} = 155.2 {quote}"

    model = ChatOpenAI(model=os.environ["AGENTKIT_MODEL"],  # its defaults: the openai SDK retries twice
                       use_responses_api=os.environ["AGENTKIT_PROVIDER"] == "openai-responses")
    graph = create_agent(model, tools=[get_weather, get_exchange_rate])
    result = graph.invoke({"messages": [{"role": "user", "content": QUESTION}]})
    print(result["messages"][-1].content)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", action="store_true", help="run the agent once (what the check runs)")
    parser.add_argument("--scenarios", default=None, help="comma-separated (default: every scenario)")
    parser.add_argument("--json", default=None, metavar="FILE")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    if args.agent:
        agent()
        return 0

    from importlib.metadata import version

    from agentkit.conformance import run_command

    print("versions: " + ", ".join(f"{p} {version(p)}" for p in ("langchain", "langchain-core", "langchain-openai",
                                                                   "langgraph", "openai")))
    print("formats: " + ", ".join(FORMATS) + " (Anthropic, Gemini and Ollama need LangChain packages not "
          "installed here)\n")
    scenarios = args.scenarios.split(",") if args.scenarios else None
    report = run_command([sys.executable, __file__, "--agent"], FORMATS, scenarios, timeout=args.timeout)
    print(report.table())
    if args.json:
        Path(args.json).write_text(report.to_json(), encoding="utf-8")
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())

"""The OpenAI Agents SDK and pydantic-ai through the conformance check: which provider rules do their loops keep?

    pip install "openai-agents==0.24.0" "pydantic-ai-slim[openai,anthropic]==2.68.0"     # any environment
    python benchmarks/conformance_peers.py --framework openai-agents --python /path/to/that/python
    python benchmarks/conformance_peers.py --framework pydantic-ai --python /path/to/that/python --json pa.json

Neither framework is a dependency of the kit: the check (this interpreter, the kit's) runs each agent as a
command with `--python`'s interpreter, which needs only the framework. Each agent is the framework's own,
with its defaults, pointed at the simulator the way a user points it at any server: the official SDKs' base
URL variables and dummy keys, which the check sets for each run (`agentkit.conformance.environment`).

    openai-agents  `Agent` + `Runner.run_sync`: its default model class on Responses, `OpenAIChatCompletionsModel`
                   on Chat Completions and OpenRouter (tracing off: it would send traces to OpenAI)
    pydantic-ai    `Agent.run_sync` with `OpenAIResponsesModel`, `OpenAIChatModel`, `AnthropicModel` and
                   `OpenRouterModel` (its OpenRouter model class, which knows `reasoning_details`)

Formats a framework has no model class for here are left out (Gemini needs pydantic-ai's google extra,
Ollama's native API neither speaks). Prints the versions, the check's table and its exit code.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FORMATS = {
    "openai-agents": ["openai-chat", "openai-responses", "openrouter"],
    "pydantic-ai": ["openai-chat", "openai-responses", "anthropic", "openrouter"],
}
PACKAGES = {"openai-agents": ["openai-agents", "openai"], "pydantic-ai": ["pydantic-ai-slim", "openai", "anthropic"]}
QUESTION = "What's the weather in Tokyo, and how many yen is one dollar?"


def get_weather(city: str) -> str:
    """Returns the current weather for a city."""
    return f"{city}: sunny, 22 degrees."


def get_exchange_rate(base: str, quote: str) -> str:
    """Returns the exchange rate between two currencies, given as ISO codes."""
    return f"1 {base} = 155.2 {quote}"


def openai_agents(fmt: str, model_name: str) -> str:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    model = model_name if fmt == "openai-responses" else OpenAIChatCompletionsModel(model_name, AsyncOpenAI())
    agent = Agent(name="assistant", instructions="Use the tools.", model=model,
                  tools=[function_tool(get_weather), function_tool(get_exchange_rate)])
    return str(Runner.run_sync(agent, QUESTION).final_output)


def pydantic_ai(fmt: str, model_name: str) -> str:
    from pydantic_ai import Agent

    if fmt == "openai-chat":
        from pydantic_ai.models.openai import OpenAIChatModel
        model = OpenAIChatModel(model_name)
    elif fmt == "openai-responses":
        from pydantic_ai.models.openai import OpenAIResponsesModel
        model = OpenAIResponsesModel(model_name)
    elif fmt == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        model = AnthropicModel(model_name)
    else:
        from openai import AsyncOpenAI
        from pydantic_ai.models.openrouter import OpenRouterModel
        from pydantic_ai.providers.openrouter import OpenRouterProvider
        client = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENROUTER_API_KEY"])
        model = OpenRouterModel(model_name, provider=OpenRouterProvider(openai_client=client))
    agent = Agent(model, tools=[get_weather, get_exchange_rate])
    return str(agent.run_sync(QUESTION).output)


def agent(framework: str) -> None:
    """One run of the framework's agent on the environment the check set (the command the check runs)."""
    asyncio.set_event_loop(asyncio.new_event_loop())
    run = openai_agents if framework == "openai-agents" else pydantic_ai
    print(run(os.environ["AGENTKIT_PROVIDER"], os.environ["AGENTKIT_MODEL"]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=list(FORMATS), required=True)
    parser.add_argument("--python", default=sys.executable, help="an interpreter with the framework installed")
    parser.add_argument("--agent", action="store_true", help="run the agent once (what the check runs)")
    parser.add_argument("--scenarios", default=None, help="comma-separated (default: every scenario)")
    parser.add_argument("--json", default=None, metavar="FILE")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    if args.agent:
        agent(args.framework)
        return 0

    from agentkit.conformance import run_command

    versions = subprocess.run(
        [args.python, "-c", "from importlib.metadata import version; import sys; "
         "print(', '.join(f'{p} {version(p)}' for p in sys.argv[1:]))", *PACKAGES[args.framework]],
        capture_output=True, text=True, check=True).stdout.strip()
    print(f"versions: {versions}\nformats: {', '.join(FORMATS[args.framework])}\n")
    scenarios = args.scenarios.split(",") if args.scenarios else None
    report = run_command([args.python, __file__, "--agent", "--framework", args.framework],
                         FORMATS[args.framework], scenarios, timeout=args.timeout)
    print(report.table())
    if args.json:
        Path(args.json).write_text(report.to_json(), encoding="utf-8")
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())

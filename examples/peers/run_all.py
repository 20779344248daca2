"""Run each peer script on every scenario in every format against one simulator, and print what its rule log
shows: the rules each run refused or degraded (with the request they happened at), and how the script ended.

    python examples/peers/run_all.py                       # all three scripts (a few minutes)
    python examples/peers/run_all.py langchain_agent --formats anthropic,ollama --scenarios parallel

It reads the simulator's per-request record (`SimServer.rule_logs`) directly; `python -m agentkit.conformance
run -- COMMAND` is the general tool for the same check. Errors a scenario plays on purpose (its 429, 529/503,
spend limit, tool-less model) are logged "answered" and not listed; a spend limit sent again is "refused".
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from agentkit import sim
from agentkit.providers import FORMATS
from agentkit.sim.conform import SCRIPTS, model_for
from agentkit.sim.server import base_url_on

HERE = Path(__file__).parent
PEERS = ("langchain_agent", "openai_agents_sdk", "pydantic_ai_agent")


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("peers", nargs="*", default=PEERS)
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--scenarios", default=",".join(SCRIPTS))
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per run")
    args = parser.parse_args()
    with sim.serve() as server:
        for peer in args.peers:
            for fmt in args.formats.split(","):
                for scenario in args.scenarios.split(","):
                    model = model_for(fmt, scenario)
                    if model is None:
                        continue  # the scenario does not play in this format
                    server.reset()
                    before = server.rule_logs()[-1].number if server.rule_logs() else 0
                    env = {**os.environ, "AGENTKIT_PROVIDER": fmt, "AGENTKIT_BASE_URL": base_url_on(server.url, fmt),
                           "AGENTKIT_MODEL": model}
                    try:
                        done = subprocess.run([sys.executable, str(HERE / f"{peer}.py")], env=env,
                                              capture_output=True, text=True, timeout=args.timeout)
                        ended = f"exit {done.returncode}: " + last_line(done.stdout if done.returncode in (0, 3)
                                                                       else done.stderr)
                    except subprocess.TimeoutExpired:
                        ended = f"hung past {args.timeout:.0f} s"
                    logs = server.rule_logs(after=before)
                    print(f"{peer} {fmt} {scenario}: {len(logs)} requests, {ended}")
                    for index, log in enumerate(logs, 1):
                        for f in log.findings:
                            if f.outcome in ("refused", "degraded"):
                                print(f"    request {index}: {f.rule} {f.outcome} (message {f.message_index}): "
                                      f"{(f.words or '')[:100]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

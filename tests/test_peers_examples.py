"""The peers' scripts (examples/peers/) keep their contract with the conformance check: configured only from
AGENTKIT_PROVIDER / AGENTKIT_BASE_URL / AGENTKIT_MODEL, they print the answer and exit 0, or exit 3 with one
line for a format they cannot speak. Each is skipped when its framework (the `peers` extra) is not installed."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentkit.sim.conform import model_for
from agentkit.sim.server import base_url_on

PEERS = Path(__file__).resolve().parent.parent / "examples" / "peers"


def run_peer(server, script: str, fmt: str, scenario: str) -> tuple[subprocess.CompletedProcess, list]:
    server.reset()
    before = server.rule_logs()[-1].number if server.rule_logs() else 0
    env = {**os.environ, "AGENTKIT_PROVIDER": fmt, "AGENTKIT_BASE_URL": base_url_on(server.url, fmt),
           "AGENTKIT_MODEL": model_for(fmt, scenario)}
    done = subprocess.run([sys.executable, str(PEERS / f"{script}.py")], env=env, capture_output=True, text=True,
                          timeout=120)
    return done, server.rule_logs(after=before)


def needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (the peers extra)")


@pytest.mark.parametrize(("script", "module", "fmt"), [
    ("langchain_agent", "langchain_openai", "openai-chat"),
    ("openai_agents_sdk", "agents", "openai-responses"),
    ("pydantic_ai_agent", "pydantic_ai", "anthropic"),
])
def test_a_peer_plays_a_parallel_scenario_and_prints_its_answer(server, script, module, fmt):
    needs(module)
    done, logs = run_peer(server, script, fmt, "parallel")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Here is what I found" in done.stdout
    assert len(logs) == 2 and all(f.outcome == "passed" for log in logs for f in log.findings)


def test_a_format_a_peer_cannot_speak_exits_3_with_one_line(server):
    needs("agents")
    done, logs = run_peer(server, "openai_agents_sdk", "ollama", "one-call")
    assert done.returncode == 3 and len(done.stdout.strip().splitlines()) == 1 and not logs

"""The simulator needs no key, as HTTPModel's docstring says; asked to, it refuses a keyless request
with each provider's own 401 / 403, for lessons about the "forgot the key" mistake."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager

import pytest

from agentkit import HTTPModel, Message, sim
from agentkit.core.errors import AuthenticationError
from agentkit.providers import FORMATS
from agentkit.sim.server import base_path
from agentkit.sim.wire import get_server

ASK = [Message.user("What is 2 + 3?")]


@contextmanager
def shell_simulator(*options: str):
    """`python -m agentkit.sim` as a learner starts it from a shell, on a free port."""
    proc = subprocess.Popen([sys.executable, "-m", "agentkit.sim", "--port", "0", "--log-level", "warning",
                             *options], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        first = proc.stdout.readline()
        assert first.startswith("agentkit.sim listening on "), first
        yield first.split()[-1]
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()


@pytest.fixture(scope="module")
def shell_url():
    with shell_simulator() as url:
        yield url


@pytest.mark.parametrize("fmt", FORMATS)
def test_httpmodel_without_a_key_is_answered_by_the_simulator_from_a_shell(clean_env, shell_url, fmt):
    model = HTTPModel("sim-reasoner", fmt, base_url=shell_url + base_path(fmt), max_retries=0)
    assert model.api_key is None
    assert model.complete(ASK, []).text


def test_httpmodel_without_a_key_is_answered_by_an_embedded_simulator(clean_env):
    with sim.serve() as server:
        model = HTTPModel("sim-reasoner", "anthropic", base_url=server.base_url("anthropic"), max_retries=0)
        assert model.complete(ASK, []).text


@pytest.mark.parametrize("fmt", [f for f in FORMATS if get_server(f).SERVER.no_key is not None])
def test_a_simulator_that_requires_a_key_refuses_none_with_the_providers_status(clean_env, fmt):
    status = get_server(fmt).SERVER.no_key[0]
    with sim.serve(require_key=True) as server:
        keyless = HTTPModel("sim-reasoner", fmt, base_url=server.base_url(fmt), api_key="", max_retries=0)
        with pytest.raises(AuthenticationError) as caught:
            keyless.complete(ASK, [])
        assert caught.value.status == status
        keyed = HTTPModel("sim-reasoner", fmt, base_url=server.base_url(fmt), api_key="any", max_retries=0)
        assert keyed.complete(ASK, []).text


def test_require_key_from_the_shell(clean_env):
    with shell_simulator("--require-key") as url:
        keyless = HTTPModel("sim-reasoner", "openai-chat", base_url=url + base_path("openai-chat"), max_retries=0)
        with pytest.raises(AuthenticationError):
            keyless.complete(ASK, [])

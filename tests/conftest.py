"""Shared test setup: the Hypothesis profile (see profiles.py) is chosen before any test module loads."""

import pytest
from hypothesis import settings

from profiles import PROFILE

settings.load_profile(PROFILE)


@pytest.fixture
def clean_env(monkeypatch):
    """No AGENTKIT_* configuration and no provider key in the environment: the state of a fresh shell."""
    from agentkit.providers import FORMATS, get_codec

    keys = {variable for fmt in FORMATS for variable in get_codec(fmt).API_KEY_ENVS}
    for name in ("AGENTKIT_PROVIDER", "AGENTKIT_BASE_URL", "AGENTKIT_MODEL", *sorted(keys)):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture(scope="module")
def server():
    """A simulator of the module's own (an OS-chosen port, default models and faults), stopped after it.
    A module that needs other models or settings defines its own `server`, which wins over this one."""
    from agentkit import sim

    with sim.serve() as running:
        yield running


@pytest.fixture(scope="module")
def stand_in():
    """A server of stand-ins for a learner's own models (see learner_models.py): (server, respond)."""
    from learner_models import serve_stand_in

    server, respond = serve_stand_in()
    yield server, respond
    server.stop()

"""Shared test setup: the Hypothesis profile (see profiles.py) is chosen before any test module loads."""

import pytest
from hypothesis import settings

from profiles import PROFILE

settings.load_profile(PROFILE)


@pytest.fixture(scope="module")
def stand_in():
    """A server of stand-ins for a learner's own models (see learner_models.py): (server, respond)."""
    from learner_models import serve_stand_in

    server, respond = serve_stand_in()
    yield server, respond
    server.stop()

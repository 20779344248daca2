"""Shared test setup: the Hypothesis profile (see profiles.py) is chosen before any test module loads."""

from hypothesis import settings

from profiles import PROFILE

settings.load_profile(PROFILE)

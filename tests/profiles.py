"""Hypothesis budgets: a quick profile for local runs, the full example counts for `make test`.

    HYPOTHESIS_PROFILE=full pytest tests      # what `make test` sets: every property test at full size
    pytest tests                              # local default: "quick", a tenth of the examples

A property test asks for its full-size count through `examples(n)`, so one switch scales every test:

    @settings(max_examples=examples(1000), deadline=None)

Tests that set no count get the profile's own default. `deadline=None` everywhere: a busy machine makes
an example slow, never wrong.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "quick")
if PROFILE not in ("quick", "full"):
    raise RuntimeError(f"HYPOTHESIS_PROFILE={PROFILE!r}: use 'quick' (local runs) or 'full' (make test)")

settings.register_profile("full", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("quick", max_examples=10, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])


def examples(full: int) -> int:
    """The example count for a test whose full size is `full`: all of it under "full", a tenth otherwise."""
    return full if PROFILE == "full" else max(5, full // 10)

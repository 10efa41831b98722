"""Hypothesis profiles shared by the test suite (and by users' own suites).

``dev`` (default): quick local runs. ``ci`` (chosen when ``CI=true``): derandomized so a CI run
is repeatable, no deadline (numerics and first-call compilation are slow), failing examples
printed as blobs. ``nightly``: many more examples. ``HYPOTHESIS_PROFILE`` overrides the choice.
"""
from __future__ import annotations

import os


def register_profiles() -> str:
    """Register the three profiles, load the chosen one and return its name."""
    from hypothesis import HealthCheck, settings

    slow_ok = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile("dev", max_examples=20, deadline=None,
                              suppress_health_check=slow_ok)
    settings.register_profile("ci", max_examples=20, deadline=None, derandomize=True,
                              print_blob=True, database=None, suppress_health_check=slow_ok)
    settings.register_profile("nightly", max_examples=500, deadline=None,
                              suppress_health_check=slow_ok)
    default = "ci" if os.environ.get("CI", "").lower() == "true" else "dev"
    name = os.environ.get("HYPOTHESIS_PROFILE", default)
    settings.load_profile(name)
    return name

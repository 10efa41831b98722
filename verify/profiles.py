"""Hypothesis profiles shared by the test suite (and by users' own suites).

``repeatable`` (the default, for everyone, CI or not): derandomized, so ``pytest`` draws the same
examples on every machine and every run; a README test command that passes once passes every
time. No deadline (numerics and first-call compilation are slow); failing examples printed as
blobs. ``explore``: random examples, five times as many, and the example database, for finding
new counterexamples where a failure is reported without blocking (``.ci/run``'s exploration
step, or ``HYPOTHESIS_PROFILE=explore pytest`` by hand). ``nightly``: random, many more
examples. ``HYPOTHESIS_PROFILE`` picks one.
"""
from __future__ import annotations

import os

PROFILES = ("repeatable", "explore", "nightly")


def register_profiles() -> str:
    """Register the three profiles, load the chosen one and return its name."""
    from hypothesis import HealthCheck, settings

    slow_ok = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile("repeatable", max_examples=20, deadline=None, derandomize=True,
                              print_blob=True, database=None, suppress_health_check=slow_ok)
    settings.register_profile("explore", max_examples=100, deadline=None, print_blob=True,
                              suppress_health_check=slow_ok)
    settings.register_profile("nightly", max_examples=500, deadline=None, print_blob=True,
                              suppress_health_check=slow_ok)
    name = os.environ.get("HYPOTHESIS_PROFILE", "repeatable")
    if name not in PROFILES:
        raise ValueError(f"HYPOTHESIS_PROFILE={name!r}: allowed are {', '.join(PROFILES)}")
    settings.load_profile(name)
    return name

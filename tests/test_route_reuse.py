"""verify.route_reuse: a route's evidence is replayed only while the stated forms it reads are
the same functions (the negative control must recompute anything its swapped form enters)."""
from __future__ import annotations

import pytest
import torch

from theory.derivation import Derivation
from verify.evidence import Route, Tolerance, compare
from verify.route_reuse import reused_route
from verify.run import Run


def _run(stated, seed=0, params=None):
    return Run(claim_id="test.route_reuse", fidelity="quick", params=params or {},
               stated=stated, seed=seed,
               device=torch.device("cpu"), dtype=torch.float64)


def _identity(x):
    return x


def _doubled(x):
    return 2 * x


def test_reused_route_replays_only_while_its_stated_forms_are_unchanged():
    calls = []

    def route(run):
        calls.append(1)
        run.derivation(Derivation("d"))
        run.figure("f", 1.0)
        yield compare(Route.NUMERIC, "x", stated=float(run.stated["a"](1.0)), measured=1.0,
                      tolerance=Tolerance(0.0, "exact"))

    key = ("test", object())  # fresh per test session
    first = _run({"a": _identity, "b": _identity})
    second = _run({"a": _identity, "b": _doubled})  # only "b", which the route does not read
    other = _run({"a": _doubled, "b": _identity})
    a = list(reused_route(first, key, ("a",), lambda: route(first)))
    b = list(reused_route(second, key, ("a",), lambda: route(second)))
    assert len(calls) == 1 and a == b and a[0].ok
    assert second.derivations == first.derivations and second.figures == first.figures
    c = list(reused_route(other, key, ("a",), lambda: route(other)))  # "a" changed
    assert len(calls) == 2 and not c[0].ok


@pytest.mark.parametrize("first, second, third", [
    ({}, {}, {"seed": 1}),
    # one process may run a claim at several settings (check --set, verify stress)
    ({"params": {"sizes": [2, 3]}}, {"params": {"sizes": [2, 3]}}, {"params": {"sizes": [2, 4]}}),
])
def test_another_seed_or_other_parameters_recompute(first, second, third):
    calls = []

    def route():
        calls.append(1)
        yield compare(Route.NUMERIC, "x", stated=1.0, measured=1.0,
                      tolerance=Tolerance(0.0, "exact"))

    key = ("setting test", object())
    for setting in (first, second, third):
        list(reused_route(_run({}, **setting), key, (), route))
    assert len(calls) == 2                  # the second run replays the first, the third not

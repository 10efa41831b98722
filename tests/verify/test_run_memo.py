"""Run.memo and Run.memo_route: one process-wide memo whose key the run builds (claim id,
fidelity, parameters, seed, dtype, device, plus the caller's key), shared by a claim's run and
its negative control's run; a route's evidence is replayed only while the stated forms it
reads are the same functions (the negative control must recompute anything its swapped form
enters)."""
from __future__ import annotations

import dataclasses
import itertools

import pytest
import torch

from theory.derivation import Derivation
from verify.evidence import Route, Tolerance, compare
from verify.run import Run


_FRESH = itertools.count()


def _fresh(label: str) -> str:
    """A memo name no other test (nor an earlier parametrised case) has used."""
    return f"test_run_memo {label} {next(_FRESH)}"


def _run(stated, seed=0, params=None, claim_id="test.run_memo"):
    return Run(claim_id=claim_id, fidelity="quick", params=params or {},
               stated=stated, seed=seed,
               device=torch.device("cpu"), dtype=torch.float64)


def _identity(x):
    return x


def _doubled(x):
    return 2 * x


def test_memo_is_shared_by_the_claim_and_its_control():
    calls = []
    name = _fresh("shared")
    check = _run({"a": _identity}, params={"n": 3})
    control = dataclasses.replace(_run({"a": _doubled}, params={"n": 3}), is_control=True)
    values = [run.memo(name, lambda: calls.append(1) or len(calls)) for run in (check, control)]
    assert values == [1, 1] and len(calls) == 1


@pytest.mark.parametrize("other", [
    {"seed": 1},
    {"params": {"n": 4}},                   # check --set, verify stress: several settings
    {"params": {"n": 3, "extra": [1, 2]}},  # every parameter is in the key
    {"claim_id": "test.other"},
])
def test_memo_recomputes_for_another_seed_parameters_or_claim(other):
    calls = []
    name = _fresh("setting")
    base = {"params": {"n": 3}}
    for setting in (base, base, {**base, **other}):
        _run({}, **setting).memo(name, lambda: calls.append(1))
    assert len(calls) == 2                  # the second run reuses the first, the third not


def test_memo_key_separates_what_a_check_varies_inside_one_run():
    calls = []
    name = _fresh("depths")
    run = _run({})
    assert [run.memo(name, lambda d=d: calls.append(d) or d, key=d) for d in (2, 3, 2)] \
        == [2, 3, 2]
    assert calls == [2, 3]


def test_memo_uses_puts_the_named_stated_forms_in_the_key():
    calls = []
    name = _fresh("uses")
    for stated in ({"a": _identity, "b": _identity}, {"a": _identity, "b": _doubled},
                   {"a": _doubled, "b": _identity}):
        run = _run(stated)
        run.memo(name, lambda run=run: calls.append(run.stated["a"](1)), uses=("a",))
    assert calls == [1, 2]                  # "b" is not read: only the swap of "a" recomputes


def test_process_scope_is_shared_across_claims_parameters_and_seeds():
    calls = []
    name = _fresh("derivation")
    for setting in ({}, {"seed": 5}, {"params": {"n": 1}, "claim_id": "test.other"}):
        _run({}, **setting).memo(name, lambda: calls.append(1), key=("size", 2),
                                 scope="process")
    assert len(calls) == 1
    _run({}).memo(name, lambda: calls.append(1), key=("size", 3), scope="process")
    assert len(calls) == 2
    with pytest.raises(ValueError, match="scope"):
        _run({}).memo(name, lambda: None, scope="claim")


def test_memo_route_replays_only_while_its_stated_forms_are_unchanged():
    calls = []

    def route(run):
        calls.append(1)
        run.derivation(Derivation("d"))
        run.figure("f", 1.0)
        run.assume("holds", True)
        yield compare(Route.NUMERIC, "x", stated=float(run.stated["a"](1.0)), measured=1.0,
                      tolerance=Tolerance(0.0, "exact"))

    name = _fresh("route")
    first = _run({"a": _identity, "b": _identity})
    second = _run({"a": _identity, "b": _doubled})  # only "b", which the route does not read
    other = _run({"a": _doubled, "b": _identity})
    a = list(first.memo_route(name, ("a",), lambda: route(first)))
    b = list(second.memo_route(name, ("a",), lambda: route(second)))
    assert len(calls) == 1 and a == b and a[0].ok
    assert second.derivations == first.derivations and second.figures == first.figures
    assert second.data_assumptions == first.data_assumptions
    c = list(other.memo_route(name, ("a",), lambda: route(other)))  # "a" changed
    assert len(calls) == 2 and not c[0].ok


@pytest.mark.parametrize("first, second, third", [
    ({}, {}, {"seed": 1}),
    # one process may run a claim at several settings (check --set, verify stress)
    ({"params": {"sizes": [2, 3]}}, {"params": {"sizes": [2, 3]}}, {"params": {"sizes": [2, 4]}}),
])
def test_memo_route_recomputes_for_another_seed_or_other_parameters(first, second, third):
    calls = []

    def route():
        calls.append(1)
        yield compare(Route.NUMERIC, "x", stated=1.0, measured=1.0,
                      tolerance=Tolerance(0.0, "exact"))

    name = _fresh("setting route")
    for setting in (first, second, third):
        list(_run({}, **setting).memo_route(name, (), route))
    assert len(calls) == 2                  # the second run replays the first, the third not


def test_memo_and_memo_route_do_not_collide():
    name = _fresh("both")
    run = _run({})
    assert run.memo(name, lambda: "value") == "value"
    evidence = list(run.memo_route(name, (), lambda: iter([compare(
        Route.NUMERIC, "x", stated=1.0, measured=1.0, tolerance=Tolerance(0.0, "exact"))])))
    assert len(evidence) == 1 and run.memo(name, lambda: "other") == "value"

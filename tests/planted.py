"""Tiny planted claims for testing the claim machinery itself (not paper claims).

The toy identity: :math:`\\sum_{i=1}^n i = n(n+1)/2`, checked against a direct sum.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import sympy as sp
import torch

from verify.claim import Assumption, Claim, NegativeControl
from verify.evidence import Route, Tolerance, at_least, compare, symbolic_identity
from verify.registry import register, unregister
from verify.sampling import IntRange

TOL = Tolerance(1e-12, "float64 sum of small integers is exact; 1e-12 leaves roundoff room")


def gauss(n):
    return n * (n + 1) / 2


def gauss_off_by_one(n):
    return n * (n + 1) / 2 + 1


def gauss_check(run) -> Iterator:
    n = run.params["n"]
    k = sp.Symbol("k", integer=True, positive=True)
    N = sp.Symbol("N", integer=True, positive=True)
    yield symbolic_identity("closed form", stated=run.stated["sum"](N),
                            derived=sp.summation(k, (k, 1, N)))
    measured = torch.arange(1, n + 1, dtype=torch.float64).sum()
    yield compare(Route.NUMERIC, "sum 1..n", stated=float(run.stated["sum"](n)),
                  measured=measured, tolerance=TOL, parameters={"n": n})


def make_claim(claim_id: str = "test.gauss", *, stated: Callable = gauss,
               control: Callable = gauss_off_by_one, check: Callable = gauss_check) -> Claim:
    return Claim(id=claim_id, paper="planted", kind="lemma", title="planted toy claim",
                 source="tests", statement=r"\sum_{i=1}^n i = n(n+1)/2", reading="as stated",
                 parameters={"quick": {"n": 10}, "full": {"n": 1000}}, stated={"sum": stated},
                 check=check, control=NegativeControl("off by one", {"sum": control}))


@contextlib.contextmanager
def planted(claim: Claim):
    register(claim)
    try:
        yield claim
    finally:
        unregister(claim.id)


def failed_quantities(evidence) -> set[str]:
    """The quantities of the evidence items whose routes disagreed (``ok is False``)."""
    return {e.quantity for e in evidence if e.ok is False}


# --- planted claims with a known minimal counterexample (the stress quality tier) -----------
#
# Each has a parameter space; the true ones must give no counterexample within a budget, the
# false ones must be found and shrunk to the case named beside them.

def cubes(n):
    r""":math:`\sum_{i\le n} i^3 = (n(n+1)/2)^2` (true)."""
    return (n * (n + 1) / 2) ** 2


def cubes_wrong_exponent(n):
    """Exponent 3/2 for 2: equal at n = 1 only, so the minimal counterexample is n = 2."""
    return (n * (n + 1) / 2) ** 1.5


def cubes_check(run) -> Iterator:
    n = run.params["n"]
    measured = (torch.arange(1, n + 1, dtype=torch.float64) ** 3).sum()
    yield compare(Route.NUMERIC, "sum of cubes", stated=float(run.stated["sum"](n)),
                  measured=measured, tolerance=TOL, parameters={"n": n})


def make_cubes(claim_id: str = "test.cubes", *, stated: Callable = cubes) -> Claim:
    return Claim(id=claim_id, paper="planted", kind="lemma", title="sum of cubes",
                 source="tests", statement=r"\sum i^3 = (n(n+1)/2)^2", reading="as stated",
                 parameters={"quick": {"n": 5}, "full": {"n": 50}}, stated={"sum": stated},
                 check=cubes_check,
                 control=NegativeControl("exponent 3/2", {"sum": cubes_wrong_exponent}),
                 space={"n": IntRange(1, 60), "seed": IntRange(0, 1000)})


def make_gauss_spaced(claim_id: str = "test.gauss-space", *, stated: Callable = gauss) -> Claim:
    """The Gauss sum over ``n`` in [1, 200]; with ``gauss_off_by_one`` the minimal
    counterexample is n = 1."""
    return Claim(id=claim_id, paper="planted", kind="lemma", title="Gauss sum",
                 source="tests", statement=r"\sum_{i=1}^n i = n(n+1)/2", reading="as stated",
                 parameters={"quick": {"n": 10}, "full": {"n": 1000}}, stated={"sum": stated},
                 check=gauss_check, control=NegativeControl("off by one",
                                                            {"sum": gauss_off_by_one}),
                 space={"n": IntRange(1, 200)})


def square_bound(n):
    """:math:`2^n`, the stated upper bound of :math:`n^2`."""
    return 2.0 ** n


def square_check(run) -> Iterator:
    n = run.params["n"]
    yield at_least(Route.NUMERIC, "2^n >= n^2", measured=run.stated["bound"](n),
                   bound=float(n * n), tolerance=Tolerance(0.0, "exact small integers"),
                   parameters={"n": n})


def square_bound_short(n):
    """:math:`2^n - 20`: below :math:`n^2` for n <= 5, so the claim fails inside its
    assumption n >= 4 (at n = 4 and 5) and at every n outside it."""
    return 2.0 ** n - 20


def make_square_bound(claim_id: str = "test.square-bound", *, assumption: bool = True,
                      bound: Callable = square_bound) -> Claim:
    r""":math:`n^2 \le 2^n` for :math:`n \ge 4` (and n = 1, 2). Dropping the assumption
    :math:`n\ge4` plants a false claim whose only counterexample is n = 3; with
    ``square_bound_short`` the minimal counterexample is n = 1 outside the assumption and
    n = 4 inside it."""
    assumptions = (Assumption("n >= 4", "the bound is claimed for n >= 4",
                              lambda p: p["n"] >= 4),) if assumption else ()
    return Claim(id=claim_id, paper="planted", kind="lemma", title="n^2 <= 2^n",
                 source="tests", statement=r"n^2 \le 2^n", reading="as stated",
                 parameters={"quick": {"n": 5}, "full": {"n": 20}},
                 stated={"bound": bound}, check=square_check,
                 control=NegativeControl("bound n", {"bound": lambda n: float(n)}),
                 assumptions=assumptions, space={"n": IntRange(1, 12)})


def harmonic(n):
    r""":math:`H_n` through the digamma function (stated closed form)."""
    psi = torch.special.digamma(torch.tensor(n + 1.0, dtype=torch.float64))
    return float(psi) + 0.5772156649015329  # Euler's gamma


def harmonic_check(run) -> Iterator:
    """Sums 1/i in the run's dtype against a float64 closed form with a tolerance that is
    deliberately too tight for float32: a planted precision artefact, not a false claim."""
    n = run.params["n"]
    measured = (1.0 / torch.arange(1, n + 1, dtype=run.dtype)).sum()
    yield compare(Route.NUMERIC, "harmonic sum", stated=run.stated["H"](n), measured=measured,
                  tolerance=Tolerance(1e-12, "planted: float64 roundoff only"),
                  parameters={"n": n})


def make_harmonic(claim_id: str = "test.harmonic") -> Claim:
    return Claim(id=claim_id, paper="planted", kind="lemma", title="harmonic numbers",
                 source="tests", statement=r"H_n = \psi(n+1) + \gamma", reading="as stated",
                 parameters={"quick": {"n": 100}, "full": {"n": 1000}}, stated={"H": harmonic},
                 check=harmonic_check,
                 control=NegativeControl("H_n + 1/n", {"H": lambda n: harmonic(n) + 1 / n}),
                 space={"n": IntRange(100, 2000)})


def exact_cubes_recheck(params, stated) -> Iterator:
    """The sum of cubes in exact integers (sympy), as a stress re-check."""
    n = params["n"]
    yield symbolic_identity(f"sum of cubes, n = {n}", stated=sp.nsimplify(stated["sum"](n)),
                            derived=sp.Integer(sum(i ** 3 for i in range(1, n + 1))))

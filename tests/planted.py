"""Tiny planted claims for testing the claim machinery itself (not paper claims).

The toy identity: :math:`\\sum_{i=1}^n i = n(n+1)/2`, checked against a direct sum.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import sympy as sp
import torch

from verify.claim import Claim, NegativeControl
from verify.evidence import Route, Tolerance, compare, symbolic_identity
from verify.registry import register, unregister

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

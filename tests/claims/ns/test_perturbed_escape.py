"""ns.x.perturbed-escape: the derivation (reduction to depth k, homogeneity degree), the
saddle points it starts from, and the quick verdict's laws."""
import sympy as sp
import torch

from numerics.ns.perturbed_escape import saddle_point
from theory.ns.perturbed_escape import derive_homogeneity, derive_reduction, perturbed_law
from theory.ns.reparam_balance import Q
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


def test_small_factors_follow_the_depth_k_flow():
    for L, k in ((3, 2), (4, 2), (4, 3), (3, 3)):
        assert derive_reduction(L, k).result == sp.zeros(k, 1)


def test_homogeneity_degree_is_kappa():
    for k in (2, 3, 4):
        assert sp.simplify(derive_homogeneity(k).result - (k - 1) * (Q - 1)) == 0


def test_laws():
    assert perturbed_law(3, 2).kind == "power" and perturbed_law(3, 2).exponent == 1
    assert perturbed_law(2, 2).kind == "log"
    assert perturbed_law(2, 1.5).kind == "bounded"


def test_saddle_point_has_k_zero_rows():
    W = saddle_point(4, 2, 5, torch.Generator().manual_seed(0))
    assert bool((W[:2] == 0).all()) and bool((W[2:].abs() >= 0.5).all())


def test_quick_verdict_and_control():
    result = run_claim(get("ns.x.perturbed-escape"))
    assert result.verdict is Verdict.PASS, result.reason
    assert result.control.rejected
    fractions = [e for e in result.evidence if e.quantity.startswith("fraction")]
    assert fractions and all(e.ok for e in fractions)

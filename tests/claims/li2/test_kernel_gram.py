"""li2.x.kernel-gram: Lemma 1's input geometry on the group task, the exact kernel Gram and its
finite-width estimate.

Findings pinned here: the group inputs' normalised correlations are 0 and 1/2 (best band
rho = 1/4, epsilon = 1/4); the centred infinite-width Gram has two distinct nonzero eigenvalues,
ratio 1 + M/2 for x^2, so it is not a multiple of P_1^perp; the centred labels lie exactly in
one eigenspace (the interaction space), so P_eta Yt ∝ Yt still holds, with c1 = k2 - 2k1 + k0
(4 for x^2) in place of a - b (15/2 at rho = 1/4).
"""
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.activations import activation
from numerics.li2.group_kernel import eigenspace_means, features, grid_parts
from numerics.li2.group_task import dense_inputs, group_task
from numerics.random import make_generator
from tests.planted import failed_quantities
from theory.groups import cyclic, dihedral, quaternion
from theory.li2.kernel_gram import (
    derive_gram_spectrum,
    gram_eigenvalues,
    kernel_gram,
    kernel_values,
    marginal_part_of_labels,
    relu_correlation,
)
from verify.claims.li2.kernel_gram import stated_kernel_x2
from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


@pytest.fixture(scope="module")
def result():
    return run_claim(get("li2.x.kernel-gram"))


def test_fails_on_the_structure_and_holds_on_the_labels_and_the_simulation(result):
    assert result.verdict is Verdict.FAIL and result.control.rejected
    failed = failed_quantities(result.evidence)
    assert failed == {e.quantity for e in result.evidence
                      if "largest / smallest" in e.quantity or "c1 = a - b" in e.quantity}
    spread = next(e for e in result.evidence if e.quantity.startswith("x2: largest"))
    assert spread.derived["sympy"] == "M/2 + 1"
    geometry = result.figures["input geometry of the group task (Lemma 1's assumption 3)"]
    assert all(row["normalised correlations"] == [0.0, 0.5]
               and row["best band: rho, epsilon"] == [0.25, 0.25] for row in geometry.values())


def test_the_labels_item_rejects_a_task_with_unbalanced_marginals():
    # a "table" whose class 0 sits twice in row 0: its labels have a marginal part
    table = [list(r) for r in cyclic(3).table]
    table[0] = [0, 0, 2]
    assert not marginal_part_of_labels(table).is_zero_matrix


@pytest.mark.parametrize("M", [2, 3])
def test_gram_spectrum_derivation_leaves_no_residual(M):
    steps = derive_gram_spectrum(M).as_records()
    assert [s["sympy"] for s in steps[:3]] == ["0", "0", "0"]
    assert steps[3]["sympy"] == str(M * M)


def test_explicit_gram_eigenvalues_match_the_closed_form():
    k = kernel_values("x2")
    eig = gram_eigenvalues(k, sp.Integer(4))
    values = sorted(float(v) for v in
                    torch.linalg.eigvalsh(torch.tensor(kernel_gram(k, 4).tolist(),
                                                       dtype=torch.float64)))
    expected = sorted(float(lam) for lam, mult in eig.values() for _ in range(int(mult)))
    torch.testing.assert_close(torch.tensor(values), torch.tensor(expected), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("corr", [sp.Integer(0), sp.Rational(1, 2), sp.Rational(1, 4),
                                  sp.Integer(1)])
def test_relu_correlation_is_the_arc_cosine_kernel(corr):
    arc = (sp.sqrt(1 - corr**2) + (sp.pi - sp.acos(corr)) * corr) / (2 * sp.pi)
    assert sp.simplify(relu_correlation(corr) - arc) == 0


def test_square_kernel_values_are_the_stated_form():
    assert kernel_values("x2") == tuple(stated_kernel_x2(2, sp.Rational(o, 2)) for o in (0, 1, 2))


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), G=st.sampled_from([cyclic(4), dihedral(3), quaternion()]))
def test_grid_parts_add_up_and_match_projections(seed, G):
    task = group_task(G.table)
    f = features(task, 8, activation("relu"), make_generator(seed))
    parts = grid_parts(f, task)
    torch.testing.assert_close(sum(parts.values()), f.square().sum(-1))
    X, _ = dense_inputs(task)
    # the marginal part of f is the part explained by the one-hot inputs, minus the mean
    Xc = X - X.mean(0)
    projected = Xc @ torch.linalg.pinv(Xc) @ (f - f.mean(1, keepdim=True)).T
    torch.testing.assert_close(parts["marginal"], projected.square().sum(0))


def test_eigenspace_means_are_unbiased_at_modest_width():
    task = group_task(cyclic(5).table)
    f = features(task, 20000, activation("x2"), make_generator(3))
    means = eigenspace_means(f, task)
    eig = gram_eigenvalues(kernel_values("x2"), sp.Integer(5))
    for name, m in means.items():
        assert abs(m.mean - float(eig[name][0])) < 4 * m.standard_error, name


def test_width_below_the_clt_assumption_is_outside():
    claim = get("li2.x.kernel-gram")
    p = dict(claim.parameters["quick"], width=16)
    assert not all(a.holds(p) for a in claim.assumptions)

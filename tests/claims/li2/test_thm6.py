"""li2.thm6: the claim end to end, its routes one by one, and the pieces it is built from."""
from __future__ import annotations

import math

import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.errors import Diverged
from numerics.random import make_generator, randn
from numerics.li2.ridge_inverse import (
    full_residual_similarity,
    pair_entries,
    residual_operator,
    ridge_inverse_cholesky,
    ridge_inverse_svd,
    ridge_inverse_woodbury,
    ridge_matrix,
    ridge_spectrum,
    schur_terms,
    third_party_code_ridge_inverse,
)
from numerics.li2.tiny_trainer import (
    hidden_features,
    modular_addition_data,
    train_two_layer,
)
from numerics.li2.two_layer import center, loss
from theory.identity import ZeroStatus, is_zero
from theory.li2.schur import (
    derive_ridge_inverse_entry,
    derive_schur_denominator,
    derive_schur_terms,
    symbolic_features,
)
from verify.claims.li2.thm6 import SPACE, flipped_b, stated_b
from verify.registry import get
from verify.runner import run_claim
from verify.sampling import strategy
from verify.tolerances import conditioned

F64 = torch.float64


def features(n: int, K: int, seed: int) -> torch.Tensor:
    return center(randn(n, K, generator=make_generator(seed)))


def all_pairs(K: int) -> torch.Tensor:
    return torch.triu_indices(K, K, offset=1).T


def bound(Ft: torch.Tensor, eta: float) -> tuple[float, float]:
    """(||B||_2, the claim's tolerance on b / ||B||_2)."""
    lmax, lmin = (float(x) for x in ridge_spectrum(Ft, eta))
    n, K = Ft.shape
    return 1 / lmin, conditioned(F64, lmax / lmin, max(n, K), "test").value


def similarity_bound(Ft: torch.Tensor, eta: float, pairs: torch.Tensor) -> torch.Tensor:
    """The claim's rounding bound on f_j^T P f_l: 4u(n + s_max/sqrt(eta))|f_j||f_l|."""
    u = torch.finfo(F64).eps
    s_max = float(torch.linalg.matrix_norm(Ft, 2))
    norms = Ft.norm(dim=0)
    return 4 * u * (Ft.shape[0] + s_max / math.sqrt(eta)) * norms[pairs[:, 0]] * norms[pairs[:, 1]]


# --- the claim ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def quick_result():
    return run_claim(get("li2.thm6"), fidelity="quick", device="cpu")


def test_every_route_that_the_control_touches_fails_under_it(quick_result):
    """Each Schur-formula and sign-rule item, on every route, rejects the flipped sign; only the
    determinant identity (which does not use the stated forms) still holds."""
    for item in quick_result.control.evidence:
        if item.quantity.startswith("alpha gamma - beta^2"):
            assert item.ok is True
        else:
            assert item.ok is False, item.quantity
    routes = {item.route.value for item in quick_result.control.evidence if item.ok is False}
    assert routes == {"symbolic", "numeric", "property"}


def test_trained_net_features_are_used(quick_result):
    assert any("trained net" in item.quantity for item in quick_result.evidence)
    assert any(name.startswith("Pr[b_jl < 0") for name in quick_result.figures)


# --- each route can fail on its own ------------------------------------------------------

def test_symbolic_route_rejects_the_flipped_formula():
    b, F, eta = derive_ridge_inverse_entry(2, 3, 0, 1).result
    alpha, beta, gamma = derive_schur_terms(F, eta, 0, 1).result
    assert is_zero(sp.cancel(stated_b(alpha, beta, gamma)) - b).status is ZeroStatus.ZERO
    assert is_zero(sp.cancel(flipped_b(alpha, beta, gamma)) - b).status is ZeroStatus.NONZERO


def test_numeric_route_rejects_the_full_P_eta_in_place_of_P_minus_jl():
    """The Schur formula with the third party's full P_eta gives other magnitudes: the
    comparison with the SVD inverse must see it."""
    Ft, eta = features(20, 12, 3), 0.05
    pairs = all_pairs(12)
    norm_B, tol = bound(Ft, eta)
    b = pair_entries(ridge_inverse_svd(Ft, eta), pairs)
    alpha, beta, gamma = schur_terms(Ft, eta, pairs)
    assert float((stated_b(alpha, beta, gamma) - b).abs().max()) / norm_B <= tol
    P = residual_operator(Ft, eta)
    fj, fl = Ft[:, pairs[:, 0]], Ft[:, pairs[:, 1]]
    wrong = stated_b(eta + (fj * (P @ fj)).sum(0), (fj * (P @ fl)).sum(0),
                     eta + (fl * (P @ fl)).sum(0))
    assert float((wrong - b).abs().max()) / norm_B > 1e3 * tol


def test_inverse_routes_reject_a_perturbed_inverse():
    Ft, eta = features(10, 14, 5), 1e-3
    norm_B, tol = bound(Ft, eta)
    B = ridge_inverse_svd(Ft, eta)
    assert float((ridge_inverse_cholesky(Ft, eta) - B).abs().max()) / norm_B <= tol
    perturbed = B.clone()
    perturbed[0, 1] += 10 * tol * norm_B
    assert float((perturbed - B).abs().max()) / norm_B > tol


# --- numerics: properties over the claim's own parameter space ---------------------------

@given(strategy(SPACE))
def test_svd_inverse_inverts_the_ridge_matrix(c):
    Ft = features(c["n"], c["K"], c["seed"])
    norm_B, tol = bound(Ft, c["eta"])
    residual = ridge_inverse_svd(Ft, c["eta"]) @ ridge_matrix(Ft, c["eta"])
    assert float((residual - torch.eye(c["K"], dtype=F64)).abs().max()) <= tol


@given(strategy(SPACE))
def test_schur_formula_matches_the_svd_and_cholesky_inverses(c):
    Ft, eta = features(c["n"], c["K"], c["seed"]), c["eta"]
    pairs = all_pairs(c["K"])
    norm_B, tol = bound(Ft, eta)
    b = pair_entries(ridge_inverse_svd(Ft, eta), pairs)
    assert float((stated_b(*schur_terms(Ft, eta, pairs)) - b).abs().max()) / norm_B <= tol
    chol = pair_entries(ridge_inverse_cholesky(Ft, eta), pairs)
    assert float((chol - b).abs().max()) / norm_B <= tol


@given(strategy(SPACE))
def test_schur_denominator_is_positive_and_the_sign_rule_holds(c):
    Ft, eta = features(c["n"], c["K"], c["seed"]), c["eta"]
    pairs = all_pairs(c["K"])
    norm_B, tol = bound(Ft, eta)
    alpha, beta, gamma = schur_terms(Ft, eta, pairs)
    assert bool((alpha * gamma - beta**2 > 0).all())
    b = pair_entries(ridge_inverse_svd(Ft, eta), pairs)
    clear = (b.abs() > tol * norm_B) & (beta.abs() > similarity_bound(Ft, eta, pairs))
    assert bool((torch.sign(b[clear]) == -torch.sign(beta[clear])).all())


@given(strategy(SPACE))
def test_full_P_eta_similarity_is_minus_eta_squared_b(c):
    r""":math:`\tilde F^\top P_\eta\tilde F = \eta(I - \eta B)`, so off the diagonal
    :math:`\mathbf f_j^\top P_\eta\mathbf f_\ell = -\eta^2 b_{j\ell}` exactly."""
    Ft, eta = features(c["n"], c["K"], c["seed"]), c["eta"]
    pairs = all_pairs(c["K"])
    norm_B, tol = bound(Ft, eta)
    full = full_residual_similarity(Ft, eta, pairs)
    b = pair_entries(ridge_inverse_svd(Ft, eta), pairs)
    allowed = similarity_bound(Ft, eta, pairs) + eta**2 * tol * norm_B
    assert bool(((full + eta**2 * b).abs() <= allowed).all())


@given(strategy(SPACE))
def test_residual_operator_equals_its_other_form(c):
    r""":math:`I - F(F^\top F+\eta I)^{-1}F^\top = \eta(FF^\top + \eta I)^{-1}` (Woodbury)."""
    Ft, eta = features(c["n"], c["K"], c["seed"]), c["eta"]
    n = c["n"]
    other = eta * torch.linalg.inv(Ft @ Ft.T + eta * torch.eye(n, dtype=F64))
    lmax = float(torch.linalg.matrix_norm(Ft, 2)) ** 2 + eta
    tol = conditioned(F64, lmax / eta, n, "n x n inverse").value
    assert float((residual_operator(Ft, eta) - other).abs().max()) <= tol


@given(strategy(SPACE))
def test_woodbury_route_obeys_its_own_weaker_bound(c):
    r"""The n x n solve has condition number (s_max^2+eta)/eta and its result is divided by
    eta: |B_wood - B| <~ 4 max(n,K) u (s_max^2+eta)/eta^2, which is the SVD route's bound only
    when s_min = 0 (K > n)."""
    Ft, eta = features(c["n"], c["K"], c["seed"]), c["eta"]
    lmax, _ = (float(x) for x in ridge_spectrum(Ft, eta))
    allowed = 4 * max(c["n"], c["K"]) * torch.finfo(F64).eps * lmax / eta**2
    gap = (ridge_inverse_woodbury(Ft, eta) - ridge_inverse_svd(Ft, eta)).abs().max()
    assert float(gap) <= allowed


def test_woodbury_route_loses_accuracy_at_small_eta_when_K_below_n():
    """The measured failure the claim reports as a figure: cancellation of two 1/eta terms."""
    Ft, eta = features(48, 24, 0), 1e-6
    norm_B, tol = bound(Ft, eta)
    gap = (ridge_inverse_woodbury(Ft, eta) - ridge_inverse_svd(Ft, eta)).abs().max()
    assert float(gap) / norm_B > 10 * tol


@settings(max_examples=10)
@given(st.integers(2, 10), st.integers(2, 10), st.floats(1e-2, 10.0), st.integers(0, 2**31))
def test_third_party_code_inverse_is_B_over_eta_plus_a_diagonal(n, K, eta, seed):
    Ft = features(n, K, seed)
    B = ridge_inverse_svd(Ft, eta)
    expected = B / eta + (1 / eta - 1 / eta**2) * torch.eye(K, dtype=F64)
    assert torch.allclose(third_party_code_ridge_inverse(Ft, eta), expected,
                          rtol=1e-9, atol=1e-9 / eta**2)


def test_schur_terms_at_K2_are_the_entries_of_A():
    """No remaining columns: P = I, so (alpha, beta, gamma) = (A_00, A_01, A_11)."""
    Ft, eta = features(5, 2, 1), 0.3
    alpha, beta, gamma = schur_terms(Ft, eta, torch.tensor([[0, 1]]))
    A = ridge_matrix(Ft, eta)
    assert torch.allclose(torch.stack([alpha, beta, gamma]).squeeze(),
                          torch.stack([A[0, 0], A[0, 1], A[1, 1]]))


def test_schur_terms_chunks_give_the_same_answer():
    Ft, eta = features(9, 7, 2), 0.1
    pairs = all_pairs(7)
    for a, b in zip(schur_terms(Ft, eta, pairs, chunk=1), schur_terms(Ft, eta, pairs)):
        assert torch.allclose(a, b, rtol=1e-12, atol=0)


@pytest.mark.parametrize("call, message", [
    (lambda: ridge_inverse_svd(features(3, 4, 0), -1.0), "eta"),
    (lambda: ridge_inverse_svd(features(3, 4, 0), 0.0), "eta"),
    (lambda: ridge_inverse_woodbury(features(3, 4, 0), 0.0), "eta"),
    (lambda: schur_terms(features(3, 4, 0), 0.1, torch.tensor([[1, 1]])), "pairs"),
    (lambda: schur_terms(features(3, 4, 0), 0.1, torch.tensor([[0, 4]])), "pairs"),
    (lambda: schur_terms(features(3, 4, 0), 0.1, torch.tensor([0, 1])), "pairs"),
    (lambda: derive_ridge_inverse_entry(2, 1, 0, 1), "K"),
    (lambda: derive_ridge_inverse_entry(2, 3, 1, 1), r"\(j, l\)"),
])
def test_bad_input_is_a_value_error_naming_the_parameter(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# --- theory ------------------------------------------------------------------------------

@pytest.mark.parametrize("n, K, j, l", [(1, 2, 0, 1), (2, 3, 2, 0), (2, 4, 1, 3)])
def test_cofactor_entry_is_the_inverse_entry(n, K, j, l):
    b, F, eta = derive_ridge_inverse_entry(n, K, j, l).result
    direct = (F.T * F + eta * sp.eye(K)).inv()[j, l]
    assert is_zero(b - sp.cancel(direct)).status is ZeroStatus.ZERO


def test_schur_denominator_is_the_determinant_ratio_at_K4():
    F, eta = symbolic_features(1, 4)
    alpha, beta, gamma = derive_schur_terms(F, eta, 1, 3).result
    ratio = derive_schur_denominator(F, eta, 1, 3).result
    assert is_zero(sp.cancel(alpha * gamma - beta**2) - ratio).status is ZeroStatus.ZERO


# --- the tiny trainer --------------------------------------------------------------------

@settings(max_examples=10)
@given(st.integers(2, 9), st.floats(0.1, 1.0), st.integers(0, 2**31))
def test_modular_addition_data(M, fraction, seed):
    operands, labels = modular_addition_data(M, fraction, make_generator(seed))
    assert len(operands) == max(1, round(fraction * M * M))
    assert len({tuple(p) for p in operands.tolist()}) == len(operands)
    assert torch.equal(labels, (operands[:, 0] + operands[:, 1]) % M)


@settings(max_examples=10)
@given(st.integers(2, 6), st.integers(1, 5), st.integers(0, 2**31))
def test_hidden_features_are_sigma_of_one_hot_inputs_times_W(M, K, seed):
    g = make_generator(seed)
    operands, _ = modular_addition_data(M, 1.0, g)
    W = randn(2 * M, K, generator=g)
    X = torch.cat([torch.nn.functional.one_hot(operands[:, 0], M),
                   torch.nn.functional.one_hot(operands[:, 1], M)], dim=1).to(F64)
    assert torch.allclose(hidden_features(W, operands, M), (X @ W).square())


def test_training_is_seeded_and_lowers_the_objective():
    kwargs = dict(steps=60, lr=0.02, eta=1e-3, fraction=0.5)
    a = train_two_layer(5, 8, generator=make_generator(7), **kwargs)
    b = train_two_layer(5, 8, generator=make_generator(7), **kwargs)
    assert torch.equal(a.W, b.W) and torch.equal(a.V, b.V)
    assert a.losses[-1] < 0.5 * a.losses[0]
    assert a.features().shape == (len(a.operands), 8)
    gd = train_two_layer(5, 8, generator=make_generator(7), optimizer="gd", steps=60,
                         lr=1e-3, eta=1e-3)
    assert gd.losses[-1] < gd.losses[0]


@pytest.mark.parametrize("optimizer", ["adam", "gd"])
def test_training_steps_are_torch_optims(optimizer):
    """The written-out updates reproduce torch.optim.Adam / SGD on the same objective."""
    M, K, steps, lr, eta = 5, 8, 20, 0.02, 1e-3
    net = train_two_layer(M, K, steps=steps, lr=lr, eta=eta, fraction=0.5,
                          optimizer=optimizer, generator=make_generator(3))
    g = make_generator(3)
    operands, labels = modular_addition_data(M, 0.5, g)
    Y = torch.nn.functional.one_hot(labels, M).to(F64)
    W = (randn(2 * M, K, generator=g) / (2 * M) ** 0.5).requires_grad_(True)
    V = (randn(K, M, generator=g) * 0.01).requires_grad_(True)
    opt = (torch.optim.Adam([W, V], lr=lr) if optimizer == "adam"
           else torch.optim.SGD([W, V], lr=lr))
    for _ in range(steps):
        opt.zero_grad()
        J = loss(hidden_features(W, operands, M), V, Y, eta) + 0.5 * eta * W.square().sum()
        J.backward()
        opt.step()
    assert torch.allclose(net.W, W.detach(), rtol=1e-12, atol=1e-14)
    assert torch.allclose(net.V, V.detach(), rtol=1e-12, atol=1e-14)


def test_training_that_blows_up_raises_diverged():
    with pytest.raises(Diverged):
        train_two_layer(5, 8, steps=200, lr=10.0, eta=0.0, optimizer="gd",
                        init_v=1.0, generator=make_generator(0))


@pytest.mark.parametrize("kwargs, message", [
    (dict(M=1), "M"), (dict(K=0), "K"), (dict(steps=0), "steps"), (dict(lr=0.0), "lr"),
    (dict(eta=-1.0), "eta"), (dict(optimizer="sgd"), "optimizer"), (dict(fraction=0.0), "fraction"),
])
def test_trainer_rejects_bad_input(kwargs, message):
    args = dict(M=5, K=4, steps=2, lr=0.01, eta=0.0, generator=make_generator(0))
    with pytest.raises(ValueError, match=message):
        train_two_layer(**{**args, **kwargs})


def test_checkpoints_keep_W_without_changing_the_trajectory():
    kwargs = dict(steps=12, lr=0.02, eta=1e-3, fraction=0.5)
    plain = train_two_layer(5, 8, generator=make_generator(4), **kwargs)
    kept = train_two_layer(5, 8, generator=make_generator(4), checkpoints=(0, 5, 12), **kwargs)
    assert torch.equal(plain.W, kept.W) and torch.equal(plain.V, kept.V)
    assert sorted(kept.snapshots) == [0, 5, 12] and torch.equal(kept.snapshots[12], kept.W)
    g = make_generator(4)
    modular_addition_data(5, 0.5, g)
    assert torch.equal(kept.snapshots[0], randn(10, 8, generator=g) * (1.0 / 10**0.5))
    assert torch.equal(kept.features_at(12), kept.features())
    assert torch.equal(kept.labels(), kept.operands.sum(1) % 5)
    with pytest.raises(ValueError, match="checkpoints"):
        train_two_layer(5, 8, generator=make_generator(4), checkpoints=(13,), **kwargs)


# --- Thm. 6 where B exists only just: eta = 0 at full column rank, K = n + 1 -------------------

def test_quick_run_covers_eta_zero_and_K_just_above_n(quick_result):
    quantities = [item.quantity for item in quick_result.evidence if item.ok]
    for label in ("n=48 K=24 eta=0", "n=25 K=24 eta=0", "n=24 K=25 eta=1e-06"):
        assert sum(q.endswith(label) for q in quantities) == 2, label   # b_jl, sign rule
    assert quick_result.inside_assumptions


def test_eta_zero_similarity_bound_covers_float32_rounding():
    """At eta = 0 the bound 4u(n + s_max/s_min)|f_j||f_l| holds for the float32 beta against
    float64 (the truth at this precision), and it is finite where 1/sqrt(eta) is not."""
    from numerics.li2.ridge_spectra import similarity_rounding_bound_full_rank
    for n, K, seed in [(25, 24, 1), (48, 24, 2), (31, 30, 3)]:
        Ft = features(n, K, seed)
        pairs = all_pairs(K)
        s = torch.linalg.svdvals(Ft)
        _, exact, _ = schur_terms(Ft, 0.0, pairs)
        Ft32 = Ft.float()
        _, rounded, _ = schur_terms(Ft32, 0.0, pairs)
        bound32 = similarity_rounding_bound_full_rank(Ft32, pairs, float(s[0]), float(s[-1]))
        assert bool(((rounded.double() - exact).abs() <= bound32.double()).all())
        assert bool(torch.isfinite(bound32).all())


def test_eta_zero_needs_full_column_rank():
    from numerics.li2.ridge_spectra import similarity_rounding_bound_full_rank
    Ft = features(6, 4, 0)
    with pytest.raises(ValueError, match="s_min"):
        similarity_rounding_bound_full_rank(Ft, all_pairs(4), 1.0, 0.0)
    from verify.claims.li2.thm6 import _b_exists
    params = get("li2.thm6").parameters["quick"]
    assert _b_exists(params)
    assert not _b_exists({**params, "problems": [{"n": 24, "K": 24, "eta": 0.0}]})


def test_eta_zero_schur_formula_rejects_the_flipped_sign_at_K_equal_n_minus_1():
    Ft = features(25, 24, 5)
    pairs = all_pairs(24)
    norm_B, tol = bound(Ft, 0.0)
    b = pair_entries(ridge_inverse_cholesky(Ft, 0.0), pairs)
    alpha, beta, gamma = schur_terms(Ft, 0.0, pairs)
    assert float((stated_b(alpha, beta, gamma) - b).abs().max()) / norm_B <= tol
    assert float((flipped_b(alpha, beta, gamma) - b).abs().max()) / norm_B > 1e3 * tol


# --- §5: spreads of B and P_eta ------------------------------------------------------------

def test_spreads_are_one_for_orthogonal_equal_columns_and_the_stage2_cosine_is_one():
    from numerics.li2.ridge_spectra import ridge_spectra
    n = 6
    Q, _ = torch.linalg.qr(center(randn(n, n - 1, generator=make_generator(1))))
    Ft = 2.0 * Q                               # rank n - 1 = K, all s = 2
    Yt = center(randn(n, 3, generator=make_generator(2)))
    s = ridge_spectra(Ft, Yt, 0.3)
    assert s.rank == n - 1
    assert s.b_spread_row == pytest.approx(1, abs=1e-12)
    assert s.p_spread == pytest.approx(1, abs=1e-12)
    assert s.cos_stage2 == pytest.approx(1, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(3, 12), K=st.integers(2, 14), eta=st.floats(1e-3, 10.0),
       seed=st.integers(0, 2**31 - 1))
def test_spreads_match_the_definitions_and_bound_the_stage2_deviation(n, K, eta, seed):
    """Spreads from the SVD against eigenvalues of B and P_eta built from their definitions,
    and ||G_F(+inf) - pb Yt Yt^T Ft|| <= bound * pb ||Yt Yt^T Ft|| (p, b the midpoints)."""
    from numerics.li2.ridge_spectra import proportionality_error, ridge_spectra, \
        stage2_deviation_bound
    Ft = features(n, K, seed)
    Yt = center(randn(n, 3, generator=make_generator(seed + 1)))
    s = ridge_spectra(Ft, Yt, eta)
    B = torch.linalg.inv(ridge_matrix(Ft, eta))
    P = eta * torch.linalg.inv(Ft @ Ft.T + eta * torch.eye(n, dtype=F64))
    ones = torch.ones(n, 1, dtype=F64) / n**0.5
    basis = torch.linalg.svd(torch.eye(n, dtype=F64) - ones @ ones.T).U[:, :n - 1]
    p_eig = torch.linalg.eigvalsh(basis.T @ P @ basis)
    _, sv, Wh = torch.linalg.svd(Ft, full_matrices=False)
    row = Wh[:s.rank].T
    b_eig = torch.linalg.eigvalsh(row.T @ B @ row)
    assert s.p_spread == pytest.approx(float(p_eig[-1] / p_eig[0]), rel=1e-6)
    assert s.b_spread_row == pytest.approx(float(b_eig[-1] / b_eig[0]), rel=1e-6)
    assert s.b_spread_full == pytest.approx(float(torch.linalg.cond(B)), rel=1e-6)
    S = Yt @ Yt.T @ Ft
    G = P @ S @ B
    p, b = (p_eig[-1] + p_eig[0]) / 2, (b_eig[-1] + b_eig[0]) / 2
    bound_ = stage2_deviation_bound(s.b_spread_row, s.p_spread)
    assert float((G - p * b * S).norm()) <= (bound_ + 1e-9) * float(p * b * S.norm())
    assert float((G * S).sum() / (G.norm() * S.norm())) == pytest.approx(s.cos_stage2, abs=1e-9)
    assert proportionality_error(1.0) == 0


def test_stage3_item_and_stage2_probes_in_the_quick_run(quick_result):
    """The §5 item reads the stated form (the control's planted 'still proportional' fails it);
    the Stage II approximations are probes that never take the claim outside its assumptions."""
    item = next(e for e in quick_result.evidence if e.quantity.startswith("Stage III"))
    assert item.ok and item.stated == 0.0
    planted = next(e for e in quick_result.control.evidence if e.quantity == item.quantity)
    assert planted.ok is False
    probes = [a for a in quick_result.assumptions if a.name.startswith("Stage II")]
    assert len(probes) == 2 and all(a.probe for a in probes)
    assert any(name.startswith("spreads of B and P_eta") for name in quick_result.figures)


def test_stage3_item_rejects_a_planted_still_proportional_net():
    """Planted wrong variant on the data side: features whose B and P_eta are proportional to
    the identity make the measured side 1, so the stated 'no longer proportional' fails."""
    from numerics.li2.ridge_spectra import ridge_spectra, spread_band
    from verify.claims.li2.thm6 import STAGE2_DEVIATION
    n = 8
    Q, _ = torch.linalg.qr(center(randn(n, n - 1, generator=make_generator(3))))
    s = ridge_spectra(3.0 * Q, center(randn(n, 2, generator=make_generator(4))), 2e-4)
    assert max(s.b_spread_row, s.p_spread) <= spread_band(STAGE2_DEVIATION)

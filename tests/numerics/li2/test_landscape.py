"""numerics.li2.landscape: projected ascent on the sphere, Riemannian Hessian, purity, the distinct
maxima; checked against finite differences, the exact Hessian of li2.thm2's helpers, and the
known maxima of small cyclic groups."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.activations import activation
from numerics.li2.group_task import group_energy, group_task
from numerics.li2.landscape import (
    ascend_in_chunks,
    ascend_sphere,
    energy_and_riemannian_gradient,
    energy_hessian,
    find_local_maxima,
    form_residual,
    purity,
    riemannian_hessian,
    tangent_spectrum,
)
from numerics.random import make_generator, randn
from theory.li2.group_energy import (
    exact_energy,
    irrep_points,
    paper_form,
)
from theory.groups import cyclic, dihedral, direct_product, quaternion
from theory.groups.irreps import irreps
from verify.claims.li2._groups import float_projectors
from verify.claims.li2._landscape import tangent_inertia

SEEDS = st.integers(0, 2**31 - 1)
SMALL = st.one_of(st.integers(3, 8).map(cyclic), st.integers(3, 4).map(dihedral),
                  st.just(quaternion()), st.just(direct_product(cyclic(2), cyclic(2))))
X2 = activation("x2")


def _unit(B, d, seed):
    w = randn(B, d, generator=make_generator(seed))
    return w / w.norm(dim=-1, keepdim=True)


@settings(max_examples=15)
@given(SMALL, st.sampled_from(("x2", "tanh", "silu")), SEEDS)
def test_riemannian_hessian_is_the_second_derivative_along_the_retraction(G, name, seed):
    # For unit w and unit tangent xi, c(t) = (w + t xi)/|w + t xi| has c'' (0) = -w, so
    # d^2/dt^2 E(c(t)) at 0 = xi^T (Hess E - (w.grad E) I) xi: the Riemannian Hessian.
    task, act = group_task(G.table), activation(name)
    w = _unit(3, 2 * G.order, seed)
    xi = randn(3, 2 * G.order, generator=make_generator(seed + 1))
    xi = xi - (xi * w).sum(-1, keepdim=True) * w
    xi = xi / xi.norm(dim=-1, keepdim=True)
    h = 1e-4

    def f(t):
        c = w + t * xi
        return group_energy(c / c.norm(dim=-1, keepdim=True), task, act)

    fd = (f(h) - 2 * f(0.0) + f(-h)) / h**2
    H = riemannian_hessian(w, task, act)
    quad = torch.einsum("bi,bij,bj->b", xi, H, xi)
    # Central differences: O(h^2 |f''''|) + O(u |f| / h^2), both below 1e-5 |f| here.
    scale = float(f(0.0).abs().max() + quad.abs().max() + 1)
    torch.testing.assert_close(fd, quad, rtol=0, atol=1e-5 * scale)


@given(SMALL, SEEDS)
def test_riemannian_gradient_is_tangent_and_the_spectrum_drops_the_normal(G, seed):
    task = group_task(G.table)
    w = _unit(4, 2 * G.order, seed)
    _, g = energy_and_riemannian_gradient(w, task, X2)
    torch.testing.assert_close((g * w).sum(-1), torch.zeros(4, dtype=torch.float64),
                               rtol=0, atol=1e-12 * float(g.abs().max() + 1))
    H = riemannian_hessian(w, task, X2)
    torch.testing.assert_close(H @ w[:, :, None], torch.zeros(4, 2 * G.order, 1,
                                                              dtype=torch.float64),
                               rtol=0, atol=1e-11 * float(H.abs().max() + 1))
    assert tangent_spectrum(w, H).shape == (4, 2 * G.order - 1)
    # The ambient Hessian is symmetric and E is homogeneous of degree 4: H w = 3 grad E.
    A = energy_hessian(w, task, X2)
    torch.testing.assert_close(A, A.mT)
    w_ = w.clone().requires_grad_(True)
    (full,) = torch.autograd.grad(group_energy(w_, task, X2).sum(), w_)
    torch.testing.assert_close((A @ w[:, :, None])[..., 0], 3 * full)


@settings(max_examples=10)
@given(SMALL, SEEDS)
def test_ascent_is_monotone_stays_on_the_sphere_and_chunks_change_nothing(G, seed):
    task = group_task(G.table)
    w0 = randn(8, 2 * G.order, generator=make_generator(seed))
    lr, gtol = 0.4 / G.order, 1e-10 * G.order
    whole = ascend_sphere(w0, task, X2, lr, 4000, gtol)
    assert bool(whole.converged.all())
    assert float(whole.largest_decrease.max()) <= 1e-12 * G.order
    torch.testing.assert_close(whole.w.norm(dim=-1), torch.ones(8, dtype=torch.float64))
    chunked = ascend_in_chunks(w0, task, X2, lr, 4000, gtol, chunk_elements=3 * task.n)
    # Chunks stop at different steps, so the end points agree to the convergence accuracy.
    torch.testing.assert_close(chunked.energy, whole.energy, rtol=1e-10, atol=0)


@given(SMALL)
def test_purity_and_form_of_irrep_vectors(G):
    task = group_task(G.table)
    Pi = float_projectors(G)
    F = irreps(G)[0].field
    for pt in irrep_points(G):
        w = torch.tensor([[complex(x).real for x in paper_form(G, pt.u, s)] for s in (1, -1)],
                         dtype=torch.float64)
        for block in (w[:, :G.order], w[:, G.order:]):
            p = purity(block, Pi)
            torch.testing.assert_close(p.sum(-1), torch.ones(2, dtype=torch.float64))
            torch.testing.assert_close(p[:, pt.component], torch.ones(2, dtype=torch.float64))
        torch.testing.assert_close(form_residual(w, task), torch.zeros(2, dtype=torch.float64),
                                   rtol=0, atol=1e-15)
        # The helpers put every irrep of G in one field Q(zeta_N), N the exponent.
        assert F.N == G.exponent


@pytest.mark.parametrize("M", [5, 6])
def test_cyclic_maxima_energies_flatness_and_exact_inertia(M):
    # Z_M: every maximum lies in one real component, E/M = 1/4 on a conjugate pair (two flat
    # directions: the phases of u and of the second block) and 1/2 on the sign irrep of an
    # even M (isolated). The numeric nullity matches the exact one from li2.thm2's helpers.
    G = cyclic(M)
    L = find_local_maxima(group_task(G.table), X2, 64, make_generator(M), lr=0.4 / M,
                          max_steps=3000, gtol=1e-11 * M, projectors=float_projectors(G))
    assert bool(L.ascent.converged.all())
    ex, F = exact_energy(G), irreps(G)[0].field
    exact = {pt.component: tangent_inertia(ex, paper_form(G, pt.u), F) for pt in irrep_points(G)}
    values = {}
    for c in L.classes:
        assert c.is_maximum and c.purity_u > 1 - 1e-12 and c.purity_v > 1 - 1e-12
        values[c.component] = (round(c.energy / M, 10), c.nullity[0])
        assert exact[c.component] == (2 * M - 1 - c.nullity[0], c.nullity[0], 0)
    expected = {k: (0.25, 2) for k in range(1, (M - 1) // 2 + 1)}
    if M % 2 == 0:
        expected[M // 2] = (0.5, 0)
    assert values == expected


def test_bad_arguments_raise():
    task = group_task(cyclic(3).table)
    w = _unit(2, 6, 0)
    with pytest.raises(ValueError, match="lr"):
        ascend_sphere(w, task, X2, 0.0, 10, 1e-8)
    with pytest.raises(ValueError, match="max_steps"):
        ascend_sphere(w, task, X2, 0.1, 0, 1e-8)
    with pytest.raises(ValueError, match="gtol"):
        ascend_sphere(w, task, X2, 0.1, 10, 0.0)
    with pytest.raises(ValueError, match="starts"):
        find_local_maxima(task, X2, 0, make_generator(0), lr=0.1, max_steps=1, gtol=1e-8)
    with pytest.raises(ValueError, match="chunk_elements"):
        ascend_in_chunks(w, task, X2, 0.1, 10, 1e-8, chunk_elements=0)


@pytest.mark.parametrize("lr, max_steps, gtol, named", [
    (float("nan"), 10, 1e-8, "lr0: nan"), (0.1, 0, 1e-8, "max_steps: 0"),
    (0.1, 10, float("nan"), "gtol: nan"), (-1.0, 0, 0.0, "lr0: -1.0")])
def test_ascent_settings_name_the_first_bad_one(lr, max_steps, gtol, named):
    from numerics.errors import check_ascent_settings
    with pytest.raises(ValueError, match=f"^{named} must be"):
        check_ascent_settings(lr, max_steps, gtol, lr_name="lr0")
